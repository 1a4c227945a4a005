/* bench/fk_bench_gemv.c: the GEMV benchmark. flashkern's GEMV against the peers a user would
 * pick instead, all in one process and one run.
 *
 * For each shape (N x K) the driver makes one set of row-major bf16 weight copies, together
 * more than 1 GiB, and lets every contender prepare (untimed: convert, reorder, pack, plan).
 * Each contender's output is then checked against the contract model (bit for bit for the
 * exact-tier contenders, within a tolerance for the others); one that fails is not timed.
 * Then, for M = 1..4, cold and hot weights, 1 and 2 threads, repetitions run round-robin over
 * the contenders and the read-bandwidth probe; a contender's turn is one untimed call and a
 * batch of timed calls. Cold: every call, the warm-up included, reads the next copy of its
 * rotation, so it reads weights last touched more than 1 GiB ago. Hot: every call reads copy
 * 0. Medians, minimums and maximums are over repetitions.
 *
 * Before each turn the driver waits until every other thread of the process sleeps, so a
 * library's workers still spinning after its turn do not steal a core from the next one.
 *
 * Output: DIR/gemv.csv (every row) and DIR/gemv-meta.csv (machine, versions, prepared layouts,
 * probe, environment, quiescence), which bench/report.py renders into DIR/gemv.md, gemv_m1.dat,
 * gemv_m4.dat and gemv.png. Progress goes to stderr.
 *
 * --gemm: the GEMM (many activation rows per weight matrix: a prompt's prefill, a detokenizer
 * call's frames). M = 8, 16, 32, 64, 300 (or --m), hot weights only (the GEMM is compute-bound),
 * no read probe; instead the f32 FMA peak of 1 and 2 threads is measured beside the cases (an
 * AVX-512 FMA loop taking its turn in every repetition, like the read probe) and each row says its
 * share of it: M N K / time over the peak's FMA lanes per second. Output DIR/gemm.csv and gemm-meta.csv (bench/report.py gemm). */
#define _GNU_SOURCE /* environ, syscall(SYS_gettid), strncasecmp */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fkb.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* ---- the contenders: adding one is adding a row ------------------------------------------- */

static const fkb_contender contenders[] = {
#ifdef FK_BENCH_WITH_FLASHKERN
  { "flashkern exact packed", fkb_flashkern_version, 2, FKB_TEAM, FKB_F_BITEXACT | FKB_F_FK_EXACT,
    fkb_flashkern_prepare_exact_packed, fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output,
    fkb_flashkern_finish },
  { "flashkern fast blocked", fkb_flashkern_version, 2, FKB_TEAM, FKB_F_FK_FAST, fkb_flashkern_prepare_fast_blocked,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
  { "flashkern fast packed", fkb_flashkern_version, 2, FKB_TEAM, 0, fkb_flashkern_prepare_fast_packed,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
  { "flashkern exact", fkb_flashkern_version, 2, FKB_TEAM, FKB_F_BITEXACT,
    fkb_flashkern_prepare_exact, fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output,
    fkb_flashkern_finish },
  { "flashkern fast", fkb_flashkern_version, 2, FKB_TEAM, 0, fkb_flashkern_prepare_fast,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
  { "flashkern exact f32-out", fkb_flashkern_version, 2, FKB_TEAM, FKB_F_BITEXACT | FKB_F_F32_OUT,
    fkb_flashkern_prepare_exact_f32, fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output,
    fkb_flashkern_finish },
  { "flashkern fast f32-out", fkb_flashkern_version, 2, FKB_TEAM, 0, fkb_flashkern_prepare_fast_f32,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
  { "flashkern exact q8 packed", fkb_flashkern_version, 34.0 / 32, FKB_TEAM, 0, fkb_flashkern_prepare_q8,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
  { "flashkern exact q4 packed", fkb_flashkern_version, 18.0 / 32, FKB_TEAM, 0, fkb_flashkern_prepare_q4,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
  { "flashkern fast q8 packed", fkb_flashkern_version, 34.0 / 32, FKB_TEAM, FKB_F_QX, fkb_flashkern_prepare_q8_fast,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
  { "flashkern fast q4 packed", fkb_flashkern_version, 18.0 / 32, FKB_TEAM, FKB_F_QX, fkb_flashkern_prepare_q4_fast,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
  { "flashkern fast q8 packed ymm", fkb_flashkern_version, 34.0 / 32, FKB_TEAM, FKB_F_QX, fkb_flashkern_prepare_q8_ymm,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
  { "flashkern fast q4 packed ymm", fkb_flashkern_version, 18.0 / 32, FKB_TEAM, FKB_F_QX, fkb_flashkern_prepare_q4_ymm,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
  { "flashkern fast q8 packed avx2", fkb_flashkern_version, 34.0 / 32, FKB_TEAM, FKB_F_QX, fkb_flashkern_prepare_q8_avx2,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
  { "flashkern fast q4 packed avx2", fkb_flashkern_version, 18.0 / 32, FKB_TEAM, FKB_F_QX, fkb_flashkern_prepare_q4_avx2,
    fkb_flashkern_select, fkb_flashkern_run, fkb_flashkern_output, fkb_flashkern_finish },
#endif
  { "oneDNN prepacked", fkb_onednn_version, 2, FKB_LIBRARY, 0, fkb_onednn_prepare_packed, fkb_onednn_select,
    fkb_onednn_run, fkb_onednn_output, fkb_onednn_finish },
  { "oneDNN row-major", fkb_onednn_version, 2, FKB_LIBRARY, 0, fkb_onednn_prepare_rowmajor, fkb_onednn_select,
    fkb_onednn_run, fkb_onednn_output, fkb_onednn_finish },
  { "OpenBLAS f32", fkb_openblas_version, 4, FKB_LIBRARY, 0, fkb_openblas_prepare, fkb_openblas_select,
    fkb_openblas_run, fkb_openblas_output, fkb_openblas_finish },
  { "autovec (gcc -O3 -march=native)", fkb_autovec_version, 2, FKB_TEAM, FKB_F_BITEXACT, fkb_autovec_prepare,
    fkb_autovec_select, fkb_autovec_run, fkb_autovec_output, fkb_autovec_finish },
};
enum { NC = (int)(sizeof contenders / sizeof contenders[0]), NE = NC + 1 /* the probe is entry NC */ };

/* The OpenBLAS kernel set (--openblas-core), forced through OPENBLAS_CORETYPE so that neither
 * the environment (this machine's sets Haswell, AVX2) nor OpenBLAS's own detection (which falls
 * back to SSE3 kernels on CPUs it does not know) decides. Cooperlake is what OpenBLAS 0.3.21
 * itself picks on this Zen 5: the AVX-512 SkylakeX kernels plus a bf16 sbgemm this bench does
 * not call. It is forced only on CPUs with AVX-512 F/BW/DQ/VL. */
#define FKB_OPENBLAS_CORE "Cooperlake"


enum { MODE_COLD, MODE_HOT, NMODES };
static const char *const mode_name[NMODES] = { "cold", "hot" };

/* The Ms of the run (--m, --gemm), and whether it is the GEMM run (hot only, FMA peak). */
static int64_t mlist[FKB_MS_MAX] = { 1, 2, 3, 4 };
static int nm = 4, gemm_mode;
static int64_t m_max = 4;
static int mode_on(int mode) { return !gemm_mode || mode == MODE_HOT; }

#define PROBE_BYTES (((size_t)1 << 30) + ((size_t)128 << 20)) /* 1.125 GiB */
#define BATCH_BYTES ((double)(16 << 20)) /* a timed batch reads at least this much (bf16 bytes) */
#define CHECK_SEED 0x5eed

/* ---- small utilities ---------------------------------------------------------------------- */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("fk_bench_gemv: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545f4914f6cdd1du;
}
static float uniform(void) { return (float)((double)(rng() >> 40) / (double)(1u << 24)) * 2.0f - 1.0f; }

/* ---- the team: one persistent helper per extra thread ------------------------------------- *
 * The main thread is member 0. A call stores the job, bumps the generation (the release), runs
 * member 0's share and spins until the helpers have counted themselves done. A helper spins on
 * the generation for SPIN_S after its last job, then sleeps on a condition variable, so an idle
 * team never holds a core while another contender's turn runs. */

typedef void (*job_fn)(void *state, size_t copy, int tid, int nthreads);

#define SPIN_S 200e-6

static struct team {
  int size;
  pthread_t th[FKB_THREADS_MAX];
  int tids[FKB_THREADS_MAX];
  atomic_uint gen;
  atomic_int done, sleeping, quit;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  job_fn fn;
  void *state;
  size_t copy;
  int nthreads;
} team;

static unsigned wait_generation(unsigned seen) {
  double t0 = now();
  for (unsigned i = 1;; i++) {
    unsigned g = atomic_load_explicit(&team.gen, memory_order_acquire);
    if (g != seen) return g;
    cpu_relax();
    if ((i & 255) == 0 && now() - t0 > SPIN_S) break;
  }
  pthread_mutex_lock(&team.mu);
  atomic_fetch_add(&team.sleeping, 1); /* seq_cst, paired with the release's load of `sleeping` */
  unsigned g;
  while ((g = atomic_load(&team.gen)) == seen) pthread_cond_wait(&team.cv, &team.mu);
  atomic_fetch_sub(&team.sleeping, 1);
  pthread_mutex_unlock(&team.mu);
  return g;
}

static void *team_member(void *arg) {
  int tid = *(const int *)arg;
  unsigned seen = 0;
  for (;;) {
    seen = wait_generation(seen);
    if (atomic_load(&team.quit)) return NULL;
    if (tid < team.nthreads) {
      team.fn(team.state, team.copy, tid, team.nthreads);
      atomic_fetch_add_explicit(&team.done, 1, memory_order_release);
    }
  }
}

static void team_start(int size) {
  team.size = size;
  pthread_mutex_init(&team.mu, NULL);
  pthread_cond_init(&team.cv, NULL);
  for (int t = 1; t < size; t++) {
    team.tids[t] = t;
    if (pthread_create(&team.th[t], NULL, team_member, &team.tids[t]) != 0) die("pthread_create failed");
  }
}

static void team_release(void) {
  atomic_fetch_add(&team.gen, 1); /* seq_cst: a helper either sees it or is counted in `sleeping` */
  if (atomic_load(&team.sleeping)) {
    pthread_mutex_lock(&team.mu);
    pthread_cond_broadcast(&team.cv);
    pthread_mutex_unlock(&team.mu);
  }
}

/* Runs fn on members 0..nthreads-1 and returns when the last one is done. */
static void team_run(job_fn fn, void *state, size_t copy, int nthreads) {
  if (nthreads <= 1) {
    fn(state, copy, 0, 1);
    return;
  }
  team.fn = fn;
  team.state = state;
  team.copy = copy;
  team.nthreads = nthreads;
  atomic_store_explicit(&team.done, 0, memory_order_relaxed);
  team_release();
  fn(state, copy, 0, nthreads);
  while (atomic_load_explicit(&team.done, memory_order_acquire) < nthreads - 1) cpu_relax();
}

static void noop_job(void *state, size_t copy, int tid, int nthreads) {
  (void)state, (void)copy, (void)tid, (void)nthreads;
}

static void team_stop(void) {
  atomic_store(&team.quit, 1);
  team_release();
  for (int t = 1; t < team.size; t++) pthread_join(team.th[t], NULL);
}

/* ---- quiescence ---------------------------------------------------------------------------- *
 * oneDNN's OpenMP workers and OpenBLAS's pthreads spin for a while after a call before they
 * sleep; on two cores a spinning worker halves the next contender's second thread. Before
 * each turn the driver polls /proc/self/task until no other thread is runnable. */

static pid_t main_tid;
static double quiesce_total, quiesce_max;
static int quiesce_timeouts;

static int others_running(void) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return 0;
  int running = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] < '0' || de->d_name[0] > '9' || atoi(de->d_name) == main_tid) continue;
    char path[300], buf[512];
    snprintf(path, sizeof path, "/proc/self/task/%s/stat", de->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    const char *p = strrchr(buf, ')');
    if (p && p[1] == ' ' && p[2] == 'R') running++;
  }
  closedir(d);
  return running;
}

static void quiesce(void) {
  double t0 = now(), t;
  while (others_running()) {
    if (now() - t0 > 0.5) {
      quiesce_timeouts++;
      break;
    }
    struct timespec ts = { 0, 100000 };
    nanosleep(&ts, NULL);
  }
  t = now() - t0;
  quiesce_total += t;
  if (t > quiesce_max) quiesce_max = t;
}

/* ---- options ------------------------------------------------------------------------------- */

typedef struct shape {
  int64_t n, k;
} shape;

static const shape default_shapes[] = { { 2048, 2048 }, { 8192, 2048 }, { 2048, 8192 }, { 6144, 2048 },
                                        { 4608, 1024 }, { 1024, 4608 }, { 1282, 512 } };

static struct options {
  int reps, threads, quick, openblas_core_set;
  const char *out, *openblas_core, *only, *ms;
  shape shapes[32];
  int nshapes;
} opt = { .reps = 21, .threads = FKB_THREADS_MAX, .out = "bench/results",
        .openblas_core = FKB_OPENBLAS_CORE };

static void usage(FILE *f) {
  fprintf(f, "usage: fk_bench_gemv [--quick] [--reps N] [--shapes NxK,...] [--threads 1|2] [--out DIR]\n"
             "                     [--only NAME,...] [--openblas-core NAME] [--gemm] [--m M,...]\n"
             "  --quick          %d repetitions instead of %d: a smoke run\n"
             "  --reps N         repetitions (each one sample per contender per case)\n"
             "  --shapes LIST    N x K weight shapes (N output rows); default: all seven\n"
             "  --threads T      1, or 1 and 2 (default: up to 2, at most the online CPUs)\n"
             "  --only LIST      run only the contenders whose names contain one of these (case-insensitive)\n"
             "  --out DIR        where gemv.csv and gemv-meta.csv go (default %s); bench/report.py gemv\n"
             "                   renders them into gemv.md and the plot\n"
             "  --openblas-core NAME  OPENBLAS_CORETYPE for the run (default %s; the bench re-executes\n"
             "                   itself when the environment names another)\n"
             "  --gemm           the GEMM run: M = 8,16,32,64,300, hot only, the FMA peak instead of the\n"
             "                   read probe; gemm.csv and gemm-meta.csv (bench/report.py gemm)\n"
             "  --m LIST         the Ms (default 1,2,3,4; with --gemm 8,16,32,64,300; at most %d, each\n"
             "                   1..%d)\n",
          3, 21, "bench/results", FKB_OPENBLAS_CORE, FKB_MS_MAX, FKB_GEMM_M_MAX);
}

static void parse_shapes(const char *s) {
  opt.nshapes = 0;
  while (*s) {
    char *end;
    long long n = strtoll(s, &end, 10);
    if (end == s || (*end != 'x' && *end != 'X')) die("bad shape list at '%s' (want NxK,NxK,...)", s);
    s = end + 1;
    long long k = strtoll(s, &end, 10);
    if (end == s || n < 1 || k < 1) die("bad shape list at '%s'", s);
    if (opt.nshapes == (int)(sizeof opt.shapes / sizeof opt.shapes[0])) die("too many shapes");
    opt.shapes[opt.nshapes++] = (shape){ n, k };
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') die("bad shape list at '%s'", end);
  }
  if (!opt.nshapes) die("empty shape list");
}

static void parse_options(int argc, char **argv) {
  int reps_set = 0;
  memcpy(opt.shapes, default_shapes, sizeof default_shapes);
  opt.nshapes = (int)(sizeof default_shapes / sizeof default_shapes[0]);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick")) opt.quick = 1;
    else if (!strcmp(a, "--gemm")) gemm_mode = 1;
    else if (!strcmp(a, "--help") || !strcmp(a, "-h")) usage(stdout), exit(0);
    else if (!v) usage(stderr), die("%s: missing value or unknown option", a);
    else if (!strcmp(a, "--reps")) opt.reps = atoi(v), reps_set = 1, i++;
    else if (!strcmp(a, "--shapes")) parse_shapes(v), i++;
    else if (!strcmp(a, "--threads")) opt.threads = atoi(v), i++;
    else if (!strcmp(a, "--out")) opt.out = v, i++;
    else if (!strcmp(a, "--openblas-core")) opt.openblas_core = v, opt.openblas_core_set = 1, i++;
    else if (!strcmp(a, "--only")) opt.only = v, i++;
    else if (!strcmp(a, "--m")) opt.ms = v, i++;
    else usage(stderr), die("unknown option %s", a);
  }
  if (opt.quick && !reps_set) opt.reps = 3;
  if (gemm_mode) {
    static const int64_t gemm_ms[] = { 8, 16, 32, 64, 300 };
    nm = 5;
    memcpy(mlist, gemm_ms, sizeof gemm_ms);
  }
  if (opt.ms) {
    nm = 0;
    for (const char *q = opt.ms; *q;) {
      char *end;
      long long m = strtoll(q, &end, 10);
      if (end == q || m < 1 || m > FKB_GEMM_M_MAX || (*end && *end != ',')) die("bad --m list at '%s'", q);
      if (nm == FKB_MS_MAX) die("--m: at most %d values", FKB_MS_MAX);
      mlist[nm++] = m;
      q = *end ? end + 1 : end;
    }
    if (!nm) die("empty --m list");
  }
  m_max = 0;
  for (int i = 0; i < nm; i++) m_max = mlist[i] > m_max ? mlist[i] : m_max;
  if (opt.reps < 1) die("--reps must be at least 1");
  if (opt.threads < 1 || opt.threads > FKB_THREADS_MAX) die("--threads must be 1..%d", FKB_THREADS_MAX);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0 && opt.threads > online) opt.threads = (int)online;
}

/* Is the contender chosen by --only (a comma list of case-insensitive substrings)? */
static int selected(const char *name) {
  if (!opt.only) return 1;
  for (const char *p = opt.only; *p;) {
    size_t len = strcspn(p, ",");
    for (const char *q = name; len && *q; q++)
      if (!strncasecmp(q, p, len)) return 1;
    p += len + (p[len] == ',');
  }
  return 0;
}

/* ---- the environment the libraries read at load time ---------------------------------------- */

/* What OPENBLAS_CORETYPE was before the bench set it (fkb_openblas_coretype). */
static char coretype_was[128] = "";

/* ---- startup self-check: autovec == the scalar contract model, bit for bit ------------------ */

static float wide_range(void) { /* magnitudes 2^-133 .. 2^6: denormal bf16 weights included */
  float v = uniform();
  int e = (int)(rng() % 140) - 133;
  return ldexpf(v, e);
}

static void self_check(void) {
  static const int64_t ks[] = { 1, 7, 63, 64, 65, 127, 130, 200, 1000 };
  enum { ROWS = 21 };
  rng_state = CHECK_SEED;
  for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
    int64_t k = ks[t], ldw = k + 3, ldx = k + 5;
    uint16_t *w = fkb_alloc((size_t)(ROWS * ldw) * sizeof *w);
    float *x = fkb_alloc((size_t)(FKB_M_MAX * ldx) * sizeof *x);
    uint16_t ref[FKB_M_MAX * ROWS], got[FKB_M_MAX * ROWS];
    if (!w || !x) die("out of memory");
    for (int64_t i = 0; i < ROWS * ldw; i++) w[i] = fkb_f32_to_bf16(t % 2 ? wide_range() : uniform());
    for (int64_t i = 0; i < FKB_M_MAX * ldx; i++) x[i] = t % 3 == 2 ? wide_range() : uniform();
    for (int64_t i = 0; i < ldw; i++) w[5 * ldw + i] = (uint16_t)(i % 2 ? 0x8000 : 0x0000); /* +-0 row */
    for (int64_t i = 0; i < ldw; i++) w[6 * ldw + i] = w[7 * ldw + i] ^ 0x8000;             /* cancellation */
    for (int64_t m = 1; m <= FKB_M_MAX; m++) {
      memset(got, 0xff, sizeof got);
      fkb_ref_exact(w, ldw, x, ldx, m, ROWS, k, ref, NULL, ROWS);
      fkb_autovec_gemv(w, ldw, x, ldx, got, ROWS, m, k, 0, 10);
      fkb_autovec_gemv(w, ldw, x, ldx, got, ROWS, m, k, 10, ROWS);
      for (int64_t j = 0; j < m; j++)
        for (int64_t n = 0; n < ROWS; n++)
          if (got[j * ROWS + n] != ref[j * ROWS + n])
            die("self-check failed: the autovec peer (%s) differs from the scalar contract model at K=%lld M=%lld "
                "row %lld, activation %lld: 0x%04x, model 0x%04x. Was peer_autovec.c built with "
                "-ffp-contract=off and without -ffast-math?",
                fkb_autovec_compiler(), (long long)k, (long long)m, (long long)n, (long long)j,
                got[j * ROWS + n], ref[j * ROWS + n]);
    }
    fkb_free(w);
    fkb_free(x);
  }
}

/* ---- results ------------------------------------------------------------------------------- */

enum { CELL_NONE, CELL_OK, CELL_FAILED };

typedef struct cell {
  int state;
  int n;
  double *s;           /* seconds per call, one per repetition */
  double weight_bytes; /* per call */
  char why[200];
} cell;

typedef struct entry_info { /* per shape, per contender */
  int prepared;
  char detail[200];
  char why[256];
} entry_info;

static cell *cells;
static double *noise; /* per case (shape, M, mode, threads): others_share() while it ran */
static entry_info *infos;
static int nthreads_list[FKB_THREADS_MAX], nnt;

/* mi: the M's position in mlist */
static cell *cell_at(int s, int mi, int mode, int nt, int e) {
  size_t i = ((((size_t)s * FKB_MS_MAX + (size_t)mi) * NMODES + (size_t)mode) * FKB_THREADS_MAX +
              (size_t)(nt - 1)) * NE + (size_t)e;
  return &cells[i];
}

static double *noise_at(int s, int mi, int mode, int nt) {
  return &noise[(((size_t)s * FKB_MS_MAX + (size_t)mi) * NMODES + (size_t)mode) * FKB_THREADS_MAX +
                (size_t)(nt - 1)];
}

typedef fkb_stats stats;

/* ---- the FMA peak probe (the GEMM run) ------------------------------------------------------ *
 * Each member runs FMA_ITERS rounds of 12 independent f32 FMAs on full vectors (AVX-512: 16 lanes,
 * else AVX2: 8), enough chains to cover the FMA latency on two ports; its time, interleaved with
 * the contenders like the read probe, gives the case's peak in FMA lanes per second. */
enum { FMA_ITERS = 2000000 };
static int fma_lanes = 8;
static volatile float fma_sink;

#if defined(__x86_64__)
/* 12 accumulators named one by one (an array would live in memory at -O2) */
#define FMA12(T, FMA, b, c)                                                                                       \
  T a0 = b, a1 = c, a2 = b, a3 = c, a4 = b, a5 = c, a6 = b, a7 = c, a8 = b, a9 = c, a10 = b, a11 = c;           \
  for (int r = 0; r < FMA_ITERS; r++) {                                                                         \
    a0 = FMA(a0, b, c), a1 = FMA(a1, b, c), a2 = FMA(a2, b, c), a3 = FMA(a3, b, c);                              \
    a4 = FMA(a4, b, c), a5 = FMA(a5, b, c), a6 = FMA(a6, b, c), a7 = FMA(a7, b, c);                              \
    a8 = FMA(a8, b, c), a9 = FMA(a9, b, c), a10 = FMA(a10, b, c), a11 = FMA(a11, b, c);                          \
    __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5));                         \
    __asm__ volatile("" : "+v"(a6), "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));                       \
  }

__attribute__((target("avx512f"))) static void fma_loop512(void) {
  __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  FMA12(__m512, _mm512_fmadd_ps, b, c)
  __m512 s0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                            _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  fma_sink = _mm512_reduce_add_ps(_mm512_add_ps(s0, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11))));
}

__attribute__((target("avx2,fma"))) static void fma_loop256(void) {
  __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  FMA12(__m256, _mm256_fmadd_ps, b, c)
  __m256 s0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                            _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s0 = _mm256_add_ps(s0, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  float v[8];
  _mm256_storeu_ps(v, s0);
  fma_sink = v[0];
}
#endif

static void fma_probe_run(void *unused, size_t copy, int tid, int nthreads) {
  (void)unused, (void)copy, (void)tid, (void)nthreads;
#if defined(__x86_64__)
  if (fma_lanes == 16) fma_loop512();
  else fma_loop256();
#endif
}

/* FMA lanes one probe turn of nt members computes */
static double fma_probe_lanes(int nt) { return (double)nt * FMA_ITERS * 12.0 * fma_lanes; }

/* The probe's rate for a turn of `seconds` on nt threads: GB/s read, or (the GEMM run) G FMA lanes/s. */
static double probe_rate(int nt, double seconds) {
  return (gemm_mode ? fma_probe_lanes(nt) : (double)PROBE_BYTES) / seconds / 1e9;
}

static stats stats_of(const cell *c) {
  stats st = { 0, 0, 0, 0 };
  return c->state == CELL_OK ? fkb_stats_of(c->s, c->n) : st;
}

static double probe_gbps[FKB_THREADS_MAX + 1]; /* run-wide median, per thread count */
static double probe_case_min[FKB_THREADS_MAX + 1], probe_case_max[FKB_THREADS_MAX + 1];
static int probe_samples[FKB_THREADS_MAX + 1];

/* The probe's median GB/s in one case: the denominator of that case's "of probe" column. The
 * machine's 2-thread bandwidth can change during a run (on this VM it jumps between about 42
 * and 69 GB/s, as the host places the two vCPUs), so each case is compared with the probe
 * turns interleaved with it, not with a run-wide figure. 0 if the probe has no sample. */
static double probe_case(int s, int m, int mode, int nt) {
  stats st = stats_of(cell_at(s, m, mode, nt, NC));
  if (!st.ok) return 0.0;
  return probe_rate(nt, st.med);
}

/* this cell's median GB/s over its case's probe (GEMM: its FMA lanes per second over the peak's), or -1 */
static double of_probe(const cell *c, int s, int mi, int mode, int nt) {
  stats st = stats_of(c);
  double p = probe_case(s, mi, mode, nt);
  if (!st.ok || p <= 0) return -1.0;
  if (gemm_mode)
    return (double)mlist[mi] * (double)opt.shapes[s].n * (double)opt.shapes[s].k / st.med / 1e9 / p;
  return c->weight_bytes / st.med / 1e9 / p;
}

static void compute_probe_medians(void) {
  for (int ti = 0; ti < nnt; ti++) {
    int nt = nthreads_list[ti];
    cell all = { .state = CELL_OK };
    all.s = malloc((size_t)(opt.nshapes * nm * NMODES * opt.reps) * sizeof(double));
    if (!all.s) die("out of memory");
    for (int s = 0; s < opt.nshapes; s++)
      for (int mi = 0; mi < nm; mi++)
        for (int mode = 0; mode < NMODES; mode++) {
          const cell *c = cell_at(s, mi, mode, nt, NC);
          for (int i = 0; i < c->n; i++) all.s[all.n++] = c->s[i];
        }
    stats st = stats_of(&all);
    probe_gbps[nt] = st.ok ? probe_rate(nt, st.med) : 0.0;
    probe_samples[nt] = all.n;
    probe_case_min[nt] = 1e300, probe_case_max[nt] = 0;
    for (int s = 0; s < opt.nshapes; s++)
      for (int mi = 0; mi < nm; mi++)
        for (int mode = 0; mode < NMODES; mode++) {
          double g = probe_case(s, mi, mode, nt);
          if (g <= 0) continue;
          if (g < probe_case_min[nt]) probe_case_min[nt] = g;
          if (g > probe_case_max[nt]) probe_case_max[nt] = g;
        }
    free(all.s);
  }
}

/* ---- one shape ------------------------------------------------------------------------------ */

typedef struct entry {
  const fkb_contender *c;
  fkb_prepared prep;
  int prepared;
  size_t cursor; /* own rotation */
} entry;

static size_t shared_cursor, shared_count;
static int batch_of[32];
static size_t copies_of[32];
static fkb_probe *probe;
static double t_start;

static size_t next_copy(entry *e, int mode) {
  if (mode == MODE_HOT) return 0;
  if (e->prep.own_copies) return e->cursor++ % e->prep.ncopies;
  return shared_cursor++ % shared_count;
}

static void call(const entry *e, size_t copy, int nt) {
  if (e->c->threading == FKB_TEAM) team_run(e->c->run, e->prep.state, copy, nt);
  else e->c->run(e->prep.state, copy, 0, nt);
}

/* The gate: one untimed call on copy 0 compared with the references. 0 if it passes. */
/* The float64 sum over a quantized contender's own (exact, dequantized) weights, for rows j < m,
 * and the sum of |products|, at [j * n + row]; with qx (the quantized fast tier) the sum also
 * gains the activations' quantization bound: per block of 32 k, |x - q d| <= d / 2 with
 * d = max |x| / 127 (docs/design.md "The quantized fast tier"), times |w| (k a multiple of 32). */
static void ref_quant(const float *w, const fkb_problem *p, int64_t m, int qx, double *ref, double *abs_sum,
                      double *qbound) {
  for (int64_t j = 0; j < m; j++)
    for (int64_t r = 0; r < p->n; r++) {
      double s = 0, a = 0, q = 0;
      for (int64_t i = 0; i < p->k; i++) {
        double t = (double)w[r * p->k + i] * (double)p->x[j * p->k + i];
        s += t;
        a += fabs(t);
      }
      for (int64_t b = 0; qx && b < p->k / 32; b++) {
        double amax = 0, wsum = 0;
        for (int64_t i = 32 * b; i < 32 * b + 32; i++) {
          amax = fmax(amax, fabs((double)p->x[j * p->k + i]));
          wsum += fabs((double)w[r * p->k + i]);
        }
        q += wsum * amax / 254 * (1 + 0x1p-20); /* (d rounded to f32) */
      }
      ref[j * p->n + r] = s, abs_sum[j * p->n + r] = a, qbound[j * p->n + r] = q;
    }
}

static int gate(entry *e, int64_t m, int nt, const fkb_problem *p, const uint16_t *ref_bf, const float *ref_f32,
                const double *ref_f64, const double *ref_abs, float *y, char *why, size_t len) {
  if (e->c->select(e->prep.state, m, nt, why, len)) return -1;
  call(e, 0, nt);
  e->c->output(e->prep.state, y);
  double *qref = NULL, *qabs = NULL, *qbound = NULL;
  if (e->prep.wdeq) {
    qref = malloc((size_t)(m * p->n) * sizeof *qref), qabs = malloc((size_t)(m * p->n) * sizeof *qabs);
    qbound = malloc((size_t)(m * p->n) * sizeof *qbound);
    if (!qref || !qabs || !qbound) die("out of memory");
    ref_quant(e->prep.wdeq, p, m, (e->c->flags & FKB_F_QX) != 0, qref, qabs, qbound);
    ref_f64 = qref, ref_abs = qabs;
  }
  size_t bad = 0, first = 0;
  for (int64_t i = 0; i < m * p->n; i++) {
    int ok;
    if (e->prep.wdeq) {
      /* the exact tier over the quantized weights: its f32 sum's error (far below 1e-5 of the sum of
       * |products| at these k) and the output's bf16 rounding; the fast tier adds its activation
       * quantization bound (ref_quant) */
      ok = fabs((double)y[i] - ref_f64[i]) <= 0x1p-8 * (fabs(ref_f64[i]) + qbound[i]) + 1e-5 * ref_abs[i] + qbound[i] +
                                                 1e-30;
    } else if (e->c->flags & FKB_F_BITEXACT) {
      uint32_t got, want;
      memcpy(&got, &y[i], sizeof got);
      if (e->c->flags & FKB_F_F32_OUT) memcpy(&want, &ref_f32[i], sizeof want);
      else want = (uint32_t)ref_bf[i] << 16;
      ok = got == want;
    } else {
      ok = fabs((double)y[i] - ref_f64[i]) <= 1e-2 * ref_abs[i] + 1e-30;
    }
    if (!ok && bad++ == 0) first = (size_t)i;
  }
  double got_ref = ref_f64[first];
  free(qref);
  free(qabs);
  free(qbound);
  if (!bad) return 0;
  int64_t j = (int64_t)first / p->n, n = (int64_t)first % p->n;
  snprintf(why, len, "wrong result at M=%lld %dT: y[%lld][%lld] = %.9g, %s %.9g (%zu of %lld outputs differ)",
           (long long)m, nt, (long long)j, (long long)n, (double)y[first],
           e->prep.wdeq ? "float64 reference (quantized weights)" :
           (e->c->flags & FKB_F_BITEXACT) ? "contract model (bit-exact)" : "float64 reference",
           (e->c->flags & FKB_F_BITEXACT) ? ((e->c->flags & FKB_F_F32_OUT) ? (double)ref_f32[first]
                                                                          : (double)fkb_bf16_to_f32(ref_bf[first]))
                                          : got_ref,
           bad, (long long)(m * p->n));
  return -1;
}

static int cases_done, cases_total;

static void progress_line(int s, int mi, int mode, int nt) {
  double el = now() - t_start;
  cases_done++;
  fprintf(stderr, "[%7.1fs, case %d/%d, ~%.0f s left] %lldx%lld M=%d %s %dT:", el, cases_done, cases_total,
          el / cases_done * (cases_total - cases_done), (long long)opt.shapes[s].n, (long long)opt.shapes[s].k,
          (int)mlist[mi], mode_name[mode], nt);
  for (int e = 0; e < NE; e++) {
    stats st = stats_of(cell_at(s, mi, mode, nt, e));
    if (!st.ok) continue;
    if (e == NC)
      fprintf(stderr, " | %s %.1f %s", gemm_mode ? "FMA peak" : "probe", probe_rate(nt, st.med),
              gemm_mode ? "G lanes/s" : "GB/s");
    else fprintf(stderr, " | %s %.1f us", contenders[e].name, st.med * 1e6);
  }
  double busy = *noise_at(s, mi, mode, nt);
  if (busy >= FKB_NOISY) fprintf(stderr, " | OTHER PROCESSES %.0f%% of the CPUs", 100.0 * busy);
  fputc('\n', stderr);
}

typedef struct timed_ctx {
  entry *es;
  const int *live;
  int s, m, mode, nt, batch;
} timed_ctx;

/* One entry's turn in a case: wait for the process's other threads to sleep, one untimed call
 * (it wakes the library's or the team's threads), then a timed batch: one sample. */
static void timed_turn(void *ctx, int rep, int e) {
  const timed_ctx *t = ctx;
  (void)rep;
  if (!t->live[e]) return;
  cell *c = cell_at(t->s, t->m, t->mode, t->nt, e);
  if (e == NC) {
    quiesce();
    team_run(noop_job, NULL, 0, t->nt); /* wake the helper; the read itself is the sample */
    double a = now();
    team_run(gemm_mode ? fma_probe_run : fkb_probe_run, probe, 0, t->nt);
    c->s[c->n++] = now() - a;
    return;
  }
  entry *en = &t->es[e];
  char why[200];
  if (en->c->select(en->prep.state, mlist[t->m], t->nt, why, sizeof why)) die("%s: select: %s", en->c->name, why);
  quiesce();
  call(en, next_copy(en, t->mode), t->nt);
  double a = now();
  for (int b = 0; b < t->batch; b++) call(en, next_copy(en, t->mode), t->nt);
  c->s[c->n++] = (now() - a) / t->batch;
}

static void run_shape(int s) {
  const int64_t N = opt.shapes[s].n, K = opt.shapes[s].k;
  const size_t bytes = (size_t)(N * K) * sizeof(uint16_t);
  double t0 = now();

  /* the master weights and activations, then the shared copies */
  rng_state = 0x1234567u + (uint64_t)s;
  uint16_t *master = fkb_alloc(bytes);
  float *x = fkb_alloc((size_t)(m_max * K) * sizeof(float));
  if (!master || !x) die("out of memory");
  for (int64_t i = 0; i < N * K; i++) master[i] = fkb_f32_to_bf16(uniform());
  for (int64_t i = 0; i < m_max * K; i++) x[i] = uniform();
  shared_count = fkb_copy_count(bytes);
  size_t stride = fkb_copy_stride(bytes), region_bytes = shared_count * stride;
  char *region = fkb_region_alloc(region_bytes);
  const uint16_t **w = malloc(shared_count * sizeof *w);
  if (!region || !w) die("out of memory: %zu copies of %zu bytes", shared_count, bytes);
  for (size_t i = 0; i < shared_count; i++) {
    memcpy(region + i * stride, master, bytes);
    w[i] = (const uint16_t *)(const void *)(region + i * stride);
  }
  fkb_copies copies = { .w = w, .count = shared_count };
  fkb_problem problem = { .n = N, .k = K, .x = x, .nthreads_max = opt.threads, .ms = mlist, .nms = nm,
                          .m_max = m_max };
  shared_cursor = 0;

  /* the references, on the master weights (every copy holds the same bits) */
  uint16_t *ref_bf = fkb_alloc((size_t)(m_max * N) * sizeof(uint16_t));
  float *ref_f32 = fkb_alloc((size_t)(m_max * N) * sizeof(float));
  double *ref_f64 = fkb_alloc((size_t)(m_max * N) * sizeof(double));
  double *ref_abs = fkb_alloc((size_t)(m_max * N) * sizeof(double));
  float *y = fkb_alloc((size_t)(m_max * N) * sizeof(float));
  if (!ref_bf || !ref_f32 || !ref_f64 || !ref_abs || !y) die("out of memory");
  fkb_ref_exact(master, K, x, K, m_max, N, K, ref_bf, ref_f32, N);
  fkb_ref_f64(master, K, x, K, m_max, N, K, ref_f64, ref_abs, N);

  entry es[NC];
  for (int e = 0; e < NC; e++) {
    entry_info *info = &infos[(size_t)s * NE + (size_t)e];
    es[e] = (entry){ .c = &contenders[e] };
    char why[256] = "";
    double tp = now();
    if (!selected(contenders[e].name)) snprintf(info->why, sizeof info->why, "left out by --only %s", opt.only);
    else if (contenders[e].prepare(&problem, &copies, &es[e].prep, why, sizeof why) == 0) {
      es[e].prepared = info->prepared = 1;
      snprintf(info->detail, sizeof info->detail, "%s", es[e].prep.detail);
      fprintf(stderr, "[%7.1fs]   %s prepared in %.1f s: %s\n", now() - t_start, contenders[e].name, now() - tp,
              es[e].prep.detail);
    } else {
      snprintf(info->why, sizeof info->why, "%s", why);
      fprintf(stderr, "fk_bench_gemv: %s sits out %lldx%lld: %s\n", contenders[e].name, (long long)N, (long long)K,
              why);
    }
  }
  infos[(size_t)s * NE + NC].prepared = 1;
  fprintf(stderr, "[%7.1fs] %lldx%lld: prepared in %.1f s (%zu shared bf16 copies of %.2f MiB)\n", now() - t_start,
          (long long)N, (long long)K, now() - t0, shared_count, (double)bytes / 1048576.0);

  const int batch = (int)ceil(BATCH_BYTES / (double)bytes);
  batch_of[s] = batch;
  copies_of[s] = shared_count;
  for (int mi = 0; mi < nm; mi++) {
    int64_t m = mlist[mi];
    int live[FKB_THREADS_MAX + 1][NE];
    for (int ti = 0; ti < nnt; ti++) {
      int nt = nthreads_list[ti];
      for (int e = 0; e < NE; e++) {
        live[nt][e] = 0;
        char why[200] = "";
        if (e == NC) live[nt][e] = 1;
        else if (!es[e].prepared)
          snprintf(why, sizeof why, "not prepared: %.180s", infos[(size_t)s * NE + (size_t)e].why);
        else if (gate(&es[e], m, nt, &problem, ref_bf, ref_f32, ref_f64, ref_abs, y, why, sizeof why) == 0)
          live[nt][e] = 1;
        else fprintf(stderr, "fk_bench_gemv: %s is not timed: %s\n", contenders[e].name, why);
        for (int mode = 0; mode < NMODES; mode++) {
          cell *c = cell_at(s, mi, mode, nt, e);
          c->state = live[nt][e] ? CELL_OK : CELL_FAILED;
          snprintf(c->why, sizeof c->why, "%s", why);
          c->weight_bytes = e == NC ? (double)PROBE_BYTES : es[e].prep.weight_bytes;
          c->s = calloc((size_t)opt.reps, sizeof(double));
          if (!c->s) die("out of memory");
        }
      }
    }
    for (int mode = 0; mode < NMODES; mode++)
      for (int ti = 0; ti < nnt && mode_on(mode); ti++) {
        int nt = nthreads_list[ti];
        fkb_cpu_mark mark = fkb_cpu_mark_now();
        timed_ctx ctx = { es, live[nt], s, mi, mode, nt, batch };
        fkb_interleave(opt.reps, NE, timed_turn, &ctx);
        *noise_at(s, mi, mode, nt) = fkb_others_share(mark, fkb_cpu_mark_now());
        progress_line(s, mi, mode, nt);
      }
  }

  for (int e = 0; e < NC; e++)
    if (es[e].prepared) es[e].c->finish(es[e].prep.state);
  fkb_region_free(region, region_bytes);
  free(w);
  fkb_free(master);
  fkb_free(x);
  fkb_free(ref_bf);
  fkb_free(ref_f32);
  fkb_free(ref_f64);
  fkb_free(ref_abs);
  fkb_free(y);
}

/* ---- the results: gemv.csv, gemv-meta.csv (bench/report.py writes gemv.md and the plot) ------------ */

static int fk_index(unsigned flag) {
  for (int e = 0; e < NC; e++)
    if (contenders[e].flags & flag) return e;
  return -1;
}

static void results(fkb_out *o) {
  const int ifx = fk_index(FKB_F_FK_EXACT), iff = fk_index(FKB_F_FK_FAST);
  for (int e = 0; e < NC; e++) {
    const fkb_contender *c = &contenders[e];
    fkb_meta(o, "version", c->name, "%s", c->version());
    fkb_meta(o, "bytes_per_weight", c->name, "%g", c->bytes_per_weight);
    fkb_meta(o, "threading", c->name, "%s", c->threading == FKB_TEAM ? "team" : "library");
    for (int s = 0; s < opt.nshapes; s++) {
      const entry_info *in = &infos[(size_t)s * NE + (size_t)e];
      char item[300];
      snprintf(item, sizeof item, "%s|%lldx%lld", c->name, (long long)opt.shapes[s].n, (long long)opt.shapes[s].k);
      if (in->prepared) fkb_meta(o, "prepared", item, "%s", in->detail);
      else fkb_meta(o, "not_prepared", item, "%s", in->why);
    }
  }
#ifndef FK_BENCH_WITH_FLASHKERN
  fkb_meta(o, "no_flashkern", "", "bench/contender_flashkern.c is compiled with FK_BENCH_WITH_FLASHKERN");
#endif
  fkb_meta(o, "probe", "kind", "%s", fkb_probe_kind(probe));
  if (gemm_mode) fkb_meta(o, "fma_probe", "lanes", "%d", fma_lanes); /* probe_gbps: G FMA lanes/s then */
  fkb_meta_num(o, "probe", "bytes", (double)PROBE_BYTES);
  for (int ti = 0; ti < nnt; ti++) {
    char t[16];
    snprintf(t, sizeof t, "%d", nthreads_list[ti]);
    fkb_meta_num(o, "probe_gbps", t, probe_gbps[nthreads_list[ti]]);
    fkb_meta(o, "probe_samples", t, "%d", probe_samples[nthreads_list[ti]]);
  }
  fkb_meta(o, "reps", "", "%d", opt.reps);
  fkb_meta_num(o, "rotate_bytes", "", (double)FKB_ROTATE_BYTES);
  fkb_meta(o, "env", "OPENBLAS_CORETYPE", "%s", getenv("OPENBLAS_CORETYPE") ? getenv("OPENBLAS_CORETYPE") : "(unset)");
  fkb_meta(o, "env", "OPENBLAS_CORETYPE was", "%s", coretype_was);
  for (char **ev = environ; *ev; ev++)
    if ((!strncmp(*ev, "OPENBLAS_", 9) && strncmp(*ev, "OPENBLAS_CORETYPE=", 18)) || !strncmp(*ev, "OMP_", 4) ||
        !strncmp(*ev, "GOMP_", 5) || !strncmp(*ev, "DNNL_", 5) || !strncmp(*ev, "ONEDNN_", 7) ||
        !strncmp(*ev, "FK_", 3)) {
      char name[256];
      size_t len = strcspn(*ev, "=");
      snprintf(name, sizeof name, "%.*s", (int)len, *ev);
      fkb_meta(o, "env", name, "%s", *ev + len + ((*ev)[len] == '='));
    }
  fkb_meta_num(o, "quiesce", "total_s", quiesce_total);
  fkb_meta_num(o, "quiesce", "max_s", quiesce_max);
  fkb_meta(o, "quiesce", "timeouts", "%d", quiesce_timeouts);
  for (int s = 0; s < opt.nshapes; s++) {
    char shp[64];
    snprintf(shp, sizeof shp, "%lldx%lld", (long long)opt.shapes[s].n, (long long)opt.shapes[s].k);
    fkb_meta(o, "batch", shp, "%d", batch_of[s]);
    fkb_meta(o, "shared_copies", shp, "%zu", copies_of[s]);
  }

  for (int s = 0; s < opt.nshapes; s++)
    for (int mi = 0; mi < nm; mi++)
      for (int mode = 0; mode < NMODES; mode++)
        for (int ti = 0; ti < nnt && mode_on(mode); ti++) {
          int nt = nthreads_list[ti];
          int64_t m = mlist[mi];
          stats bx = { 0, 0, 0, 0 }, bf = { 0, 0, 0, 0 };
          if (ifx >= 0) bx = stats_of(cell_at(s, mi, mode, nt, ifx));
          if (iff >= 0) bf = stats_of(cell_at(s, mi, mode, nt, iff));
          for (int e = 0; e < NE; e++) {
            const cell *c = cell_at(s, mi, mode, nt, e);
            stats st = stats_of(c);
            fkb_col_int(o, opt.shapes[s].n);
            fkb_col_int(o, opt.shapes[s].k);
            fkb_col_int(o, m);
            fkb_col_word(o, mode_name[mode]);
            fkb_col_int(o, nt);
            fkb_col_str(o, e == NC ? (gemm_mode ? "FMA peak probe" : "read-bandwidth probe") : contenders[e].name);
            fkb_col_word(o, st.ok ? "ok" : "not timed");
            if (st.ok) {
              double fr = of_probe(c, s, mi, mode, nt);
              fkb_col_num(o, st.med * 1e6), fkb_col_num(o, st.min * 1e6), fkb_col_num(o, st.max * 1e6);
              fkb_col_num(o, c->weight_bytes / st.med / 1e9);
              if (fr >= 0) fkb_col_num(o, fr);
              else fkb_col_empty(o);
              if (e != NC && bx.ok) fkb_col_num(o, bx.med / st.med);
              else fkb_col_empty(o);
              if (e != NC && bf.ok) fkb_col_num(o, bf.med / st.med);
              else fkb_col_empty(o);
              fkb_col_int(o, c->n);
              fkb_col_num(o, c->weight_bytes);
              fkb_col_num(o, probe_case(s, mi, mode, nt));
            } else {
              for (int i = 0; i < 7; i++) fkb_col_empty(o);
              fkb_col_int(o, 0);
              fkb_col_empty(o), fkb_col_empty(o);
            }
            fkb_col_num(o, *noise_at(s, mi, mode, nt));
            fkb_col_str(o, st.ok ? "" : c->why[0] ? c->why : "not run");
            fkb_row_end(o);
          }
        }
}

/* ---- main ------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  parse_options(argc, argv);
  fkb_openblas_coretype("fk_bench_gemv", argv, opt.openblas_core, opt.openblas_core_set, coretype_was,
                        sizeof coretype_was);
  main_tid = (pid_t)syscall(SYS_gettid);
  t_start = now();

  const char *core = fkb_openblas_corename();
  const char *want = getenv("OPENBLAS_CORETYPE");
  if (want && strcasecmp(core, want) != 0)
    fprintf(stderr, "fk_bench_gemv: warning: OPENBLAS_CORETYPE=%s but OpenBLAS runs core %s\n", want, core);

#if defined(__x86_64__)
  __builtin_cpu_init();
  fma_lanes = __builtin_cpu_supports("avx512f") ? 16 : 8;
#endif
  self_check();
  fprintf(stderr, "fk_bench_gemv: self-check passed: the autovec peer matches the scalar contract model bit for bit\n");

  /* the GEMM run: of_probe is the share of the FMA peak, probe_gbps_case the peak's G lanes/s */
  fkb_out *out = fkb_out_open("fk_bench_gemv", opt.out, gemm_mode ? "gemm" : "gemv",
                              gemm_mode ? "n,k,m,mode,threads,contender,status,median_us,min_us,max_us,gbps,of_fma_peak,"
                                          "fk_exact_over_this,fk_fast_over_this,samples,weight_bytes,peak_glanes_case,"
                                          "others_cpu_share,why"
                                        : "n,k,m,mode,threads,contender,status,median_us,min_us,max_us,gbps,of_probe,"
                                          "fk_exact_over_this,fk_fast_over_this,samples,weight_bytes,probe_gbps_case,"
                                          "others_cpu_share,why", argc, argv);
  nnt = 0;
  for (int t = 1; t <= opt.threads; t++) nthreads_list[nnt++] = t;
  team_start(opt.threads);

  for (int e = 0; e < NC; e++) fprintf(stderr, "  %-34s %s\n", contenders[e].name, contenders[e].version());

  probe = fkb_probe_create(PROBE_BYTES);
  if (!probe) die("out of memory for the %.2f GiB probe buffer", (double)PROBE_BYTES / (double)(1u << 30));
  cells = calloc((size_t)opt.nshapes * FKB_MS_MAX * NMODES * FKB_THREADS_MAX * NE, sizeof *cells);
  noise = calloc((size_t)opt.nshapes * FKB_MS_MAX * NMODES * FKB_THREADS_MAX, sizeof *noise);
  if (!noise) die("out of memory");
  infos = calloc((size_t)opt.nshapes * NE, sizeof *infos);
  if (!cells || !infos) die("out of memory");

  fprintf(stderr, "fk_bench_gemv: %d shapes x %d Ms (up to %lld) x %s x %d thread count%s, %d repetitions\n",
          opt.nshapes, nm, (long long)m_max, gemm_mode ? "hot" : "cold/hot", nnt, nnt > 1 ? "s" : "", opt.reps);
  cases_total = opt.nshapes * nm * (gemm_mode ? 1 : NMODES) * nnt;
  for (int s = 0; s < opt.nshapes; s++) run_shape(s);
  team_stop();
  compute_probe_medians();
  results(out);
  fkb_out_close(out);
  fprintf(stderr, "fk_bench_gemv: wrote %s/%s.csv, %s-meta.csv (%.0f s; bench/report.py %s renders them)\n",
          opt.out, gemm_mode ? "gemm" : "gemv", gemm_mode ? "gemm" : "gemv", now() - t_start,
          gemm_mode ? "gemm" : "gemv");

  for (size_t i = 0; i < (size_t)opt.nshapes * FKB_MS_MAX * NMODES * FKB_THREADS_MAX * NE; i++) free(cells[i].s);
  free(cells);
  free(noise);
  free(infos);
  fkb_probe_destroy(probe);
  return 0;
}
