/* bench/fkb_common.c: memory, row split and bf16 helpers shared by the driver and contenders. */
#define _DEFAULT_SOURCE /* madvise, MAP_ANONYMOUS */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
