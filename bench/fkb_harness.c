/* bench/fkb_harness.c: what every bench shares around its timing loop: the results files
 * (DIR/<bench>.csv and DIR/<bench>-meta.csv, which bench/report.py renders), the machine
 * description, the CPU-noise meter, statistics over repetitions, interleaved turns, pinning and
 * the OPENBLAS_CORETYPE re-execution. The benches write figures, never prose. */
#define _GNU_SOURCE /* sched_getcpu, sched_setaffinity, strcasecmp */
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "fkb.h"
#include "flashkern.h" /* fk_tier (fkb_parse_tiers) */

/* ---- statistics ------------------------------------------------------------------------------ */

fkb_stats fkb_stats_of(const double *v, int n) {
  fkb_stats st = { 0, 0, 0, 0 };
  if (n <= 0) return st;
  double *t = malloc((size_t)n * sizeof *t);
  if (!t) fkb_die("fkb_stats_of", "out of memory");
  memcpy(t, v, (size_t)n * sizeof *t);
  qsort(t, (size_t)n, sizeof *t, fkb_cmp_double);
  st.med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  st.min = t[0];
  st.max = t[n - 1];
  st.ok = 1;
  free(t);
  return st;
}

/* ---- interleaved turns ------------------------------------------------------------------------ */

void fkb_interleave(int reps, int entries, void (*turn)(void *ctx, int rep, int entry), void *ctx) {
  for (int rep = 0; rep < reps; rep++)
    for (int r = 0; r < entries; r++) turn(ctx, rep, (r + rep) % entries); /* one entry later each repetition */
}

/* ---- other processes -------------------------------------------------------------------------- */

fkb_cpu_mark fkb_cpu_mark_now(void) {
  fkb_cpu_mark c = { 0, 0, fkb_now() };
  unsigned long long v[8] = { 0 };
  FILE *f = fopen("/proc/stat", "r");
  if (f) {
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]) == 8) /* user nice system idle iowait irq softirq steal: all but idle and iowait */
      c.busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
    fclose(f);
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  c.self = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
           1e-6 * (double)ru.ru_stime.tv_usec;
  return c;
}

double fkb_others_share(fkb_cpu_mark a, fkb_cpu_mark b) {
  double wall = b.wall - a.wall, cpus = (double)sysconf(_SC_NPROCESSORS_ONLN);
  double other = (b.busy - a.busy) - (b.self - a.self);
  if (wall <= 0 || cpus <= 0 || other < 5.0 / (double)sysconf(_SC_CLK_TCK)) return 0.0;
  return other / (wall * cpus) > 1.0 ? 1.0 : other / (wall * cpus);
}

/* ---- pinning, OPENBLAS_CORETYPE ----------------------------------------------------------------- */

int fkb_pin_here(const char *who) {
  int cpu = sched_getcpu();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpu >= 0) CPU_SET((size_t)cpu, &set);
  if (cpu >= 0 && sched_setaffinity(0, sizeof set, &set) == 0) return cpu;
  fprintf(stderr, "%s: cannot pin to a CPU (%s); running unpinned\n", who, strerror(errno));
  return -1;
}

void fkb_openblas_coretype(const char *who, char **argv, const char *want, int forced, char *was, size_t len) {
  const char *passed = getenv("FKB_OPENBLAS_CORETYPE_WAS");
  if (passed) { /* the re-executed image */
    snprintf(was, len, "%s", passed);
    unsetenv("FKB_OPENBLAS_CORETYPE_WAS");
    return;
  }
  const char *ct = getenv("OPENBLAS_CORETYPE");
  snprintf(was, len, "%s", ct ? ct : "(unset)");
  if (ct && !strcasecmp(ct, want)) return;
  __builtin_cpu_init();
  if (!forced && !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))) {
    fprintf(stderr, "%s: no AVX-512 here: OpenBLAS keeps OPENBLAS_CORETYPE=%s\n", who, was);
    return;
  }
  setenv("FKB_OPENBLAS_CORETYPE_WAS", was, 1);
  setenv("OPENBLAS_CORETYPE", want, 1);
  fflush(NULL);
  execv("/proc/self/exe", argv);
  fprintf(stderr, "%s: re-exec with OPENBLAS_CORETYPE=%s failed (%s); OpenBLAS keeps its own pick\n", who, want,
          strerror(errno));
  unsetenv("FKB_OPENBLAS_CORETYPE_WAS");
}

/* ---- the results files -------------------------------------------------------------------------- */

struct fkb_out {
  FILE *csv, *meta;
  const char *who;
  int ncols; /* columns written on the current row */
  double t0;
  fkb_cpu_mark mark;
};

static FILE *open_in(const char *who, const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) fkb_die(who, "cannot write %s: %s", path, strerror(errno));
  return f;
}

/* A CSV field: bare when it needs no quotes, else quoted with "" for a quote. */
static void put_field(FILE *f, const char *s, int quote) {
  if (!quote && !strpbrk(s, ",\"\n\r")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* The shortest %g that reads back as the same double: report.py rounds the run's own values. */
static void put_number(FILE *f, double v) {
  char b[40];
  for (int p = 6; p <= 17; p++) {
    snprintf(b, sizeof b, "%.*g", p, v);
    if (strtod(b, NULL) == v) break;
  }
  fputs(b, f);
}

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

/* machine,<item>,<value>: report.py joins them into the one-line machine description. */
static void meta_machine(fkb_out *o) {
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
  fkb_meta(o, "machine", "cpu", "%s (family %s, model %s)", model, family, mdl);
  fkb_meta(o, "machine", "vm", "%d", strstr(flags, " hypervisor") != NULL);
  fkb_meta(o, "machine", "cpus", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
  fkb_meta(o, "machine", "caches", "%s", caches);
  fkb_meta(o, "machine", "memory", "%s", mem);
  fkb_meta(o, "machine", "thp", "%s", thp);
  fkb_meta(o, "machine", "kernel", "%s %s %s", u.sysname, u.release, u.machine);
  fkb_meta(o, "machine", "compiler", "gcc %s", __VERSION__);
  fkb_meta(o, "machine", "date", "%s", date);
}

void fkb_out_dir(const char *who, const char *dir) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) fkb_die(who, "cannot create %s: %s", dir, strerror(errno));
  if (access(dir, W_OK) != 0) fkb_die(who, "%s: not a writable directory: %s", dir, strerror(errno));
}

fkb_out *fkb_out_open(const char *who, const char *dir, const char *bench, const char *header, int argc,
                      char **argv) {
  fkb_out *o = calloc(1, sizeof *o);
  if (!o) fkb_die(who, "out of memory");
  char name[256];
  fkb_out_dir(who, dir);
  snprintf(name, sizeof name, "%s.csv", bench);
  o->csv = open_in(who, dir, name);
  snprintf(name, sizeof name, "%s-meta.csv", bench);
  o->meta = open_in(who, dir, name);
  o->who = who;
  o->t0 = fkb_now();
  o->mark = fkb_cpu_mark_now();
  fprintf(o->csv, "%s\n", header);
  fputs("key,item,value\n", o->meta);
  char cmd[2048];
  size_t at = (size_t)snprintf(cmd, sizeof cmd, "%s", who);
  for (int i = 1; i < argc && at < sizeof cmd; i++) at += (size_t)snprintf(cmd + at, sizeof cmd - at, " %s", argv[i]);
  fkb_meta(o, "command", "", "%s", cmd);
  meta_machine(o);
  return o;
}

void fkb_meta(fkb_out *o, const char *key, const char *item, const char *fmt, ...) {
  char v[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v, sizeof v, fmt, ap);
  va_end(ap);
  put_field(o->meta, key, 0);
  fputc(',', o->meta);
  put_field(o->meta, item, 0);
  fputc(',', o->meta);
  put_field(o->meta, v, 0);
  fputc('\n', o->meta);
}

void fkb_meta_num(fkb_out *o, const char *key, const char *item, double v) {
  put_field(o->meta, key, 0);
  fputc(',', o->meta);
  put_field(o->meta, item, 0);
  fputc(',', o->meta);
  put_number(o->meta, v);
  fputc('\n', o->meta);
}

static void sep(fkb_out *o) {
  if (o->ncols++) fputc(',', o->csv);
}

void fkb_col_str(fkb_out *o, const char *s) {
  sep(o);
  put_field(o->csv, s, 1); /* names are quoted, as the committed CSVs have them */
}

void fkb_col_word(fkb_out *o, const char *s) {
  sep(o);
  put_field(o->csv, s, 0);
}

void fkb_col_num(fkb_out *o, double v) {
  sep(o);
  put_number(o->csv, v);
}

void fkb_col_int(fkb_out *o, long long v) {
  sep(o);
  fprintf(o->csv, "%lld", v);
}

void fkb_col_empty(fkb_out *o) { sep(o); }

void fkb_row_end(fkb_out *o) {
  fputc('\n', o->csv);
  o->ncols = 0;
}

void fkb_series_row(fkb_out *o, const char *table, const char *contender, int threads, const char *tier,
                    const char *metric, const fkb_series *s) {
  fkb_col_word(o, table);
  fkb_col_str(o, contender);
  fkb_col_int(o, threads);
  fkb_col_word(o, tier);
  fkb_col_word(o, metric);
  fkb_col_num(o, fkb_series_median(s));
  fkb_col_num(o, fkb_series_min(s));
  fkb_col_num(o, fkb_series_max(s));
  fkb_col_int(o, s->n);
  fkb_row_end(o);
}

int fkb_parse_threads(const char *v, int out[2]) {
  int n = 0;
  if (strchr(v, '1')) out[n++] = 1;
  if (strchr(v, '2')) out[n++] = 2;
  return n;
}

int fkb_parse_tiers(const char *v, int out[2]) {
  int n = 0;
  if (strstr(v, "exact")) out[n++] = FK_TIER_EXACT;
  if (strstr(v, "fast")) out[n++] = FK_TIER_FAST;
  return n;
}

void fkb_out_close(fkb_out *o) {
  fkb_meta_num(o, "elapsed_s", "", fkb_now() - o->t0);
  fkb_meta_num(o, "others_cpu_share", "", fkb_others_share(o->mark, fkb_cpu_mark_now()));
  if (fclose(o->csv) != 0 || fclose(o->meta) != 0) fkb_die(o->who, "writing the results failed: %s", strerror(errno));
  free(o);
}
