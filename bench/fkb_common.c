/* bench/fkb_common.c: memory, row split and bf16 helpers shared by the driver and contenders. */
#define _DEFAULT_SOURCE /* madvise, MAP_ANONYMOUS */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "fkb.h"

size_t fkb_copy_count(size_t bytes) {
  size_t n = FKB_ROTATE_BYTES / bytes + 1;
  return n < 2 ? 2 : n;
}

size_t fkb_copy_stride(size_t bytes) { return (bytes + 4095) & ~(size_t)4095; }

void *fkb_region_alloc(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without THP every contender sees 4 KiB pages */
#endif
  return p;
}

void fkb_region_free(void *p, size_t bytes) {
  if (p) munmap(p, bytes);
}

void *fkb_alloc(size_t bytes) {
  size_t rounded = (bytes + 63) & ~(size_t)63;
  void *p = aligned_alloc(64, rounded ? rounded : 64);
  if (p) memset(p, 0, rounded ? rounded : 64);
  return p;
}

void fkb_free(void *p) { free(p); }

void fkb_rows(int64_t n, int tid, int nthreads, int64_t *begin, int64_t *end) {
  /* multiples of 64 rows: whole groups of flashkern's packed (4) and blocked (64) layouts */
  int64_t groups = (n + 63) / 64;
  int64_t b = groups * tid / nthreads * 64, e = groups * (tid + 1) / nthreads * 64;
  *begin = b < n ? b : n;
  *end = e < n ? e : n;
}

float fkb_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t fkb_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* ---- the machine, one line (every bench's report header) -------------------------------------- */

static void read_line_of(const char *path, const char *key, char *out, size_t len) {
  out[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    if (key && strncmp(line, key, strlen(key)) != 0) continue;
    char *v = key ? strchr(line, ':') : line;
    if (!v) continue;
    v += key ? 1 : 0;
    while (*v == ' ' || *v == '\t') v++;
    v[strcspn(v, "\n")] = 0;
    snprintf(out, len, "%s", v);
    break;
  }
  fclose(f);
}

void fkb_machine_line(char *buf, size_t len) {
  char model[256], family[32], mdl[32], mem[64], thp[128], flags[4096];
  read_line_of("/proc/cpuinfo", "model name", model, sizeof model);
  read_line_of("/proc/cpuinfo", "cpu family", family, sizeof family);
  read_line_of("/proc/cpuinfo", "model\t", mdl, sizeof mdl);
  read_line_of("/proc/cpuinfo", "flags", flags, sizeof flags);
  read_line_of("/proc/meminfo", "MemTotal", mem, sizeof mem);
  read_line_of("/sys/kernel/mm/transparent_hugepage/enabled", NULL, thp, sizeof thp);
  char caches[512] = "";
  size_t at = 0;
  for (int i = 0; i < 8 && at < sizeof caches; i++) {
    char p[128], level[16], type[32], size[32], shared[64];
    snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    read_line_of(p, NULL, level, sizeof level);
    if (!level[0]) break;
    snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    read_line_of(p, NULL, type, sizeof type);
    snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    read_line_of(p, NULL, size, sizeof size);
    snprintf(p, sizeof p, "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
    read_line_of(p, NULL, shared, sizeof shared);
    if (!strcmp(type, "Instruction")) continue;
    at += (size_t)snprintf(caches + at, sizeof caches - at, "%sL%s%s %s (CPUs %s)", at ? ", " : "", level,
                           !strcmp(type, "Data") ? "d" : "", size, shared);
  }
  struct utsname u;
  uname(&u);
  time_t t = time(NULL);
  char date[64];
  strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&t));
  int vm = strstr(flags, " hypervisor") != NULL;
  snprintf(buf, len,
           "%s (family %s, model %s)%s, %ld CPUs online; caches %s; memory %s; THP %s; "
           "%s %s %s; compiler gcc %s; %s",
           model, family, mdl, vm ? ", virtual machine" : "", sysconf(_SC_NPROCESSORS_ONLN), caches, mem, thp,
           u.sysname, u.release, u.machine, __VERSION__, date);
}

int fkb_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double fkb_series_median(const fkb_series *s) {
  double t[FKB_MAX_REPS];
  memcpy(t, s->v, sizeof(double) * (size_t)s->n);
  qsort(t, (size_t)s->n, sizeof t[0], fkb_cmp_double);
  return s->n % 2 ? t[s->n / 2] : 0.5 * (t[s->n / 2 - 1] + t[s->n / 2]);
}

double fkb_series_min(const fkb_series *s) {
  double m = s->v[0];
  for (int i = 1; i < s->n; i++) m = s->v[i] < m ? s->v[i] : m;
  return m;
}

double fkb_series_max(const fkb_series *s) {
  double m = s->v[0];
  for (int i = 1; i < s->n; i++) m = s->v[i] > m ? s->v[i] : m;
  return m;
}

void fkb_die(const char *who, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", who);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

double fkb_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
