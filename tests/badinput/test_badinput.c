#define _GNU_SOURCE
/* tests/badinput/test_badinput.c: the bad-input table (docs/bad-input.md), one Criterion test per
 * row, named badinput::<row id>.
 *
 * A row is {entry point, what is wrong, expected status, the fragments its message must contain,
 * a setup, a call}. run_row() sets the row up (plans with state, buffers under canaries), calls it
 * once with an fk_error and once with err == NULL (flashkern.h: err may be NULL everywhere), and
 * after each call proves that the refusal wrote nothing: every watched buffer is byte-equal to
 * its copy from before, every watched plan's fk_state_save snapshot is unchanged, *out pointers
 * are NULL (the call bodies assert those). Rows that expect FK_OK are positive controls (the
 * alignment rows, inputs that are not refusals, sentinel returns) and run once.
 * the_doc_lists_every_row checks that docs/bad-input.md names every row. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "fixture/fkfix.h"
#include "harness/fkh.h"
#include "leaves/cases.h"
#include "audio/audio_desc.h"
#include "plan/plan_model.h"
#ifdef FKT_CKPT /* the checkpoint loader's rows (FK_BUILD_CHECKPOINTS) */
#include <dirent.h>
#include <jansson.h>
#ifdef FKT_INTERPOSE
#include "interpose.h"
#elif defined(__SANITIZE_ADDRESS__)
size_t __sanitizer_get_current_allocated_bytes(void); /* the sanitizer runtime's (allocator_interface.h) */
#endif
#include <sys/stat.h>

#include "ckpt_write.h"
#include "fk_checkpoint.h"
#endif

/* the plan most rows use: block and tail, 2 threads */
enum { H = 64, LDX = 70, TIN = 16, MAXR = 4, MAXF = 3, NX = 8 * LDX, NFEAT = 4 * TIN, PCM = 2000 };
/* the FK_EBUSY rows: a background thread keeps this plan busy */
enum { BH = 256, BROWS = 32 };
/* the snapshot layout flashkern.h documents */
enum { SNAP_HEADER = 56 };

typedef struct ctx ctx;

typedef struct row {
  const char *id, *entry, *what;
  int want;           /* the fk_status expected (fkfix rows: -1 or 0) */
  const char *names;  /* '|'-separated fragments the message must contain; NULL: the body checks */
  void (*setup)(ctx *);
  int (*call)(ctx *c, fk_error *e, char *msg, size_t msglen);
  int fix;            /* the message is fkfix's (msg), not e->message */
} row;

struct ctx {
  fkp_model m, m2;
  fk_plan_desc d;
  fk_plan *plans[8];
  int nplans;
  void *mem[64];
  int nmem;
  struct {
    const void *p;
    size_t n;
    void *copy;
  } w[16];
  int nw;
  struct {
    fk_plan *p;
    unsigned char *snap;
    size_t len;
  } st[4];
  int nst;
  fk_plan *p, *q;                    /* the row's plans */
  uint16_t *x, *x0;                  /* residual rows (x0: a copy) */
  float *feat, *pcm, *cosb, *sinb;
  uint16_t *w16, *out16;             /* packing */
  float *qw, *qy;                    /* quantized formats: f32 weights, a dequantized copy */
  unsigned char *qb, *qo;            /* their q8 blocks, an output */
  unsigned char *snap, *bad;         /* a good snapshot of p, a scratch image */
  size_t snap_len;
  fk_leaf leaf;
  fk_phase_info info;
  /* FK_EBUSY rows: a thread running bg_plan until stop */
  pthread_t bg;
  int has_bg;
  atomic_int stop, runs;
  fk_plan *bg_plan;
  uint16_t *bg_x;
  /* fixture rows */
  char dir[64];
  fkfix fx;
#ifdef FKT_CKPT
  /* checkpoint rows: a directory, the synthetic weights written there, an open model */
  char ckdir[64];
  fkm_weights ck_lm, ck_det;
  fk_model *ckm;
  fk_plan_desc ckd;
  fk_tensor_view ckv;
  fk_model_info cki;
#endif
};

/* ---- helpers ------------------------------------------------------------------------------------ */

static void *alloc(ctx *c, size_t n) {
  cr_assert_lt(c->nmem, 64);
  void *p = aligned_alloc(64, (n + 63) / 64 * 64);
  cr_assert_not_null(p);
  c->mem[c->nmem++] = p;
  return p;
}

static fk_plan *plan(ctx *c, const fk_plan_desc *d) {
  fk_plan *p = NULL;
  fk_error e;
  fk_status s = fk_plan_create(d, &p, &e);
  cr_assert_eq(s, FK_OK, "fk_plan_create: %s: %s", fk_strerror(s), e.message);
  c->plans[c->nplans++] = p;
  return p;
}

static void must_run(fk_plan *p, fk_program prog, fk_io *io) {
  fk_error e;
  fk_status s = fk_run(p, prog, io, &e);
  cr_assert_eq(s, FK_OK, "fk_run(%s): %s: %s", fk_program_name(prog), fk_strerror(s), e.message);
}

static unsigned char *snapshot(ctx *c, const fk_plan *p, size_t *len) {
  *len = fk_state_bytes(p);
  unsigned char *b = alloc(c, *len);
  fk_error e;
  cr_assert_eq(fk_state_save(p, b, *len, &e), FK_OK, "%s", e.message);
  return b;
}

/* The bytes [p, p + n) must be the same after every call of the row. */
static void watch(ctx *c, const void *p, size_t n) {
  cr_assert_lt(c->nw, 16);
  c->w[c->nw].p = p;
  c->w[c->nw].n = n;
  c->w[c->nw].copy = malloc(n);
  cr_assert_not_null(c->w[c->nw].copy);
  memcpy(c->w[c->nw].copy, p, n);
  c->nw++;
}

/* The plan's state (its fk_state_save image) must be the same after every call of the row. */
static void watch_state(ctx *c, fk_plan *p) {
  cr_assert_lt(c->nst, 4);
  c->st[c->nst].p = p;
  c->st[c->nst].snap = snapshot(c, p, &c->st[c->nst].len);
  c->nst++;
}

static void check_untouched(const row *r, ctx *c, const char *how) {
  for (int i = 0; i < c->nw; i++) {
    const unsigned char *a = c->w[i].p, *b = c->w[i].copy;
    if (memcmp(a, b, c->w[i].n) == 0) continue;
    size_t k = 0;
    while (a[k] == b[k]) k++;
    cr_assert_fail("%s (%s): watched buffer %d written at byte %zu of %zu: 0x%02x, was 0x%02x", r->id, how, i, k,
                   c->w[i].n, a[k], b[k]);
  }
  for (int i = 0; i < c->nst; i++) {
    unsigned char *now = malloc(c->st[i].len);
    cr_assert_not_null(now);
    fk_error e;
    cr_assert_eq(fk_state_save(c->st[i].p, now, c->st[i].len, &e), FK_OK, "%s", e.message);
    cr_assert(memcmp(now, c->st[i].snap, c->st[i].len) == 0, "%s (%s): the state of plan %d changed", r->id, how, i);
    free(now);
  }
}

static void stop_bg(ctx *c) {
  if (!c->has_bg) return;
  atomic_store(&c->stop, 1);
  pthread_join(c->bg, NULL);
  c->has_bg = 0;
}

static void rm_dir(const char *dir);

static void teardown(ctx *c) {
  stop_bg(c);
  for (int i = c->nplans - 1; i >= 0; i--) fk_plan_destroy(c->plans[i]);
  for (int i = 0; i < c->nw; i++) free(c->w[i].copy);
  for (int i = 0; i < c->nmem; i++) free(c->mem[i]);
  fkfix_free(&c->fx);
  if (c->dir[0]) rm_dir(c->dir);
  fkp_model_free(&c->m);
  fkp_model_free(&c->m2);
#ifdef FKT_CKPT
  fk_model_close(c->ckm);
  fkm_weights_free(&c->ck_lm);
  fkm_weights_free(&c->ck_det);
  if (c->ckdir[0]) fkw_rmdir(c->ckdir);
#endif
  free(c);
}

static void run_row(const row *r) {
  ctx *c = calloc(1, sizeof *c);
  cr_assert_not_null(c);
  if (r->setup) r->setup(c);
  int passes = r->want == 0 ? 1 : 2; /* refusals again with err == NULL */
  for (int pass = 0; pass < passes; pass++) {
    const char *how = pass ? "err == NULL" : "err given";
    fk_error err;
    memset(&err, 0, sizeof err);
    err.status = (fk_status)-1;
    snprintf(err.message, sizeof err.message, "(err not written)");
    char msg[1024] = "(msg not written)";
    int s = r->call(c, pass ? NULL : &err, pass ? NULL : msg, pass ? 0 : sizeof msg);
    const char *text = r->fix ? msg : err.message;
    if (r->fix)
      cr_assert_eq(s, r->want, "%s: %s: %s (%s): returned %d, want %d: %s", r->id, r->entry, r->what, how, s, r->want,
                   pass ? "" : text);
    else
      cr_assert_eq(s, r->want, "%s: %s: %s (%s): returned %s, want %s: %s", r->id, r->entry, r->what, how,
                   fk_strerror((fk_status)s), fk_strerror((fk_status)r->want), pass ? "" : text);
    if (!pass && r->names) {
      if (!r->fix) cr_assert_eq((int)err.status, s, "%s: err.status %d, returned %d", r->id, (int)err.status, s);
      char frags[256];
      snprintf(frags, sizeof frags, "%s", r->names);
      for (char *f = strtok(frags, "|"); f; f = strtok(NULL, "|"))
        cr_assert(strstr(text, f) != NULL, "%s: %s: %s: the message does not name '%s': %s", r->id, r->entry, r->what,
                  f, text);
    }
    check_untouched(r, c, how);
    if (!pass)
      cr_log_info("%-30s %-22s %-44s -> %s%s%s", r->id, r->entry, r->what,
                  r->fix ? (s ? "-1" : "0") : fk_strerror((fk_status)s), r->names ? ": " : "", r->names ? text : "");
  }
  teardown(c);
}

/* Every row, registered before main (the doc test lists them). */
static const row *all_rows[512];
static int nall_rows;

static void register_row(const row *r) {
  if (nall_rows < (int)(sizeof all_rows / sizeof all_rows[0])) all_rows[nall_rows] = r;
  nall_rows++; /* the doc test fails when the table outgrows all_rows */
}

/* ROW(id, entry, what, want, names, setup, body...): the body is the call, with c, e (may be
 * NULL), msg and msglen (fkfix rows) in scope; it returns the status. */
#define ROW_(id, entry, what, want, names, setup, fix, ...) \
  static int call_##id(ctx *c, fk_error *e, char *msg, size_t msglen) { \
    (void)c, (void)e, (void)msg, (void)msglen; \
    __VA_ARGS__ \
  } \
  static const row row_##id = { #id, entry, what, want, names, setup, call_##id, fix }; \
  __attribute__((constructor)) static void reg_##id(void) { register_row(&row_##id); } \
  Test(badinput, id, .timeout = 60) { run_row(&row_##id); }
#define ROW(id, entry, what, want, names, setup, ...) ROW_(id, entry, what, want, names, setup, 0, __VA_ARGS__)
#define FIXROW(id, entry, what, want, names, ...) ROW_(id, entry, what, want, names, setup_fixture, 1, __VA_ARGS__)

/* ---- setups ------------------------------------------------------------------------------------- */

static void setup_none(ctx *c) { (void)c; }

/* A model and a descriptor for both families (2 threads); the host's weights are watched. */
static void setup_model(ctx *c) {
  cr_assert_eq(fkp_model_make(&c->m, H, TIN, 1, 61), 0);
  c->d = fkp_desc(&c->m, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, 2, MAXR, MAXF);
  c->d.block.conv_bias = c->m.conv_bias;
  watch(c, c->m.norm, H * 2);
  watch(c, c->m.in_proj, 3 * H * H * 2);
  watch(c, c->m.conv, 3 * H * 2);
  watch(c, c->m.out_proj, H * H * 2);
  watch(c, c->m.lin, FK_TAIL_SPEC * TIN * 2);
  watch(c, c->m.lin_bias, FK_TAIL_SPEC * 4);
}

/* A ready plan with state (3 tokens; 1 frame, so a flush is refused now); x, feat and the PCM
 * buffer under canaries, the state watched, a good snapshot in c->snap. */
static void setup_plan(ctx *c) {
  cr_assert_eq(fkp_model_make(&c->m, H, TIN, 0, 71), 0);
  c->d = fkp_desc(&c->m, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, 2, MAXR, MAXF);
  c->p = plan(c, &c->d);
  c->x = alloc(c, NX * 2);
  fkp_fill_bf16(c->x, NX, 2.0f, 1);
  c->feat = alloc(c, NFEAT * 4);
  fkp_fill_f32(c->feat, NFEAT, 1.0f, 2);
  c->pcm = alloc(c, PCM * 4);
  fk_io io = { .rows = 3, .x = c->x, .ldx = LDX };
  must_run(c->p, FK_PROG_BLOCK_PREFILL, &io);
  fk_io tio = { .rows = 1, .feat = c->feat, .ldfeat = TIN, .pcm = c->pcm, .pcm_cap = PCM };
  must_run(c->p, FK_PROG_TAIL, &tio);
  for (int i = 0; i < PCM; i++) c->pcm[i] = -7.0f;
  watch(c, c->x, NX * 2);
  watch(c, c->feat, NFEAT * 4);
  watch(c, c->pcm, PCM * 4);
  watch_state(c, c->p);
  c->snap = snapshot(c, c->p, &c->snap_len);
  c->bad = alloc(c, c->snap_len + 64);
  memset(&c->info, 0x5a, sizeof c->info);
  watch(c, &c->info, sizeof c->info);
}

/* fk_run on p with io; io.pcm_count must survive a refusal. */
static int run(fk_plan *p, fk_program prog, fk_io io, fk_error *e) {
  io.pcm_count = -99;
  fk_status s = fk_run(p, prog, &io, e);
  if (s != FK_OK) cr_assert_eq(io.pcm_count, -99, "a refusal wrote io.pcm_count");
  return s;
}

/* A good io with the row's fields overriding it (the later designator wins, as C says). */
#pragma GCC diagnostic ignored "-Woverride-init"
#define BLOCK_IO(...) ((fk_io){ .rows = 2, .x = c->x, .ldx = LDX, __VA_ARGS__ })
#define TAIL_IO(...) ((fk_io){ .rows = 1, .feat = c->feat, .ldfeat = TIN, .pcm = c->pcm, .pcm_cap = PCM, __VA_ARGS__ })

/* fk_plan_check and fk_plan_create on c->d: the same status and message; on a refusal *out is
 * NULL and *arena_bytes untouched. */
static int create_both(ctx *c, fk_error *e) {
  size_t bytes = 12345;
  fk_error e2;
  fk_status s1 = fk_plan_check(&c->d, &bytes, e ? &e2 : NULL);
  if (s1 != FK_OK) cr_assert_eq(bytes, 12345, "fk_plan_check wrote *arena_bytes on a refusal");
  fk_plan *p = (fk_plan *)&bytes; /* must become NULL */
  fk_status s = fk_plan_create(&c->d, &p, e);
  cr_assert_eq(s1, s, "fk_plan_check: %s, fk_plan_create: %s", fk_strerror(s1), fk_strerror(s));
  if (e && s != FK_OK)
    cr_assert_str_eq(e2.message, e->message, "fk_plan_check and fk_plan_create differ:\n%s\n%s", e2.message, e->message);
  if (s != FK_OK) {
    cr_assert_null(p, "fk_plan_create: *out not NULL after a refusal");
  } else {
    cr_assert_not_null(p);
    c->plans[c->nplans++] = p;
  }
  return s;
}
#define DESC_ROW(id, what, want, names, ...) \
  ROW(id, "fk_plan_create/check", what, want, names, setup_model, __VA_ARGS__ return create_both(c, e);)

/* The snapshot c->snap of p, altered by `alter`, loaded back; the image is only read. */
static int load_altered(ctx *c, fk_error *e, size_t len, void (*alter)(unsigned char *, size_t)) {
  memcpy(c->bad, c->snap, c->snap_len);
  if (alter) alter(c->bad, c->snap_len);
  unsigned char *before = malloc(c->snap_len + 64);
  cr_assert_not_null(before);
  memcpy(before, c->bad, c->snap_len + 64);
  fk_status s = fk_state_load(c->p, c->bad, len, e);
  cr_assert(memcmp(before, c->bad, c->snap_len + 64) == 0, "fk_state_load wrote its buffer");
  free(before);
  return s;
}

/* The FNV-1a checksum flashkern.h documents, recomputed (images edited on purpose). */
static void reseal(unsigned char *b, size_t len) {
  uint64_t sum = fkp_fnv(b, len - 8, 0);
  memcpy(b + len - 8, &sum, 8);
}
static void bad_magic(unsigned char *b, size_t n) { (void)n, b[0] ^= 0x20; }
static void bad_version(unsigned char *b, size_t n) { (void)n, b[8] ^= 1; }
static void bad_carry_byte(unsigned char *b, size_t n) { (void)n, b[SNAP_HEADER + 5] ^= 0x10; }
static void set_tokens(unsigned char *b, size_t n, int64_t v) {
  memcpy(b + 32, &v, 8); /* i64 tokens after magic, version, programs, hidden, tail_in */
  reseal(b, n);
}
static void tokens_negative(unsigned char *b, size_t n) { set_tokens(b, n, -1); }
static void tokens_huge(unsigned char *b, size_t n) { set_tokens(b, n, INT64_MAX - 2); }

/* A snapshot of a plan of these programs and shapes, loaded into p. */
static int load_other(ctx *c, fk_error *e, uint32_t programs, int64_t h, int64_t tail_in) {
  fkp_model tmp;
  cr_assert_eq(fkp_model_make(&tmp, h, tail_in, 0, 73), 0);
  fk_plan_desc d = fkp_desc(&tmp, programs, 1, 2, 2);
  fk_plan *q = plan(c, &d);
  size_t len;
  unsigned char *img = snapshot(c, q, &len);
  fkp_model_free(&tmp); /* the plan does not read its weights after readiness */
  return fk_state_load(c->p, img, len, e);
}

/* ---- FK_EBUSY: a background thread keeps plan bg_plan in fk_run ------------------------------- */

static void *bg_main(void *arg) {
  ctx *c = arg;
  fk_io io = { .rows = BROWS, .x = c->bg_x, .ldx = BH };
  while (!atomic_load(&c->stop))
    if (fk_run(c->bg_plan, FK_PROG_BLOCK_PREFILL, &io, NULL) == FK_OK) atomic_fetch_add(&c->runs, 1);
  return NULL;
}

/* p: a block plan (1 thread) the background thread runs; q: a plan on p's team; x: a decode row
 * for the main thread, watched with q's state. */
static void setup_busy(ctx *c) {
  cr_assert_eq(fkp_model_make(&c->m, BH, 0, 0, 81), 0);
  fk_plan_desc d = fkp_desc(&c->m, FK_PROGRAMS_BLOCK, 1, BROWS, 0);
  c->p = plan(c, &d);
  d.team_of = c->p;
  c->q = plan(c, &d);
  c->x = alloc(c, BH * 2);
  fkp_fill_bf16(c->x, BH, 1.0f, 3);
  c->x0 = alloc(c, BH * 2);
  memcpy(c->x0, c->x, BH * 2);
  fk_io io = { .rows = 1, .x = c->x, .ldx = BH };
  must_run(c->q, FK_PROG_BLOCK_DECODE, &io); /* some state in q */
  memcpy(c->x, c->x0, BH * 2);
  c->snap = snapshot(c, c->p, &c->snap_len); /* p's state, for the load row */
  c->bad = alloc(c, fk_state_bytes(c->q));
  memset(c->bad, 0xa5, fk_state_bytes(c->q));
  watch(c, c->x, BH * 2);
  watch(c, c->snap, c->snap_len);
  watch(c, c->bad, fk_state_bytes(c->q));
  watch_state(c, c->q);
  c->bg_x = alloc(c, BROWS * BH * 2);
  fkp_fill_bf16(c->bg_x, BROWS * BH, 1.0f, 4);
  c->bg_plan = c->p;
  cr_assert_eq(pthread_create(&c->bg, NULL, bg_main, c), 0);
  c->has_bg = 1;
  for (int i = 0; i < 10000 && atomic_load(&c->runs) < 1; i++) usleep(1000);
  cr_assert_gt(atomic_load(&c->runs), 0, "the background runs did not start");
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Retries `attempt` until it is refused with FK_EBUSY (10 s at most); an attempt that got in
 * (FK_OK) is undone by `undo` first. */
#define UNTIL_BUSY(attempt, undo) \
  do { \
    double t0 = now_s(); \
    for (;;) { \
      fk_status s_ = (attempt); \
      if (s_ == FK_EBUSY) return s_; \
      cr_assert_eq(s_, FK_OK, "%s", fk_strerror(s_)); \
      undo; \
      cr_assert_lt(now_s() - t0, 10.0, "no FK_EBUSY in 10 s of attempts"); \
    } \
  } while (0)

/* ---- resources refused: address-space limits ------------------------------------------------- */

static size_t vm_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  cr_assert_not_null(f);
  unsigned long pages = 0;
  cr_assert_eq(fscanf(f, "%lu", &pages), 1);
  fclose(f);
  return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* fk_plan_create under RLIMIT_AS = the current address space + headroom. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FKT_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FKT_ASAN 1
#endif

static fk_status create_limited(ctx *c, size_t headroom, fk_error *e) {
#ifdef FKT_ASAN
  cr_skip_test("RLIMIT_AS rows do not run under AddressSanitizer (its shadow memory)");
#endif
  struct rlimit old, lim;
  cr_assert_eq(getrlimit(RLIMIT_AS, &old), 0);
  lim = old;
  lim.rlim_cur = (rlim_t)(vm_bytes() + headroom);
  cr_assert_eq(setrlimit(RLIMIT_AS, &lim), 0);
  fk_plan *p = (fk_plan *)&lim;
  fk_status s = fk_plan_create(&c->d, &p, e);
  cr_assert_eq(setrlimit(RLIMIT_AS, &old), 0);
  if (s == FK_OK) c->plans[c->nplans++] = p;
  else cr_assert_null(p, "*out not NULL after a refusal");
  return s;
}

/* A descriptor whose arena (~17 GB) exceeds any limit set here; the weights are never read
 * because the allocation fails first. */
static void setup_huge(ctx *c) {
  cr_assert_eq(fkp_model_make(&c->m, H, 0, 0, 91), 0);
  c->d = fkp_desc(&c->m, FK_PROGRAMS_BLOCK, 1, MAXR, 0);
  c->d.hidden = 16384;
  c->d.max_rows = 65536;
}

/* ---- packing and tables ---------------------------------------------------------------------- */

enum { PN = 5, PK = 70, PLDW = 72, PW = 6000, POUT = 6000 };

static void setup_pack(ctx *c) {
  c->w16 = alloc(c, PW * 2);
  fkp_fill_bf16(c->w16, PW, 1.0f, 5);
  c->out16 = alloc(c, POUT * 2);
  memset(c->out16, 0xa5, POUT * 2);
  watch(c, c->w16, PW * 2);
  watch(c, c->out16, POUT * 2);
}

/* the bulk bf16 conversions: CF floats and CF bf16 (each buffer room for CF floats) */
enum { CF = 100 };

static void setup_convert(ctx *c) {
  c->feat = alloc(c, CF * 4);
  fkp_fill_f32(c->feat, CF, 3.0f, 9);
  c->out16 = alloc(c, CF * 4);
  memset(c->out16, 0xa5, CF * 4);
  watch(c, c->feat, CF * 4);
  watch(c, c->out16, CF * 4);
}

static void setup_rope(ctx *c) {
  c->cosb = alloc(c, 1024 * 4);
  c->sinb = alloc(c, 1024 * 4);
  memset(c->cosb, 0x5a, 1024 * 4);
  memset(c->sinb, 0x5a, 1024 * 4);
  watch(c, c->cosb, 1024 * 4);
  watch(c, c->sinb, 1024 * 4);
}

static void setup_leaf(ctx *c) {
  memset(&c->leaf, 0x5a, sizeof c->leaf);
  watch(c, &c->leaf, sizeof c->leaf);
}

/* ---- fixtures: a valid manifest, then one field made to disagree ------------------------------ */

static void rm_dir(const char *dir) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) cr_log_warn("could not remove %s", dir);
}

static void setup_fixture(ctx *c) {
  snprintf(c->dir, sizeof c->dir, "/tmp/fk_badinput_XXXXXX");
  cr_assert_not_null(mkdtemp(c->dir));
  memset(&c->fx, 0, sizeof c->fx);
}

static const float FX[4] = { 1.0f, -2.0f, 0.5f, 3.0f };
static const uint16_t FW[7] = { 0x3f80, 0x4000, 0xbf80, 0x7fa5, 0x0001, 0x8000, 0x7f80 };

static void put_payload(ctx *c, const char *tensor, const void *raw, size_t n, char hex[33]) {
  size_t cap = ZSTD_compressBound(n);
  void *z = malloc(cap);
  cr_assert_not_null(z);
  size_t zn = ZSTD_compress(z, cap, raw, n, 3);
  cr_assert(!ZSTD_isError(zn));
  char path[256];
  snprintf(path, sizeof path, "%s/k1.%s.zst", c->dir, tensor);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(z, 1, zn, f), zn);
  cr_assert_eq(fclose(f), 0);
  free(z);
  XXH128_canonical_t cn;
  XXH128_canonicalFromHash(&cn, XXH3_128bits(raw, n));
  for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned)cn.digest[i]);
}

/* Writes k1.manifest declaring x as `xdecl` ("f32 4 1": dtype shape strides) over the payload
 * xbytes of FX, and w as `wdecl` over the 7 elements of FW; returns the manifest path. */
static const char *write_fixture(ctx *c, const char *xdecl, size_t xbytes, const char *wdecl) {
  static char path[256];
  char hx[33], hw[33];
  float xs[8] = { 0 };
  memcpy(xs, FX, sizeof FX);
  cr_assert_leq(xbytes, sizeof xs);
  put_payload(c, "x", xs, xbytes, hx);
  put_payload(c, "w", FW, sizeof FW, hw);
  snprintf(path, sizeof path, "%s/k1.manifest", c->dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fprintf(f,
          "fkfix 1\nleaf gemv\nform bf16_rne\ncase k1\ncapture full-value\ncheckpoint synthetic:7\nseed 1\n"
          "script fixtures/ref/gemv.py\nscript_blob 0123456789abcdef0123456789abcdef01234567\n"
          "reference numpy=2.1.3\nscalar n i64 4\nscalar eps f32 0x3727c5ac\n"
          "tensor x %s %s input\ntensor w %s %s input\n",
          xdecl, hx, wdecl, hw);
  cr_assert_eq(fclose(f), 0);
  return path;
}

/* fkfix_load of the fixture; a failure must leave c->fx zeroed (fkfix.h), a NULL
 * manifest_path included, and name the manifest first. */
static int fix_load(ctx *c, const char *path, char *msg, size_t msglen) {
  fkfix_free(&c->fx);
  memset(&c->fx, 0xab, sizeof c->fx);
  int rc = fkfix_load(path, &c->fx, msg, msglen);
  if (rc != 0) {
    static const fkfix zero;
    int zeroed = memcmp(&c->fx, &zero, sizeof zero) == 0;
    cr_assert(zeroed, "a failed fkfix_load left *out not zeroed");
    if (msg && path)
      cr_assert(strncmp(msg, path, strlen(path)) == 0, "the message does not start with the manifest: %s", msg);
  }
  return rc;
}

/* What a test asks of a loaded fixture, through the public fields only: tensor `name` of dtype
 * dt and shape[0..ndim). -1 with a message when the manifest declares something else. */
static int want_tensor(const fkfix *f, const char *name, fkfix_dtype dt, int ndim, const int64_t *shape, char *msg,
                       size_t msglen) {
  const fkfix_tensor *t = fkfix_tensor_get(f, name);
  if (!t) {
    if (msg) snprintf(msg, msglen, "%s: tensor '%s': absent", f->path, name);
    return -1;
  }
  int same = t->dtype == dt && t->ndim == ndim;
  for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
  if (!same && msg)
    snprintf(msg, msglen, "%s:%d: tensor '%s': dtype %d shape %lld,%lld (ndim %d), the test asks for dtype %d ndim %d",
             f->path, t->line, name, (int)t->dtype, (long long)t->shape[0], (long long)t->shape[1], t->ndim, (int)dt,
             ndim);
  return same ? 0 : -1;
}

/* ==== the table ================================================================================ */

/* ---- status names, CPU features, leaf resolution ---- */

ROW(strerror_unknown_status, "fk_strerror", "status 99, -1, FK_STATUS_COUNT", FK_OK, NULL, setup_none,
    cr_assert_str_eq(fk_strerror((fk_status)99), "FK_?: unknown status");
    cr_assert_str_eq(fk_strerror((fk_status)-1), "FK_?: unknown status");
    cr_assert_str_eq(fk_strerror(FK_STATUS_COUNT), "FK_?: unknown status");
    return FK_OK;)

ROW(feature_names_no_buffer, "fk_cpu_feature_names", "buf NULL, or len 0", FK_OK, NULL, setup_none,
    char b[8] = "canary!";
    cr_assert_null(fk_cpu_feature_names(FK_CPU_AVX2 | FK_CPU_FMA, NULL, 0));
    cr_assert_null(fk_cpu_feature_names(FK_CPU_AVX2, NULL, 64));
    cr_assert_eq(fk_cpu_feature_names(FK_CPU_AVX2, b, 0), b);
    cr_assert_str_eq(b, "canary!", "len 0: buf written");
    return FK_OK;)

ROW(feature_names_short_buffer, "fk_cpu_feature_names", "len shorter than the names", FK_OK, NULL, setup_none,
    char b[16];
    memset(b, 'z', sizeof b);
    cr_assert_eq(fk_cpu_feature_names(FK_CPU_AVX2 | FK_CPU_FMA | FK_CPU_AVX512F, b, 7), b);
    cr_assert_str_eq(b, "avx2 f", "truncated to len - 1 chars");
    for (size_t i = 7; i < sizeof b; i++) cr_assert_eq(b[i], 'z', "byte %zu past len written", i);
    return FK_OK;)

ROW(resolve_form_null, "fk_leaf_resolve", "form NULL", FK_EINVAL, "form", setup_leaf,
    return fk_leaf_resolve(NULL, FK_TIER_EXACT, fk_cpu_features(), &c->leaf, e);)

ROW(resolve_out_null, "fk_leaf_resolve", "out NULL", FK_EINVAL, "out", setup_leaf,
    return fk_leaf_resolve("gemv_bf16_rne", FK_TIER_EXACT, fk_cpu_features(), NULL, e);)

ROW(resolve_unknown_form, "fk_leaf_resolve", "form 'gemv_fp8' (no such form)", FK_ENOTFOUND, "gemv_fp8", setup_leaf,
    return fk_leaf_resolve("gemv_fp8", FK_TIER_EXACT, fk_cpu_features(), &c->leaf, e);)

ROW(resolve_unknown_tier, "fk_leaf_resolve", "tier 7 (not a tier)", FK_EINVAL, "tier", setup_leaf,
    return fk_leaf_resolve("gemv_bf16_rne", (fk_tier)7, fk_cpu_features(), &c->leaf, e);)

ROW(resolve_negative_tier, "fk_leaf_resolve", "tier -1 (not a tier)", FK_EINVAL, "tier", setup_leaf,
    return fk_leaf_resolve("gemv_bf16_rne", (fk_tier)-1, fk_cpu_features(), &c->leaf, e);)

ROW(resolve_form_without_tier, "fk_leaf_resolve", "rmsnorm_f32 in the fast tier (exact only)", FK_ENOTFOUND,
    "rmsnorm_f32|no fast-tier stamp", setup_leaf,
    return fk_leaf_resolve("rmsnorm_f32", FK_TIER_FAST, fk_cpu_features(), &c->leaf, e);)

#if defined(__x86_64__)
ROW(resolve_missing_feature, "fk_leaf_resolve", "features without fma", FK_EUNSUPPORTED,
    "gemv_bf16_rne|fma not in the features passed",
    setup_leaf, return fk_leaf_resolve("gemv_bf16_rne", FK_TIER_EXACT, FK_CPU_AVX2, &c->leaf, e);)
#else
ROW(resolve_missing_feature, "fk_leaf_resolve", "features without asimd", FK_EUNSUPPORTED,
    "gemv_bf16_rne|asimd not in the features passed",
    setup_leaf, return fk_leaf_resolve("gemv_bf16_rne", FK_TIER_EXACT, 0, &c->leaf, e);)
#endif

ROW(resolve_cpu_mask_bad, "fk_leaf_resolve", "FK_CPU_MASK=zz, every feature passed", FK_EINVAL,
    "fk_leaf_resolve|FK_CPU_MASK=\"zz\"|not a hex number", setup_leaf, setenv("FK_CPU_MASK", "zz", 1);
    return fk_leaf_resolve("gemv_bf16_rne", FK_TIER_EXACT, ~(uint64_t)0, &c->leaf, e);)

/* ---- fk_leaf_check: a direct call's arguments against the form's table (its template) ---- */

static fk_rmsnorm_f32_args rms_args(const float *x, const uint16_t *w, uint16_t *y) {
  return (fk_rmsnorm_f32_args){ .x = x, .w = w, .y = y, .n = 8, .rows = 2, .x_stride = 8, .y_stride = 8, .eps = 1e-5f };
}

ROW(leaf_check_form_null, "fk_leaf_check", "form NULL", FK_EINVAL, "form", setup_none,
    fk_rmsnorm_f32_args a = rms_args(NULL, NULL, NULL);
    return fk_leaf_check(NULL, &a, e);)

ROW(leaf_check_args_null, "fk_leaf_check", "args NULL", FK_EINVAL, "args", setup_none,
    return fk_leaf_check("rmsnorm_f32", NULL, e);)

ROW(leaf_check_unknown_form, "fk_leaf_check", "form 'gemv_fp8' (no such form)", FK_ENOTFOUND, "gemv_fp8", setup_none,
    fk_rmsnorm_f32_args a = rms_args(NULL, NULL, NULL);
    return fk_leaf_check("gemv_fp8", &a, e);)

ROW(leaf_check_extent_overflow, "fk_leaf_check", "rmsnorm_f32 with rows = INT64_MAX", FK_EINVAL,
    "rmsnorm_f32|x|overflows", setup_none,
    static float x[16];
    static uint16_t w[8], y[16];
    fk_rmsnorm_f32_args a = rms_args(x, w, y);
    a.rows = INT64_MAX;
    return fk_leaf_check("rmsnorm_f32", &a, e);)

ROW(leaf_check_extent_negative, "fk_leaf_check", "rmsnorm_f32 with n = -5", FK_EINVAL, "rmsnorm_f32|w|-5|negative",
    setup_none,
    static float x[16];
    static uint16_t w[8], y[16];
    fk_rmsnorm_f32_args a = rms_args(x, w, y);
    a.n = -5;
    return fk_leaf_check("rmsnorm_f32", &a, e);)

ROW(leaf_check_past_address_space, "fk_leaf_check", "rmsnorm_f32 with y 2 bytes below the top of memory", FK_EINVAL,
    "rmsnorm_f32|y|address space", setup_none,
    static float x[16];
    static uint16_t w[8];
    fk_rmsnorm_f32_args a = rms_args(x, w, (uint16_t *)(UINTPTR_MAX - 1));
    return fk_leaf_check("rmsnorm_f32", &a, e);)

/* Every form of the registry, on the first cases its builder makes (valid calls: FK_OK): each
 * pointer the leaf touches set NULL is refused naming it; each output moved onto each other
 * buffer is refused naming both, unless the template lets the output be that buffer (FK_OK). */
ROW(leaf_check_every_form, "fk_leaf_check", "every form: a valid call; each pointer NULL; each output onto each other "
    "buffer", FK_OK, NULL, setup_none,
    int ok_calls = 0, nulls = 0, overlaps = 0, aliases = 0;
    for (int f = 0; f < fkh_nforms; f++) {
      const fkh_form *fm = &fkh_forms[f];
      fkh_call *calls;
      int n = fkt_builder_of(fm->leaf)(fm->id, &calls);
      for (int i = 0; i < n && i < 6; i++) {
        _Alignas(16) uint8_t s[256];
        fkh_fill_struct(&calls[i], s);
        fk_error er;
        cr_assert_eq(fk_leaf_check(fm->id, s, &er), FK_OK, "%s %s: %s", fm->id, calls[i].name, er.message);
        ok_calls++;
        for (int k = 0; k < fm->nfields; k++) {
          const fkh_field *o = &fm->fields[k];
          if (o->kind != FK_FIELD_PTR || fkh_extent(&calls[i], k) == 0) continue;
          void *saved, *nul = NULL;
          memcpy(&saved, s + o->offset, sizeof saved);
          memcpy(s + o->offset, &nul, sizeof nul);
          cr_assert_eq(fk_leaf_check(fm->id, s, &er), FK_EINVAL, "%s %s: %s NULL passed", fm->id, calls[i].name, o->name);
          cr_assert(strstr(er.message, o->name) && strstr(er.message, "NULL"), "%s: %s", fm->id, er.message);
          nulls++;
          if (o->dir != FK_DIR_IN && fkh_extent(&calls[i], k) > 0) {
            for (int j = 0; j < fm->nfields; j++) {
              const fkh_field *q = &fm->fields[j];
              if (j == k || q->kind != FK_FIELD_PTR || fkh_extent(&calls[i], j) <= 0) continue;
              void *qp;
              memcpy(&qp, s + q->offset, sizeof qp);
              memcpy(s + o->offset, &qp, sizeof qp);
              char want[80];
              snprintf(want, sizeof want, "|%s|", q->name);
              char list[80];
              snprintf(list, sizeof list, "|%s|", o->alias);
              const fk_status st = fk_leaf_check(fm->id, s, &er);
              if (o->alias[0] && strstr(list, want)) {
                cr_assert_eq(st, FK_OK, "%s: %s may be %s, refused: %s", fm->id, o->name, q->name, er.message);
                aliases++;
              } else {
                /* the moved output's range may reach past q into a neighbouring buffer, which the
                 * refusal may name instead: it names the output and an overlap */
                cr_assert_eq(st, FK_EINVAL, "%s %s: %s onto %s passed", fm->id, calls[i].name, o->name, q->name);
                cr_assert(strstr(er.message, o->name) && strstr(er.message, "overlaps"), "%s: %s", fm->id, er.message);
                overlaps++;
              }
            }
          }
          memcpy(s + o->offset, &saved, sizeof saved);
        }
      }
      fkt_free_cases(calls, n);
    }
    cr_log_info("fk_leaf_check: %d forms, %d valid calls passed, %d NULL pointers, %d overlaps refused, %d aliases "
                "allowed", fkh_nforms, ok_calls, nulls, overlaps, aliases);
    cr_assert(overlaps > 100 && aliases > 0 && nulls > 100);
    return FK_OK;)

/* ---- weight packing ---- */

ROW(pack_w_null, "fk_gemv_pack", "w NULL", FK_EINVAL, "w is NULL", setup_pack,
    return fk_gemv_pack(NULL, PLDW, PN, PK, c->out16, POUT, e);)

ROW(pack_out_null, "fk_gemv_pack", "out NULL", FK_EINVAL, "out is NULL", setup_pack,
    return fk_gemv_pack(c->w16, PLDW, PN, PK, NULL, POUT, e);)

ROW(pack_n_zero, "fk_gemv_pack", "n = 0", FK_EINVAL, "n = 0", setup_pack,
    return fk_gemv_pack(c->w16, PLDW, 0, PK, c->out16, POUT, e);)

ROW(pack_k_negative, "fk_gemv_pack", "k = -1", FK_EINVAL, "k = -1", setup_pack,
    return fk_gemv_pack(c->w16, PLDW, PN, -1, c->out16, POUT, e);)

ROW(pack_ldw_below_k, "fk_gemv_pack", "ldw = k - 1", FK_EINVAL, "ldw = 69", setup_pack,
    return fk_gemv_pack(c->w16, PK - 1, PN, PK, c->out16, POUT, e);)

ROW(pack_size_overflows, "fk_gemv_pack", "n = k = 2^62 - 1 (n x k overflows)", FK_EINVAL, "overflows", setup_pack,
    return fk_gemv_pack(c->w16, INT64_MAX / 2, INT64_MAX / 2, INT64_MAX / 2, c->out16, POUT, e);)

ROW(pack_ldw_overflows, "fk_gemv_pack", "ldw = INT64_MAX, n = 2 (rows of w overflow)", FK_EINVAL, "ldw", setup_pack,
    return fk_gemv_pack(c->w16, INT64_MAX, 2, 1, c->out16, POUT, e);)

ROW(pack_out_short, "fk_gemv_pack", "out_elems one short of the layout", FK_EINVAL, "out holds 1023", setup_pack,
    cr_assert_eq(fk_gemv_packed_elems(PN, PK), 1024);
    return fk_gemv_pack(c->w16, PLDW, PN, PK, c->out16, 1023, e);)

ROW(pack_out_overlaps_w, "fk_gemv_pack", "out inside the rows of w", FK_EINVAL, "out overlaps w", setup_pack,
    return fk_gemv_pack(c->w16, PLDW, PN, PK, c->w16 + 100, PW - 100, e);)

/* ---- quantized formats (runtime/fk_quant.c): QN x QK weights, their q8 blocks ---- */

enum { QN = 3, QK = 96, QBYTES = QN * (QK / 32) * 34, QOUT = 4096 };

static void setup_quant(ctx *c) {
  c->qw = alloc(c, QN * QK * 4);
  fkp_fill_f32(c->qw, QN * QK, 2.0f, 13);
  c->qb = alloc(c, QOUT);
  fk_error e;
  cr_assert_eq(fk_q_quantize(FK_Q8, c->qw, QK, QN, QK, c->qb, QBYTES, &e), FK_OK, "%s", e.message);
  c->qo = alloc(c, QOUT);
  memset(c->qo, 0xa5, QOUT);
  c->qy = alloc(c, QN * QK * 4);
  memset(c->qy, 0xa5, QN * QK * 4);
  watch(c, c->qw, QN * QK * 4);
  watch(c, c->qb, QOUT);
  watch(c, c->qo, QOUT);
  watch(c, c->qy, QN * QK * 4);
}

/* the scale of row r, block b of c->qb set to h (on a copy: the watched blocks stay) */
static unsigned char *q8_with_scale(ctx *c, int r, int b, uint16_t h) {
  unsigned char *q = alloc(c, QOUT);
  memcpy(q, c->qb, QOUT);
  q[(r * (QK / 32) + b) * 34] = (unsigned char)h;
  q[(r * (QK / 32) + b) * 34 + 1] = (unsigned char)(h >> 8);
  return q;
}

ROW(q_quantize_format, "fk_q_quantize", "format = 4", FK_EINVAL, "format = 4", setup_quant,
    return fk_q_quantize((fk_qformat)4, c->qw, QK, QN, QK, c->qo, QOUT, e);)

/* 2 x 256 weights for q4k's super-blocks, watched */
static float *q4k_weights(ctx *c) {
  float *w = alloc(c, 2 * 256 * 4);
  fkp_fill_f32(w, 2 * 256, 2.0f, 17);
  return w;
}

ROW(q_quantize_q4k_k, "fk_q_quantize", "q4k, k = 96 (not a multiple of 256)", FK_EINVAL, "k = 96|multiple of 256",
    setup_quant, return fk_q_quantize(FK_Q4K, c->qw, QK, QN, QK, c->qo, QOUT, e);)

ROW(q_quantize_q4k_scale_overflows, "fk_q_quantize", "q4k, one |w| = 1e8 (the super-block's d rounds to binary16 inf)",
    FK_EINVAL, "row 1, super-block 0|scale d overflows binary16", setup_quant,
    float *w = q4k_weights(c);
    w[256 + 40] = 1e8f;
    watch(c, w, 2 * 256 * 4);
    return fk_q_quantize(FK_Q4K, w, 256, 2, 256, c->qo, QOUT, e);)

ROW(q_pack_q4k_dmin_inf, "fk_q_pack", "q4k, row 1, super-block 0: dmin 0xfc00 (-inf)", FK_EINVAL,
    "row 1, super-block 0|dmin is infinite", setup_quant,
    float *w = q4k_weights(c);
    unsigned char *b = alloc(c, 2 * 144), *o = alloc(c, 592);
    cr_assert_eq(fk_q_quantize(FK_Q4K, w, 256, 2, 256, b, 2 * 144, e), FK_OK, "%s", e->message);
    b[144 + 2] = 0x00;
    b[144 + 3] = 0xfc;
    memset(o, 0xa5, 592);
    watch(c, b, 2 * 144);
    watch(c, o, 592);
    return fk_q_pack(FK_Q4K, b, 2 * 144, 2, 256, o, 592, e);)

ROW(q_dequantize_q4k_dmin_nan, "fk_q_dequantize", "q4k, row 1, super-block 0: dmin 0x7e01 (NaN)", FK_EINVAL,
    "row 1, super-block 0|dmin is NaN", setup_quant,
    float *w = q4k_weights(c);
    unsigned char *b = alloc(c, 2 * 144);
    float *y = alloc(c, 2 * 256 * 4);
    cr_assert_eq(fk_q_quantize(FK_Q4K, w, 256, 2, 256, b, 2 * 144, e), FK_OK, "%s", e->message);
    b[144 + 2] = 0x01;
    b[144 + 3] = 0x7e;
    memset(y, 0xa5, 2 * 256 * 4);
    watch(c, b, 2 * 144);
    watch(c, y, 2 * 256 * 4);
    return fk_q_dequantize(FK_Q4K, b, 2 * 144, 2, 256, y, 256, e);)

ROW(q_quantize_w_null, "fk_q_quantize", "w NULL", FK_EINVAL, "w is NULL", setup_quant,
    return fk_q_quantize(FK_Q8, NULL, QK, QN, QK, c->qo, QOUT, e);)

ROW(q_quantize_k_not_blocks, "fk_q_quantize_bf16", "k = 48 (not a multiple of 32)", FK_EINVAL, "k = 48|multiple of 32",
    setup_quant, return fk_q_quantize_bf16(FK_Q4, (const uint16_t *)(void *)c->qw, QK, QN, 48, c->qo, QOUT, e);)

ROW(q_quantize_ldw_below_k, "fk_q_quantize", "ldw = k - 1", FK_EINVAL, "ldw = 95", setup_quant,
    return fk_q_quantize(FK_Q8, c->qw, QK - 1, QN, QK, c->qo, QOUT, e);)

ROW(q_quantize_out_short, "fk_q_quantize", "out one byte short of the blocks", FK_EINVAL, "out holds 305|needs 306",
    setup_quant, return fk_q_quantize(FK_Q8, c->qw, QK, QN, QK, c->qo, QBYTES - 1, e);)

ROW(q_quantize_out_overlaps_w, "fk_q_quantize", "out inside w", FK_EINVAL, "out overlaps w", setup_quant,
    return fk_q_quantize(FK_Q8, c->qw, QK, QN, QK, (unsigned char *)c->qw + 64, QOUT, e);)

ROW(q_quantize_nan, "fk_q_quantize", "w[1][37] NaN", FK_EINVAL, "w[1][37] is NaN", setup_quant,
    float *w = alloc(c, QN * QK * 4);
    memcpy(w, c->qw, QN * QK * 4);
    w[QK + 37] = NAN;
    return fk_q_quantize(FK_Q8, w, QK, QN, QK, c->qo, QOUT, e);)

ROW(q_quantize_scale_overflows, "fk_q_quantize", "q4, |w| = 8 * 65520 (the scale rounds to binary16 inf)", FK_EINVAL,
    "row 2, block 1|overflows binary16", setup_quant,
    float *w = alloc(c, QN * QK * 4);
    memcpy(w, c->qw, QN * QK * 4);
    w[2 * QK + 40] = 8.0f * 65520.0f;
    return fk_q_quantize(FK_Q4, w, QK, QN, QK, c->qo, QOUT, e);)

ROW(q_pack_blocks_short, "fk_q_pack", "bytes one short of the blocks", FK_EINVAL, "blocks holds 305", setup_quant,
    return fk_q_pack(FK_Q8, c->qb, QBYTES - 1, QN, QK, c->qo, QOUT, e);)

ROW(q_pack_out_short, "fk_q_pack", "out one byte short of the packed layout", FK_EINVAL, "out holds 543|needs 544",
    setup_quant, cr_assert_eq(fk_q_packed_bytes(FK_Q8, QN, QK), 544);
    return fk_q_pack(FK_Q8, c->qb, QBYTES, QN, QK, c->qo, 543, e);)

ROW(q_pack_scale_inf, "fk_q_pack", "row 1, block 2: scale 0x7c00 (inf)", FK_EINVAL, "row 1, block 2|infinite",
    setup_quant, return fk_q_pack(FK_Q8, q8_with_scale(c, 1, 2, 0x7c00), QBYTES, QN, QK, c->qo, QOUT, e);)

ROW(q_pack_scale_nan, "fk_q_pack", "row 0, block 0: scale 0xfe01 (NaN)", FK_EINVAL, "row 0, block 0|NaN", setup_quant,
    return fk_q_pack(FK_Q8, q8_with_scale(c, 0, 0, 0xfe01), QBYTES, QN, QK, c->qo, QOUT, e);)

ROW(q_pack_out_overlaps_blocks, "fk_q_pack", "out inside the blocks", FK_EINVAL, "out overlaps blocks", setup_quant,
    return fk_q_pack(FK_Q8, c->qb, QBYTES, QN, QK, c->qb + 2, QOUT - 2, e);)

ROW(q_dequantize_ldo_below_k, "fk_q_dequantize", "ldo = k - 1", FK_EINVAL, "ldo = 95", setup_quant,
    return fk_q_dequantize(FK_Q8, c->qb, QBYTES, QN, QK, c->qy, QK - 1, e);)

ROW(q_dequantize_scale_inf, "fk_q_dequantize", "row 2, block 0: scale 0xfc00 (-inf)", FK_EINVAL,
    "row 2, block 0|infinite", setup_quant,
    return fk_q_dequantize(FK_Q8, q8_with_scale(c, 2, 0, 0xfc00), QBYTES, QN, QK, c->qy, QK, e);)

ROW(q_sizes_edges, "fk_q_gguf_bytes, fk_q_packed_bytes", "n < 1, k < 1, k % 32 (q4k: % 256), unknown format, q4k packed sizes, "
    "overflow", FK_OK,
    NULL, setup_none,
    static const int64_t bad[][2] = { { 0, 32 }, { 1, 0 }, { 1, 48 }, { -1, 32 }, { 1, -32 },
                                      { INT64_MAX / 2, INT64_MAX / 2 / 32 * 32 } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      cr_assert_eq(fk_q_gguf_bytes(FK_Q8, bad[i][0], bad[i][1]), 0u, "%zu", i);
      cr_assert_eq(fk_q_packed_bytes(FK_Q4, bad[i][0], bad[i][1]), 0u, "%zu", i);
    }
    cr_assert_eq(fk_q_gguf_bytes((fk_qformat)0, 1, 32), 0u);
    cr_assert_eq(fk_q_gguf_bytes(FK_Q8, 5, 160), 5u * 5 * 34);
    cr_assert_eq(fk_q_gguf_bytes(FK_Q4, 5, 160), 5u * 5 * 18);
    cr_assert_eq(fk_q_packed_bytes(FK_Q8, 5, 160), 2u * 3 * 272);
    cr_assert_eq(fk_q_packed_bytes(FK_Q4, 5, 160), 2u * 3 * 144);
    cr_assert_eq(fk_q_gguf_bytes(FK_Q4K, 5, 512), 5u * 2 * 144);
    cr_assert_eq(fk_q_gguf_bytes(FK_Q4K, 5, 160), 0u);
    cr_assert_eq(fk_q_packed_bytes(FK_Q4K, 5, 512), 2u * 2 * 592);
    cr_assert_eq(fk_q_packed_bytes(FK_Q4K, 5, 160), 0u);
    cr_assert_eq(fk_q_gguf_bytes((fk_qformat)4, 1, 256), 0u);
    return FK_OK;)

ROW(bf16_n_src_null, "fk_bf16_from_f32_n", "src NULL, n = 100", FK_EINVAL, "fk_bf16_from_f32_n|src is NULL",
    setup_convert, return fk_bf16_from_f32_n(NULL, c->out16, CF, e);)

ROW(bf16_n_dst_null, "fk_bf16_from_f32_n", "dst NULL, n = 100", FK_EINVAL, "dst is NULL", setup_convert,
    return fk_bf16_from_f32_n(c->feat, NULL, CF, e);)

ROW(bf16_n_overlap, "fk_bf16_from_f32_n", "dst one bf16 into src (not in place)", FK_EINVAL, "dst overlaps src",
    setup_convert, return fk_bf16_from_f32_n(c->feat, (uint16_t *)(void *)c->feat + 1, CF, e);)

ROW(bf16_n_overflows, "fk_bf16_from_f32_n", "n = SIZE_MAX / 2 (n * 4 bytes overflow)", FK_EINVAL, "n = |overflow",
    setup_convert, return fk_bf16_from_f32_n(c->feat, c->out16, SIZE_MAX / 2, e);)

ROW(f32_n_src_null, "fk_f32_from_bf16_n", "src NULL, n = 100", FK_EINVAL, "fk_f32_from_bf16_n|src is NULL",
    setup_convert, return fk_f32_from_bf16_n(NULL, c->feat, CF, e);)

ROW(f32_n_dst_null, "fk_f32_from_bf16_n", "dst NULL, n = 100", FK_EINVAL, "dst is NULL", setup_convert,
    return fk_f32_from_bf16_n(c->out16, NULL, CF, e);)

ROW(f32_n_overlap, "fk_f32_from_bf16_n", "dst one bf16 into src (not in place)", FK_EINVAL, "dst overlaps src",
    setup_convert, return fk_f32_from_bf16_n(c->out16, (float *)(void *)(c->out16 + 1), CF / 2, e);)

ROW(f32_n_past_address_space, "fk_f32_from_bf16_n", "src 10 bytes below the top of memory", FK_EINVAL,
    "src + n|address space", setup_convert,
    return fk_f32_from_bf16_n((const uint16_t *)(uintptr_t)(UINTPTR_MAX - 9), c->feat, CF, e);)

ROW(convert_n_zero_null, "fk_bf16_from_f32_n, fk_f32_from_bf16_n", "n = 0, src and dst NULL", FK_OK, NULL, setup_none,
    int s = (int)fk_bf16_from_f32_n(NULL, NULL, 0, e);
    return s != FK_OK ? s : (int)fk_f32_from_bf16_n(NULL, NULL, 0, e);)

ROW(pack_blocked_k_zero, "fk_gemv_pack_blocked", "k = 0", FK_EINVAL, "k = 0", setup_pack,
    return fk_gemv_pack_blocked(c->w16, PLDW, PN, 0, c->out16, POUT, e);)

ROW(pack_blocked_out_short, "fk_gemv_pack_blocked", "out_elems one short of the layout", FK_EINVAL, "out holds",
    setup_pack, return fk_gemv_pack_blocked(c->w16, PLDW, PN, PK, c->out16, fk_gemv_blocked_elems(PN, PK) - 1, e);)

ROW(pack_blocked_out_overlaps_w, "fk_gemv_pack_blocked", "out == w", FK_EINVAL, "out overlaps w", setup_pack,
    return fk_gemv_pack_blocked(c->w16, PLDW, PN, PK, c->w16, PW, e);)

ROW(packed_elems_overflow, "fk_gemv_packed_elems", "n, k < 1; n x k x 2 bytes > SIZE_MAX", FK_OK, NULL, setup_none,
    cr_assert_eq(fk_gemv_packed_elems(0, 5), 0);
    cr_assert_eq(fk_gemv_packed_elems(5, -1), 0);
    cr_assert_eq(fk_gemv_packed_elems((int64_t)1 << 32, (int64_t)1 << 31), 0, "2^63 elements: 2^64 bytes");
    cr_assert_eq(fk_gemv_packed_elems(INT64_MAX, INT64_MAX), 0);
    cr_assert_eq(fk_gemv_blocked_elems(-3, 5), 0);
    cr_assert_eq(fk_gemv_blocked_elems((int64_t)1 << 32, (int64_t)1 << 31), 0);
    return FK_OK;)

ROW(block_rows_edges, "fk_gemv_block_rows", "k < 1; k = 2^62; the block's bytes", FK_OK, NULL, setup_none,
    cr_assert_eq(fk_gemv_block_rows(0), 0);
    cr_assert_eq(fk_gemv_block_rows(-1), 0);
    cr_assert_eq(fk_gemv_block_rows(INT64_MIN), 0);
    cr_assert_eq(fk_gemv_block_rows((int64_t)1 << 62), FK_GEMV_PACK_ROWS, "k = 2^62: one pack group");
    cr_assert_eq(fk_gemv_block_rows(8192), 64, "1 MB of bf16 weights at k = 8192");
    for (int64_t k = 1; k <= 70000; k += 997) {
      int64_t b = fk_gemv_block_rows(k);
      cr_assert(b >= FK_GEMV_PACK_ROWS && b % FK_GEMV_PACK_ROWS == 0, "k = %lld: %lld rows", (long long)k,
                (long long)b);
      cr_assert(b == FK_GEMV_PACK_ROWS || b * k * 2 <= (1 << 20), "k = %lld: %lld rows pass 1 MB", (long long)k,
                (long long)b);
      cr_assert((b + FK_GEMV_PACK_ROWS) * k * 2 > (1 << 20), "k = %lld: %lld rows, one more group fits 1 MB",
                (long long)k, (long long)b);
    }
    return FK_OK;)

/* fk_gemv_call_scratch against the packed form's own xs extent (fk_leaf_check: xs must not reach y):
 * a call of FK_GEMV_CALL_ROWS rows over a whole block of fk_gemv_block_rows(k) weight rows from a
 * multiple of FK_GEMV_PACK_ROWS fits exactly (y right after the scratch: FK_OK), one float less does
 * not (y a float earlier: refused naming xs and y). The pointers are never dereferenced. */
ROW(call_scratch_edges, "fk_gemv_call_scratch", "k < 1; k > 2^40; the packed form's xs extent at a whole call",
    FK_OK, NULL, setup_none,
    cr_assert_eq(fk_gemv_call_scratch(0), 0);
    cr_assert_eq(fk_gemv_call_scratch(-1), 0);
    cr_assert_eq(fk_gemv_call_scratch(INT64_MIN), 0);
    cr_assert_eq(fk_gemv_call_scratch(((int64_t)1 << 40) + 1), 0);
    cr_assert(fk_gemv_call_scratch((int64_t)1 << 40) > 0);
    const int64_t ks[] = { 1, 63, 64, 1000, 1024, 1025, 2048, 4608, 8192, 70001 };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
      int64_t k = ks[i], blk = fk_gemv_block_rows(k), rb = 7 * FK_GEMV_PACK_ROWS;
      size_t need = fk_gemv_call_scratch(k);
      float *xs = (float *)(uintptr_t)((uintptr_t)1 << 44);
      for (int tight = 0; tight < 2; tight++) {
        fk_gemv_bf16_rne_packed_args a = { .w = (const uint16_t *)(uintptr_t)((uintptr_t)1 << 40),
                                           .x = (const float *)(uintptr_t)((uintptr_t)1 << 42), .ldx = k, .xs = xs,
                                           .y = (uint16_t *)(xs + need - (size_t)tight), .y_off = 0, .ldy = rb + blk,
                                           .m = FK_GEMV_CALL_ROWS, .k = k, .row_begin = rb, .row_end = rb + blk };
        fk_error er;
        fk_status st = fk_leaf_check("gemv_bf16_rne_packed", &a, &er);
        if (!tight) {
          cr_assert_eq(st, FK_OK, "k = %lld: %s", (long long)k, er.message);
        } else {
          cr_assert_eq(st, FK_EINVAL, "k = %lld: a float less than fk_gemv_call_scratch still fits", (long long)k);
          cr_assert(strstr(er.message, "xs") && strstr(er.message, "y"), "k = %lld: %s", (long long)k, er.message);
        }
      }
    }
    return FK_OK;)

/* ---- RoPE tables ---- */

ROW(rope_cos_null, "fk_rope_table", "cos NULL", FK_EINVAL, "cos", setup_rope,
    return fk_rope_table(1e6f, 64, 0, 1, NULL, c->sinb, e);)

ROW(rope_sin_null, "fk_rope_table", "sin NULL", FK_EINVAL, "sin", setup_rope,
    return fk_rope_table(1e6f, 64, 0, 1, c->cosb, NULL, e);)

ROW(rope_theta_one, "fk_rope_table", "theta = 1 (must be > 1)", FK_EINVAL, "theta", setup_rope,
    return fk_rope_table(1.0f, 64, 0, 1, c->cosb, c->sinb, e);)

ROW(rope_theta_nan, "fk_rope_table", "theta NaN", FK_EINVAL, "theta", setup_rope,
    return fk_rope_table(NAN, 64, 0, 1, c->cosb, c->sinb, e);)

ROW(rope_head_dim_odd, "fk_rope_table", "head_dim = 63", FK_EINVAL, "head_dim", setup_rope,
    return fk_rope_table(1e6f, 63, 0, 1, c->cosb, c->sinb, e);)

ROW(rope_head_dim_beyond, "fk_rope_table", "head_dim = 2048 (limit 1024)", FK_EINVAL, "head_dim", setup_rope,
    return fk_rope_table(1e6f, 2048, 0, 1, c->cosb, c->sinb, e);)

ROW(rope_positions_negative, "fk_rope_table", "pos_begin = -1", FK_EINVAL, "positions", setup_rope,
    return fk_rope_table(1e6f, 64, -1, 1, c->cosb, c->sinb, e);)

ROW(rope_positions_beyond, "fk_rope_table", "positions past 2^24", FK_EINVAL, "positions", setup_rope,
    return fk_rope_table(1e6f, 64, (1 << 24) - 1, 2, c->cosb, c->sinb, e);)

ROW(rope_tables_overlap, "fk_rope_table", "sin = cos + 16 floats (32 each)", FK_EINVAL, "cos and sin overlap",
    setup_rope, return fk_rope_table(1e6f, 64, 0, 1, c->cosb, c->cosb + 16, e);)

ROW(rope_inv_null, "fk_rope_inv_freq", "inv NULL", FK_EINVAL, "inv", setup_rope,
    return fk_rope_inv_freq(1e6f, 64, NULL, e);)

ROW(rope_inv_head_dim_zero, "fk_rope_inv_freq", "head_dim = 0", FK_EINVAL, "head_dim", setup_rope,
    return fk_rope_inv_freq(1e6f, 0, c->cosb, e);)

/* ---- readiness: the descriptor ---- */

ROW(create_desc_null, "fk_plan_create/check", "desc NULL", FK_EINVAL, "desc is NULL", setup_none,
    size_t bytes = 7;
    fk_plan *p = (fk_plan *)&bytes;
    fk_status s1 = fk_plan_check(NULL, &bytes, e);
    cr_assert_eq(bytes, 7);
    fk_status s = fk_plan_create(NULL, &p, e);
    cr_assert_eq(s1, s);
    cr_assert_null(p);
    return s;)

ROW(create_out_null, "fk_plan_create", "out NULL", FK_EINVAL, "out is NULL", setup_model,
    return fk_plan_create(&c->d, NULL, e);)

DESC_ROW(programs_zero, "desc.programs = 0", FK_EINVAL, "desc.programs", c->d.programs = 0;)
DESC_ROW(programs_unknown_bit, "desc.programs with bit 7", FK_EINVAL, "desc.programs", c->d.programs |= 1u << 7;)
DESC_ROW(threads_zero, "desc.threads = 0", FK_EINVAL, "desc.threads", c->d.threads = 0;)
DESC_ROW(threads_beyond, "desc.threads = 65 (limit 64)", FK_EINVAL, "desc.threads", c->d.threads = 65;)
DESC_ROW(threads_negative, "desc.threads = -1", FK_EINVAL, "desc.threads", c->d.threads = -1;)
DESC_ROW(team_of_mismatch, "desc.team_of: a team of 2, desc.threads = 3", FK_EINVAL, "desc.threads|desc.team_of",
         c->d.threads = 2;
         c->d.team_of = NULL;
         fk_plan *t = plan(c, &c->d);
         watch_state(c, t);
         c->d.team_of = t;
         c->d.threads = 3;)
DESC_ROW(tier_unknown, "desc.tier = 7", FK_EINVAL, "desc.tier", c->d.tier = (fk_tier)7;)
DESC_ROW(flags_unknown, "desc.flags with bit 9", FK_EINVAL, "desc.flags", c->d.flags = 1u << 9;)
DESC_ROW(hidden_zero, "desc.hidden = 0", FK_EINVAL, "desc.hidden", c->d.hidden = 0;)
DESC_ROW(hidden_beyond, "desc.hidden = 65537 (the K limit)", FK_EINVAL, "desc.hidden", c->d.hidden = 65537;)
DESC_ROW(hidden_int64_max, "desc.hidden = INT64_MAX", FK_EINVAL, "desc.hidden", c->d.hidden = INT64_MAX;)
DESC_ROW(max_rows_negative, "desc.max_rows = -1", FK_EINVAL, "desc.max_rows", c->d.max_rows = -1;)
DESC_ROW(max_rows_beyond, "desc.max_rows = 65537", FK_EINVAL, "desc.max_rows", c->d.max_rows = 65537;)
DESC_ROW(norm_eps_zero, "desc.norm_eps = 0", FK_EINVAL, "desc.norm_eps", c->d.norm_eps = 0.0f;)
DESC_ROW(norm_eps_inf, "desc.norm_eps = inf", FK_EINVAL, "desc.norm_eps", c->d.norm_eps = INFINITY;)
DESC_ROW(norm_null, "desc.block.norm NULL", FK_EINVAL, "desc.block.norm", c->d.block.norm = NULL;)
DESC_ROW(in_proj_null, "desc.block.in_proj NULL", FK_EINVAL, "desc.block.in_proj", c->d.block.in_proj = NULL;)
DESC_ROW(conv_null, "desc.block.conv NULL", FK_EINVAL, "desc.block.conv", c->d.block.conv = NULL;)
DESC_ROW(out_proj_null, "desc.block.out_proj NULL", FK_EINVAL, "desc.block.out_proj", c->d.block.out_proj = NULL;)
DESC_ROW(tail_in_zero, "desc.tail_in = 0", FK_EINVAL, "desc.tail_in", c->d.tail_in = 0;)
DESC_ROW(tail_in_beyond, "desc.tail_in = 65537 (the K limit)", FK_EINVAL, "desc.tail_in", c->d.tail_in = 65537;)
DESC_ROW(max_frames_zero, "desc.max_frames = 0", FK_EINVAL, "desc.max_frames", c->d.max_frames = 0;)
DESC_ROW(max_frames_beyond, "desc.max_frames = 65537", FK_EINVAL, "desc.max_frames", c->d.max_frames = 65537;)
DESC_ROW(clip_negative, "desc.clip = -1", FK_EINVAL, "desc.clip", c->d.clip = -1.0f;)
DESC_ROW(clip_nan, "desc.clip NaN", FK_EINVAL, "desc.clip", c->d.clip = NAN;)
DESC_ROW(lin_null, "desc.tail.lin NULL", FK_EINVAL, "desc.tail.lin", c->d.tail.lin = NULL;)
DESC_ROW(lin_bias_null, "desc.tail.bias NULL", FK_EINVAL, "desc.tail.bias", c->d.tail.bias = NULL;)
DESC_ROW(other_family_not_read, "tail only: hidden -1, block weights NULL (not refused)", FK_OK, NULL,
         c->d.programs = FK_PROGRAMS_TAIL;
         c->d.hidden = -1;
         c->d.max_rows = 0;
         c->d.norm_eps = NAN;
         memset(&c->d.block, 0, sizeof c->d.block);)
DESC_ROW(forbid_every_feature, "desc.forbid_features = all", FK_EUNSUPPORTED,
         "phase rmsnorm|forbidden by desc.forbid_features", c->d.forbid_features = ~(uint64_t)0;)
/* A refusal for a missing feature says why it is missing: the CPU lacks it, FK_CPU_MASK hides it,
 * or desc.forbid_features forbids it (this CPU lacks none on a machine with AVX512-BF16: that
 * reason is proven on given values, tests/api/test_api.c). FK_CPU_MASK is read on the first
 * fk_cpu_features() of the process: each Criterion test is a fresh process, and nothing before
 * the body asks. */
#if defined(__x86_64__)
DESC_ROW(forbid_fma, "desc.forbid_features = fma, avx512f", FK_EUNSUPPORTED,
         "phase rmsnorm|fma forbidden by desc.forbid_features", c->d.forbid_features = FK_CPU_FMA | FK_CPU_AVX512F;)
DESC_ROW(forbid_bf16_dot_fast, "fast tier, desc.forbid_features = avx512bf16", FK_EUNSUPPORTED,
         "phase in_proj|avx512bf16 forbidden by desc.forbid_features", c->d.tier = FK_TIER_FAST;
         c->d.forbid_features = FK_CPU_AVX512BF16;)
DESC_ROW(cpu_mask_hides_fma, "FK_CPU_MASK=1 (avx2 only)", FK_EUNSUPPORTED, "phase rmsnorm|fma hidden by FK_CPU_MASK=1",
         setenv("FK_CPU_MASK", "1", 1);
         cr_assert_eq(fk_cpu_features() & ~FK_CPU_AVX2, 0);)
DESC_ROW(cpu_mask_hides_bf16_dot, "fast tier, FK_CPU_MASK=1f (no avx512bf16)", FK_EUNSUPPORTED,
         "phase in_proj|avx512bf16 hidden by FK_CPU_MASK=1f", setenv("FK_CPU_MASK", "1f", 1);
         c->d.tier = FK_TIER_FAST;)
DESC_ROW(cpu_mask_and_forbid, "FK_CPU_MASK=1d (no fma), desc.forbid_features = avx2, avx512f", FK_EUNSUPPORTED,
         "phase rmsnorm|fma hidden by FK_CPU_MASK=1d|avx2 forbidden by desc.forbid_features",
         setenv("FK_CPU_MASK", "1d", 1);
         c->d.forbid_features = FK_CPU_AVX2 | FK_CPU_AVX512F;)
DESC_ROW(cpu_mask_0x_prefix, "FK_CPU_MASK=0x00000003 (0x, leading zeros: avx2 and fma)", FK_OK, NULL,
         setenv("FK_CPU_MASK", "0x00000003", 1);
         cr_assert_eq(fk_cpu_features(), fk_cpu_features() & (FK_CPU_AVX2 | FK_CPU_FMA));
         cr_assert_neq(fk_cpu_features(), 0);)
#else
DESC_ROW(forbid_bf16_dot_fast, "fast tier, desc.forbid_features = bf16", FK_EUNSUPPORTED,
         "phase in_proj|bf16 forbidden by desc.forbid_features", c->d.tier = FK_TIER_FAST;
         c->d.forbid_features = FK_CPU_BF16;)
DESC_ROW(cpu_mask_hides_bf16_dot, "fast tier, FK_CPU_MASK=10000 (asimd only)", FK_EUNSUPPORTED,
         "phase in_proj|bf16 hidden by FK_CPU_MASK=10000", setenv("FK_CPU_MASK", "10000", 1);
         c->d.tier = FK_TIER_FAST;)
#endif
/* An FK_CPU_MASK that cannot be read is refused, naming it and its value, and hides every feature
 * (fk_cpu_features() is 0): strtoull took "zz" as 0, "-1" as every bit, "3 " as 3. */
#define MASK_ROW(id, value, why) \
  DESC_ROW(id, "FK_CPU_MASK=\"" value "\"", FK_EINVAL, "FK_CPU_MASK=\"" value "\"|" why, \
           setenv("FK_CPU_MASK", value, 1); \
           cr_assert_eq(fk_cpu_features(), 0);)
MASK_ROW(cpu_mask_not_hex, "zz", "not a hex number")
MASK_ROW(cpu_mask_negative, "-1", "not a hex number")
MASK_ROW(cpu_mask_trailing_junk, "1f,", "trailing characters")
MASK_ROW(cpu_mask_trailing_space, "3 ", "trailing characters")
MASK_ROW(cpu_mask_overflow, "10000000000000000", "more than 64 bits")
MASK_ROW(cpu_mask_empty, "", "empty")
MASK_ROW(cpu_mask_bare_0x, "0x", "no hex digit after 0x")

ROW(largest_dims_sized, "fk_plan_check", "every dimension at its limit: the arena size does not overflow", FK_OK,
    NULL, setup_model,
    c->d.hidden = 65536;
    c->d.max_rows = 65536;
    c->d.tail_in = 65536;
    c->d.max_frames = 65536;
    size_t bytes = 0;
    fk_status s = fk_plan_check(&c->d, &bytes, e);
    cr_assert_eq(s, FK_OK, "%s", e ? e->message : "");
    /* at least the packed in_proj and out_proj, and the planes xn, bcx, cy */
    double lower = (4.0 * 65536 * 65536) * 2 + 65536.0 * 65536 * (4 + 6 + 4);
    cr_assert_geq((double)bytes, lower, "arena %zu bytes", bytes);
    return s;)

ROW(arena_beyond_memory, "fk_plan_create", "an arena past RLIMIT_AS", FK_ENOMEM, "arena", setup_huge,
    return create_limited(c, (size_t)512 << 20, e);)

ROW(threads_refused, "fk_plan_create", "a thread stack past RLIMIT_AS", FK_ESYSTEM, "team member 1 of 2",
    setup_model, c->d.flags = FK_PLAN_NO_PIN;
    size_t bytes = 0;
    cr_assert_eq(fk_plan_check(&c->d, &bytes, NULL), FK_OK);
    return create_limited(c, bytes + ((size_t)512 << 10), e);) /* the arena fits, a thread stack does not */

/* ---- fk_run ---- */

ROW(run_plan_null, "fk_run", "plan NULL", FK_EINVAL, "plan is NULL", setup_plan,
    return run(NULL, FK_PROG_BLOCK_PREFILL, BLOCK_IO(), e);)

ROW(run_program_unknown, "fk_run", "program 11", FK_EINVAL, "program = 11", setup_plan,
    return run(c->p, (fk_program)11, BLOCK_IO(), e);)

ROW(run_program_negative, "fk_run", "program -1", FK_EINVAL, "program = -1", setup_plan,
    return run(c->p, (fk_program)-1, BLOCK_IO(), e);)

ROW(run_program_not_ready, "fk_run", "block_decode on a plan ready for the tail only", FK_EINVAL, "desc.programs",
    setup_plan, fk_plan_desc d = fkp_desc(&c->m, FK_PROGRAMS_TAIL, 1, 0, 2);
    fk_plan *t = plan(c, &d);
    watch_state(c, t);
    return run(t, FK_PROG_BLOCK_DECODE, BLOCK_IO(.rows = 1), e);)

ROW(run_io_null, "fk_run", "io NULL", FK_EINVAL, "io is NULL", setup_plan,
    return fk_run(c->p, FK_PROG_BLOCK_DECODE, NULL, e);)

ROW(run_rows_zero, "fk_run", "block_prefill: io.rows = 0", FK_EINVAL, "io.rows = 0", setup_plan,
    return run(c->p, FK_PROG_BLOCK_PREFILL, BLOCK_IO(.rows = 0), e);)

ROW(run_rows_negative, "fk_run", "block_prefill: io.rows = -1", FK_EINVAL, "io.rows = -1", setup_plan,
    return run(c->p, FK_PROG_BLOCK_PREFILL, BLOCK_IO(.rows = -1), e);)

ROW(run_rows_beyond_max_rows, "fk_run", "block_prefill: io.rows = max_rows + 1", FK_EINVAL,
    "io.rows = 5|desc.max_rows", setup_plan, return run(c->p, FK_PROG_BLOCK_PREFILL, BLOCK_IO(.rows = MAXR + 1), e);)

ROW(run_decode_two_rows, "fk_run", "block_decode: io.rows = 2", FK_EINVAL, "io.rows = 2", setup_plan,
    return run(c->p, FK_PROG_BLOCK_DECODE, BLOCK_IO(.rows = 2), e);)

ROW(run_x_null, "fk_run", "io.x NULL", FK_EINVAL, "io.x is NULL", setup_plan,
    return run(c->p, FK_PROG_BLOCK_PREFILL, BLOCK_IO(.x = NULL), e);)

ROW(run_ldx_below_hidden, "fk_run", "io.ldx = hidden - 1", FK_EINVAL, "io.ldx = 63", setup_plan,
    return run(c->p, FK_PROG_BLOCK_PREFILL, BLOCK_IO(.ldx = H - 1), e);)

ROW(run_ldx_overflows, "fk_run", "io.ldx = 2^61, 4 rows (rows x ldx overflow)", FK_EINVAL, "io.ldx", setup_plan,
    return run(c->p, FK_PROG_BLOCK_PREFILL, BLOCK_IO(.rows = 4, .ldx = (int64_t)1 << 61), e);)

ROW(run_frames_beyond_max_frames, "fk_run", "tail: io.rows = max_frames + 1", FK_EINVAL,
    "io.rows = 4|desc.max_frames", setup_plan, return run(c->p, FK_PROG_TAIL, TAIL_IO(.rows = MAXF + 1), e);)

ROW(run_feat_null, "fk_run", "io.feat NULL", FK_EINVAL, "io.feat is NULL", setup_plan,
    return run(c->p, FK_PROG_TAIL, TAIL_IO(.feat = NULL), e);)

ROW(run_ldfeat_below_tail_in, "fk_run", "io.ldfeat = tail_in - 1", FK_EINVAL, "io.ldfeat = 15", setup_plan,
    return run(c->p, FK_PROG_TAIL, TAIL_IO(.ldfeat = TIN - 1), e);)

ROW(run_ldfeat_overflows, "fk_run", "io.ldfeat = 2^62, 2 frames (rows x ldfeat overflow)", FK_EINVAL, "io.ldfeat",
    setup_plan, return run(c->p, FK_PROG_TAIL, TAIL_IO(.rows = 2, .ldfeat = (int64_t)1 << 62), e);)

ROW(run_pcm_null, "fk_run", "io.pcm NULL with 160 samples due", FK_EINVAL, "io.pcm is NULL", setup_plan,
    return run(c->p, FK_PROG_TAIL, TAIL_IO(.pcm = NULL), e);)

ROW(run_pcm_cap_short, "fk_run", "io.pcm_cap = 479 with 480 due", FK_EINVAL, "io.pcm_cap = 479", setup_plan,
    return run(c->p, FK_PROG_TAIL, TAIL_IO(.rows = 2, .pcm_cap = 479), e);)

ROW(run_pcm_cap_negative, "fk_run", "tail_flush: io.pcm_cap = -1", FK_EINVAL, "io.pcm_cap = -1", setup_plan,
    fk_plan_desc d = fkp_desc(&c->m, FK_PROGRAMS_TAIL, 1, 0, 2);
    fk_plan *t = plan(c, &d);
    watch_state(c, t);
    return run(t, FK_PROG_TAIL_FLUSH, (fk_io){ .pcm = c->pcm, .pcm_cap = -1 }, e);)

ROW(run_pcm_overlaps_feat, "fk_run", "tail: io.pcm == io.feat", FK_EINVAL, "io.pcm overlaps io.feat", setup_plan,
    return run(c->p, FK_PROG_TAIL, TAIL_IO(.pcm = c->feat, .pcm_cap = 160), e);)

ROW(run_pcm_overlaps_io, "fk_run", "tail: the fk_io inside the PCM due", FK_EINVAL, "io.pcm overlaps the fk_io",
    setup_plan,
    /* a buffer holding the fk_io itself 256 bytes in (the 160 samples due: 640 bytes) */
    char *buf = alloc(c, 4096);
    memset(buf, 0x11, 4096);
    fk_io *io = (fk_io *)(void *)(buf + 256);
    *io = TAIL_IO(.pcm = buf, .pcm_count = -99);
    watch(c, buf, 4096);
    fk_status s = fk_run(c->p, FK_PROG_TAIL, io, e);
    cr_assert_eq(io->pcm_count, -99);
    return s;)

ROW(run_flush_after_one_frame, "fk_run", "tail_flush after exactly 1 frame", FK_ESTATE, "1 frame", setup_plan,
    return run(c->p, FK_PROG_TAIL_FLUSH, (fk_io){ .pcm = c->pcm, .pcm_cap = PCM }, e);)

ROW(run_busy_same_plan, "fk_run", "another fk_run in flight on the plan", FK_EBUSY, "in flight", setup_busy,
    fk_io io = { .rows = 1, .x = c->x, .ldx = BH };
    UNTIL_BUSY(fk_run(c->p, FK_PROG_BLOCK_DECODE, &io, e), memcpy(c->x, c->x0, BH * 2));)

ROW(run_busy_team, "fk_run", "a plan on the same team in flight", FK_EBUSY, "desc.team_of", setup_busy,
    fk_io io = { .rows = 1, .x = c->x, .ldx = BH };
    UNTIL_BUSY(fk_run(c->q, FK_PROG_BLOCK_DECODE, &io, e), memcpy(c->x, c->x0, BH * 2);
               cr_assert_eq(fk_state_load(c->q, c->st[0].snap, c->st[0].len, NULL), FK_OK));)

/* ---- state ---- */

ROW(state_save_plan_null, "fk_state_save", "plan NULL", FK_EINVAL, "plan is NULL", setup_plan,
    return fk_state_save(NULL, c->bad, c->snap_len, e);)

ROW(state_save_buf_null, "fk_state_save", "buf NULL", FK_EINVAL, "buf is NULL", setup_plan,
    return fk_state_save(c->p, NULL, c->snap_len, e);)

ROW(state_save_len_short, "fk_state_save", "len one byte short", FK_EINVAL, "len", setup_plan,
    memset(c->bad, 0x33, c->snap_len);
    watch(c, c->bad, c->snap_len);
    return fk_state_save(c->p, c->bad, c->snap_len - 1, e);)

ROW(state_save_busy, "fk_state_save", "fk_run in flight", FK_EBUSY, "in flight", setup_busy,
    UNTIL_BUSY(fk_state_save(c->p, c->bad, c->snap_len, e), memset(c->bad, 0xa5, fk_state_bytes(c->q)));)

ROW(state_load_plan_null, "fk_state_load", "plan NULL", FK_EINVAL, "plan is NULL", setup_plan,
    return fk_state_load(NULL, c->snap, c->snap_len, e);)

ROW(state_load_buf_null, "fk_state_load", "buf NULL", FK_EINVAL, "buf is NULL", setup_plan,
    return fk_state_load(c->p, NULL, c->snap_len, e);)

ROW(state_load_len_short, "fk_state_load", "len one byte short", FK_ESTATE, "len", setup_plan,
    return load_altered(c, e, c->snap_len - 1, NULL);)

ROW(state_load_len_long, "fk_state_load", "len one byte long", FK_ESTATE, "len", setup_plan,
    return load_altered(c, e, c->snap_len + 1, NULL);)

ROW(state_load_header_short, "fk_state_load", "len = 47 (less than the header)", FK_ESTATE, "magic", setup_plan,
    return load_altered(c, e, SNAP_HEADER - 1, NULL);)

ROW(state_load_wrong_magic, "fk_state_load", "magic byte flipped", FK_ESTATE, "magic", setup_plan,
    return load_altered(c, e, c->snap_len, bad_magic);)

ROW(state_load_wrong_version, "fk_state_load", "version 0", FK_ESTATE, "version", setup_plan,
    return load_altered(c, e, c->snap_len, bad_version);)

ROW(state_load_bad_checksum, "fk_state_load", "a carry byte flipped", FK_ESTATE, "checksum", setup_plan,
    return load_altered(c, e, c->snap_len, bad_carry_byte);)

ROW(state_load_other_programs, "fk_state_load", "a snapshot of a block-only plan", FK_ESTATE, "programs",
    setup_plan, return load_other(c, e, FK_PROGRAMS_BLOCK, H, 0);)

ROW(state_load_other_hidden, "fk_state_load", "a snapshot of a plan of hidden 32", FK_ESTATE, "hidden",
    setup_plan, return load_other(c, e, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, 32, TIN);)

ROW(state_load_other_tail_in, "fk_state_load", "a snapshot of a plan of tail_in 8", FK_ESTATE, "tail_in",
    setup_plan, return load_other(c, e, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, H, 8);)

ROW(state_load_negative_cursor, "fk_state_load", "tokens = -1 (checksum valid)", FK_ESTATE, "cursors", setup_plan,
    return load_altered(c, e, c->snap_len, tokens_negative);)

ROW(state_load_cursor_beyond, "fk_state_load", "tokens = INT64_MAX - 2 (checksum valid)", FK_ESTATE, "cursors",
    setup_plan, return load_altered(c, e, c->snap_len, tokens_huge);)

ROW(state_load_busy, "fk_state_load", "fk_run in flight", FK_EBUSY, "in flight", setup_busy,
    UNTIL_BUSY(fk_state_load(c->p, c->snap, c->snap_len, e), (void)0);)

ROW(state_reset_busy, "fk_state_reset", "fk_run in flight", FK_EBUSY, NULL, setup_busy,
    (void)e;
    UNTIL_BUSY(fk_state_reset(c->p), (void)0);)

ROW(state_null_plan, "fk_state_reset/query/bytes", "plan NULL", FK_OK, NULL, setup_none,
    cr_assert_eq(fk_state_reset(NULL), FK_EINVAL);
    fk_state_info i = fk_state_query(NULL);
    cr_assert(i.tokens == 0 && i.frames == 0);
    cr_assert_eq(fk_state_bytes(NULL), 0);
    return FK_OK;)

/* ---- introspection ---- */

ROW(phase_query_plan_null, "fk_phase_query", "plan NULL", FK_EINVAL, "plan is NULL", setup_plan,
    return fk_phase_query(NULL, FK_PROG_BLOCK_DECODE, 0, &c->info, e);)

ROW(phase_query_out_null, "fk_phase_query", "out NULL", FK_EINVAL, "out is NULL", setup_plan,
    return fk_phase_query(c->p, FK_PROG_BLOCK_DECODE, 0, NULL, e);)

ROW(phase_query_phase_beyond, "fk_phase_query", "phase 4 of block_decode (it has 4)", FK_EINVAL, "no phase 4",
    setup_plan, return fk_phase_query(c->p, FK_PROG_BLOCK_DECODE, 4, &c->info, e);)

ROW(phase_query_phase_negative, "fk_phase_query", "phase -1", FK_EINVAL, "no phase -1", setup_plan,
    return fk_phase_query(c->p, FK_PROG_TAIL, -1, &c->info, e);)

ROW(phase_query_program_unknown, "fk_phase_query", "program 11", FK_EINVAL, "no phase 0", setup_plan,
    return fk_phase_query(c->p, (fk_program)11, 0, &c->info, e);)

ROW(introspection_sentinels, "fk_plan_threads, ...", "plan NULL, member or program out of range", FK_OK, NULL,
    setup_plan,
    cr_assert_eq(fk_plan_threads(NULL), 0);
    cr_assert_eq(fk_plan_arena_bytes(NULL), 0);
    cr_assert_eq(fk_plan_member_cpu(NULL, 0), -1);
    cr_assert_eq(fk_plan_member_cpu(c->p, -1), -1);
    cr_assert_eq(fk_plan_member_cpu(c->p, 2), -1);
    cr_assert_eq(fk_program_phases(NULL, FK_PROG_TAIL), 0);
    cr_assert_eq(fk_program_phases(c->p, (fk_program)11), 0);
    cr_assert_str_eq(fk_program_name((fk_program)11), "?");
    cr_assert_str_eq(fk_program_name((fk_program)-1), "?");
    fk_plan_timing_reset(NULL);
    fk_plan_destroy(NULL);
    return FK_OK;)

/* ---- alignment: none is required beyond the element's; one element off gives the same bytes ---- */

/* a copy of n bytes at `off` bytes past a 64-byte boundary */
static void *shifted(ctx *c, const void *src, size_t n, size_t off) {
  char *b = alloc(c, n + 64);
  memcpy(b + off, src, n);
  return b + off;
}

ROW(misaligned_block, "fk_plan_create, fk_run", "weights and io.x one element off", FK_OK, NULL, setup_model,
    fk_plan_desc d = c->d;
    d.block.norm = shifted(c, c->m.norm, H * 2, 2);
    d.block.in_proj = shifted(c, c->m.in_proj, 3 * H * H * 2, 2);
    d.block.conv = shifted(c, c->m.conv, 3 * H * 2, 2);
    d.block.conv_bias = shifted(c, c->m.conv_bias, H * 2, 2);
    d.block.out_proj = shifted(c, c->m.out_proj, H * H * 2, 2);
    fk_plan *a = plan(c, &c->d), *b = plan(c, &d);
    uint16_t *xa = alloc(c, NX * 2);
    fkp_fill_bf16(xa, NX, 2.0f, 9);
    uint16_t *xb = shifted(c, xa, NX * 2, 2);
    cr_assert_eq((uintptr_t)xb % 4, 2);
    fk_io ia = { .rows = 3, .x = xa, .ldx = LDX }, ib = { .rows = 3, .x = xb, .ldx = LDX };
    must_run(a, FK_PROG_BLOCK_PREFILL, &ia);
    must_run(b, FK_PROG_BLOCK_PREFILL, &ib);
    ia.rows = ib.rows = 1;
    ia.x += 3 * LDX, ib.x += 3 * LDX;
    must_run(a, FK_PROG_BLOCK_DECODE, &ia);
    must_run(b, FK_PROG_BLOCK_DECODE, &ib);
    cr_assert(memcmp(xa, xb, NX * 2) == 0, "misaligned x or weights: the rows differ");
    size_t la, lb;
    unsigned char *sa = snapshot(c, a, &la), *sb = snapshot(c, b, &lb);
    cr_assert(la == lb && memcmp(sa, sb, la) == 0, "misaligned: the states differ");
    return FK_OK;)

ROW(misaligned_tail, "fk_run", "io.feat, io.pcm (f32 and int16) one element off", FK_OK, NULL, setup_model,
    for (int i16 = 0; i16 < 2; i16++) {
      fk_plan_desc d = c->d;
      d.flags = i16 ? FK_PLAN_PCM_I16 : 0;
      d.tail.lin = shifted(c, c->m.lin, FK_TAIL_SPEC * TIN * 2, 2);
      d.tail.bias = shifted(c, c->m.lin_bias, FK_TAIL_SPEC * 4, 4);
      fk_plan *a = plan(c, &d), *b = plan(c, &d);
      size_t el = i16 ? 2 : 4, n = 3 * 320 + 480;
      float *fa = alloc(c, NFEAT * 4);
      fkp_fill_f32(fa, NFEAT, 1.0f, 11);
      float *fb = shifted(c, fa, NFEAT * 4, 4);
      char *pa = alloc(c, n * el), *pb = (char *)alloc(c, n * el + 64) + el;
      memset(pa, 0, n * el);
      memset(pb, 0, n * el);
      fk_io ia = { .rows = 3, .feat = fa, .ldfeat = TIN, .pcm = pa, .pcm_cap = (int64_t)n };
      fk_io ib = { .rows = 3, .feat = fb, .ldfeat = TIN, .pcm = pb, .pcm_cap = (int64_t)n };
      must_run(a, FK_PROG_TAIL, &ia);
      must_run(b, FK_PROG_TAIL, &ib);
      cr_assert_eq(ia.pcm_count, ib.pcm_count);
      fk_io ga = { .pcm = pa + (size_t)ia.pcm_count * el, .pcm_cap = 480 };
      fk_io gb = { .pcm = pb + (size_t)ib.pcm_count * el, .pcm_cap = 480 };
      must_run(a, FK_PROG_TAIL_FLUSH, &ga);
      must_run(b, FK_PROG_TAIL_FLUSH, &gb);
      cr_assert(memcmp(pa, pb, n * el) == 0, "misaligned feat/pcm (%s): the PCM differs", i16 ? "int16" : "f32");
    }
    return FK_OK;)

ROW(misaligned_pack, "fk_gemv_pack, fk_gemv_pack_blocked", "w and out one element off", FK_OK, NULL, setup_pack,
    uint16_t *wb = shifted(c, c->w16, PN * PLDW * 2, 2);
    size_t np = fk_gemv_packed_elems(PN, PK), nb = fk_gemv_blocked_elems(PN, PK);
    uint16_t *oa = alloc(c, nb * 2), *ob = (uint16_t *)alloc(c, nb * 2 + 64) + 1;
    cr_assert_eq(fk_gemv_pack(c->w16, PLDW, PN, PK, oa, np, e), FK_OK);
    cr_assert_eq(fk_gemv_pack(wb, PLDW, PN, PK, ob, np, e), FK_OK);
    cr_assert(memcmp(oa, ob, np * 2) == 0, "packed: differs when misaligned");
    cr_assert_eq(fk_gemv_pack_blocked(c->w16, PLDW, PN, PK, oa, nb, e), FK_OK);
    cr_assert_eq(fk_gemv_pack_blocked(wb, PLDW, PN, PK, ob, nb, e), FK_OK);
    cr_assert(memcmp(oa, ob, nb * 2) == 0, "blocked: differs when misaligned");
    return FK_OK;)

ROW(misaligned_rope, "fk_rope_table, fk_rope_inv_freq", "cos, sin, inv one element off", FK_OK, NULL, setup_none,
    float *ca = alloc(c, 640 * 4), *sa = alloc(c, 640 * 4), *cb = (float *)alloc(c, 641 * 4) + 1,
          *sb = (float *)alloc(c, 641 * 4) + 1;
    cr_assert_eq(fk_rope_table(1e6f, 64, 7, 20, ca, sa, e), FK_OK);
    cr_assert_eq(fk_rope_table(1e6f, 64, 7, 20, cb, sb, e), FK_OK);
    cr_assert(memcmp(ca, cb, 640 * 4) == 0 && memcmp(sa, sb, 640 * 4) == 0, "tables differ when misaligned");
    cr_assert_eq(fk_rope_inv_freq(1e6f, 64, ca, e), FK_OK);
    cr_assert_eq(fk_rope_inv_freq(1e6f, 64, cb, e), FK_OK);
    cr_assert(memcmp(ca, cb, 32 * 4) == 0, "inv_freq differs when misaligned");
    return FK_OK;)

ROW(misaligned_snapshot, "fk_state_save, fk_state_load", "buf at an odd address", FK_OK, NULL, setup_plan,
    unsigned char *odd = (unsigned char *)alloc(c, c->snap_len + 64) + 1;
    cr_assert_eq(fk_state_save(c->p, odd, c->snap_len, e), FK_OK);
    cr_assert(memcmp(odd, c->snap, c->snap_len) == 0, "the snapshot differs at an odd address");
    fk_plan *q = plan(c, &c->d);
    cr_assert_eq(fk_state_load(q, odd, c->snap_len, e), FK_OK);
    size_t lq;
    cr_assert(memcmp(snapshot(c, q, &lq), c->snap, c->snap_len) == 0, "loaded from an odd address: state differs");
    return FK_OK;)

/* ---- the fixture reader: shapes that disagree ---- */

FIXROW(fix_valid_control, "fkfix_load", "the valid fixture (control)", 0, NULL,
       int rc = fix_load(c, write_fixture(c, "f32 4 1", 16, "bf16 2,3 4,1"), msg, msglen);
       cr_assert_eq(rc, 0, "%s", msg ? msg : "");
       const fkfix_tensor *x = fkfix_tensor_get(&c->fx, "x");
       cr_assert(x && x->ndim == 1 && x->shape[0] == 4 && x->nbytes == 16);
       return rc;)

FIXROW(fix_shape_beyond_payload, "fkfix_load", "x declared 5 f32, payload 4", -1, "tensor 'x'|size mismatch",
       return fix_load(c, write_fixture(c, "f32 5 1", 16, "bf16 2,3 4,1"), msg, msglen);)

FIXROW(fix_payload_beyond_shape, "fkfix_load", "x declared 3 f32, payload 4", -1, "tensor 'x'|size mismatch",
       return fix_load(c, write_fixture(c, "f32 3 1", 16, "bf16 2,3 4,1"), msg, msglen);)

FIXROW(fix_dtype_vs_payload, "fkfix_load", "x declared 4 f64, payload 4 f32", -1, "tensor 'x'|size mismatch",
       return fix_load(c, write_fixture(c, "f64 4 1", 16, "bf16 2,3 4,1"), msg, msglen);)

FIXROW(fix_strides_beyond_payload, "fkfix_load", "w 2x3 row stride 5: span 8, payload 7", -1, "tensor 'w'|span 8",
       return fix_load(c, write_fixture(c, "f32 4 1", 16, "bf16 2,3 5,1"), msg, msglen);)

FIXROW(fix_dims_disagree, "fkfix_load", "x shape 1 dim, strides 2", -1, "tensor 'x'|dims",
       return fix_load(c, write_fixture(c, "f32 4 1,1", 16, "bf16 2,3 4,1"), msg, msglen);)

FIXROW(fix_span_overflows, "fkfix_load", "w strides 2^63 - 1: the span overflows", -1, "tensor 'w'|overflow",
       return fix_load(c, write_fixture(c, "f32 4 1", 16, "bf16 3,3 9223372036854775807,1"), msg, msglen);)

FIXROW(fix_span_beyond_limit, "fkfix_load", "x declared 2^30 f32 (past the 1 GiB payload limit)", -1, "tensor 'x'|1 GiB",
       return fix_load(c, write_fixture(c, "f32 1073741824 1", 16, "bf16 2,3 4,1"), msg, msglen);)

FIXROW(fix_test_asks_other_shape, "fkfix_tensor_get", "x is 2x2, the test asks for 4", -1, "tensor 'x'|the test asks",
       cr_assert_eq(fix_load(c, write_fixture(c, "f32 2,2 2,1", 16, "bf16 2,3 4,1"), NULL, 0), 0);
       const int64_t four[1] = { 4 };
       return want_tensor(&c->fx, "x", FKFIX_F32, 1, four, msg, msglen);)

FIXROW(fix_test_asks_absent, "fkfix_tensor_get/scalar_*", "the test asks for tensor 'z', scalar eps as i64", -1, NULL,
       cr_assert_eq(fix_load(c, write_fixture(c, "f32 4 1", 16, "bf16 2,3 4,1"), NULL, 0), 0);
       cr_assert_null(fkfix_tensor_get(&c->fx, "z"));
       cr_assert_null(fkfix_tensor_get(&c->fx, NULL));
       cr_assert_null(fkfix_tensor_get(NULL, "x"));
       int64_t v = 77;
       float f = 7.0f;
       cr_assert_eq(fkfix_scalar_i64(&c->fx, "nope", &v), -1);
       cr_assert_eq(fkfix_scalar_f32(&c->fx, "n", &f), -1);
       cr_assert_eq(fkfix_scalar_i64(&c->fx, "n", NULL), -1);
       int rc = fkfix_scalar_i64(&c->fx, "eps", &v);
       cr_assert(v == 77 && f == 7.0f, "a refused scalar read wrote *v");
       return rc;)

FIXROW(fix_load_null_path, "fkfix_load", "manifest_path NULL", -1, "manifest_path", return fix_load(c, NULL, msg, msglen);)

FIXROW(fix_load_null_out, "fkfix_load", "out NULL", -1, "out is NULL",
       return fkfix_load(write_fixture(c, "f32 4 1", 16, "bf16 2,3 4,1"), NULL, msg, msglen);)

/* ---- the whole-model programs ------------------------------------------------------------------- */

/* A small LM (layers conv, attention) and detokenizer (the same stack, a sliding window of 4) over
 * one pool of weights; the pool and the descriptor live for the row (one process per row). */
enum { MH = 64, MF = 96, MV = 100, MCB = 16, MQ = 2 * 64, MK = 64 };
static fk_lfm2_layer m_layers[2], m_layers2[2];

static void setup_models(ctx *c) {
  /* norms (all 1) first, then every layer's matrices, the embeddings, the head */
  size_t per = 3 * MH * MH + 3 * MH + MH * MH + MQ * MH + 2 * MK * MH + MH * MQ + 3 * MF * MH;
  size_t n = 2 * MH + 2 * per + MV * MH + 8 * MCB * MH + FK_TAIL_SPEC * MH;
  uint16_t *pool = alloc(c, n * 2), *at = pool + 2 * MH;
  fkp_fill_bf16(pool, n, 0.125f, 91);
  for (size_t i = 0; i < 2 * MH; i++) pool[i] = 0x3f80; /* norms: 1 */
#define TAKE(k) (at += (k), at - (k))
  for (int i = 0; i < 2; i++) {
    fk_lfm2_layer *l = &m_layers[i];
    memset(l, 0, sizeof *l);
    l->kind = i ? FK_LAYER_ATTN : FK_LAYER_CONV;
    l->operator_norm = pool;
    l->ffn_norm = pool + MH;
    l->in_proj = TAKE(3 * MH * MH);
    l->conv = TAKE(3 * MH);
    l->out_proj = TAKE(MH * MH);
    l->q_proj = TAKE(MQ * MH);
    l->k_proj = TAKE(MK * MH);
    l->v_proj = TAKE(MK * MH);
    l->q_norm = pool;
    l->k_norm = pool + 64;
    l->o_proj = TAKE(MH * MQ);
    l->w1 = TAKE(MF * MH);
    l->w3 = TAKE(MF * MH);
    l->w2 = TAKE(MH * MF);
  }
  memcpy(m_layers2, m_layers, sizeof m_layers);
  fk_lfm2_stack st = { .hidden = MH, .ffn = MF, .layers = 2, .heads = 2, .kv_heads = 1, .head_dim = 64, .window = 0,
                       .max_pos = 16, .rope_theta = 1e6f, .norm_eps = 1e-5f, .layer = m_layers, .final_norm = pool };
  memset(&c->d, 0, sizeof c->d);
  c->d.programs = FK_PROGRAMS_LM | FK_PROGRAMS_DETOK;
  c->d.threads = 2;
  c->d.lm = (fk_lm_desc){ .stack = st, .vocab = MV, .max_rows = 4, .embed = TAKE(MV * MH), .lm_head = NULL };
  st.window = 4;
  st.max_pos = 12;
  c->d.detok = (fk_detok_desc){ .stack = st, .codebook_vocab = MCB, .max_frames = 2, .codebooks = TAKE(8 * MCB * MH) };
  c->d.tail_in = MH;
  c->d.tail.lin = TAKE(FK_TAIL_SPEC * MH);
  float *bias = alloc(c, FK_TAIL_SPEC * 4);
  for (int i = 0; i < FK_TAIL_SPEC; i++) bias[i] = 0.01f * (float)(i % 7);
  c->d.tail.bias = bias;
  c->d.clip = INFINITY;
#undef TAKE
  watch(c, pool, n * 2);
  watch(c, bias, FK_TAIL_SPEC * 4);
}

#define MDESC_ROW(id, what, want, names, ...) \
  ROW(id, "fk_plan_create/check", what, want, names, setup_models, __VA_ARGS__ return create_both(c, e);)

MDESC_ROW(lm_hidden_zero, "desc.lm.stack.hidden = 0", FK_EINVAL, "desc.lm.stack.hidden", c->d.lm.stack.hidden = 0;)
MDESC_ROW(lm_ffn_beyond, "desc.lm.stack.ffn = 65537", FK_EINVAL, "desc.lm.stack.ffn", c->d.lm.stack.ffn = 65537;)
MDESC_ROW(lm_layers_beyond, "desc.lm.stack.layers = 65 (limit FK_MAX_LAYERS)", FK_EINVAL, "desc.lm.stack.layers",
          c->d.lm.stack.layers = 65;)
MDESC_ROW(lm_head_dim_32, "desc.lm.stack.head_dim = 32 (the stamps serve 64)", FK_EINVAL, "desc.lm.stack.head_dim",
          c->d.lm.stack.head_dim = 32;)
MDESC_ROW(lm_kv_heads_not_dividing, "desc.lm.stack.kv_heads = 3 with 2 heads", FK_EINVAL, "desc.lm.stack.kv_heads",
          c->d.lm.stack.kv_heads = 3;)
MDESC_ROW(lm_max_pos_zero, "desc.lm.stack.max_pos = 0", FK_EINVAL, "desc.lm.stack.max_pos", c->d.lm.stack.max_pos = 0;)
MDESC_ROW(lm_rope_theta_one, "desc.lm.stack.rope_theta = 1", FK_EINVAL, "desc.lm.stack.rope_theta",
          c->d.lm.stack.rope_theta = 1.0f;)
MDESC_ROW(lm_layer_kind_unknown, "desc.lm.stack.layer[1].kind = 7", FK_EINVAL, "desc.lm.stack.layer[1].kind",
          m_layers2[1].kind = (fk_layer_kind)7;
          c->d.lm.stack.layer = m_layers2;)
MDESC_ROW(lm_layer_weight_null, "desc.lm.stack.layer[1].q_proj NULL", FK_EINVAL, "desc.lm.stack.layer[1].q_proj",
          m_layers2[1].q_proj = NULL;
          c->d.lm.stack.layer = m_layers2;)
MDESC_ROW(lm_final_norm_null, "desc.lm.stack.final_norm NULL", FK_EINVAL, "desc.lm.stack.final_norm",
          c->d.lm.stack.final_norm = NULL;)
MDESC_ROW(lm_vocab_zero, "desc.lm.vocab = 0", FK_EINVAL, "desc.lm.vocab", c->d.lm.vocab = 0;)
MDESC_ROW(lm_embed_null, "desc.lm.embed NULL", FK_EINVAL, "desc.lm.embed", c->d.lm.embed = NULL;)
/* quantized weights (desc.quantize, fk_lfm2_layer.q, fk_lm_desc.lm_head_q) */
/* the quantized fast tier needs the int8 dot product (VPDPBUSD, SDOT) */
#if defined(__x86_64__)
MDESC_ROW(forbid_int8_dot_fast, "fast tier, desc.quantize = FK_Q8, desc.forbid_features = avx512vnni, avxvnni, f16c",
          FK_EUNSUPPORTED, "phase in_proj|f16c forbidden by desc.forbid_features", c->d.tier = FK_TIER_FAST;
          c->d.quantize = FK_Q8; c->d.forbid_features = FK_CPU_AVX512VNNI | FK_CPU_AVXVNNI | FK_CPU_F16C;)
#else
MDESC_ROW(forbid_int8_dot_fast, "fast tier, desc.quantize = FK_Q8, desc.forbid_features = dotprod", FK_EUNSUPPORTED,
          "phase in_proj|dotprod forbidden by desc.forbid_features", c->d.tier = FK_TIER_FAST;
          c->d.quantize = FK_Q8; c->d.forbid_features = FK_CPU_DOTPROD;)
#endif
MDESC_ROW(quantize_unknown, "desc.quantize = 4", FK_EINVAL, "desc.quantize = 4", c->d.quantize = (fk_qformat)4;)
MDESC_ROW(quantize_q4k, "desc.quantize = FK_Q4K with hidden 64 (k not a multiple of 256)", FK_EINVAL,
          "k = 64 is not a multiple of 256, a q4k super-block (desc.quantize)", c->d.quantize = FK_Q4K;)
MDESC_ROW(lm_q_format_q4k, "desc.lm.stack.layer[0].q.w2: q4k blocks, ffn 96 (not a multiple of 256)", FK_EINVAL,
          "desc.lm.stack.layer[0].q.w2: k = 96 is not a multiple of 256, a q4k super-block (GGUF blocks)",
          m_layers2[0].q.w2 = (fk_qmatrix){ FK_Q4K, m_layers2[0].w2 }; c->d.lm.stack.layer = m_layers2;)
MDESC_ROW(lm_q_format_unknown, "desc.lm.stack.layer[1].q.w1.format = 5", FK_EINVAL,
          "desc.lm.stack.layer[1].q.w1.format = 5", m_layers2[1].q.w1 = (fk_qmatrix){ (fk_qformat)5, m_layers2[1].w1 };
          c->d.lm.stack.layer = m_layers2;)
MDESC_ROW(lm_q_blocks_null, "desc.lm.stack.layer[0].q.in_proj: format q8, blocks NULL", FK_EINVAL,
          "desc.lm.stack.layer[0].q.in_proj.blocks is NULL", m_layers2[0].q.in_proj = (fk_qmatrix){ FK_Q8, NULL };
          c->d.lm.stack.layer = m_layers2;)
MDESC_ROW(lm_q_other_kind, "GGUF blocks for q_proj on a conv layer", FK_EINVAL,
          "desc.lm.stack.layer[0].q.q_proj|conv layer has no q_proj",
          m_layers2[0].q.q_proj = (fk_qmatrix){ FK_Q8, m_layers2[1].q_proj };
          c->d.lm.stack.layer = m_layers2;)
MDESC_ROW(lm_q_neither, "desc.lm.stack.layer[1].w2 NULL and no GGUF blocks", FK_EINVAL,
          "desc.lm.stack.layer[1].w2 is NULL", m_layers2[1].w2 = NULL;
          c->d.lm.stack.layer = m_layers2;)
MDESC_ROW(quantize_k_not_block, "desc.quantize q8, ffn 80 (w2's k not a multiple of 32)", FK_EINVAL,
          "desc.lm.stack.layer[0].q.w2|k = 80|multiple of 32|desc.quantize", c->d.quantize = FK_Q8;
          c->d.lm.stack.ffn = 80;)
MDESC_ROW(lm_head_q_k_not_block, "desc.lm.lm_head_q q4 blocks with hidden 48", FK_EINVAL,
          "desc.lm.lm_head_q|k = 48|GGUF blocks", c->d.programs = FK_PROGRAMS_LM; c->d.lm.stack.hidden = 48;
          c->d.lm.lm_head_q = (fk_qmatrix){ FK_Q4, c->d.lm.embed };)

/* Readiness quantizes (or re-lays) the weights only in fk_plan_create: a weight it cannot quantize
 * is refused there, naming the matrix; fk_plan_check does not read weights. */
static int create_only(ctx *c, fk_error *e) {
  fk_plan *p = (fk_plan *)&c->d;
  fk_status s = fk_plan_create(&c->d, &p, e);
  if (s == FK_OK) c->plans[c->nplans++] = p;
  else cr_assert_null(p, "fk_plan_create: *out not NULL after a refusal");
  return s;
}
ROW(quantize_weight_nan, "fk_plan_create", "desc.quantize q8, a NaN in layer 1's w3", FK_EINVAL,
    "desc.lm.stack.layer[1].w3 (quantize q8)|w[5][17] is NaN", setup_models,
    uint16_t *w3 = alloc(c, (size_t)MF * MH * 2);
    memcpy(w3, m_layers[1].w3, (size_t)MF * MH * 2);
    w3[5 * MH + 17] = 0x7fc1;
    m_layers2[1].w3 = w3;
    c->d.lm.stack.layer = m_layers2;
    c->d.quantize = FK_Q8;
    return create_only(c, e);)
ROW(lm_q_scale_inf, "fk_plan_create", "GGUF q8 blocks of out_proj with an infinite scale", FK_EINVAL,
    "desc.lm.stack.layer[0].q.out_proj (GGUF blocks)|row 1, block 1|infinite", setup_models,
    size_t bytes = fk_q_gguf_bytes(FK_Q8, MH, MH);
    unsigned char *b = alloc(c, bytes);
    fk_error qe;
    cr_assert_eq(fk_q_quantize_bf16(FK_Q8, m_layers[0].out_proj, MH, MH, MH, b, bytes, &qe), FK_OK);
    b[(1 * (MH / 32) + 1) * 34 + 1] = 0x7c; /* row 1, block 1: scale 0x7c00 */
    b[(1 * (MH / 32) + 1) * 34] = 0x00;
    m_layers2[0].q.out_proj = (fk_qmatrix){ FK_Q8, b };
    c->d.lm.stack.layer = m_layers2;
    return create_only(c, e);)
ROW(quantize_plan_ok, "fk_plan_create/check", "desc.quantize q4 and q8 GGUF blocks for one matrix (not a refusal)",
    FK_OK, NULL, setup_models,
    size_t bytes = fk_q_gguf_bytes(FK_Q8, MH, MH);
    unsigned char *b = alloc(c, bytes);
    fk_error qe;
    cr_assert_eq(fk_q_quantize_bf16(FK_Q8, m_layers[0].out_proj, MH, MH, MH, b, bytes, &qe), FK_OK);
    m_layers2[0].q.out_proj = (fk_qmatrix){ FK_Q8, b };
    c->d.lm.stack.layer = m_layers2;
    c->d.quantize = FK_Q4;
    return create_both(c, e);)

MDESC_ROW(detok_window_negative, "desc.detok.stack.window = -1", FK_EINVAL, "desc.detok.stack.window",
          c->d.detok.stack.window = -1;)
MDESC_ROW(detok_max_frames_beyond, "desc.detok.max_frames = 4097", FK_EINVAL, "desc.detok.max_frames",
          c->d.detok.max_frames = 4097;)
MDESC_ROW(detok_codebooks_null, "desc.detok.codebooks NULL", FK_EINVAL, "desc.detok.codebooks",
          c->d.detok.codebooks = NULL;)
MDESC_ROW(detok_tail_in_mismatch, "desc.tail_in = 32, the detokenizer's hidden 64", FK_EINVAL, "desc.tail_in",
          c->d.tail_in = 32;)

/* A ready model plan with state (3 prompt tokens; 1 code frame); tokens, codes, logits and PCM
 * under canaries, the state watched. */
static int32_t m_tok[8], m_codes[3 * 8];
static float m_logits[MV], m_pcm[2 * 1920 + 480];

static void setup_models_plan(ctx *c) {
  setup_models(c);
  c->p = plan(c, &c->d);
  for (int i = 0; i < 8; i++) m_tok[i] = i * 7;
  for (int i = 0; i < 24; i++) m_codes[i] = i % MCB;
  fk_io io = { .rows = 3, .tokens = m_tok };
  must_run(c->p, FK_PROG_LM_PREFILL, &io);
  fk_io dio = { .rows = 1, .codes = m_codes, .pcm = m_pcm, .pcm_cap = 2 * 1920 + 480 };
  must_run(c->p, FK_PROG_DETOK, &dio);
  for (int i = 0; i < MV; i++) m_logits[i] = -3.0f;
  for (int i = 0; i < 2 * 1920 + 480; i++) m_pcm[i] = -7.0f;
  watch(c, m_tok, sizeof m_tok);
  watch(c, m_codes, sizeof m_codes);
  watch(c, m_logits, sizeof m_logits);
  watch(c, m_pcm, sizeof m_pcm);
  watch_state(c, c->p);
}

#define LM_IO(...) ((fk_io){ .rows = 1, .tokens = m_tok, .logits = m_logits, __VA_ARGS__ })
#define DT_IO(...) ((fk_io){ .rows = 1, .codes = m_codes, .pcm = m_pcm, .pcm_cap = 2 * 1920 + 480, __VA_ARGS__ })
static const fk_sampling m_temp0 = { 0.0f, 4 }, m_tempnan = { NAN, 4 }, m_topkneg = { 1.0f, -1 };

ROW(run_lm_tokens_null, "fk_run", "lm_decode: io.tokens NULL", FK_EINVAL, "io.tokens is NULL", setup_models_plan,
    return run(c->p, FK_PROG_LM_DECODE, LM_IO(.tokens = NULL), e);)
ROW(run_lm_token_out_of_range, "fk_run", "lm_prefill: io.tokens[1] = vocab", FK_EINVAL, "io.tokens[1] = 100",
    setup_models_plan,
    int32_t t[2] = { 3, MV };
    return run(c->p, FK_PROG_LM_PREFILL, LM_IO(.rows = 2, .tokens = t), e);)
ROW(run_lm_token_negative, "fk_run", "lm_decode: io.tokens[0] = -1", FK_EINVAL, "io.tokens[0] = -1", setup_models_plan,
    int32_t t = -1;
    return run(c->p, FK_PROG_LM_DECODE, LM_IO(.tokens = &t), e);)
ROW(run_lm_decode_two_rows, "fk_run", "lm_decode: io.rows = 2", FK_EINVAL, "io.rows = 2", setup_models_plan,
    return run(c->p, FK_PROG_LM_DECODE, LM_IO(.rows = 2), e);)
ROW(run_lm_rows_beyond_max_rows, "fk_run", "lm_prefill: io.rows = lm.max_rows + 1", FK_EINVAL, "io.rows = 5",
    setup_models_plan, return run(c->p, FK_PROG_LM_PREFILL, LM_IO(.rows = 5), e);)
/* the model plan at position 15 of lm.stack.max_pos 16 */
static void setup_models_full(ctx *c) {
  setup_models_plan(c);
  fk_io io = { .rows = 4, .tokens = m_tok };
  for (int i = 0; i < 3; i++) must_run(c->p, FK_PROG_LM_PREFILL, &io);
  c->nst = 0;
  watch_state(c, c->p);
}

ROW(run_lm_beyond_max_pos, "fk_run", "lm_prefill: position 15 + 2 rows past lm.stack.max_pos 16", FK_ESTATE, "max_pos",
    setup_models_full, return run(c->p, FK_PROG_LM_PREFILL, LM_IO(.rows = 2), e);)
ROW(run_lm_temperature_zero, "fk_run", "lm_decode: io.sampling->temperature = 0", FK_EINVAL, "temperature",
    setup_models_plan, return run(c->p, FK_PROG_LM_DECODE, LM_IO(.sampling = &m_temp0), e);)
ROW(run_lm_temperature_nan, "fk_run", "lm_decode: io.sampling->temperature = NaN", FK_EINVAL, "temperature",
    setup_models_plan, return run(c->p, FK_PROG_LM_DECODE, LM_IO(.sampling = &m_tempnan), e);)
ROW(run_lm_top_k_negative, "fk_run", "lm_decode: io.sampling->top_k = -1", FK_EINVAL, "top_k", setup_models_plan,
    return run(c->p, FK_PROG_LM_DECODE, LM_IO(.sampling = &m_topkneg), e);)
ROW(run_lm_logits_overlap_io, "fk_run", "lm_decode: io.logits overlapping the fk_io", FK_EINVAL, "io.logits overlaps",
    setup_models_plan,
    static union { fk_io io; float f[256]; } u;
    u.io = LM_IO();
    u.io.logits = u.f;
    u.io.pcm_count = -99;
    fk_status s = fk_run(c->p, FK_PROG_LM_DECODE, &u.io, e);
    return s;)
ROW(run_detok_codes_null, "fk_run", "detok: io.codes NULL", FK_EINVAL, "io.codes is NULL", setup_models_plan,
    return run(c->p, FK_PROG_DETOK, DT_IO(.codes = NULL), e);)
ROW(run_detok_code_out_of_range, "fk_run", "detok: io.codes[9] = codebook_vocab", FK_EINVAL, "io.codes[9] = 16",
    setup_models_plan,
    int32_t cc[16] = { 0 };
    cc[9] = MCB;
    return run(c->p, FK_PROG_DETOK, DT_IO(.rows = 2, .codes = cc), e);)
ROW(run_detok_frames_beyond, "fk_run", "detok: io.rows = detok.max_frames + 1", FK_EINVAL, "io.rows = 3",
    setup_models_plan, return run(c->p, FK_PROG_DETOK, DT_IO(.rows = 3), e);)
ROW(run_detok_pcm_short, "fk_run", "detok: io.pcm_cap = 1919 with 1920 due", FK_EINVAL, "io.pcm_cap = 1919",
    setup_models_plan, return run(c->p, FK_PROG_DETOK, DT_IO(.pcm_cap = 1919), e);)
ROW(run_detok_pcm_overlaps_codes, "fk_run", "detok: io.pcm overlapping io.codes", FK_EINVAL, "io.pcm overlaps io.codes",
    setup_models_plan, return run(c->p, FK_PROG_DETOK, DT_IO(.pcm = (float *)(void *)m_codes), e);)
ROW(run_detok_beyond_max_pos, "fk_run", "detok: 6 rows + 2 frames (12 rows) past detok.stack.max_pos 12", FK_ESTATE,
    "max_pos", setup_models_plan, return run(c->p, FK_PROG_DETOK, DT_IO(.rows = 2), e);)
ROW(sampler_seed_not_lm, "fk_sampler_seed", "a plan without FK_PROGRAMS_LM; plan NULL", FK_EINVAL, NULL, setup_plan,
    cr_assert_eq(fk_sampler_seed(NULL, 1), FK_EINVAL);
    return fk_sampler_seed(c->p, 1);)
ROW(state_load_model_shapes, "fk_state_load", "a snapshot of a plan whose feed-forward width differs", FK_ESTATE,
    "model shapes", setup_models_plan,
    c->d.lm.stack.ffn = MF / 2;
    c->d.detok.stack.ffn = MF / 2;
    fk_plan *q = plan(c, &c->d);
    watch_state(c, q);
    size_t len;
    unsigned char *img = snapshot(c, c->p, &len);
    cr_assert_eq(len, fk_state_bytes(q));
    return fk_state_load(q, img, len, e);)

/* ---- the audio model (FK_PROGRAMS_AUDIO): tests/audio/audio_desc.h's small model --------------- */

static fkt_audio a_model;
static fk_lfm2_layer a_depth2[FK_MAX_LAYERS];

static void setup_audio(ctx *c) {
  cr_assert_eq(fkt_audio_make(&a_model, &fkt_audio_small_cfg, 2), 0);
  c->d = a_model.desc;
  memcpy(a_depth2, a_model.depth_layers, sizeof a_depth2);
}

#define ADESC_ROW(id, what, want, names, ...) \
  ROW(id, "fk_plan_create/check", what, want, names, setup_audio, __VA_ARGS__ return create_both(c, e);)

ADESC_ROW(audio_lm_vocab_small, "desc.audio.lm.vocab = 130 (the loops' ids 7, 128, 130)", FK_EINVAL,
          "desc.audio.lm.vocab = 130", c->d.audio.lm.vocab = 130;)
ADESC_ROW(audio_lm_hidden_zero, "desc.audio.lm.stack.hidden = 0", FK_EINVAL, "desc.audio.lm.stack.hidden",
          c->d.audio.lm.stack.hidden = 0;)
ADESC_ROW(audio_depth_head_dim_64, "desc.audio.depth.stack.head_dim = 64 (the Depthformer's stamps serve 32)",
          FK_EINVAL, "desc.audio.depth.stack.head_dim = 64", c->d.audio.depth.stack.head_dim = 64;)
ADESC_ROW(audio_depth_window, "desc.audio.depth.stack.window = 4", FK_EINVAL, "desc.audio.depth.stack.window = 4",
          c->d.audio.depth.stack.window = 4;)
ADESC_ROW(audio_depth_conv_layer, "desc.audio.depth.stack.layer[1].kind = FK_LAYER_CONV", FK_EINVAL,
          "desc.audio.depth.stack.layer[1].kind|FK_LAYER_ATTN", a_depth2[1].kind = FK_LAYER_CONV;
          c->d.audio.depth.stack.layer = a_depth2;)
ADESC_ROW(audio_depth_max_pos, "desc.audio.depth.stack.max_pos = 7 (8 codebooks)", FK_EINVAL,
          "desc.audio.depth.stack.max_pos = 7", c->d.audio.depth.stack.max_pos = 7;)
ADESC_ROW(audio_vocab_2048, "desc.audio.depth.audio_vocab = 2048 (2048 ends the audio)", FK_EINVAL,
          "desc.audio.depth.audio_vocab = 2048", c->d.audio.depth.audio_vocab = 2048;)
ADESC_ROW(audio_linear_null, "desc.audio.depth.linear NULL", FK_EINVAL, "desc.audio.depth.linear is NULL",
          c->d.audio.depth.linear = NULL;)
ADESC_ROW(audio_bias_null, "desc.audio.depth.bias NULL", FK_EINVAL, "desc.audio.depth.bias is NULL",
          c->d.audio.depth.bias = NULL;)
ADESC_ROW(audio_cb_embed_null, "desc.audio.depth.embed[5] NULL", FK_EINVAL, "desc.audio.depth.embed[5] is NULL",
          c->d.audio.depth.embed[5] = NULL;)
ADESC_ROW(audio_cb_norm_null, "desc.audio.depth.norm[2] NULL", FK_EINVAL, "desc.audio.depth.norm[2] is NULL",
          c->d.audio.depth.norm[2] = NULL;)
ADESC_ROW(audio_embed_null, "desc.audio.audio_embed NULL", FK_EINVAL, "desc.audio.audio_embed is NULL",
          c->d.audio.audio_embed = NULL;)
ADESC_ROW(audio_n_text_zero, "desc.audio.n_text = 0", FK_EINVAL, "desc.audio.n_text = 0", c->d.audio.n_text = 0;)

/* a ready audio plan (no turn yet); outputs under canaries, the state watched */
static int32_t a_tok[4] = { 3, 9, 27, 81 }, a_force[8];
static float a_logits[256];

static void setup_audio_plan(ctx *c) {
  setup_audio(c);
  c->p = plan(c, &c->d);
  for (int i = 0; i < 256; i++) a_logits[i] = -3.0f;
  watch(c, a_tok, sizeof a_tok);
  watch(c, a_logits, sizeof a_logits);
  watch_state(c, c->p);
}

/* ... in its turn's audio modality (<|audio_start|> forced at the prefill) */
static void setup_audio_turn(ctx *c) {
  setup_audio(c);
  c->p = plan(c, &c->d);
  int32_t start = 128;
  fk_io io = { .rows = 2, .tokens = a_tok, .force = &start };
  must_run(c->p, FK_PROG_AUDIO_PREFILL, &io);
  cr_assert_eq(io.modality, FK_AUDIO_AUDIO);
  watch(c, a_tok, sizeof a_tok);
  watch_state(c, c->p);
}

/* ... whose turn ended (<|im_end|> forced) */
static void setup_audio_ended(ctx *c) {
  setup_audio(c);
  c->p = plan(c, &c->d);
  int32_t end = 7;
  fk_io io = { .rows = 2, .tokens = a_tok, .force = &end };
  must_run(c->p, FK_PROG_AUDIO_PREFILL, &io);
  cr_assert_eq(io.out, FK_AUDIO_OUT_END);
  watch_state(c, c->p);
}

#define AU_IO(...) ((fk_io){ .rows = 1, .tokens = a_tok, .logits = a_logits, __VA_ARGS__ })

ROW(run_audio_step_no_turn, "fk_run", "audio_step before any prefill", FK_ESTATE, "FK_PROG_AUDIO_PREFILL starts one",
    setup_audio_plan, return run(c->p, FK_PROG_AUDIO_STEP, AU_IO(), e);)
ROW(run_audio_step_turn_ended, "fk_run", "audio_step after <|im_end|>", FK_ESTATE, "the turn ended", setup_audio_ended,
    return run(c->p, FK_PROG_AUDIO_STEP, AU_IO(), e);)
ROW(run_audio_prefill_tokens_null, "fk_run", "audio_prefill: io.tokens NULL", FK_EINVAL, "io.tokens is NULL",
    setup_audio_plan, return run(c->p, FK_PROG_AUDIO_PREFILL, AU_IO(.tokens = NULL), e);)
ROW(run_audio_prefill_token_out_of_range, "fk_run", "audio_prefill: io.tokens[3] = vocab", FK_EINVAL,
    "io.tokens[3] = 256", setup_audio_plan,
    static int32_t t[4] = { 1, 2, 3, 256 };
    return run(c->p, FK_PROG_AUDIO_PREFILL, AU_IO(.rows = 4, .tokens = t), e);)
ROW(run_audio_prefill_loop_unknown, "fk_run", "audio_prefill: io.loop = 2", FK_EINVAL, "io.loop = 2", setup_audio_plan,
    return run(c->p, FK_PROG_AUDIO_PREFILL, AU_IO(.loop = 2), e);)
ROW(run_audio_prefill_force_token, "fk_run", "audio_prefill: io.force[0] = vocab", FK_EINVAL, "io.force[0] = 256",
    setup_audio_plan, a_force[0] = 256;
    return run(c->p, FK_PROG_AUDIO_PREFILL, AU_IO(.force = a_force), e);)
ROW(run_audio_step_two_rows, "fk_run", "audio_step: io.rows = 2", FK_EINVAL, "a step runs exactly 1 row",
    setup_audio_turn, return run(c->p, FK_PROG_AUDIO_STEP, AU_IO(.rows = 2), e);)
ROW(run_audio_frame_force_code, "fk_run", "audio_step (a frame): io.force[3] = 2049", FK_EINVAL, "io.force[3] = 2049",
    setup_audio_turn, for (int k = 0; k < 8; k++) a_force[k] = k == 3 ? 2049 : 5;
    return run(c->p, FK_PROG_AUDIO_STEP, AU_IO(.force = a_force), e);)
ROW(run_audio_audio_temperature_zero, "fk_run", "audio_step: io.audio_sampling->temperature = 0", FK_EINVAL,
    "io.audio_sampling->temperature", setup_audio_turn,
    return run(c->p, FK_PROG_AUDIO_STEP, AU_IO(.audio_sampling = &m_temp0), e);)
ROW(run_audio_frame_logits_overlap, "fk_run", "audio_step: io.frame_logits overlapping the fk_io", FK_EINVAL,
    "io.frame_logits overlaps", setup_audio_turn,
    static union { fk_io io; float f[8 * 2049]; } u;
    u.io = AU_IO();
    u.io.frame_logits = u.f;
    u.io.pcm_count = -99;
    return fk_run(c->p, FK_PROG_AUDIO_STEP, &u.io, e);)

/* ---- checkpoints (fk_checkpoint.h): directories written by tests/ckpt/ckpt_write.c, then one
 * thing made wrong. A refusal of fk_model_open leaves *out NULL, no mapping of the directory's
 * files and no descriptor open (ck_open checks /proc/self/maps and /proc/self/fd); describe,
 * query and tensor refusals leave their output struct as it was (watched). -------------------- */
#ifdef FKT_CKPT

static void setup_ck(ctx *c) {
  cr_assert_not_null(fkw_tmpdir(c->ckdir));
  char err[256];
  cr_assert_eq(fkm_synth_model("lm", &c->ck_lm, err, sizeof err), 0, "%s", err);
}

static void ck_write_lm(ctx *c, const fkw_opts *o) {
  fkw_rmdir(c->ckdir);
  cr_assert_eq(mkdir(c->ckdir, 0700), 0);
  cr_assert_eq(fkw_lm_dir(c->ckdir, &c->ck_lm, o), 0);
}

/* a good LM directory (bf16, transformers 5's config); sharded in 3 */
static void setup_ck_lm(ctx *c) {
  setup_ck(c);
  ck_write_lm(c, &(fkw_opts){ 0 });
}
static void setup_ck_lm3(ctx *c) {
  setup_ck(c);
  ck_write_lm(c, &(fkw_opts){ .shards = 3 });
}
static void setup_ck_detok(ctx *c) {
  cr_assert_not_null(fkw_tmpdir(c->ckdir));
  char err[256];
  cr_assert_eq(fkm_synth_model("detok", &c->ck_det, err, sizeof err), 0, "%s", err);
  cr_assert_eq(fkw_detok_dir(c->ckdir, &c->ck_det, &(fkw_opts){ 0 }), 0);
}
static void setup_ck_audio(ctx *c) {
  setup_ck(c);
  char err[256];
  cr_assert_eq(fkm_synth_model("detok", &c->ck_det, err, sizeof err), 0, "%s", err);
  cr_assert_eq(fkw_audio_dir(c->ckdir, &c->ck_lm, &c->ck_det, &(fkw_opts){ 0 }), 0);
}

static void ck_path(const ctx *c, const char *rel, char *path, size_t size) { snprintf(path, size, "%s/%s", c->ckdir, rel); }

/* lines of /proc/self/maps naming a file under dir */
static int ck_maps(const char *dir) {
  FILE *f = fopen("/proc/self/maps", "r");
  cr_assert_not_null(f);
  char line[2048];
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, dir)) n++;
  fclose(f);
  return n;
}

static int ck_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  cr_assert_not_null(d);
  int n = 0;
  while (readdir(d)) n++;
  closedir(d);
  return n;
}

/* fk_model_open(dir, kind): on a refusal *out NULL, nothing of dir mapped, no descriptor open and
 * nothing left allocated (after a close on success likewise): the plain build counts the malloc
 * family's blocks (tests/interpose.c), an ASan build its allocator's bytes in use (LeakSanitizer
 * cannot tell: Criterion's workers end without its check, and its suppression of Criterion's own
 * block matches every test's stack) */
static int ck_open_at(ctx *c, fk_error *e, const char *dir, fk_model_kind kind) {
  int fds = ck_fds();
  fk_model *m = (fk_model *)(void *)c; /* must become NULL */
#ifdef FKT_INTERPOSE
  fkt_interpose_arm(1);
#elif defined(__SANITIZE_ADDRESS__)
  size_t heap = __sanitizer_get_current_allocated_bytes();
#endif
  fk_status s = fk_model_open(dir, kind, &m, e);
  if (s == FK_OK) fk_model_close(m);
#ifdef FKT_INTERPOSE
  fkt_interpose_arm(0);
  cr_assert_eq(fkt_interpose_live(), 0, "fk_model_open%s left %ld blocks allocated", s == FK_OK ? " and fk_model_close" : "",
               fkt_interpose_live());
#elif defined(__SANITIZE_ADDRESS__)
  size_t left = __sanitizer_get_current_allocated_bytes();
  cr_assert_eq(left, heap, "fk_model_open%s left %zd bytes allocated", s == FK_OK ? " and fk_model_close" : "",
               (ptrdiff_t)(left - heap));
#endif
  if (s == FK_OK) return s;
  cr_assert_null(m, "fk_model_open: *out not NULL after a refusal");
  if (c->ckdir[0]) cr_assert_eq(ck_maps(c->ckdir), 0, "fk_model_open left a file of %s mapped", c->ckdir);
  cr_assert_eq(ck_fds(), fds, "fk_model_open left a descriptor open");
  return s;
}
static int ck_open(ctx *c, fk_error *e, fk_model_kind kind) { return ck_open_at(c, e, c->ckdir, kind); }

/* Sets (or, value NULL, deletes) key path ('/'-separated) of the JSON file rel to the JSON text value. */
static void ck_json(ctx *c, const char *rel, const char *keypath, const char *value) {
  char path[256];
  ck_path(c, rel, path, sizeof path);
  json_error_t je;
  json_t *root = json_load_file(path, 0, &je);
  cr_assert_not_null(root, "%s: %s", path, je.text);
  char keys[256];
  snprintf(keys, sizeof keys, "%s", keypath);
  json_t *o = root;
  char *k = keys, *slash;
  while ((slash = strchr(k, '/'))) {
    *slash = 0;
    o = json_object_get(o, k);
    cr_assert_not_null(o, "%s: no %s", rel, k);
    k = slash + 1;
  }
  if (value) {
    json_t *v = json_loads(value, JSON_DECODE_ANY, &je);
    cr_assert_not_null(v, "value %s: %s", value, je.text);
    json_object_set_new(o, k, v);
  } else {
    json_object_del(o, k);
  }
  cr_assert_eq(fkw_write_json(path, root), 0);
  json_decref(root);
}

static void ck_text(ctx *c, const char *rel, const char *text) {
  char path[256];
  ck_path(c, rel, path, sizeof path);
  cr_assert_eq(fkw_write_text(path, text), 0);
}

/* model.safetensors written byte by byte: hlen, the header text, n zero data bytes */
static void ck_raw(ctx *c, uint64_t hlen, const char *header, size_t n) {
  char path[256];
  ck_path(c, "model.safetensors", path, sizeof path);
  static unsigned char zeros[64];
  cr_assert_leq(n, sizeof zeros);
  cr_assert_eq(fkw_write_raw(path, hlen, header, strlen(header), zeros, n), 0);
}
#define CK_HEADER(h, n) ck_raw(c, strlen(h), (h), (n))

/* edit_file hooks (arg: the tensor's name) */
static void ck_drop(fkw_file *f, const char *fname, void *arg) {
  (void)fname;
  fkw_remove(f, arg);
}
static void ck_add_bias(fkw_file *f, const char *fname, void *arg) {
  (void)fname;
  uint16_t v[256] = { 0 };
  fkw_add(f, arg, "BF16", 1, (const int64_t[]){ 256 }, v, sizeof v);
}
static void ck_as_f64(fkw_file *f, const char *fname, void *arg) {
  (void)fname;
  fkw_tensor *t = fkw_find(f, arg);
  if (!t) return;
  size_t n = t->nbytes / 2;
  double *d = malloc(n * 8);
  cr_assert_not_null(d);
  for (size_t i = 0; i < n; i++) d[i] = fk_f32_from_bf16(((const uint16_t *)(void *)t->data)[i]);
  free(t->data);
  t->data = (unsigned char *)d;
  t->nbytes = n * 8;
  snprintf(t->dtype, sizeof t->dtype, "F64");
}
static void ck_short_row(fkw_file *f, const char *fname, void *arg) {
  (void)fname;
  fkw_tensor *t = fkw_find(f, arg);
  if (!t) return;
  t->nbytes -= t->nbytes / (size_t)t->shape[0];
  t->shape[0]--;
}
static void ck_poke(fkw_file *f, const char *fname, void *arg) {
  (void)fname;
  fkw_tensor *t = fkw_find(f, arg);
  if (t) t->data[0] ^= 0x01;
}
static void ck_flat_window(fkw_file *f, const char *fname, void *arg) {
  (void)fname;
  fkw_tensor *t = fkw_find(f, arg);
  if (!t) return;
  for (size_t i = 0; i < t->nbytes / 4; i++) ((float *)(void *)t->data)[i] = 1.0f;
}

/* an open LM model (tied, its head stored equal and so ignored), its descriptor and view watched */
static void setup_ck_model_for(ctx *c, uint32_t programs) {
  setup_ck(c);
  ck_write_lm(c, &(fkw_opts){ .tied = 1, .store_head = 1 });
  fk_error e;
  cr_assert_eq(fk_model_open(c->ckdir, FK_MODEL_AUTO, &c->ckm, &e), FK_OK, "%s", e.message);
  memset(&c->ckd, 0x5a, sizeof c->ckd);
  c->ckd.threads = 1;
  c->ckd.programs = programs;
  memset(&c->ckv, 0x5a, sizeof c->ckv);
  memset(&c->cki, 0x5a, sizeof c->cki);
  watch(c, &c->ckd, sizeof c->ckd);
  watch(c, &c->ckv, sizeof c->ckv);
  watch(c, &c->cki, sizeof c->cki);
}
static void setup_ck_model(ctx *c) { setup_ck_model_for(c, 0); }
static void setup_ck_model_detok(ctx *c) { setup_ck_model_for(c, FK_PROGRAMS_DETOK); }
static void setup_ck_model_block(ctx *c) { setup_ck_model_for(c, FK_PROGRAMS_BLOCK); }

#define CK_ROW(id, what, want, names, setup, ...) ROW(id, "fk_model_open", what, want, names, setup, __VA_ARGS__)

/* arguments and files */
CK_ROW(ckpt_out_null, "out NULL", FK_EINVAL, "out is NULL", setup_ck_lm, return fk_model_open(c->ckdir, FK_MODEL_AUTO, NULL, e);)
CK_ROW(ckpt_dir_null, "dir NULL", FK_EINVAL, "dir is NULL", setup_none, return ck_open_at(c, e, NULL, FK_MODEL_AUTO);)
CK_ROW(ckpt_kind_unknown, "kind 7", FK_EINVAL, "kind = 7", setup_ck_lm, return ck_open(c, e, (fk_model_kind)7);)
CK_ROW(ckpt_no_directory, "a directory that does not exist", FK_ENOTFOUND, "/no/such/fk_dir|no such directory", setup_none,
       return ck_open_at(c, e, "/no/such/fk_dir", FK_MODEL_AUTO);)
CK_ROW(ckpt_no_config, "a directory without config.json", FK_ENOTFOUND, "config.json|no such file", setup_ck,
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_no_weights, "config.json alone", FK_ENOTFOUND, "no model.safetensors nor model.safetensors.index.json",
       setup_ck_lm, char p[256]; ck_path(c, "model.safetensors", p, sizeof p); unlink(p); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_single_and_index, "model.safetensors beside an index", FK_EINVAL,
       "model.safetensors and model.safetensors.index.json|ambiguous", setup_ck_lm,
       ck_text(c, "model.safetensors.index.json", "{\"weight_map\": {}}"); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_weights_not_a_file, "model.safetensors a directory", FK_EINVAL, "model.safetensors: not a regular file",
       setup_ck_lm, char p[256]; ck_path(c, "model.safetensors", p, sizeof p); unlink(p); mkdir(p, 0700);
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_weights_fifo, "model.safetensors a FIFO (no writer: an open would block)", FK_EINVAL,
       "model.safetensors: not a regular file", setup_ck_lm,
       char p[256]; ck_path(c, "model.safetensors", p, sizeof p); unlink(p); cr_assert_eq(mkfifo(p, 0600), 0);
       return ck_open(c, e, FK_MODEL_AUTO);)

/* config.json */
CK_ROW(ckpt_config_not_json, "config.json with a stray comma", FK_EINVAL, "config.json: not JSON at line 1, column 19",
       setup_ck_lm, ck_text(c, "config.json", "{\"hidden_size\": 1,, }"); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_duplicate_key, "config.json naming hidden_size twice", FK_EINVAL, "config.json|duplicate object key",
       setup_ck_lm,
       ck_text(c, "config.json", "{\"architectures\": [\"Lfm2ForCausalLM\"], \"hidden_size\": 256, \"hidden_size\": 512}");
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_unknown_architecture, "architectures [LlamaForCausalLM]", FK_EINVAL,
       "config.json: architectures[0] = 'LlamaForCausalLM'", setup_ck_lm,
       ck_json(c, "config.json", "architectures", "[\"LlamaForCausalLM\"]"); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_other_kind, "an LM directory opened as FK_MODEL_LFM2_AUDIO", FK_EINVAL,
       "config.json: architectures Lfm2ForCausalLM|holds an LM (Lfm2ForCausalLM), not LFM2.5-Audio", setup_ck_lm,
       return ck_open(c, e, FK_MODEL_LFM2_AUDIO);)
CK_ROW(ckpt_config_no_hidden_size, "no hidden_size", FK_EINVAL, "config.json: no hidden_size", setup_ck_lm,
       ck_json(c, "config.json", "hidden_size", NULL); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_not_an_integer, "hidden_size \"256\"", FK_EINVAL, "config.json: hidden_size is not an integer",
       setup_ck_lm, ck_json(c, "config.json", "hidden_size", "\"256\""); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_head_dim, "num_attention_heads 2 (head_dim 128)", FK_EINVAL,
       "num_attention_heads = 2 with hidden_size = 256: head_dim 128", setup_ck_lm,
       ck_json(c, "config.json", "num_attention_heads", "2"); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_kv_heads, "num_key_value_heads 3 (not dividing 4)", FK_EINVAL, "num_key_value_heads = 3", setup_ck_lm,
       ck_json(c, "config.json", "num_key_value_heads", "3"); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_conv_cache, "conv_L_cache 4", FK_EINVAL, "config.json: conv_L_cache = 4|3 taps", setup_ck_lm,
       ck_json(c, "config.json", "conv_L_cache", "4"); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_conv_bias, "conv_bias true", FK_EINVAL, "config.json: conv_bias = true", setup_ck_lm,
       ck_json(c, "config.json", "conv_bias", "true"); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_rope_type, "rope_parameters.rope_type yarn", FK_EINVAL, "rope_parameters.rope_type = 'yarn'",
       setup_ck_lm, ck_json(c, "config.json", "rope_parameters/rope_type", "\"yarn\""); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_layer_type, "layer_types[1] mamba", FK_EINVAL, "config.json: layer_types[1] = 'mamba'", setup_ck_lm,
       ck_json(c, "config.json", "layer_types", "[\"conv\", \"mamba\", \"full_attention\", \"conv\", \"full_attention\", \"conv\"]");
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_layers_beyond, "num_hidden_layers 65 (limit FK_MAX_LAYERS)", FK_EINVAL,
       "num_hidden_layers = 65: must be in 1..64", setup_ck_lm, ck_json(c, "config.json", "num_hidden_layers", "65");
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_ffn_beyond, "intermediate_size 70000 (limit 65536)", FK_EINVAL,
       "intermediate_size = 70000 gives a feed-forward width of 70000", setup_ck_lm,
       ck_json(c, "config.json", "intermediate_size", "70000"); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_config_eps_float_zero, "norm_eps 1e-85 (a double > 0 that is 0 as a float)", FK_EINVAL,
       "config.json: norm_eps = 1e-85: rounds to 0 as a float", setup_ck_lm,
       ck_json(c, "config.json", "norm_eps", "1e-85"); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_detok_window_zero, "the detokenizer's sliding_window 0", FK_EINVAL, "config.json: sliding_window = 0",
       setup_ck_detok, ck_json(c, "config.json", "sliding_window", "0"); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_audio_unknown_key, "LFM2.5-Audio's config.json with a key LFM2AudioConfig has not", FK_EINVAL,
       "config.json: key 'vision'|LFM2AudioConfig", setup_ck_audio, ck_json(c, "config.json", "vision", "{}");
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_audio_depth_dim, "depthformer.dim 48 (32 heads)", FK_EINVAL, "config.json: depthformer.dim = 48", setup_ck_audio,
       ck_json(c, "config.json", "depthformer/dim", "48"); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_audio_detok_no_weights, "audio_detokenizer/ without model.safetensors", FK_ENOTFOUND,
       "audio_detokenizer/model.safetensors: no such file", setup_ck_audio,
       char p[256]; ck_path(c, "audio_detokenizer/model.safetensors", p, sizeof p); unlink(p);
       return ck_open(c, e, FK_MODEL_AUTO);)

/* model.safetensors: the header and the data offsets */
#define T8 "{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":"
CK_ROW(ckpt_st_shorter_than_length, "a file of 5 bytes", FK_EINVAL, "model.safetensors: 5 bytes: shorter than the 8-byte header length",
       setup_ck_lm, ck_text(c, "model.safetensors", "abcde");
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_header_past_file, "a header length of 1000 in a 72-byte file", FK_EINVAL,
       "model.safetensors: header length 1000 runs past the end of the file (72 bytes)", setup_ck_lm,
       ck_raw(c, 1000, "{\"a\":" T8 "[0,8]}}", 72 - 8 - strlen("{\"a\":" T8 "[0,8]}}")); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_header_not_json, "a header that is not JSON", FK_EINVAL, "model.safetensors: header: not JSON", setup_ck_lm,
       CK_HEADER("{\"a\": {\"dtype\": BF16}}", 0); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_header_duplicate_key, "a header naming tensor a twice", FK_EINVAL,
       "model.safetensors: header|duplicate object key", setup_ck_lm,
       CK_HEADER("{\"a\":" T8 "[0,8]},\"a\":" T8 "[8,16]}}", 16); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_header_not_object, "a header that is a JSON array", FK_EINVAL, "model.safetensors: the header is not a JSON object",
       setup_ck_lm, CK_HEADER("[1, 2]", 0); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_dtype_unknown, "dtype Q4", FK_EINVAL, "model.safetensors: tensor 'a': dtype 'Q4' is not a safetensors dtype",
       setup_ck_lm, CK_HEADER("{\"a\":{\"dtype\":\"Q4\",\"shape\":[4],\"data_offsets\":[0,8]}}", 8);
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_tensor_key_unknown, "a tensor entry with a key beside dtype, shape, data_offsets", FK_EINVAL,
       "model.safetensors: tensor 'a': key 'strides'", setup_ck_lm,
       CK_HEADER("{\"a\":{\"dtype\":\"BF16\",\"shape\":[4],\"strides\":[1],\"data_offsets\":[0,8]}}", 8);
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_metadata_not_string, "__metadata__ {\"format\": 1}", FK_EINVAL,
       "model.safetensors: __metadata__['format'] is not a string", setup_ck_lm,
       CK_HEADER("{\"__metadata__\":{\"format\":1},\"a\":" T8 "[0,8]}}", 8); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_offsets_overlap, "tensors a [0, 8) and b [4, 12)", FK_EINVAL,
       "model.safetensors: tensor 'b': data_offsets [4, 12) overlap tensor 'a' [0, 8)", setup_ck_lm,
       CK_HEADER("{\"a\":" T8 "[0,8]},\"b\":" T8 "[4,12]}}", 12); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_offsets_gap, "tensors a [0, 8) and b [10, 18)", FK_EINVAL,
       "model.safetensors: tensor 'b': data_offsets [10, 18) leave bytes [8, 10)", setup_ck_lm,
       CK_HEADER("{\"a\":" T8 "[0,8]},\"b\":" T8 "[10,18]}}", 18); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_offsets_not_covering, "an F32 [4] tensor given 8 bytes", FK_EINVAL,
       "model.safetensors: tensor 'a': data_offsets [0, 8) hold 8 bytes, dtype F32 x shape [4] needs 16", setup_ck_lm,
       CK_HEADER("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,8]}}", 8); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_offsets_reversed, "data_offsets [8, 0]", FK_EINVAL, "model.safetensors: tensor 'a': data_offsets [8, 0): begin after end",
       setup_ck_lm, CK_HEADER("{\"a\":" T8 "[8,0]}}", 8); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_offsets_out_of_range, "data_offsets [0, 8) in a data area of 6 bytes", FK_EINVAL,
       "model.safetensors: tensor 'a': data_offsets [0, 8) run past the data area (6 bytes): the file is truncated", setup_ck_lm,
       CK_HEADER("{\"a\":" T8 "[0,8]}}", 6); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_shape_overflows, "shape [2^62, 16]", FK_EINVAL, "model.safetensors: tensor 'a': shape[1] = 16: the size in bytes overflows",
       setup_ck_lm, CK_HEADER("{\"a\":{\"dtype\":\"BF16\",\"shape\":[4611686018427387904,16],\"data_offsets\":[0,8]}}", 8);
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_truncated, "a whole checkpoint missing its last byte", FK_EINVAL,
       "model.safetensors: tensor 'lm_head.weight': data_offsets [10499072, 11023360) run past the data area (11023359 bytes)", setup_ck_lm,
       char p[256]; ck_path(c, "model.safetensors", p, sizeof p); struct stat st; cr_assert_eq(stat(p, &st), 0);
       static off_t size; if (!size) size = st.st_size - 1; cr_assert_eq(truncate(p, size), 0);
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_st_trailing_bytes, "3 bytes after the last tensor", FK_EINVAL,
       "model.safetensors: 3 bytes after the last tensor's data", setup_ck_lm,
       CK_HEADER("{\"a\":" T8 "[0,8]}}", 11); return ck_open(c, e, FK_MODEL_AUTO);)
#undef T8

/* the tensors against the name map */
CK_ROW(ckpt_tensor_missing, "model.layers.2.self_attn.k_layernorm.weight absent", FK_ENOTFOUND,
       "model.safetensors: no tensor 'model.layers.2.self_attn.k_layernorm.weight' (expected [64]: head_dim)", setup_ck,
       ck_write_lm(c, &(fkw_opts){ .edit_file = ck_drop, .arg = "model.layers.2.self_attn.k_layernorm.weight" });
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_tensor_unexpected, "model.layers.0.conv.conv.bias present (conv_bias false)", FK_EINVAL,
       "model.safetensors: tensor 'model.layers.0.conv.conv.bias' is not a tensor of Lfm2ForCausalLM", setup_ck,
       ck_write_lm(c, &(fkw_opts){ .edit_file = ck_add_bias, .arg = "model.layers.0.conv.conv.bias" });
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_tensor_dtype, "model.layers.0.ffn_norm.weight stored F64", FK_EINVAL,
       "model.safetensors: tensor 'model.layers.0.ffn_norm.weight': dtype F64, expected BF16, F16 or F32", setup_ck,
       ck_write_lm(c, &(fkw_opts){ .edit_file = ck_as_f64, .arg = "model.layers.0.ffn_norm.weight" });
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_tensor_shape, "model.layers.1.feed_forward.w1.weight one row short", FK_EINVAL,
       "tensor 'model.layers.1.feed_forward.w1.weight': shape [767, 256], expected [768, 256] (the feed-forward width, hidden_size)",
       setup_ck, ck_write_lm(c, &(fkw_opts){ .edit_file = ck_short_row, .arg = "model.layers.1.feed_forward.w1.weight" });
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_tied_head_differs, "tied, lm_head.weight stored and not equal to embed_tokens", FK_EINVAL,
       "tensor 'lm_head.weight' differs from 'model.embed_tokens.weight' (bytes differ) but tie_word_embeddings", setup_ck,
       ck_write_lm(c, &(fkw_opts){ .tied = 1, .store_head = 1, .edit_file = ck_poke, .arg = "lm_head.weight" });
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_detok_window_not_hann, "the detokenizer's istft.window all ones", FK_EINVAL,
       "model.safetensors: tensor 'istft.window': element 0 = 1|periodic Hann window", setup_ck_detok,
       cr_assert_eq(fkw_detok_dir(c->ckdir, &c->ck_det, &(fkw_opts){ .edit_file = ck_flat_window, .arg = "istft.window" }), 0);
       return ck_open(c, e, FK_MODEL_AUTO);)

/* a sharded checkpoint's index */
CK_ROW(ckpt_index_missing_shard, "shard 2 of 3 deleted", FK_EINVAL,
       "model.safetensors.index.json: weight_map names shard model-00002-of-00003.safetensors|no such file", setup_ck_lm3,
       char p[256]; ck_path(c, "model-00002-of-00003.safetensors", p, sizeof p); unlink(p); return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_index_wrong_shard, "the index puts model.embed_tokens.weight in shard 2; shard 1 holds it", FK_EINVAL,
       "model-00001-of-00003.safetensors: tensor 'model.embed_tokens.weight': model.safetensors.index.json puts it in "
       "model-00002-of-00003.safetensors", setup_ck_lm3,
       ck_json(c, "model.safetensors.index.json", "weight_map/model.embed_tokens.weight", "\"model-00002-of-00003.safetensors\"");
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_index_unlisted_tensor, "a shard's tensor missing from weight_map", FK_EINVAL,
       "tensor 'model.embed_tokens.weight' is not in model.safetensors.index.json's weight_map", setup_ck_lm3,
       ck_json(c, "model.safetensors.index.json", "weight_map/model.embed_tokens.weight", NULL);
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_index_tensor_absent, "weight_map naming a tensor its shard lacks", FK_EINVAL,
       "weight_map['model.extra.weight'] = model-00001-of-00003.safetensors: the shard has no such tensor", setup_ck_lm3,
       ck_json(c, "model.safetensors.index.json", "weight_map/model.extra.weight", "\"model-00001-of-00003.safetensors\"");
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_index_shard_path, "weight_map naming ../model-00001-of-00003.safetensors", FK_EINVAL,
       "weight_map['model.embed_tokens.weight'] = '../model-00001-of-00003.safetensors': not a .safetensors file beside the index",
       setup_ck_lm3,
       ck_json(c, "model.safetensors.index.json", "weight_map/model.embed_tokens.weight", "\"../model-00001-of-00003.safetensors\"");
       return ck_open(c, e, FK_MODEL_AUTO);)
CK_ROW(ckpt_index_no_weight_map, "an index without weight_map", FK_EINVAL, "model.safetensors.index.json: no weight_map",
       setup_ck_lm3, ck_json(c, "model.safetensors.index.json", "weight_map", NULL); return ck_open(c, e, FK_MODEL_AUTO);)

/* an open model's other entry points */
ROW(ckpt_describe_null, "fk_model_describe", "m NULL; desc NULL", FK_EINVAL, "fk_model_describe: desc is NULL", setup_ck_model,
    cr_assert_eq(fk_model_describe(NULL, &c->ckd, e), FK_EINVAL);
    return fk_model_describe(c->ckm, NULL, e);)
ROW(ckpt_describe_programs, "fk_model_describe", "desc.programs FK_PROGRAMS_DETOK for an LM checkpoint", FK_EINVAL,
    "fk_model_describe: desc.programs = 0x8: this Lfm2ForCausalLM checkpoint describes 0x4", setup_ck_model_detok,
    return fk_model_describe(c->ckm, &c->ckd, e);)
ROW(ckpt_describe_block, "fk_model_describe", "desc.programs FK_PROGRAMS_BLOCK", FK_EINVAL,
    "fk_model_describe: desc.programs = 0x1", setup_ck_model_block, return fk_model_describe(c->ckm, &c->ckd, e);)
ROW(ckpt_query_null, "fk_model_query", "m NULL; info NULL", FK_EINVAL, "fk_model_query: info is NULL", setup_ck_model,
    cr_assert_eq(fk_model_query(NULL, &c->cki, e), FK_EINVAL);
    return fk_model_query(c->ckm, NULL, e);)
ROW(ckpt_tensor_null, "fk_model_tensor", "m NULL; name NULL; view NULL", FK_EINVAL, "fk_model_tensor: view is NULL",
    setup_ck_model, cr_assert_eq(fk_model_tensor(NULL, "model.embed_tokens.weight", &c->ckv, e), FK_EINVAL);
    cr_assert_eq(fk_model_tensor(c->ckm, NULL, &c->ckv, e), FK_EINVAL);
    return fk_model_tensor(c->ckm, "model.embed_tokens.weight", NULL, e);)
ROW(ckpt_tensor_unknown, "fk_model_tensor", "a name the checkpoint has not", FK_ENOTFOUND,
    "fk_model_tensor: no tensor 'model.layers.9.ffn_norm.weight' in this Lfm2ForCausalLM checkpoint", setup_ck_model,
    return fk_model_tensor(c->ckm, "model.layers.9.ffn_norm.weight", &c->ckv, e);)
ROW(ckpt_tensor_ignored, "fk_model_tensor", "lm_head.weight, a tied copy ignored by name", FK_ENOTFOUND,
    "fk_model_tensor: tensor 'lm_head.weight' is ignored by name (tied to model.embed_tokens.weight", setup_ck_model,
    return fk_model_tensor(c->ckm, "lm_head.weight", &c->ckv, e);)

/* GGUF files (fk_model_open of a file): a copy of a fixture of fixtures/gguf/ (fixtures/ref/gen_gguf.py: the
 * checkpoints of fixtures/ckpt/ as llama.cpp's GGUF) with one thing made wrong, found by the tests' own GGUF reader
 * (tests/ckpt/gguf_read.h); each call starts again from the fixture's bytes */
#include "gguf_read.h"

static void setup_ck_gguf(ctx *c) { cr_assert_not_null(fkw_tmpdir(c->ckdir)); }

typedef struct gg_img {
  unsigned char *p;
  size_t n;
  ggr *g;
  char path[256]; /* where the row writes it: the row's directory */
} gg_img;

static void gg_load(ctx *c, gg_img *im, const char *casename, const char *name) {
  char src[1024], err[256];
  snprintf(src, sizeof src, "%s/gguf/%s/%s", FKT_FIXTURE_DIR, casename, name);
  FILE *f = fopen(src, "rb");
  cr_assert_not_null(f, "cannot open %s", src);
  cr_assert_eq(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  rewind(f);
  im->n = (size_t)size;
  im->p = malloc(im->n + 16);
  cr_assert_not_null(im->p);
  cr_assert_eq(fread(im->p, 1, im->n, f), im->n);
  fclose(f);
  im->g = calloc(1, sizeof *im->g);
  cr_assert_not_null(im->g);
  cr_assert_eq(ggr_parse(im->p, im->n, im->g, err, sizeof err), 0, "%s: %s", src, err);
  snprintf(im->path, sizeof im->path, "%s/%s", c->ckdir, name);
}
#define GG_LOAD(im, file) gg_load(c, (im), strncmp((file), "lfm2_bf16", 9) ? "lfm2_released" : "lfm2_bf16", (file))

static const ggr_tensor *gg_tensor(const gg_img *im, const char *name) {
  const ggr_tensor *t = ggr_tensor_named(im->g, name);
  cr_assert_not_null(t, "no tensor %s", name);
  return t;
}

static const ggr_kv *gg_key(const gg_img *im, const char *key) {
  const ggr_kv *k = ggr_kv_named(im->g, key);
  cr_assert_not_null(k, "no key %s", key);
  return k;
}

/* replaces bytes [at, at + cut) by `len` bytes of `with` */
static void gg_splice(gg_img *im, size_t at, size_t cut, const void *with, size_t len) {
  unsigned char *q = malloc(im->n - cut + len);
  cr_assert_not_null(q);
  memcpy(q, im->p, at);
  memcpy(q + at, with, len);
  memcpy(q + at + len, im->p + at + cut, im->n - at - cut);
  free(im->p);
  im->p = q;
  im->n = im->n - cut + len;
}

/* writes the first n bytes of the image to the row's directory and opens that file as `kind` */
static int gg_open(ctx *c, fk_error *e, gg_img *im, size_t n, fk_model_kind kind) {
  FILE *f = fopen(im->path, "wb");
  cr_assert_not_null(f, "cannot write %s", im->path);
  cr_assert_eq(fwrite(im->p, 1, n, f), n);
  cr_assert_eq(fclose(f), 0);
  free(im->p);
  free(im->g);
  return ck_open_at(c, e, im->path, kind);
}

CK_ROW(ckpt_gguf_magic, "a GGUF file whose first 4 bytes are GGUX", FK_EINVAL,
       "fk_model_open: lfm2_released-q8_0.gguf: not a GGUF file", setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); im.p[3] = 'X'; return gg_open(c, e, &im, im.n, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_version, "GGUF version 1", FK_EINVAL,
       "lfm2_released-q8_0.gguf: GGUF version 1: this loader reads versions 2 and 3", setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); const uint32_t v = 1; memcpy(im.p + 4, &v, 4);
       return gg_open(c, e, &im, im.n, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_truncated_keys, "a GGUF file cut in the middle of its key-value pairs (tokenizer.ggml.tokens)",
       FK_EINVAL, "lfm2_released-q8_0.gguf: tokenizer.ggml.tokens at byte|the file ends", setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); const ggr_kv *k = gg_key(&im, "tokenizer.ggml.tokens");
       return gg_open(c, e, &im, (k->val_at + k->end) / 2, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_truncated_data, "a GGUF file cut one byte short of its last tensor's data (blk.4.attn_v.weight)",
       FK_EINVAL, "lfm2_released-q8_0.gguf: tensor 'blk.4.attn_v.weight': offset|past the end of the file",
       setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); const ggr_tensor *t = gg_tensor(&im, "blk.4.attn_v.weight");
       for (int i = 0; i < im.g->nts; i++) cr_assert_leq(im.g->t[i].data, t->data, "blk.4.attn_v.weight is not the last");
       return gg_open(c, e, &im, t->data + t->nbytes - 1, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_type_unsupported, "blk.0.ffn_gate.weight of ggml type 13 (Q5_K)", FK_EINVAL,
       "lfm2_released-q8_0.gguf: tensor 'blk.0.ffn_gate.weight': ggml type 13 (Q5_K)|F32, F16, BF16, Q8_0, Q4_0 and "
       "Q4_K", setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); const uint32_t q5k = 13;
       memcpy(im.p + gg_tensor(&im, "blk.0.ffn_gate.weight")->type_at, &q5k, 4);
       return gg_open(c, e, &im, im.n, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_q4k_rows, "blk.0.ffn_gate.weight of ggml type 12 (Q4_K) with rows of 128 (super-blocks of 256)",
       FK_EINVAL, "lfm2_released-q8_0.gguf: tensor 'blk.0.ffn_gate.weight': Q4_K needs a matrix whose rows are whole "
       "blocks of 256 (ne[0] = 128", setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); const uint32_t q4k = 12;
       memcpy(im.p + gg_tensor(&im, "blk.0.ffn_gate.weight")->type_at, &q4k, 4);
       return gg_open(c, e, &im, im.n, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_offset_unaligned, "blk.1.ffn_up.weight's offset one more (not a multiple of 32)", FK_EINVAL,
       "lfm2_released-q8_0.gguf: tensor 'blk.1.ffn_up.weight': offset|not a multiple of general.alignment",
       setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); const ggr_tensor *t = gg_tensor(&im, "blk.1.ffn_up.weight");
       const uint64_t off = t->off + 1; memcpy(im.p + t->off_at, &off, 8);
       return gg_open(c, e, &im, im.n, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_architecture, "general.architecture 'llama'", FK_EINVAL,
       "lfm2_released-q8_0.gguf: general.architecture is 'llama'|reads 'lfm2'", setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); const ggr_kv *k = gg_key(&im, "general.architecture");
       unsigned char v[13] = { 5, 0, 0, 0, 0, 0, 0, 0, 'l', 'l', 'a', 'm', 'a' };
       gg_splice(&im, k->val_at, k->end - k->val_at, v, sizeof v); return gg_open(c, e, &im, im.n, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_key_missing, "no lfm2.shortconv.l_cache (its key renamed lfm2.shortconv.l_cachf)", FK_EINVAL,
       "lfm2_released-q8_0.gguf: no key lfm2.shortconv.l_cache", setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); const ggr_kv *k = gg_key(&im, "lfm2.shortconv.l_cache");
       im.p[k->key_at + strlen(k->key) - 1] = 'f'; return gg_open(c, e, &im, im.n, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_embed_scale_inf, "a Q8_0 token_embd whose row 5, block 2 has the scale inf (0x7c00)", FK_EINVAL,
       "lfm2_released-q8_0.gguf: tensor 'token_embd.weight': row 5, block 2: the scale 0x7c00 is not finite",
       setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); const ggr_tensor *t = gg_tensor(&im, "token_embd.weight");
       cr_assert(t->type == GGR_Q8_0 && t->ne[0] == 128); const uint16_t inf = 0x7c00;
       memcpy(im.p + t->data + (5 * 4 + 2) * 34, &inf, 2); return gg_open(c, e, &im, im.n, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_matrix_scale_inf, "a Q4_0 blk.0.ffn_gate.weight whose row 1, block 3 has the scale -inf (0xfc00)",
       FK_EINVAL, "lfm2_released-q4_0.gguf: tensor 'blk.0.ffn_gate.weight': row 1, block 3: the scale 0xfc00 is not finite",
       setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q4_0.gguf"); const ggr_tensor *t = gg_tensor(&im, "blk.0.ffn_gate.weight");
       cr_assert(t->type == GGR_Q4_0 && t->ne[0] == 128); const uint16_t inf = 0xfc00;
       memcpy(im.p + t->data + (1 * 4 + 3) * 18, &inf, 2); return gg_open(c, e, &im, im.n, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_tensor_unknown, "an untied file's output.weight renamed outpux.weight", FK_EINVAL,
       "lfm2_bf16-q8_0.gguf: tensor 'outpux.weight' is not a tensor of", setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_bf16-q8_0.gguf"); im.p[gg_tensor(&im, "output.weight")->name_at + 5] = 'x';
       return gg_open(c, e, &im, im.n, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_tensor_renamed, "blk.0.ffn_gate.weight renamed blk.0.ffn_gatx.weight", FK_ENOTFOUND,
       "lfm2_released-q8_0.gguf: no tensor 'blk.0.ffn_gate.weight'", setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); im.p[gg_tensor(&im, "blk.0.ffn_gate.weight")->name_at + 14] = 'x';
       return gg_open(c, e, &im, im.n, FK_MODEL_AUTO);)
CK_ROW(ckpt_gguf_kind, "a GGUF file opened as FK_MODEL_LFM2_AUDIO; as FK_MODEL_DETOK", FK_EINVAL,
       "lfm2_released-q8_0.gguf: a GGUF file is read as an LFM2 language model (FK_MODEL_LFM2_LM), not kind 3",
       setup_ck_gguf,
       gg_img im; GG_LOAD(&im, "lfm2_released-q8_0.gguf"); char path[256]; snprintf(path, sizeof path, "%s", im.path);
       cr_assert_eq(gg_open(c, e, &im, im.n, FK_MODEL_LFM2_AUDIO), FK_EINVAL);
       return ck_open_at(c, e, path, FK_MODEL_DETOK);)

#endif /* FKT_CKPT */

/* ---- the table is the document ----------------------------------------------------------------- */

Test(badinput, the_doc_lists_every_row) {
  FILE *f = fopen(FKT_BADINPUT_DOC, "r");
  cr_assert_not_null(f, "cannot open %s", FKT_BADINPUT_DOC);
  static char doc[1 << 17];
  size_t n = fread(doc, 1, sizeof doc - 1, f);
  fclose(f);
  doc[n] = 0;
  int missing = 0;
  cr_assert_leq(nall_rows, (int)(sizeof all_rows / sizeof all_rows[0]), "%d rows: grow all_rows", nall_rows);
  for (int i = 0; i < nall_rows; i++) {
    char tag[80];
    snprintf(tag, sizeof tag, "`%s`", all_rows[i]->id);
    if (!strstr(doc, tag)) {
      cr_log_error("%s does not list row %s (%s: %s)", FKT_BADINPUT_DOC, all_rows[i]->id, all_rows[i]->entry,
                   all_rows[i]->what);
      missing++;
    }
  }
  cr_assert_eq(missing, 0, "%d rows missing from %s", missing, FKT_BADINPUT_DOC);
  cr_log_info("%s lists all %d rows", FKT_BADINPUT_DOC, nall_rows);
}
