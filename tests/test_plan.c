#define _GNU_SOURCE
/* tests/test_plan.c: the runtime (runtime/fk_plan.c, fk_run.c, fk_state.c, fk_team.c) through
 * the block and tail programs (fk_prog_block.c, fk_prog_tail.c).
 *   block_equals_the_contract_composition: prefill and decode calls of a ShortConv block, team
 *       sizes 1..4, with and without conv bias: the residual stream and the carry equal the
 *       contract models composed row by row from the checkpoint-layout weights, bit for bit.
 *   tail_equals_the_contract_composition: frames in chunks, flushes, f32 and int16 PCM, clip.
 *   the_gate_sees_wiring_errors: the same comparisons against a reference with the conv taps
 *       untransposed, the carry not committed, half-up rounding, or rows swapped must fail.
 *   team_size_invariance_lfm2_width: hidden 2048 (exact and fast tiers), 1..4 threads: equal.
 *   consecutive_turns_equal_one_long_run: turns (prefill + decode, frames in chunks) == one
 *       call; a snapshot loaded into a fresh plan continues exactly.
 *   plans_share_one_team: two plans on one team (desc.team_of), calls interleaved, the owner
 *       destroyed first: each equals its contract composition; a team size mismatch is refused.
 *   members_have_their_own_cpus: placement (members 1.. on distinct CPUs, never the caller's;
 *       a caller that moves onto a member's CPU sends that member to the CPU it left).
 *   weights_are_not_read_after_readiness: the host's weights scribbled after fk_plan_create.
 *   refusals_*: every bad field named, nothing written, the state unchanged.
 *   same_results_on_aarch64: the scenario program under qemu (-cpu max, neoverse-n1) prints the
 *       host's digests.
 *   fpenv_refused: readiness refuses a thread whose MXCSR (host) / FPCR (qemu -cpu max,
 *       neoverse-n1) is not the Linux default, one control bit at a time, naming the bit
 *       (fk_plan_scenario fpenv); the default is accepted. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>

#include "contract/contract.h"
#include "plan/plan_model.h"

/* the snapshot layout flashkern.h documents */
enum { SNAP_HEADER = 56 };

static fk_plan *make_plan(const fk_plan_desc *d) {
  fk_plan *p = NULL;
  fk_error err;
  fk_status s = fk_plan_create(d, &p, &err);
  cr_assert_eq(s, FK_OK, "fk_plan_create: %s: %s", fk_strerror(s), err.message);
  return p;
}

static void run(fk_plan *p, fk_program prog, fk_io *io) {
  fk_error err;
  fk_status s = fk_run(p, prog, io, &err);
  cr_assert_eq(s, FK_OK, "fk_run(%s): %s: %s", fk_program_name(prog), fk_strerror(s), err.message);
}

static unsigned char *snapshot(const fk_plan *p, size_t *len) {
  *len = fk_state_bytes(p);
  unsigned char *b = malloc(*len);
  fk_error err;
  cr_assert_eq(fk_state_save(p, b, *len, &err), FK_OK, "%s", err.message);
  return b;
}

static int first_diff16(const uint16_t *a, const uint16_t *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return (int)i;
  return -1;
}

/* ---- the block against the contract composition ------------------------------------------------ */

/* One block session: calls of these row counts (1 = decode), the rows of x consecutive. */
static const int64_t SESSION[] = { 7, 1, 1, 1, 9, 1, 4 };
enum { NCALLS = sizeof SESSION / sizeof SESSION[0], SESSION_ROWS = 24, MAXR = 9 };

typedef enum perturb { P_NONE, P_CONV_UNTRANSPOSED, P_CARRY_SKIPPED, P_RNE_BIAS, P_ROWS_SWAPPED } perturb;

/* The reference session, optionally perturbed (the ref's helpers are exact; the perturbations
 * are applied around them). */
static void ref_session(const fkp_model *m, uint16_t *x, int64_t ldx, perturb pt) {
  fkp_ref r;
  cr_assert_eq(fkp_ref_init(&r, m), 0);
  if (pt == P_CONV_UNTRANSPOSED) memcpy(r.conv_tap, m->conv, (size_t)(3 * m->h) * 2);
  int64_t at = 0;
  for (int c = 0; c < NCALLS; c++) {
    for (int64_t j = 0; j < SESSION[c]; j++) {
      int64_t row = at + j;
      if (pt == P_ROWS_SWAPPED && c == 0 && j < 2) row = at + 1 - j; /* rows 0 and 1 in the wrong order */
      if (pt == P_CARRY_SKIPPED && c == 1) memset(r.carry, 0, (size_t)(2 * m->h) * 2);
      fkp_ref_block(&r, x + row * ldx, 1, ldx);
      if (pt == P_RNE_BIAS && c == 2) { /* the residual rounded half up instead (one row) */
        for (int64_t i = 0; i < m->h; i++) x[row * ldx + i] = (uint16_t)(x[row * ldx + i] ^ (i == 3));
      }
    }
    at += SESSION[c];
  }
  /* the final carry rides after the rows (the test compares it with the plan's snapshot) */
  memcpy(x + SESSION_ROWS * ldx, r.carry, (size_t)(2 * m->h) * 2);
  fkp_ref_free(&r);
}

/* Runs the session on a plan; x as ref_session leaves it (rows, then the final carry). */
static void plan_session(const fkp_model *m, int threads, fk_tier tier, uint16_t *x, int64_t ldx) {
  fk_plan_desc d = fkp_desc(m, FK_PROGRAMS_BLOCK, threads, MAXR, 0);
  d.tier = tier;
  fk_plan *p = make_plan(&d);
  int64_t at = 0;
  for (int c = 0; c < NCALLS; c++) {
    fk_io io = { .rows = SESSION[c], .x = x + at * ldx, .ldx = ldx };
    run(p, SESSION[c] == 1 && c % 2 ? FK_PROG_BLOCK_DECODE : FK_PROG_BLOCK_PREFILL, &io);
    at += SESSION[c];
  }
  cr_assert_eq(fk_state_query(p).tokens, SESSION_ROWS);
  size_t len;
  unsigned char *snap = snapshot(p, &len);
  memcpy(x + SESSION_ROWS * ldx, snap + SNAP_HEADER, (size_t)(2 * m->h) * 2);
  free(snap);
  fk_plan_destroy(p);
}

static size_t session_elems(int64_t h, int64_t ldx) { return (size_t)(SESSION_ROWS * ldx + 2 * h); }

static uint16_t *session_input(int64_t h, int64_t ldx, uint64_t seed) {
  size_t n = session_elems(h, ldx);
  uint16_t *x = malloc(n * 2);
  fkp_fill_bf16(x, n, 2.0f, seed);
  memset(x + SESSION_ROWS * ldx, 0, (size_t)(2 * h) * 2);
  return x;
}

/* Counts mismatches of the rows (row padding included: it must stay as it was) and the carry. */
static long session_mismatches(const uint16_t *a, const uint16_t *b, int64_t h, int64_t ldx, char *where, size_t len) {
  long bad = 0;
  size_t n = session_elems(h, ldx);
  where[0] = 0;
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) {
      if (!bad) {
        if (i < (size_t)(SESSION_ROWS * ldx))
          snprintf(where, len, "row %lld element %lld: 0x%04x vs 0x%04x", (long long)(i / (size_t)ldx),
                   (long long)(i % (size_t)ldx), a[i], b[i]);
        else
          snprintf(where, len, "carry[%lld]: 0x%04x vs 0x%04x", (long long)(i - (size_t)(SESSION_ROWS * ldx)), a[i], b[i]);
      }
      bad++;
    }
  return bad;
}

Test(plan, block_equals_the_contract_composition, .timeout = 300) {
  const int64_t h = 202, ldx = h + 6; /* 3h and h not multiples of 4 or 32: partial groups and tiles */
  for (int bias = 0; bias < 2; bias++) {
    fkp_model m;
    cr_assert_eq(fkp_model_make(&m, h, 0, bias, 11 + (uint64_t)bias), 0);
    uint16_t *want = session_input(h, ldx, 5), *got = session_input(h, ldx, 5);
    ref_session(&m, want, ldx, P_NONE);
    for (int t = 1; t <= 4; t++) {
      uint16_t *x = session_input(h, ldx, 5);
      plan_session(&m, t, FK_TIER_EXACT, x, ldx);
      char where[160];
      long bad = session_mismatches(x, want, h, ldx, where, sizeof where);
      cr_assert_eq(bad, 0, "bias %d, %d threads: %ld mismatches, first at %s", bias, t, bad, where);
      free(x);
    }
    cr_log_info("block h=%lld bias=%d: %d calls, %d rows + carry == contract composition, threads 1..4", (long long)h,
                bias, NCALLS, SESSION_ROWS);
    free(want);
    free(got);
    fkp_model_free(&m);
  }
}

Test(plan, the_gate_sees_wiring_errors, .timeout = 300) {
  const int64_t h = 202, ldx = h + 6;
  fkp_model m;
  cr_assert_eq(fkp_model_make(&m, h, 0, 0, 11), 0);
  uint16_t *x = session_input(h, ldx, 5);
  plan_session(&m, 2, FK_TIER_EXACT, x, ldx);
  static const char *const names[] = { "", "conv taps untransposed", "carry not committed across calls",
                                       "one residual rounded off by an ulp", "two rows swapped" };
  for (int pt = P_CONV_UNTRANSPOSED; pt <= P_ROWS_SWAPPED; pt++) {
    uint16_t *want = session_input(h, ldx, 5);
    ref_session(&m, want, ldx, (perturb)pt);
    char where[160];
    long bad = session_mismatches(x, want, h, ldx, where, sizeof where);
    cr_assert_gt(bad, 0, "perturbation '%s' was not seen", names[pt]);
    cr_log_info("perturbation '%s': %ld mismatches, first at %s", names[pt], bad, where);
    free(want);
  }
  free(x);
  fkp_model_free(&m);
}

/* ---- the tail against the contract composition -------------------------------------------------- */

static const int64_t CHUNKS[] = { 1, 1, 3, 4, -1, 2, -1, -1 }; /* frames per call; -1: flush */
enum { NCHUNKS = sizeof CHUNKS / sizeof CHUNKS[0], TAIL_FRAMES = 11, PCM_MAX = 11 * 320 + 2 * 480 };

/* Runs the chunks on a plan (plan != NULL) or the reference; returns samples written. */
static int64_t tail_session(fk_plan *p, fkp_ref *r, const float *feat, int64_t ldfeat, void *pcm, float clip, int i16) {
  int64_t n = 0, f = 0;
  size_t elem = i16 ? 2 : 4;
  for (int c = 0; c < NCHUNKS; c++) {
    char *out = (char *)pcm + (size_t)n * elem;
    if (CHUNKS[c] < 0) {
      if (p) {
        fk_io io = { .pcm = out, .pcm_cap = PCM_MAX - n, .pcm_count = -1 };
        run(p, FK_PROG_TAIL_FLUSH, &io);
        n += io.pcm_count;
      } else {
        n += fkp_ref_flush(r, out, i16);
      }
      continue;
    }
    if (p) {
      fk_io io = { .rows = CHUNKS[c], .feat = feat + f * ldfeat, .ldfeat = ldfeat, .pcm = out, .pcm_cap = PCM_MAX - n };
      run(p, FK_PROG_TAIL, &io);
      n += io.pcm_count;
    } else {
      n += fkp_ref_tail(r, feat + f * ldfeat, CHUNKS[c], ldfeat, out, clip, i16);
    }
    f += CHUNKS[c];
  }
  return n;
}

Test(plan, tail_equals_the_contract_composition, .timeout = 300) {
  const int64_t tail_in = 40, ldfeat = 43;
  fkp_model m;
  cr_assert_eq(fkp_model_make(&m, 0, tail_in, 0, 21), 0);
  float *feat = malloc((size_t)(TAIL_FRAMES * ldfeat) * 4);
  fkp_fill_f32(feat, (size_t)(TAIL_FRAMES * ldfeat), 1.0f, 3);
  for (int i16 = 0; i16 < 2; i16++) {
    float clip = i16 ? 0.5f : INFINITY; /* int16: a clip that bites (magnitudes around e^-1 +- ...) */
    size_t elem = i16 ? 2 : 4;
    unsigned char *want = calloc(PCM_MAX, elem), *got = calloc(PCM_MAX, elem);
    fkp_ref r;
    cr_assert_eq(fkp_ref_init(&r, &m), 0);
    int64_t nwant = tail_session(NULL, &r, feat, ldfeat, want, clip, i16);
    fkp_ref_free(&r);
    cr_assert_eq(nwant, 160 + 320 * 7 + 480 + 160 + 480, "reference sample count %lld", (long long)nwant);
    for (int t = 1; t <= 3; t++) {
      fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_TAIL, t, 4, 4);
      d.clip = clip;
      d.flags = i16 ? FK_PLAN_PCM_I16 : 0;
      fk_plan *p = make_plan(&d);
      memset(got, 0, PCM_MAX * elem);
      int64_t ngot = tail_session(p, NULL, feat, ldfeat, got, clip, i16);
      cr_assert_eq(ngot, nwant, "%d threads: %lld samples, want %lld", t, (long long)ngot, (long long)nwant);
      for (int64_t i = 0; i < nwant; i++)
        cr_assert(memcmp(got + (size_t)i * elem, want + (size_t)i * elem, elem) == 0,
                  "%s PCM, %d threads: sample %lld differs", i16 ? "int16" : "f32", t, (long long)i);
      cr_assert_eq(fk_state_query(p).frames, 0);
      fk_plan_destroy(p);
    }
    cr_log_info("tail %s: %lld samples == contract composition, threads 1..3", i16 ? "int16" : "f32", (long long)nwant);
    free(want);
    free(got);
  }
  free(feat);
  fkp_model_free(&m);
}

/* ---- team-size invariance at LFM2 width --------------------------------------------------------- */

Test(plan, team_size_invariance_lfm2_width, .timeout = 600) {
  const int64_t h = 2048, ldx = 2048, tail_in = 512;
  fkp_model m;
  cr_assert_eq(fkp_model_make(&m, h, tail_in, 0, 31), 0);
  float *feat = malloc((size_t)(TAIL_FRAMES * tail_in) * 4);
  fkp_fill_f32(feat, (size_t)(TAIL_FRAMES * tail_in), 1.0f, 4);
  uint64_t have = fk_cpu_features();
  for (int tier = FK_TIER_EXACT; tier <= FK_TIER_FAST; tier++) {
    fk_plan_desc probe = fkp_desc(&m, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, 1, MAXR, 4);
    probe.tier = (fk_tier)tier;
    fk_plan *pp = NULL;
    fk_error err;
    if (fk_plan_create(&probe, &pp, &err) != FK_OK) {
      cr_log_warn("tier %d not runnable here (%s): skipped", tier, err.message);
      continue;
    }
    fk_plan_destroy(pp);
    uint16_t *x1 = NULL;
    unsigned char *pcm1 = NULL;
    for (int t = 1; t <= 4; t++) {
      uint16_t *x = session_input(h, ldx, 8);
      plan_session(&m, t, (fk_tier)tier, x, ldx);
      fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_TAIL, t, 0, 4);
      d.tier = (fk_tier)tier;
      fk_plan *p = make_plan(&d);
      unsigned char *pcm = calloc(PCM_MAX, 4);
      tail_session(p, NULL, feat, tail_in, pcm, INFINITY, 0);
      fk_plan_destroy(p);
      if (t == 1) {
        x1 = x;
        pcm1 = pcm;
        continue;
      }
      int at = first_diff16(x, x1, session_elems(h, ldx));
      cr_assert_eq(at, -1, "tier %d: %d threads differ from 1 thread at element %d of the block session", tier, t, at);
      cr_assert(memcmp(pcm, pcm1, PCM_MAX * 4) == 0, "tier %d: %d threads: the PCM differs from 1 thread", tier, t);
      free(x);
      free(pcm);
    }
    if (tier == FK_TIER_EXACT) { /* and the exact tier is the contract's */
      uint16_t *want = session_input(h, ldx, 8);
      ref_session(&m, want, ldx, P_NONE);
      char where[160];
      long bad = session_mismatches(x1, want, h, ldx, where, sizeof where);
      cr_assert_eq(bad, 0, "hidden 2048: %ld mismatches with the contract, first at %s", bad, where);
      free(want);
    }
    cr_log_info("hidden %lld, tail_in %lld, %s tier (%s): threads 1..4 bit-identical", (long long)h,
                (long long)tail_in, tier ? "fast" : "exact", (have & FK_CPU_AVX512BF16) ? "avx512bf16" : "-");
    free(x1);
    free(pcm1);
  }
  free(feat);
  fkp_model_free(&m);
}

/* ---- consecutive turns ------------------------------------------------------------------------ */

Test(plan, consecutive_turns_equal_one_long_run, .timeout = 300) {
  const int64_t h = 96, ldx = 96, tail_in = 24;
  fkp_model m;
  cr_assert_eq(fkp_model_make(&m, h, tail_in, 1, 41), 0);
  const uint32_t both = FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL;
  enum { ROWS = 16, FRAMES = 7 };
  uint16_t *xa = malloc(ROWS * ldx * 2), *xb = malloc(ROWS * ldx * 2), *xc = malloc(ROWS * ldx * 2);
  fkp_fill_bf16(xa, ROWS * ldx, 2.0f, 9);
  memcpy(xb, xa, ROWS * ldx * 2);
  memcpy(xc, xa, ROWS * ldx * 2);
  float feat[FRAMES * 24];
  fkp_fill_f32(feat, FRAMES * 24, 1.0f, 10);
  enum { PCM = FRAMES * 320 + 480 };
  float pa[PCM], pb[PCM], pc[PCM];

  /* A: turn 1 = prefill 6 + decode 3 + frames 2, 1; turn 2 = prefill 5 + decode 2 + frames 4 */
  fk_plan_desc d = fkp_desc(&m, both, 2, ROWS, FRAMES);
  fk_plan *a = make_plan(&d), *b = make_plan(&d), *c = make_plan(&d);
  static const int64_t t1[] = { 6, 1, 1, 1 }, t2[] = { 5, 1, 1 };
  int64_t at = 0, na = 0;
  for (int i = 0; i < 4; i++, at += t1[i - 1]) {
    fk_io io = { .rows = t1[i], .x = xa + at * ldx, .ldx = ldx };
    run(a, t1[i] == 1 ? FK_PROG_BLOCK_DECODE : FK_PROG_BLOCK_PREFILL, &io);
  }
  for (int64_t f = 0, k = 2; f < 3; f += k, k = 1) {
    fk_io io = { .rows = k, .feat = feat + f * 24, .ldfeat = 24, .pcm = pa + na, .pcm_cap = PCM - na };
    run(a, FK_PROG_TAIL, &io);
    na += io.pcm_count;
  }
  size_t len;
  unsigned char *after1 = snapshot(a, &len);
  cr_assert_eq(fk_state_query(a).tokens, 9);
  cr_assert_eq(fk_state_query(a).frames, 3);
  /* C continues from A's snapshot */
  fk_error err;
  cr_assert_eq(fk_state_load(c, after1, len, &err), FK_OK, "%s", err.message);
  memcpy(xc, xa, (size_t)(at * ldx) * 2);
  memcpy(pc, pa, (size_t)na * 4);
  int64_t atc = at, nc = na;
  for (int i = 0; i < 3; i++, at += t2[i - 1]) {
    fk_io io = { .rows = t2[i], .x = xa + at * ldx, .ldx = ldx };
    run(a, t2[i] == 1 ? FK_PROG_BLOCK_DECODE : FK_PROG_BLOCK_PREFILL, &io);
    fk_io ioc = { .rows = t2[i], .x = xc + atc * ldx, .ldx = ldx };
    run(c, t2[i] == 1 ? FK_PROG_BLOCK_DECODE : FK_PROG_BLOCK_PREFILL, &ioc);
    atc += t2[i];
  }
  {
    fk_io io = { .rows = 4, .feat = feat + 3 * 24, .ldfeat = 24, .pcm = pa + na, .pcm_cap = PCM - na };
    run(a, FK_PROG_TAIL, &io);
    na += io.pcm_count;
    fk_io ioc = { .rows = 4, .feat = feat + 3 * 24, .ldfeat = 24, .pcm = pc + nc, .pcm_cap = PCM - nc };
    run(c, FK_PROG_TAIL, &ioc);
    nc += ioc.pcm_count;
  }
  cr_assert_eq(at, ROWS);
  /* B: one prefill of all rows, one tail call of all frames */
  fk_io iob = { .rows = ROWS, .x = xb, .ldx = ldx };
  run(b, FK_PROG_BLOCK_PREFILL, &iob);
  fk_io iobt = { .rows = FRAMES, .feat = feat, .ldfeat = 24, .pcm = pb, .pcm_cap = PCM };
  run(b, FK_PROG_TAIL, &iobt);
  int64_t nb = iobt.pcm_count;

  cr_assert_eq(first_diff16(xa, xb, ROWS * ldx), -1, "turns vs one call: rows differ");
  cr_assert_eq(first_diff16(xa, xc, ROWS * ldx), -1, "snapshot continuation: rows differ");
  cr_assert_eq(na, nb);
  cr_assert_eq(nc, nb);
  size_t la, lb, lc;
  unsigned char *sa = snapshot(a, &la), *sb = snapshot(b, &lb), *sc = snapshot(c, &lc);
  cr_assert(la == lb && memcmp(sa, sb, la) == 0, "turns vs one call: the states differ");
  cr_assert(la == lc && memcmp(sa, sc, la) == 0, "snapshot continuation: the states differ");
  /* and the flushes */
  fk_io fa = { .pcm = pa + na, .pcm_cap = 480 }, fb = { .pcm = pb + nb, .pcm_cap = 480 }, fc = { .pcm = pc + nc, .pcm_cap = 480 };
  run(a, FK_PROG_TAIL_FLUSH, &fa);
  run(b, FK_PROG_TAIL_FLUSH, &fb);
  run(c, FK_PROG_TAIL_FLUSH, &fc);
  na += fa.pcm_count;
  nb += fb.pcm_count;
  cr_assert_eq(na, FRAMES * 320, "a 7-frame stream is 7 x 320 samples");
  cr_assert(memcmp(pa, pb, (size_t)na * 4) == 0, "turns vs one call: the PCM differs");
  cr_assert(memcmp(pa, pc, (size_t)na * 4) == 0, "snapshot continuation: the PCM differs");
  cr_log_info("16 rows in 7 calls over 2 turns == 1 call == snapshot continuation; 7 frames in 3 calls == 1 call");
  free(after1);
  free(sa);
  free(sb);
  free(sc);
  fk_plan_destroy(a);
  fk_plan_destroy(b);
  fk_plan_destroy(c);
  free(xa);
  free(xb);
  free(xc);
  fkp_model_free(&m);
}

/* ---- weights ------------------------------------------------------------------------------------ */

/* ---- plans sharing one team (desc.team_of) ---------------------------------------------------- */

/* Session calls c0..c1-1 of one block plan on x (the rows of the session laid out as ref_session
 * lays them); at the end of the session the carry goes after the rows. */
static void session_part(fk_plan *p, uint16_t *x, int64_t ldx, int c0, int c1, int64_t h) {
  int64_t at = 0;
  for (int c = 0; c < c0; c++) at += SESSION[c];
  for (int c = c0; c < c1; c++) {
    fk_io io = { .rows = SESSION[c], .x = x + at * ldx, .ldx = ldx };
    run(p, SESSION[c] == 1 && c % 2 ? FK_PROG_BLOCK_DECODE : FK_PROG_BLOCK_PREFILL, &io);
    at += SESSION[c];
  }
  if (c1 == NCALLS) {
    size_t len;
    unsigned char *snap = snapshot(p, &len);
    memcpy(x + SESSION_ROWS * ldx, snap + SNAP_HEADER, (size_t)(2 * h) * 2);
    free(snap);
  }
}

/* Two layers, two plans, one team: their calls interleaved, the team's first plan destroyed
 * before the second has finished; each equals its own contract composition. */
Test(plan, plans_share_one_team, .timeout = 300) {
  const int64_t h = 202, ldx = h + 6;
  fkp_model ma, mb;
  cr_assert_eq(fkp_model_make(&ma, h, 0, 0, 71), 0);
  cr_assert_eq(fkp_model_make(&mb, h, 0, 1, 72), 0);
  uint16_t *wa = session_input(h, ldx, 5), *wb = session_input(h, ldx, 6);
  ref_session(&ma, wa, ldx, P_NONE);
  ref_session(&mb, wb, ldx, P_NONE);
  for (int t = 1; t <= 3; t++) {
    uint16_t *xa = session_input(h, ldx, 5), *xb = session_input(h, ldx, 6);
    fk_plan_desc da = fkp_desc(&ma, FK_PROGRAMS_BLOCK, t, MAXR, 0);
    fk_plan *pa = make_plan(&da);
    fk_plan_desc db = fkp_desc(&mb, FK_PROGRAMS_BLOCK, t, MAXR, 0);
    db.team_of = pa;
    fk_plan *pb = make_plan(&db);
    session_part(pa, xa, ldx, 0, 3, h);
    session_part(pb, xb, ldx, 0, 4, h);
    session_part(pa, xa, ldx, 3, NCALLS, h);
    fk_plan_destroy(pa); /* the team lives on with pb */
    session_part(pb, xb, ldx, 4, NCALLS, h);
    fk_plan_destroy(pb);
    char where[160];
    long bad = session_mismatches(xa, wa, h, ldx, where, sizeof where);
    cr_assert_eq(bad, 0, "%d threads, plan A: %ld mismatches, first at %s", t, bad, where);
    bad = session_mismatches(xb, wb, h, ldx, where, sizeof where);
    cr_assert_eq(bad, 0, "%d threads, plan B (on A's team): %ld mismatches, first at %s", t, bad, where);
    free(xa);
    free(xb);
  }
  cr_log_info("two plans on one team, calls interleaved, the owner destroyed first: both == their contract "
              "compositions, threads 1..3");
  /* a team of 2 cannot run a plan of 3 */
  fk_plan_desc da = fkp_desc(&ma, FK_PROGRAMS_BLOCK, 2, MAXR, 0);
  fk_plan *pa = make_plan(&da), *pb = (fk_plan *)&mb;
  fk_plan_desc db = fkp_desc(&mb, FK_PROGRAMS_BLOCK, 3, MAXR, 0);
  db.team_of = pa;
  fk_error err;
  fk_status s = fk_plan_create(&db, &pb, &err);
  cr_assert_eq(s, FK_EINVAL, "team size mismatch: %s", fk_strerror(s));
  cr_assert_null(pb);
  cr_assert(strstr(err.message, "desc.threads") && strstr(err.message, "desc.team_of"), "%s", err.message);
  cr_log_info("mismatched team size -> %s", err.message);
  fk_plan_destroy(pa);
  free(wa);
  free(wb);
  fkp_model_free(&ma);
  fkp_model_free(&mb);
}

/* Placement (FK_PLAN_NO_PIN in flashkern.h): members 1.. bound to distinct CPUs, none to the
 * caller's, member 0 never; FK_PLAN_NO_PIN binds nobody. */
Test(plan, members_have_their_own_cpus) {
  fkp_model m;
  cr_assert_eq(fkp_model_make(&m, 64, 0, 0, 81), 0);
  cpu_set_t allowed;
  cr_assert_eq(sched_getaffinity(0, sizeof allowed, &allowed), 0);
  int ncpu = CPU_COUNT(&allowed);
  for (int t = 1; t <= 4; t++)
    for (int nopin = 0; nopin < 2; nopin++) {
      fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK, t, 4, 0);
      d.flags = nopin ? FK_PLAN_NO_PIN : 0;
      int here = sched_getcpu();
      fk_plan *p = make_plan(&d);
      cr_assert_eq(fk_plan_member_cpu(p, 0), -1, "member 0 is the caller: never bound");
      int seen = 0;
      for (int k = 1; k < t; k++) {
        int c = fk_plan_member_cpu(p, k);
        if (nopin || t > ncpu) {
          cr_assert_eq(c, -1, "%d threads%s on %d CPUs: member %d bound to %d", t, nopin ? ", NO_PIN" : "", ncpu, k, c);
          continue;
        }
        cr_assert(c >= 0 && CPU_ISSET((size_t)c, &allowed), "%d threads: member %d bound to %d", t, k, c);
        cr_assert(!(seen >> c & 1), "%d threads: CPU %d bound twice", t, c);
        cr_assert_neq(c, here, "%d threads: member %d bound to the caller's CPU %d", t, k, c);
        seen |= 1 << c;
      }
      cr_assert_eq(fk_plan_member_cpu(p, t), -1);
      fk_plan_destroy(p);
    }
  cr_log_info("placement on %d allowed CPUs: members bound to distinct CPUs when they fit, never with NO_PIN", ncpu);
  if (ncpu >= 2) { /* the caller moves onto member 1's CPU: member 1 moves to the CPU it left */
    fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK, 2, 4, 0);
    fk_plan *p = make_plan(&d);
    int c1 = fk_plan_member_cpu(p, 1), left = sched_getcpu();
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET((size_t)c1, &one);
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
    uint16_t x[64] = { 0 };
    fk_io io = { .rows = 1, .x = x, .ldx = 64 };
    run(p, FK_PROG_BLOCK_DECODE, &io);
    int now_at = sched_getcpu(), c1b = fk_plan_member_cpu(p, 1);
    cr_assert_eq(sched_setaffinity(0, sizeof allowed, &allowed), 0);
    cr_assert_eq(now_at, c1);
    cr_assert_eq(c1b, left, "member 1 on %d, the caller left %d for %d", c1b, left, now_at);
    cr_log_info("caller moved %d -> %d (member 1's CPU): member 1 rebound to %d", left, now_at, c1b);
    fk_plan_destroy(p);
  }
  fkp_model_free(&m);
}

Test(plan, weights_are_not_read_after_readiness, .timeout = 120) {
  const int64_t h = 130, ldx = 130;
  fkp_model m, pristine;
  cr_assert_eq(fkp_model_make(&m, h, 0, 1, 51), 0);
  cr_assert_eq(fkp_model_make(&pristine, h, 0, 1, 51), 0);
  fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK, 2, MAXR, 0);
  fk_plan *p = make_plan(&d);
  /* the host frees or reuses its weights after readiness: here, NaN everywhere */
  memset(m.norm, 0xff, (size_t)h * 2);
  memset(m.in_proj, 0xff, (size_t)(3 * h * h) * 2);
  memset(m.conv, 0xff, (size_t)(3 * h) * 2);
  memset(m.conv_bias, 0xff, (size_t)h * 2);
  memset(m.out_proj, 0xff, (size_t)(h * h) * 2);
  uint16_t *x = session_input(h, ldx, 6), *want = session_input(h, ldx, 6);
  fk_io io = { .rows = 5, .x = x, .ldx = ldx };
  run(p, FK_PROG_BLOCK_PREFILL, &io);
  fkp_ref r;
  cr_assert_eq(fkp_ref_init(&r, &pristine), 0);
  fkp_ref_block(&r, want, 5, ldx);
  cr_assert_eq(first_diff16(x, want, (size_t)(5 * ldx)), -1, "the plan read the host's weights after readiness");
  fkp_ref_free(&r);
  fk_plan_destroy(p);
  free(x);
  free(want);
  fkp_model_free(&m);
  fkp_model_free(&pristine);
}

/* ---- refusals ----------------------------------------------------------------------------------- */

typedef struct bad_desc {
  const char *what, *named;
  void (*spoil)(fk_plan_desc *);
  fk_status status;
} bad_desc;

static void no_programs(fk_plan_desc *d) { d->programs = 0; }
static void odd_programs(fk_plan_desc *d) { d->programs |= 1u << 7; }
static void threads_0(fk_plan_desc *d) { d->threads = 0; }
static void threads_65(fk_plan_desc *d) { d->threads = 65; }
static void tier_7(fk_plan_desc *d) { d->tier = (fk_tier)7; }
static void flags_odd(fk_plan_desc *d) { d->flags = 1u << 9; }
static void hidden_0(fk_plan_desc *d) { d->hidden = 0; }
static void hidden_huge(fk_plan_desc *d) { d->hidden = 1 << 20; }
static void max_rows_0(fk_plan_desc *d) { d->max_rows = 0; }
static void eps_0(fk_plan_desc *d) { d->norm_eps = 0.0f; }
static void eps_nan(fk_plan_desc *d) { d->norm_eps = NAN; }
static void no_norm(fk_plan_desc *d) { d->block.norm = NULL; }
static void no_in_proj(fk_plan_desc *d) { d->block.in_proj = NULL; }
static void no_conv(fk_plan_desc *d) { d->block.conv = NULL; }
static void no_out_proj(fk_plan_desc *d) { d->block.out_proj = NULL; }
static void tail_in_0(fk_plan_desc *d) { d->tail_in = 0; }
static void max_frames_0(fk_plan_desc *d) { d->max_frames = -3; }
static void clip_0(fk_plan_desc *d) { d->clip = 0.0f; }
static void clip_nan(fk_plan_desc *d) { d->clip = NAN; }
static void no_lin(fk_plan_desc *d) { d->tail.lin = NULL; }
static void no_lin_bias(fk_plan_desc *d) { d->tail.bias = NULL; }
static void forbid_all(fk_plan_desc *d) { d->forbid_features = ~(uint64_t)0; }
static void forbid_fma(fk_plan_desc *d) { d->forbid_features = FK_CPU_FMA | FK_CPU_AVX512F | FK_CPU_ASIMD; }
static void fast_without_bf16(fk_plan_desc *d) {
  d->tier = FK_TIER_FAST;
  d->forbid_features = FK_CPU_AVX512BF16 | FK_CPU_BF16;
}

Test(plan, refusals_at_readiness_name_the_field) {
  static const bad_desc cases[] = {
    { "no programs", "desc.programs", no_programs, FK_EINVAL },
    { "unknown program bit", "desc.programs", odd_programs, FK_EINVAL },
    { "team size 0", "desc.threads", threads_0, FK_EINVAL },
    { "team size 65", "desc.threads", threads_65, FK_EINVAL },
    { "tier 7", "desc.tier", tier_7, FK_EINVAL },
    { "unknown flag", "desc.flags", flags_odd, FK_EINVAL },
    { "hidden 0", "desc.hidden", hidden_0, FK_EINVAL },
    { "hidden 2^20", "desc.hidden", hidden_huge, FK_EINVAL },
    { "max_rows 0", "desc.max_rows", max_rows_0, FK_EINVAL },
    { "eps 0", "desc.norm_eps", eps_0, FK_EINVAL },
    { "eps NaN", "desc.norm_eps", eps_nan, FK_EINVAL },
    { "norm NULL", "desc.block.norm", no_norm, FK_EINVAL },
    { "in_proj NULL", "desc.block.in_proj", no_in_proj, FK_EINVAL },
    { "conv NULL", "desc.block.conv", no_conv, FK_EINVAL },
    { "out_proj NULL", "desc.block.out_proj", no_out_proj, FK_EINVAL },
    { "tail_in 0", "desc.tail_in", tail_in_0, FK_EINVAL },
    { "max_frames -3", "desc.max_frames", max_frames_0, FK_EINVAL },
    { "clip 0", "desc.clip", clip_0, FK_EINVAL },
    { "clip NaN", "desc.clip", clip_nan, FK_EINVAL },
    { "lin NULL", "desc.tail.lin", no_lin, FK_EINVAL },
    { "lin bias NULL", "desc.tail.bias", no_lin_bias, FK_EINVAL },
    { "every feature forbidden", "phase rmsnorm", forbid_all, FK_EUNSUPPORTED },
#if defined(__x86_64__)
    { "fma forbidden", "fma", forbid_fma, FK_EUNSUPPORTED },
#endif
    { "fast tier without bf16 dot", "phase in_proj", fast_without_bf16, FK_EUNSUPPORTED },
  };
  fkp_model m;
  cr_assert_eq(fkp_model_make(&m, 64, 16, 0, 61), 0);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, 2, 4, 4);
    cases[i].spoil(&d);
    fk_plan *p = (fk_plan *)&m; /* must be overwritten with NULL */
    fk_error err = { 0 };
    fk_status s = fk_plan_create(&d, &p, &err);
    cr_assert_eq(s, cases[i].status, "%s: status %s (%s), want %s", cases[i].what, fk_strerror(s), err.message,
                 fk_strerror(cases[i].status));
    cr_assert_null(p, "%s: *out not NULL", cases[i].what);
    cr_assert(strstr(err.message, cases[i].named) != NULL, "%s: the message does not name %s: %s", cases[i].what,
              cases[i].named, err.message);
    cr_log_info("%-28s -> %s: %s", cases[i].what, fk_strerror(s), err.message);
  }
  fk_plan *p = NULL;
  fk_error err;
  cr_assert_eq(fk_plan_create(NULL, &p, &err), FK_EINVAL);
  cr_assert_eq(fk_plan_create(&(fk_plan_desc){ 0 }, NULL, &err), FK_EINVAL);
  fkp_model_free(&m);
}

Test(plan, refusals_at_run_write_nothing, .timeout = 120) {
  const int64_t h = 64, ldx = 70, tail_in = 16;
  fkp_model m;
  cr_assert_eq(fkp_model_make(&m, h, tail_in, 0, 71), 0);
  fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, 2, 4, 3);
  fk_plan *p = make_plan(&d);
  /* some state first, so "unchanged" means something */
  uint16_t x[8 * 70], x0[8 * 70];
  fkp_fill_bf16(x, 8 * 70, 2.0f, 1);
  fk_io io = { .rows = 3, .x = x, .ldx = ldx };
  run(p, FK_PROG_BLOCK_PREFILL, &io);
  float feat[4 * 16], pcm[2000];
  fkp_fill_f32(feat, 4 * 16, 1.0f, 2);
  fk_io tio = { .rows = 1, .feat = feat, .ldfeat = 16, .pcm = pcm, .pcm_cap = 2000 };
  run(p, FK_PROG_TAIL, &tio); /* one frame: a flush is refused now */
  size_t len;
  unsigned char *before = snapshot(p, &len);
  memcpy(x0, x, sizeof x);
  for (int i = 0; i < 2000; i++) pcm[i] = -7.0f;

  struct {
    const char *what, *named;
    fk_program prog;
    fk_io io;
    fk_status status;
  } cases[] = {
    { "rows 0", "io.rows", FK_PROG_BLOCK_PREFILL, { .rows = 0, .x = x, .ldx = ldx }, FK_EINVAL },
    { "rows > max_rows", "io.rows", FK_PROG_BLOCK_PREFILL, { .rows = 5, .x = x, .ldx = ldx }, FK_EINVAL },
    { "decode of 2 rows", "io.rows", FK_PROG_BLOCK_DECODE, { .rows = 2, .x = x, .ldx = ldx }, FK_EINVAL },
    { "x NULL", "io.x", FK_PROG_BLOCK_DECODE, { .rows = 1, .x = NULL, .ldx = ldx }, FK_EINVAL },
    { "ldx < hidden", "io.ldx", FK_PROG_BLOCK_PREFILL, { .rows = 2, .x = x, .ldx = 63 }, FK_EINVAL },
    { "frames > max_frames", "io.rows", FK_PROG_TAIL, { .rows = 4, .feat = feat, .ldfeat = 16, .pcm = pcm, .pcm_cap = 2000 }, FK_EINVAL },
    { "feat NULL", "io.feat", FK_PROG_TAIL, { .rows = 1, .ldfeat = 16, .pcm = pcm, .pcm_cap = 2000 }, FK_EINVAL },
    { "ldfeat < tail_in", "io.ldfeat", FK_PROG_TAIL, { .rows = 1, .feat = feat, .ldfeat = 15, .pcm = pcm, .pcm_cap = 2000 }, FK_EINVAL },
    { "pcm NULL", "io.pcm", FK_PROG_TAIL, { .rows = 1, .feat = feat, .ldfeat = 16, .pcm_cap = 2000 }, FK_EINVAL },
    { "pcm_cap short", "io.pcm_cap", FK_PROG_TAIL, { .rows = 2, .feat = feat, .ldfeat = 16, .pcm = pcm, .pcm_cap = 479 }, FK_EINVAL },
    { "flush after 1 frame", "1 frame", FK_PROG_TAIL_FLUSH, { .pcm = pcm, .pcm_cap = 2000 }, FK_ESTATE },
    { "program 9", "program", (fk_program)9, { .rows = 1, .x = x, .ldx = ldx }, FK_EINVAL },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    fk_error err = { 0 };
    cases[i].io.pcm_count = -99;
    fk_status s = fk_run(p, cases[i].prog, &cases[i].io, &err);
    cr_assert_eq(s, cases[i].status, "%s: %s (%s)", cases[i].what, fk_strerror(s), err.message);
    cr_assert(strstr(err.message, cases[i].named) != NULL, "%s: the message does not name %s: %s", cases[i].what,
              cases[i].named, err.message);
    cr_assert_eq(cases[i].io.pcm_count, -99, "%s: pcm_count written", cases[i].what);
    cr_assert(memcmp(x, x0, sizeof x) == 0, "%s: x written", cases[i].what);
    for (int k = 0; k < 2000; k++) cr_assert(pcm[k] == -7.0f, "%s: pcm[%d] written", cases[i].what, k);
    size_t l2;
    unsigned char *after = snapshot(p, &l2);
    cr_assert(l2 == len && memcmp(after, before, len) == 0, "%s: the state changed", cases[i].what);
    free(after);
    cr_log_info("%-22s -> %s: %s", cases[i].what, fk_strerror(s), err.message);
  }
  fk_error err;
  cr_assert_eq(fk_run(NULL, FK_PROG_BLOCK_DECODE, &io, &err), FK_EINVAL);
  cr_assert_eq(fk_run(p, FK_PROG_BLOCK_DECODE, NULL, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "io") != NULL);
  /* a plan made for the tail only refuses the block */
  fk_plan_desc dt = fkp_desc(&m, FK_PROGRAMS_TAIL, 1, 0, 2);
  fk_plan *pt = make_plan(&dt);
  io.rows = 1;
  cr_assert_eq(fk_run(pt, FK_PROG_BLOCK_DECODE, &io, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "desc.programs") != NULL, "%s", err.message);
  cr_assert_eq(fk_program_phases(pt, FK_PROG_BLOCK_DECODE), 0);
  fk_plan_destroy(pt);
  free(before);
  fk_plan_destroy(p);
  fkp_model_free(&m);
}

Test(plan, refusals_of_snapshots_keep_the_state) {
  fkp_model m;
  cr_assert_eq(fkp_model_make(&m, 64, 16, 0, 81), 0);
  fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, 1, 4, 3);
  fk_plan *p = make_plan(&d);
  uint16_t x[2 * 64];
  fkp_fill_bf16(x, 128, 2.0f, 3);
  fk_io io = { .rows = 2, .x = x, .ldx = 64 };
  run(p, FK_PROG_BLOCK_PREFILL, &io);
  size_t len;
  unsigned char *good = snapshot(p, &len), *bad = malloc(len);
  fk_state_reset(p);
  cr_assert_eq(fk_state_query(p).tokens, 0);
  unsigned char *reset = snapshot(p, &len);
  fk_error err;
  /* magic, version, checksum (one carry byte), length */
  struct {
    const char *what, *named;
    size_t at;
    unsigned char xor_;
    size_t len;
  } cases[] = {
    { "magic", "magic", 0, 0x20, 0 }, { "version", "version", 8, 1, 0 },
    { "a carry byte", "checksum", SNAP_HEADER + 5, 0x10, 0 }, { "short", "len", 0, 0, 1 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memcpy(bad, good, len);
    bad[cases[i].at] ^= cases[i].xor_;
    cr_assert_eq(fk_state_load(p, bad, len - cases[i].len, &err), FK_ESTATE, "%s", cases[i].what);
    cr_assert(strstr(err.message, cases[i].named) != NULL, "%s: %s", cases[i].what, err.message);
    size_t l2;
    unsigned char *now = snapshot(p, &l2);
    cr_assert(memcmp(now, reset, len) == 0, "%s: the state changed", cases[i].what);
    free(now);
    cr_log_info("snapshot with bad %-12s -> %s", cases[i].what, err.message);
  }
  /* another plan's shapes */
  fkp_model m2;
  cr_assert_eq(fkp_model_make(&m2, 32, 16, 0, 82), 0);
  fk_plan_desc d2 = fkp_desc(&m2, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, 1, 4, 3);
  fk_plan *q = make_plan(&d2);
  size_t lq;
  unsigned char *other = snapshot(q, &lq);
  cr_assert_eq(fk_state_load(p, other, lq, &err), FK_ESTATE);
  cr_assert(strstr(err.message, "hidden") != NULL, "%s", err.message);
  cr_assert_eq(fk_state_save(p, good, len - 1, &err), FK_EINVAL);
  cr_assert_eq(fk_state_load(p, good, len, &err), FK_OK, "%s", err.message);
  cr_assert_eq(fk_state_query(p).tokens, 2);
  free(other);
  fk_plan_destroy(q);
  fkp_model_free(&m2);
  free(good);
  free(bad);
  free(reset);
  fk_plan_destroy(p);
  fkp_model_free(&m);
}

/* ---- introspection and timing ----------------------------------------------------------------- */

Test(plan, phases_report_their_stamps_and_times) {
  fkp_model m;
  cr_assert_eq(fkp_model_make(&m, 64, 16, 1, 91), 0);
  fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, 2, 4, 3);
  d.flags = FK_PLAN_TIMING;
  fk_plan *p = make_plan(&d);
  cr_assert_eq(fk_plan_threads(p), 2);
  cr_assert_eq(fk_program_phases(p, FK_PROG_BLOCK_DECODE), 4);
  cr_assert_eq(fk_program_phases(p, FK_PROG_TAIL), 2);
  cr_assert_eq(fk_program_phases(p, FK_PROG_TAIL_FLUSH), 1);
  uint16_t x[64];
  fkp_fill_bf16(x, 64, 1.0f, 1);
  fk_io io = { .rows = 1, .x = x, .ldx = 64 };
  for (int i = 0; i < 3; i++) run(p, FK_PROG_BLOCK_DECODE, &io);
  static const char *const names[] = { "rmsnorm", "in_proj", "conv", "out_proj" };
  static const char *const forms[] = { "fk_rmsnorm_bf16_wide__", "fk_gemv_bf16_rne_packed__",
                                       "fk_shortconv_bf16_bias_wide__", "fk_gemv_bf16_rne_add_packed__" };
  for (int i = 0; i < 4; i++) {
    fk_phase_info info;
    fk_error err;
    cr_assert_eq(fk_phase_query(p, FK_PROG_BLOCK_DECODE, i, &info, &err), FK_OK, "%s", err.message);
    cr_assert_str_eq(info.name, names[i]);
    cr_assert(strncmp(info.symbol, forms[i], strlen(forms[i])) == 0, "%s", info.symbol);
    cr_assert_eq(info.runs, 3);
    cr_assert_gt(info.ns, 0);
  }
  fk_phase_info info;
  fk_error err;
  cr_assert_eq(fk_phase_query(p, FK_PROG_BLOCK_DECODE, 4, &info, &err), FK_EINVAL);
  fk_plan_timing_reset(p);
  cr_assert_eq(fk_phase_query(p, FK_PROG_BLOCK_DECODE, 0, &info, &err), FK_OK);
  cr_assert_eq(info.runs, 0);
  cr_assert_str_eq(fk_program_name(FK_PROG_TAIL_FLUSH), "tail_flush");
  fk_plan_destroy(p);
  fkp_model_free(&m);
}

/* ---- the same scenario on AArch64 -------------------------------------------------------------- */

static int capture(const char *cmd, char *out, size_t len) {
  FILE *f = popen(cmd, "r");
  if (!f) return -1;
  size_t n = fread(out, 1, len - 1, f);
  out[n] = 0;
  return pclose(f);
}

Test(plan, same_results_on_aarch64, .timeout = 600) {
  char host[512], cmd[1024], arm[512];
  for (int t = 1; t <= 3; t += 2) {
    snprintf(cmd, sizeof cmd, "%s %d", FKT_SCENARIO_HOST, t);
    cr_assert_eq(capture(cmd, host, sizeof host), 0, "%s failed", cmd);
    for (int c = 0; c < 2; c++) {
      const char *cpu = c ? "neoverse-n1" : "max";
      snprintf(cmd, sizeof cmd, "%s -cpu %s %s %d", FKH_QEMU, cpu, FKT_SCENARIO_AARCH64, t);
      cr_assert_eq(capture(cmd, arm, sizeof arm), 0, "%s failed", cmd);
      cr_assert_str_eq(arm, host, "aarch64 (-cpu %s, %d threads):\n%s\nhost:\n%s", cpu, t, arm, host);
    }
    cr_log_info("%d threads: aarch64 (qemu -cpu max, neoverse-n1) == host:\n%s", t, host);
  }
}

/* ---- the floating-point environment at readiness ----------------------------------------------- */

/* Runs `fk_plan_scenario fpenv` by cmd; every bit in must[] refused, every other line refused or
 * unsettable (the register keeps the bit at its default: qemu implements no FP traps and, in the
 * version here, no FEAT_AFP), the default accepted. */
static void fpenv_lines(const char *cmd, const char *const *must, int nmust) {
  char out[2048];
  cr_assert_eq(capture(cmd, out, sizeof out), 0, "%s failed", cmd);
  cr_assert(strstr(out, "default accepted\n"), "%s: the default environment was not accepted:\n%s", cmd, out);
  cr_assert_null(strstr(out, "ACCEPTED"), "%s: a non-default bit was accepted:\n%s", cmd, out);
  for (int i = 0; i < nmust; i++) {
    char line[32];
    snprintf(line, sizeof line, "%s refused\n", must[i]);
    cr_assert(strstr(out, line), "%s: %s was not refused:\n%s", cmd, must[i], out);
  }
  cr_log_info("%s:\n%s", cmd, out);
}

Test(plan, fpenv_refused, .timeout = 300) {
  static const char *const x86[] = { "FTZ", "DAZ", "RC", "IM", "DM", "ZM", "OM", "UM", "PM" };
  static const char *const arm[] = { "FZ", "DN", "RMode" };
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s fpenv", FKT_SCENARIO_HOST);
  fpenv_lines(cmd, x86, (int)(sizeof x86 / sizeof x86[0]));
  for (int c = 0; c < 2; c++) {
    snprintf(cmd, sizeof cmd, "%s -cpu %s %s fpenv", FKH_QEMU, c ? "neoverse-n1" : "max", FKT_SCENARIO_AARCH64);
    fpenv_lines(cmd, arm, (int)(sizeof arm / sizeof arm[0]));
  }
  /* the message a host reads: the register, its value, the bit and the default */
  fkp_model m;
  cr_assert_eq(fkp_model_make(&m, 64, 72, 1, 2026), 0);
  fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK, 1, 4, 0);
  const unsigned saved = __builtin_ia32_stmxcsr();
  __builtin_ia32_ldmxcsr(saved | 1u << 15);
  fk_plan *p = (fk_plan *)&m;
  fk_error err;
  fk_status s = fk_plan_create(&d, &p, &err);
  __builtin_ia32_ldmxcsr(saved);
  cr_assert_eq(s, FK_EUNSUPPORTED, "%s", fk_strerror(s));
  cr_assert_null(p, "a refused plan left *out set");
  unsigned v = 0; /* the register as read: FTZ on, the sticky flags (low 6 bits) as they were */
  cr_assert(sscanf(err.message, "fk_plan_create: this thread's MXCSR = 0x%x: FTZ is set", &v) == 1 &&
            (v & ~0x3fu) == 0x9f80 && strstr(err.message, ": FTZ is set (") &&
            strstr(err.message, "; the leaves need the Linux default MXCSR = 0x1f80"),
            "%s", err.message);
  fkp_model_free(&m);
}
