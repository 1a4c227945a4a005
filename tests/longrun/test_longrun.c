#define _GNU_SOURCE
/* tests/longrun/test_longrun.c: long runs in lockstep with the contract, bit for bit (plain C).
 *
 *   block:  a ShortConv block plan (hidden 64) for a few prefill calls interleaved with decodes,
 *           then 10,000 consecutive FK_PROG_BLOCK_DECODE steps, team sizes 1, 2 and 4 (4 on a
 *           2-core machine: oversubscribed). After EVERY call the residual rows (row padding
 *           included), the carry and the token cursor (read from the fk_state_save snapshot at
 *           the offsets flashkern.h documents) equal plan_ref.c's contract composition.
 *   kv:     10,000 consecutive KV decode steps of the qkprep leaf: each step one token's q heads
 *           (q rows) and its k heads written at cache slot pos mod W (W = 30: the ring wraps 333
 *           times) or at slot pos (a linear cache of 10,000 slots), then normed + RoPE'd in place
 *           by the host's exact stamps (avx2, avx512; each form) and by the contract model; the
 *           q heads and the WHOLE cache are compared after every step. The AArch64 neon stamp
 *           runs the ring sequence (neox64) under qemu -cpu max and -cpu neoverse-n1 through the
 *           stamp runner, 1,000 steps per runner start (fkh_run): all 10,000 steps when they fit
 *           the qemu budget, never fewer than 2,000 (the output says which); and 500 steps of a
 *           500-slot linear cache (cis64). See remote_steps for how a batch stays in lockstep.
 *   tail:   1,000 detokenizer frames through FK_PROG_TAIL in varying chunk sizes with flushes
 *           (FK_PROG_TAIL_FLUSH) at the end and in between (streams of 2 and 3 frames, a flush
 *           of an empty stream), f32 and int16 PCM, team sizes 1, 2, 4: every frame's PCM, the
 *           OLA ring and the frame cursor (snapshot) after every call equal plan_ref.c's.
 *   self-check: the same lockstep comparison against a reference whose state commit is
 *           perturbed on purpose (carry rows swapped, carry not committed, RoPE position off by
 *           one, ring slot one hop too far, frame cursor one hop too far, OLA ring rotated one
 *           hop) must report a mismatch, at the perturbed step and not before.
 *
 * Prints one summary line per run (steps or frames, team size or target, mismatches, time);
 * exits 0 when every run is bit-exact and every perturbation is seen, 1 otherwise.
 * FK_LONGRUN_QEMU_SECONDS (default 20) bounds the qemu part beyond its first 2,000 steps. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../contract/contract.h"
#include "../harness/fkh.h"
#include "../plan/plan_model.h"

/* the snapshot layout flashkern.h documents: "FKSTATE\0", u32 version, u32 programs, i64 hidden,
 * i64 tail_in, i64 tokens, i64 frames, u64 shapes (56 bytes), the carry (block plans), the ring
 * (tail plans) */
enum { SNAP_TOKENS = 32, SNAP_FRAMES = 40, SNAP_HEADER = 56 };

static int failures;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("FAIL ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  failures++;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    printf("FAIL out of memory (%zu bytes)\n", n);
    exit(1);
  }
  return p;
}

/* ---- the lockstep comparison: one per step, every element --------------------------------------- */

typedef struct lockstep {
  long step;          /* the step of the first mismatch, -1: none */
  long mismatches;    /* differing elements over the whole run */
  char first[300];    /* what the first mismatch was */
} lockstep;

static void lock_init(lockstep *L) {
  L->step = -1;
  L->mismatches = 0;
  L->first[0] = 0;
}

/* Compares n elements of es bytes (2, 4 or 8) of `what` at step `step`; returns the number that
 * differ and records the first one of the run. */
static long lock_cmp(lockstep *L, long step, const char *what, const void *got, const void *want, size_t n, size_t es) {
  if (memcmp(got, want, n * es) == 0) return 0;
  long bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t a = 0, b = 0;
    memcpy(&a, (const char *)got + i * es, es);
    memcpy(&b, (const char *)want + i * es, es);
    if (a == b) continue;
    if (L->step < 0) {
      L->step = step;
      snprintf(L->first, sizeof L->first, "step %ld, %s[%zu]: 0x%0*llx, the contract 0x%0*llx", step, what, i,
               (int)(2 * es), (unsigned long long)a, (int)(2 * es), (unsigned long long)b);
    }
    bad++;
  }
  L->mismatches += bad;
  return bad;
}

/* ---- block: ShortConv block plan against plan_ref.c ------------------------------------------------ */

typedef enum { BP_NONE, BP_CARRY_SWAPPED, BP_CARRY_NOT_COMMITTED } block_perturb;
static const char *const block_perturb_name[] = { "", "carry rows swapped (Bx[t-1] before Bx[t-2])",
                                                  "carry not committed (the step's carry kept the old rows)" };

/* the first calls: prefills interleaved with decodes (0 rows: a decode) */
static const int64_t BLOCK_HEAD[] = { 5, 0, 0, 3, 0, 1, 0, 8, 2 };
enum { BLOCK_HEAD_N = sizeof BLOCK_HEAD / sizeof BLOCK_HEAD[0], BLOCK_MAXR = 8 };

typedef struct block_result {
  long calls, rows, prefills;
  double seconds;
  lockstep L;
} block_result;

/* Runs the head calls and ndecode decodes on a plan of `threads` and the reference in lockstep,
 * stopping at the first mismatching call. The reference's state commit is perturbed at call
 * pstep when pt != BP_NONE. */
static block_result block_lockstep(const fkp_model *m, int threads, long ndecode, block_perturb pt, long pstep) {
  block_result res = { 0 };
  lock_init(&res.L);
  const int64_t h = m->h, ldx = h + 3; /* row padding: it must stay as it was */
  fk_plan_desc d = fkp_desc(m, FK_PROGRAMS_BLOCK, threads, BLOCK_MAXR, 0);
  fk_plan *p = NULL;
  fk_error err;
  if (fk_plan_create(&d, &p, &err) != FK_OK) {
    fail("block: fk_plan_create(%d threads): %s", threads, err.message);
    res.L.step = 0;
    return res;
  }
  fkp_ref r;
  if (fkp_ref_init(&r, m) != 0) {
    fail("block: out of memory");
    exit(1);
  }
  size_t slen = fk_state_bytes(p), n = (size_t)(BLOCK_MAXR * ldx);
  unsigned char *snap = xmalloc(slen);
  uint16_t *xp = xmalloc(n * 2), *xr = xmalloc(n * 2), *old = xmalloc((size_t)(2 * h) * 2);
  int64_t tokens = 0;
  long total = BLOCK_HEAD_N + ndecode;
  double t0 = now();
  for (long c = 0; c < total; c++) {
    int64_t rows = c < BLOCK_HEAD_N && BLOCK_HEAD[c] ? BLOCK_HEAD[c] : 1;
    fk_program prog = c < BLOCK_HEAD_N && BLOCK_HEAD[c] ? FK_PROG_BLOCK_PREFILL : FK_PROG_BLOCK_DECODE;
    fkp_fill_bf16(xp, (size_t)(rows * ldx), 2.0f, 1000 + (uint64_t)c); /* a fresh residual row per token */
    memcpy(xr, xp, (size_t)(rows * ldx) * 2);
    fk_io io = { .rows = rows, .x = xp, .ldx = ldx };
    if (fk_run(p, prog, &io, &err) != FK_OK) {
      fail("block %d threads: call %ld: fk_run(%s): %s", threads, c, fk_program_name(prog), err.message);
      res.L.step = c;
      break;
    }
    memcpy(old, r.carry, (size_t)(2 * h) * 2);
    fkp_ref_block(&r, xr, rows, ldx);
    tokens += rows;
    if (pt != BP_NONE && c == pstep) {
      if (pt == BP_CARRY_SWAPPED) {
        uint16_t *a = r.carry, *b = r.carry + h;
        for (int64_t i = 0; i < h; i++) {
          uint16_t t = a[i];
          a[i] = b[i];
          b[i] = t;
        }
      } else {
        memcpy(r.carry, old, (size_t)(2 * h) * 2);
      }
    }
    if (fk_state_save(p, snap, slen, &err) != FK_OK) {
      fail("block: fk_state_save: %s", err.message);
      res.L.step = c;
      break;
    }
    int64_t snap_tokens;
    memcpy(&snap_tokens, snap + SNAP_TOKENS, 8);
    lock_cmp(&res.L, c, "residual rows", xp, xr, (size_t)(rows * ldx), 2);
    lock_cmp(&res.L, c, "carry", snap + SNAP_HEADER, r.carry, (size_t)(2 * h), 2);
    lock_cmp(&res.L, c, "token cursor", &snap_tokens, &tokens, 1, 8);
    res.calls++;
    res.rows += rows;
    res.prefills += prog == FK_PROG_BLOCK_PREFILL;
    if (res.L.step >= 0) break;
  }
  res.seconds = now() - t0;
  free(snap);
  free(xp);
  free(xr);
  free(old);
  fkp_ref_free(&r);
  fk_plan_destroy(p);
  return res;
}

static void block_runs(void) {
  const long NDECODE = 10000;
  for (int threads = 1; threads <= 4; threads *= 2) {
    const int bias = threads == 2; /* LFM2 has no conv bias; one run with it */
    fkp_model m;
    if (fkp_model_make(&m, 64, 0, bias, 101 + (uint64_t)threads) != 0) {
      fail("block: out of memory");
      exit(1);
    }
    block_result r = block_lockstep(&m, threads, NDECODE, BP_NONE, -1);
    printf("longrun block h=64 bias=%d team=%d%s: %ld calls (%ld prefills, %ld decode steps), %ld rows, "
           "mismatches %ld, %.2f s\n", bias, threads, threads > 2 ? " (oversubscribed on 2 cores)" : "", r.calls,
           r.prefills, r.calls - r.prefills, r.rows, r.L.mismatches, r.seconds);
    if (r.L.step >= 0 || r.calls != BLOCK_HEAD_N + NDECODE)
      fail("block team=%d: lockstep broken at %s", threads, r.L.first[0] ? r.L.first : "(run stopped)");
    fkp_model_free(&m);
  }
}

/* ---- kv: qkprep stamps against the contract model ------------------------------------------------ */

typedef enum { KP_NONE, KP_ROPE_POS_OFF_BY_ONE, KP_SLOT_ONE_HOP_FAR } kv_perturb;
static const char *const kv_perturb_name[] = { "", "RoPE position off by one (table row pos + 1)",
                                               "ring slot one hop too far ((pos + 1) mod W)" };

static const char *const QK_FORMS[] = { "qkprep_neox64", "qkprep_neox32", "qkprep_cis64", "qkprep_cis32" };
enum { QK_NFORMS = 4, KV_RING = 30, KV_HEADS = 2, Q_HEADS = 4, KV_STEPS = 10000 };

static int form_hd(const char *form) { return strstr(form, "64") ? 64 : 32; }

static void contract_qkprep(const char *form, const fk_qkprep_neox64_args *a) {
  /* the four forms share one argument layout (fk_leaves.h) */
  if (!strcmp(form, "qkprep_neox64")) fkc_qkprep_neox64(a, FKC_EXACT);
  else if (!strcmp(form, "qkprep_neox32")) fkc_qkprep_neox32((const fk_qkprep_neox32_args *)(const void *)a, FKC_EXACT);
  else if (!strcmp(form, "qkprep_cis64")) fkc_qkprep_cis64((const fk_qkprep_cis64_args *)(const void *)a, FKC_EXACT);
  else fkc_qkprep_cis32((const fk_qkprep_cis32_args *)(const void *)a, FKC_EXACT);
}
_Static_assert(sizeof(fk_qkprep_neox64_args) == sizeof(fk_qkprep_cis32_args), "one qkprep argument layout");
_Static_assert(sizeof(fk_qkprep_neox64_args) == sizeof(fk_qkprep_neox32_args), "one qkprep argument layout");
_Static_assert(sizeof(fk_qkprep_neox64_args) == sizeof(fk_qkprep_cis64_args), "one qkprep argument layout");

typedef struct rope_tables {
  float *cos[2], *sin[2]; /* [0]: hd 32, [1]: hd 64; positions 0 .. KV_STEPS + 1 */
} rope_tables;

static rope_tables tables;

static void make_tables(void) {
  for (int k = 0; k < 2; k++) {
    int hd = k ? 64 : 32;
    size_t n = (size_t)(KV_STEPS + 2) * (size_t)(hd / 2);
    tables.cos[k] = xmalloc(n * 4);
    tables.sin[k] = xmalloc(n * 4);
    fk_error err;
    if (fk_rope_table(1e6f, hd, 0, KV_STEPS + 2, tables.cos[k], tables.sin[k], &err) != FK_OK) {
      fail("fk_rope_table: %s", err.message);
      exit(1);
    }
  }
}

/* The KV session's fixed parts: the norm weights and the cache's older contents. */
typedef struct kv_geom {
  const char *form;
  int hd;
  int64_t ring;   /* W, or 0: a linear cache */
  int64_t extent; /* slots per head */
} kv_geom;

static int64_t slot_of(const kv_geom *g, int64_t pos) { return g->ring ? pos % g->ring : pos; }

/* This step's new token: q heads and one k row per kv head (the projections' output). */
static void token_rows(uint16_t *q, uint16_t *k, int hd, int64_t pos, uint64_t salt) {
  fkh_rng rng = { UINT64_C(0x71c0) * (uint64_t)(pos + 1) + salt };
  for (int i = 0; i < Q_HEADS * hd; i++) q[i] = fkh_bf16(&rng, -3, 2);
  for (int i = 0; i < KV_HEADS * hd; i++) k[i] = fkh_bf16(&rng, -3, 2);
  if (pos % 97 == 13) /* now and then a quiet head: mean(h^2) below eps */
    for (int i = 0; i < hd; i++) k[i] = fkh_bf16(&rng, -12, -10);
}

static void kv_weights(uint16_t *w, int hd) {
  fkh_rng rng = { UINT64_C(0x5eed) + (uint64_t)hd };
  for (int i = 0; i < hd; i++) w[i] = fkh_bf16(&rng, -1, 0);
}

static void kv_cache_init(uint16_t *cache, size_t n) {
  fkh_rng rng = { UINT64_C(0xcac4e) };
  for (size_t i = 0; i < n; i++) cache[i] = fkh_bf16(&rng, -3, 3); /* older positions (linear: never read) */
}

static fk_qkprep_neox64_args qk_args(uint16_t *x, const uint16_t *w, int hd, int64_t heads, int64_t ld_head,
                                     int64_t ld_row, int64_t pos, int64_t slot, int64_t ring) {
  int k = hd == 64;
  fk_qkprep_neox64_args a = { x, w, tables.cos[k], tables.sin[k], heads, 1, ld_head, ld_row, pos, slot, ring, 1e-5f };
  return a;
}

typedef struct kv_result {
  long steps;
  double seconds;
  lockstep L;
} kv_result;

/* nsteps KV decode steps of form g->form on a host stamp (fn) and the contract in lockstep.
 * Perturbation pt is applied to the contract's call at step pstep (and, for the slot, after). */
static kv_result kv_lockstep(const kv_geom *g, fkh_fn fn, long nsteps, kv_perturb pt, long pstep) {
  kv_result res = { 0 };
  lock_init(&res.L);
  const int hd = g->hd;
  const size_t ncache = (size_t)(KV_HEADS * g->extent * hd);
  uint16_t *cs = xmalloc(ncache * 2), *cc = xmalloc(ncache * 2), w[64];
  uint16_t qs[Q_HEADS * 64] = { 0 }, qc[Q_HEADS * 64] = { 0 }, k[KV_HEADS * 64] = { 0 };
  kv_weights(w, hd);
  kv_cache_init(cs, ncache);
  memcpy(cc, cs, ncache * 2);
  double t0 = now();
  for (long pos = 0; pos < nsteps; pos++) {
    token_rows(qs, k, hd, pos, 0);
    memcpy(qc, qs, sizeof qs);
    int64_t slot = slot_of(g, pos), ld_head = g->extent * hd;
    for (int h = 0; h < KV_HEADS; h++) { /* the K projection writes the token's slot */
      memcpy(cs + h * ld_head + slot * hd, k + h * hd, (size_t)hd * 2);
    }
    int64_t cpos = pos, cslot = slot;
    if (pt == KP_ROPE_POS_OFF_BY_ONE && pos == pstep) cpos = pos + 1;
    if (pt == KP_SLOT_ONE_HOP_FAR && pos >= pstep) cslot = g->ring ? (slot + 1) % g->ring : slot + 1;
    for (int h = 0; h < KV_HEADS; h++) memcpy(cc + h * ld_head + cslot * hd, k + h * hd, (size_t)hd * 2);
    fk_qkprep_neox64_args aq = qk_args(qs, w, hd, Q_HEADS, hd, Q_HEADS * hd, pos, 0, 0);
    fk_qkprep_neox64_args ak = qk_args(cs, w, hd, KV_HEADS, ld_head, hd, pos, slot, g->ring);
    fk_qkprep_neox64_args bq = qk_args(qc, w, hd, Q_HEADS, hd, Q_HEADS * hd, cpos, 0, 0);
    fk_qkprep_neox64_args bk = qk_args(cc, w, hd, KV_HEADS, ld_head, hd, cpos, cslot, g->ring);
    fn(&aq);
    fn(&ak);
    contract_qkprep(g->form, &bq);
    contract_qkprep(g->form, &bk);
    lock_cmp(&res.L, pos, "q heads", qs, qc, (size_t)(Q_HEADS * hd), 2);
    lock_cmp(&res.L, pos, g->ring ? "ring cache" : "linear cache", cs, cc, ncache, 2);
    res.steps++;
    if (res.L.step >= 0) break;
  }
  res.seconds = now() - t0;
  free(cs);
  free(cc);
  return res;
}

static const char *const HOST_VARIANTS[] = { "avx2", "avx512" };

static void kv_host_runs(void) {
  for (size_t v = 0; v < sizeof HOST_VARIANTS / sizeof HOST_VARIANTS[0]; v++) {
    fkh_target t = fkh_host(HOST_VARIANTS[v]);
    char why[200];
    if (!fkh_available(&t, why, sizeof why)) {
      printf("longrun kv host %s: SKIPPED (%s)\n", HOST_VARIANTS[v], why);
      continue;
    }
    for (int f = 0; f < QK_NFORMS; f++) {
      fkh_fn fn = fkh_host_stamp(fkh_form_index(QK_FORMS[f]), HOST_VARIANTS[v], NULL);
      if (!fn) {
        fail("kv: no host %s stamp of %s", HOST_VARIANTS[v], QK_FORMS[f]);
        continue;
      }
      for (int lin = 0; lin < 2; lin++) {
        kv_geom g = { QK_FORMS[f], form_hd(QK_FORMS[f]), lin ? 0 : KV_RING, lin ? KV_STEPS : KV_RING };
        kv_result r = kv_lockstep(&g, fn, KV_STEPS, KP_NONE, -1);
        printf("longrun kv %-13s host %-6s %s: %ld steps (q: %d heads, k: %d heads at slot %s), whole cache "
               "(%lld slots) compared per step, mismatches %ld, %.2f s\n", QK_FORMS[f], HOST_VARIANTS[v],
               lin ? "linear" : "ring W=30", r.steps, Q_HEADS, KV_HEADS, lin ? "pos" : "pos mod 30 (333 wraps)",
               (long long)g.extent, r.L.mismatches, r.seconds);
        if (r.L.step >= 0 || r.steps != KV_STEPS)
          fail("kv %s host %s %s: lockstep broken at %s", QK_FORMS[f], HOST_VARIANTS[v], lin ? "linear" : "ring",
               r.L.first);
      }
    }
  }
}

/* The AArch64 stamp under qemu, through the stamp runner (fkh_run batches many calls per qemu
 * start). A batch's calls cannot feed each other, so each call carries the state before its
 * step (the contract's cache, which every earlier call was verified equal to bit for bit) and
 * its output is compared with the contract's state after the step: any mismatch stops the run at
 * its step, as on the host. The RoPE tables travel as the window of rows [pos - 7, pos] with the
 * leaf's pos shifted likewise (the shift flashkern.h documents for fk_rope_table). */
enum { REMOTE_BATCH = 1000, REMOTE_MIN_STEPS = 2000, REMOTE_WINDOW = 8, REMOTE_LINEAR = 500 };

static long remote_steps(const fkh_target *t, const kv_geom *g, long nsteps, double budget, lockstep *L,
                         double *seconds, long *batches) {
  const int hd = g->hd, kt = hd == 64;
  const size_t ncache = (size_t)(KV_HEADS * g->extent * hd);
  const int64_t ld_head = g->extent * hd;
  uint16_t *cc = xmalloc(ncache * 2), w[64], q[Q_HEADS * 64], k[KV_HEADS * 64];
  uint16_t *want_cache = xmalloc((size_t)REMOTE_BATCH * ncache * 2), *want_q = xmalloc((size_t)REMOTE_BATCH * Q_HEADS * 64 * 2);
  fkh_call *calls = calloc(2 * REMOTE_BATCH, sizeof *calls);
  if (!calls) exit(1);
  kv_weights(w, hd);
  kv_cache_init(cc, ncache);
  long done = 0;
  double t0 = now();
  *batches = 0;
  while (done < nsteps && L->step < 0) {
    if (done >= REMOTE_MIN_STEPS && now() - t0 > budget) break;
    long nb = nsteps - done < REMOTE_BATCH ? nsteps - done : REMOTE_BATCH;
    for (long b = 0; b < nb; b++) {
      int64_t pos = done + b, slot = slot_of(g, pos), base = pos >= REMOTE_WINDOW - 1 ? pos - (REMOTE_WINDOW - 1) : 0;
      token_rows(q, k, hd, pos, 0);
      for (int h = 0; h < KV_HEADS; h++) memcpy(cc + h * ld_head + slot * hd, k + h * hd, (size_t)hd * 2);
      int64_t rows = pos - base + 1;
      for (int which = 0; which < 2; which++) {
        fkh_call *c = &calls[2 * b + which];
        fkh_call_init(c, g->form, which ? "k" : "q");
        snprintf(c->name, sizeof c->name, "%s step %lld", which ? "k" : "q", (long long)pos);
        fkh_set_i64(c, "heads", which ? KV_HEADS : Q_HEADS);
        fkh_set_i64(c, "m", 1);
        fkh_set_i64(c, "ld_head", which ? ld_head : hd);
        fkh_set_i64(c, "ld_row", which ? hd : Q_HEADS * hd);
        fkh_set_i64(c, "pos", pos - base);
        fkh_set_i64(c, "slot", which ? slot : 0);
        fkh_set_i64(c, "ring", which ? g->ring : 0);
        fkh_set_f32(c, "eps", 1e-5f);
        if (which) memcpy(fkh_set_buf(c, "x", ncache), cc, ncache * 2);
        else memcpy(fkh_set_buf(c, "x", (size_t)(Q_HEADS * hd)), q, (size_t)(Q_HEADS * hd) * 2);
        memcpy(fkh_set_buf(c, "w", (size_t)hd), w, (size_t)hd * 2);
        size_t nt = (size_t)(rows * (hd / 2));
        memcpy(fkh_set_buf(c, "cos", nt), tables.cos[kt] + base * (hd / 2), nt * 4);
        memcpy(fkh_set_buf(c, "sin", nt), tables.sin[kt] + base * (hd / 2), nt * 4);
      }
      /* the contract's step, on the full tables at the true position */
      uint16_t *wq = want_q + (size_t)b * Q_HEADS * 64, *wc = want_cache + (size_t)b * ncache;
      memcpy(wq, q, (size_t)(Q_HEADS * hd) * 2);
      fk_qkprep_neox64_args aq = qk_args(wq, w, hd, Q_HEADS, hd, Q_HEADS * hd, pos, 0, 0);
      fk_qkprep_neox64_args ak = qk_args(cc, w, hd, KV_HEADS, ld_head, hd, pos, slot, g->ring);
      contract_qkprep(g->form, &aq);
      contract_qkprep(g->form, &ak);
      memcpy(wc, cc, ncache * 2);
    }
    char err[256];
    if (fkh_run(t, calls, (int)(2 * nb), err, sizeof err) != 0) {
      fail("kv %s: %s", t->label, err);
      L->step = done;
    }
    for (long b = 0; b < nb && L->step < 0; b++) {
      for (int which = 0; which < 2; which++)
        if (calls[2 * b + which].failed) {
          fail("kv %s: %s: %s", t->label, calls[2 * b + which].name, calls[2 * b + which].why);
          L->step = done + b;
        }
      lock_cmp(L, done + b, "q heads", fkh_buf_of(&calls[2 * b], "x"), want_q + (size_t)b * Q_HEADS * 64,
               (size_t)(Q_HEADS * hd), 2);
      lock_cmp(L, done + b, g->ring ? "ring cache" : "linear cache", fkh_buf_of(&calls[2 * b + 1], "x"),
               want_cache + (size_t)b * ncache, ncache, 2);
      if (L->step < 0) done++;
    }
    for (long b = 0; b < 2 * nb; b++) fkh_call_free(&calls[b]);
    (*batches)++;
  }
  *seconds = now() - t0;
  free(calls);
  free(cc);
  free(want_cache);
  free(want_q);
  return done;
}

static void kv_remote_runs(void) {
  const char *env = getenv("FK_LONGRUN_QEMU_SECONDS");
  double budget = env && *env ? atof(env) : 20.0, t0 = now();
  static const char *const cpus[] = { "max", "neoverse-n1" };
  for (int c = 0; c < 2; c++) {
    fkh_target t = fkh_remote("neon", cpus[c]);
    char why[200];
    if (!fkh_available(&t, why, sizeof why)) {
      printf("longrun kv aarch64: SKIPPED (%s)\n", why);
      return;
    }
    /* the ring sequence of neox64 (LFM2's form), as on the host; each CPU gets half the budget
     * left beyond its first 2,000 steps */
    kv_geom g = { "qkprep_neox64", 64, KV_RING, KV_RING };
    lockstep L;
    lock_init(&L);
    double s, left = budget - (now() - t0);
    long batches, n = remote_steps(&t, &g, KV_STEPS, c ? left : left / 2, &L, &s, &batches);
    printf("longrun kv qkprep_neox64 %s ring W=30: %ld of %d steps under qemu (%ld runner starts of <= %d steps, "
           "each call carrying the whole cache as the contract left it, verified equal after the step before)%s, "
           "mismatches %ld, %.2f s\n", t.label, n, KV_STEPS, batches, REMOTE_BATCH,
           n == KV_STEPS ? "" : "; the qemu budget (FK_LONGRUN_QEMU_SECONDS) ended the run: all 10000 steps ran on the "
           "host stamps", L.mismatches, s);
    if (L.step >= 0) fail("kv %s: lockstep broken at %s", t.label, L.first);
    if (n < REMOTE_MIN_STEPS && L.step < 0) fail("kv %s: only %ld steps", t.label, n);
  }
  /* a linear cache under qemu: the whole cache travels with each call, so a shorter one */
  fkh_target t = fkh_remote("neon", "max");
  kv_geom gl = { "qkprep_cis64", 64, 0, REMOTE_LINEAR };
  lockstep L;
  lock_init(&L);
  double s;
  long batches, n = remote_steps(&t, &gl, REMOTE_LINEAR, 0.0, &L, &s, &batches);
  printf("longrun kv qkprep_cis64  %s linear: %ld steps under qemu (a %d-slot cache with every call; 10000 on the "
         "host stamps), mismatches %ld, %.2f s\n", t.label, n, REMOTE_LINEAR, L.mismatches, s);
  if (L.step >= 0 || n != REMOTE_LINEAR) fail("kv %s linear: lockstep broken at %s", t.label, L.first);
}

/* ---- tail: detokenizer frames through a plan against plan_ref.c ------------------------------------- */

typedef enum { TP_NONE, TP_CURSOR_ONE_HOP_FAR, TP_RING_ROTATED } tail_perturb;
static const char *const tail_perturb_name[] = { "", "frame cursor advanced one hop too far",
                                                 "OLA ring rotated by one hop (320 samples)" };

enum { TAIL_FRAMES = 1000, TAIL_IN = 40, TAIL_LDFEAT = 43, TAIL_MAXF = 8, TAIL_PCM = TAIL_MAXF * 320 + 480 };

/* The call schedule: chunk sizes cycle through CHUNKS; a flush (-1) ends the stream at the frame
 * counts in FLUSH_AT (after a stream of 2 frames, of 3, an empty stream, mid-run) and at the end. */
static const int64_t CHUNKS[] = { 1, 3, 1, 2, 7, 1, 5, 8, 1, 1, 4, 6, 1, 2 };
static const int64_t FLUSH_AT[] = { 2, 5, 5, 250, 501, 777, TAIL_FRAMES };

typedef struct tail_call {
  int64_t frames; /* 0: flush */
} tail_call;

static int tail_schedule(tail_call *calls, int cap) {
  int n = 0, ci = 0;
  int64_t at = 0;
  for (size_t fl = 0; fl < sizeof FLUSH_AT / sizeof FLUSH_AT[0]; fl++) {
    while (at < FLUSH_AT[fl] && n < cap) {
      int64_t k = CHUNKS[ci++ % (int)(sizeof CHUNKS / sizeof CHUNKS[0])];
      if (k > FLUSH_AT[fl] - at) k = FLUSH_AT[fl] - at;
      calls[n++].frames = k;
      at += k;
    }
    if (n < cap) calls[n++].frames = 0;
  }
  return n;
}

typedef struct tail_result {
  long calls, frames, flushes, samples;
  double seconds;
  lockstep L;
} tail_result;

static tail_result tail_lockstep(const fkp_model *m, int threads, int i16, long nframes, tail_perturb pt, long pframe) {
  tail_result res = { 0 };
  lock_init(&res.L);
  const float clip = i16 ? 0.5f : INFINITY; /* int16: a clip that bites */
  const size_t es = i16 ? 2 : 4;
  fk_plan_desc d = fkp_desc(m, FK_PROGRAMS_TAIL, threads, 0, TAIL_MAXF);
  d.clip = clip;
  d.flags = i16 ? FK_PLAN_PCM_I16 : 0;
  fk_plan *p = NULL;
  fk_error err;
  if (fk_plan_create(&d, &p, &err) != FK_OK) {
    fail("tail: fk_plan_create(%d threads): %s", threads, err.message);
    res.L.step = 0;
    return res;
  }
  fkp_ref r;
  if (fkp_ref_init(&r, m) != 0) exit(1);
  float *feat = xmalloc((size_t)(TAIL_FRAMES * TAIL_LDFEAT) * 4);
  fkp_fill_f32(feat, (size_t)(TAIL_FRAMES * TAIL_LDFEAT), 1.0f, 77);
  unsigned char *pg = xmalloc(TAIL_PCM * es), *pr = xmalloc(TAIL_PCM * es);
  size_t slen = fk_state_bytes(p);
  unsigned char *snap = xmalloc(slen);
  tail_call sched[1024];
  int ncalls = tail_schedule(sched, 1024);
  long f = 0; /* frames consumed */
  double t0 = now();
  for (int c = 0; c < ncalls; c++) {
    if (f >= nframes && nframes < TAIL_FRAMES) break; /* a short run: no final flush */
    int64_t k = sched[c].frames;
    if (k > nframes - f) k = nframes - f;
    memset(pg, 0xa5, TAIL_PCM * es);
    memset(pr, 0xa5, TAIL_PCM * es);
    fk_io io = { .rows = k, .feat = feat + f * TAIL_LDFEAT, .ldfeat = TAIL_LDFEAT, .pcm = pg, .pcm_cap = TAIL_PCM,
                 .pcm_count = -1 };
    fk_program prog = k ? FK_PROG_TAIL : FK_PROG_TAIL_FLUSH;
    if (fk_run(p, prog, &io, &err) != FK_OK) {
      fail("tail %d threads: call %d: fk_run(%s): %s", threads, c, fk_program_name(prog), err.message);
      res.L.step = f;
      break;
    }
    /* the reference frame by frame; each frame's samples compared on their own */
    int64_t n = 0;
    long step = k ? f : f - 1; /* a flush is reported at the stream's last frame */
    if (!k) {
      n = fkp_ref_flush(&r, pr, i16);
      res.flushes++;
      char what[64];
      snprintf(what, sizeof what, "flush PCM (after frame %ld)", f - 1);
      lock_cmp(&res.L, step, what, pg, pr, (size_t)(n > io.pcm_count ? n : io.pcm_count), es);
    }
    for (int64_t j = 0; j < k; j++) {
      int64_t got = fkp_ref_tail(&r, feat + (f + j) * TAIL_LDFEAT, 1, TAIL_LDFEAT, pr + (size_t)n * es, clip, i16);
      char what[64];
      snprintf(what, sizeof what, "PCM of frame %ld (stream frame %lld)", f + (long)j, (long long)(r.frames - 1));
      lock_cmp(&res.L, f + (long)j, what, pg + (size_t)n * es, pr + (size_t)n * es, (size_t)got, es);
      n += got;
      if (pt != TP_NONE && f + j == pframe) {
        if (pt == TP_CURSOR_ONE_HOP_FAR) r.frames++;
        else {
          float t[320];
          memcpy(t, r.ring, sizeof t);
          memmove(r.ring, r.ring + 320, (FK_ISTFT_RING - 320) * 4);
          memcpy(r.ring + FK_ISTFT_RING - 320, t, sizeof t);
        }
      }
    }
    long last = k ? f + (long)k - 1 : step;
    int64_t cnt = io.pcm_count, want = n;
    lock_cmp(&res.L, last, "samples written", &cnt, &want, 1, 8);
    if (fk_state_save(p, snap, slen, &err) != FK_OK) {
      fail("tail: fk_state_save: %s", err.message);
      res.L.step = last;
      break;
    }
    int64_t frames;
    memcpy(&frames, snap + SNAP_FRAMES, 8);
    lock_cmp(&res.L, last, "frame cursor", &frames, &r.frames, 1, 8);
    lock_cmp(&res.L, last, "OLA ring", snap + SNAP_HEADER, r.ring, FK_ISTFT_RING, 4);
    res.calls++;
    res.frames += k;
    res.samples += n;
    f += k;
    if (res.L.step >= 0) break;
  }
  res.seconds = now() - t0;
  free(feat);
  free(pg);
  free(pr);
  free(snap);
  fkp_ref_free(&r);
  fk_plan_destroy(p);
  return res;
}

static void tail_runs(void) {
  fkp_model m;
  if (fkp_model_make(&m, 0, TAIL_IN, 0, 201) != 0) exit(1);
  for (int i16 = 0; i16 < 2; i16++)
    for (int threads = 1; threads <= 4; threads *= 2) {
      tail_result r = tail_lockstep(&m, threads, i16, TAIL_FRAMES, TP_NONE, -1);
      printf("longrun tail %s PCM%s team=%d%s: %ld frames in %ld calls (chunks of 1..%d, %ld flushes), %ld samples, "
             "mismatches %ld, %.2f s\n", i16 ? "int16" : "f32", i16 ? " clip 0.5" : "", threads,
             threads > 2 ? " (oversubscribed on 2 cores)" : "", r.frames, r.calls, TAIL_MAXF, r.flushes, r.samples,
             r.L.mismatches, r.seconds);
      if (r.L.step >= 0 || r.frames != TAIL_FRAMES)
        fail("tail %s team=%d: lockstep broken at %s", i16 ? "int16" : "f32", threads, r.L.first);
    }
  fkp_model_free(&m);
}

/* ---- the self-check: a perturbed state commit must be seen, at its step -------------------------- */

static void expect_seen(const char *section, const char *what, const lockstep *L, long pstep, long ran) {
  if (L->step == pstep && L->mismatches > 0) {
    printf("longrun self-check %s: perturbation '%s' at step %ld -> mismatch reported at step %ld (%s)\n", section,
           what, pstep, L->step, L->first);
    return;
  }
  if (L->step < 0)
    fail("self-check %s: perturbation '%s' at step %ld was NOT seen (%ld steps compared)", section, what, pstep, ran);
  else
    fail("self-check %s: perturbation '%s' at step %ld seen at step %ld instead (%s)", section, what, pstep, L->step,
         L->first);
}

static void self_check(void) {
  /* block: 40 decodes after the head calls on a team of 2, the reference's carry spoilt at call 20 */
  fkp_model m;
  if (fkp_model_make(&m, 64, 0, 0, 103) != 0) exit(1);
  for (int pt = BP_CARRY_SWAPPED; pt <= BP_CARRY_NOT_COMMITTED; pt++) {
    block_result r = block_lockstep(&m, 2, 40, (block_perturb)pt, 20);
    expect_seen("block", block_perturb_name[pt], &r.L, 20, r.calls);
  }
  block_result clean = block_lockstep(&m, 2, 40, BP_NONE, -1);
  if (clean.L.step >= 0) fail("self-check block: the unperturbed short run mismatches: %s", clean.L.first);
  fkp_model_free(&m);

  /* kv: 100 steps on the ring (W = 30), the contract's step 45 (after one wrap) perturbed */
  const char *variant = NULL;
  for (size_t v = 0; v < sizeof HOST_VARIANTS / sizeof HOST_VARIANTS[0]; v++) {
    fkh_target t = fkh_host(HOST_VARIANTS[v]);
    char why[200];
    if (fkh_available(&t, why, sizeof why)) variant = HOST_VARIANTS[v];
  }
  if (!variant) {
    fail("self-check kv: no host stamp variant runs here");
  } else {
    kv_geom g = { "qkprep_neox64", 64, KV_RING, KV_RING };
    fkh_fn fn = fkh_host_stamp(fkh_form_index(g.form), variant, NULL);
    for (int pt = KP_ROPE_POS_OFF_BY_ONE; pt <= KP_SLOT_ONE_HOP_FAR; pt++) {
      kv_result r = kv_lockstep(&g, fn, 100, (kv_perturb)pt, 45);
      char label[128];
      snprintf(label, sizeof label, "kv (host %s)", variant);
      expect_seen(label, kv_perturb_name[pt], &r.L, 45, r.steps);
    }
  }

  /* tail: 30 frames on a team of 2, the reference's state spoilt after frame 12. The plan's state
   * is seen between calls: the spoilt state is due at the end of the call holding frame 12 (no
   * later, and no earlier comparison may fail). */
  const long pframe = 12;
  long due = -1;
  tail_call sched[1024];
  int ns = tail_schedule(sched, 1024);
  for (int c = 0, f = 0; c < ns && due < 0; c++) {
    if (f <= pframe && pframe < f + sched[c].frames) due = f + (long)sched[c].frames - 1;
    f += (int)sched[c].frames;
  }
  if (fkp_model_make(&m, 0, TAIL_IN, 0, 203) != 0) exit(1);
  for (int pt = TP_CURSOR_ONE_HOP_FAR; pt <= TP_RING_ROTATED; pt++) {
    tail_result r = tail_lockstep(&m, 2, 0, 30, (tail_perturb)pt, pframe);
    char what[128];
    snprintf(what, sizeof what, "%s (after frame %ld, a call ending at frame %ld)", tail_perturb_name[pt], pframe, due);
    expect_seen("tail (team 2)", what, &r.L, due, r.frames);
  }
  fkp_model_free(&m);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  double t0 = now();
  make_tables();
  self_check();
  block_runs();
  kv_host_runs();
  kv_remote_runs();
  tail_runs();
  printf("longrun: %s, %.1f s in all\n", failures ? "FAILED" : "every run bit-exact, every perturbation seen",
         now() - t0);
  free(tables.cos[0]), free(tables.cos[1]), free(tables.sin[0]), free(tables.sin[1]);
  return failures ? 1 : 0;
}
