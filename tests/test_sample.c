/* tests/test_sample.c: sampler stamps (templates/sample.lua), exact tier.
 *   exact:  every stamp == contract model, bit for bit (the int32 token), over >= 200 random
 *           shapes and every edge case (every length 1..48, n up to 2^20, ties at the maximum,
 *           +0 / -0, NaN payloads, infinities), on x86_64 and on AArch64 (qemu -cpu max,
 *           -cpu neoverse-n1); AArch64 stamps == x86_64 stamps; AArch64 contract == host one.
 *   rule:   on every stamp, tok is the argmax by numpy.argmax's rule, checked directly (not
 *           through the contract model): the lowest NaN index if any, else the lowest index
 *           of a value no other element exceeds.
 *   fixtures: every stamp's token == torch.argmax's on seeded logits (LFM2's vocabulary 65536,
 *           the audio codebook 2049, ties, NaNs, signed zeros, infinities), fixtures/sample/;
 *           topk: the token == transformers' warpers + torch.softmax + the float64 inverse CDF at
 *           the recorded u (or a neighbour within the sample_draw bound), the state committed.
 * topk (sample_topk): the same exact pairs over its cases (n 1, 15, 16, 17, 1000, 65536, 2^20;
 * k 0, 1, 2, 50, n, > n, < 0; T 0.5, 1, 1.7; ties at the k-th, all equal, -inf, NaN, +inf,
 * +-0, subnormals, huge, counters wrapping), and the topk_* tests below.
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract/contract.h"
#include "suite.h"


static fkh_target rule_targets[16];
ParameterizedTestParameters(sample, argmax_rule) {
  int n = fkt_fixture_targets("sample", "exact", rule_targets, 16);
  return cr_make_param_array(fkh_target, rule_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, sample, argmax_rule, .timeout = 300) {
  fkt_need(t);
  fkh_call *c;
  int n = fkt_sample_cases("sample_argmax", &c);
  char err[256];
  cr_assert(fkh_run(t, c, n, err, sizeof err) == 0, "%s", err);
  int nan_cases = 0, tie_cases = 0;
  for (int k = 0; k < n; k++) {
    const int64_t len = fkh_i64_of(&c[k], "n");
    const float *x = fkh_buf_of(&c[k], "x");
    const int32_t tok = ((const int32_t *)fkh_buf_of(&c[k], "tok"))[0];
    cr_assert(tok >= 0 && tok < len, "%s %s: tok %d outside [0, %lld)", t->label, c[k].name, tok, (long long)len);
    int64_t first_nan = -1, ties = 0;
    for (int64_t i = 0; i < len && first_nan < 0; i++)
      if (isnan(x[i])) first_nan = i;
    if (first_nan >= 0) {
      nan_cases++;
      cr_assert(tok == first_nan, "%s %s: tok %d, first NaN at %lld", t->label, c[k].name, tok, (long long)first_nan);
      continue;
    }
    for (int64_t i = 0; i < len; i++) {
      cr_assert(!(x[i] > x[tok]), "%s %s: x[%lld] > x[tok %d]", t->label, c[k].name, (long long)i, tok);
      if (i < tok) cr_assert(x[i] != x[tok], "%s %s: x[%lld] == x[tok %d], a lower index", t->label, c[k].name, (long long)i, tok);
      ties += x[i] == x[tok];
    }
    tie_cases += ties > 1;
  }
  cr_assert(nan_cases >= 50 && tie_cases >= 50, "%s: only %d NaN cases, %d tie cases", t->label, nan_cases, tie_cases);
  cr_log_info("%s: %d cases: argmax rule holds (%d with NaNs, %d with ties at the maximum)", t->label, n, nan_cases,
              tie_cases);
  fkt_free_cases(c, n);
}

/* ---------------------------------------------------------------- topk ----------------- */
/* topk (templates/sample.lua): bit-exact stamp vs contract comes from sample::exact above (every
 * case, every target pair). Here, on every stamp and the contract model:
 *   topk_rule:        the token is checked against the rule directly (in double, not through
 *                     the contract): it is kept (s_tok >= the k-th largest s, NaN as -inf), has a
 *                     nonzero weight, and state = { seed, counter + 1 };
 *   topk_consecutive: draw t + 1 made from draw t's committed state == a fresh draw at counter
 *                     + 1 (four draws chained), token and state;
 *   topk_chi_square:  20000 draws (counters 0..19999) of two small distributions, chi-square
 *                     against the float64 softmax within the 0.001 critical value;
 *   topk_perturb:     the gate sees a skipped commit, ties dropped (s <= kth), x * (1 / T), and
 *                     the cumulative order reversed. */

static fkh_target topk_targets[16];
ParameterizedTestParameters(sample, topk_rule) {
  int n = fkt_fixture_targets("sample", "exact", topk_targets, 16);
  return cr_make_param_array(fkh_target, topk_targets, (size_t)n);
}

static double topk_s(const fkh_call *c, int64_t i) {
  const float *x = (const float *)c->v[fkh_field_index(c, "x")].buf.data;
  float s = x[i] / c->v[fkh_field_index(c, "temperature")].f32;
  return isnan(s) ? -INFINITY : (double)s;
}

static int cmp_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x > y ? -1 : x < y ? 1 : 0;
}

ParameterizedTest(fkh_target *t, sample, topk_rule, .timeout = 600) {
  fkt_need(t);
  fkh_call *c;
  int n = fkt_sample_cases("sample_topk", &c);
  uint64_t st0[1024][2];
  cr_assert(n <= 1024);
  for (int k = 0; k < n; k++) memcpy(st0[k], fkh_buf_of(&c[k], "state"), 16);
  char err[256];
  cr_assert(fkh_run(t, c, n, err, sizeof err) == 0, "%s", err);
  int trimmed = 0;
  for (int q = 0; q < n; q++) {
    const int64_t len = fkh_i64_of(&c[q], "n"), tk = fkh_i64_of(&c[q], "top_k");
    const int32_t tok = ((const int32_t *)fkh_buf_of(&c[q], "tok"))[0];
    const uint64_t *st = fkh_buf_of(&c[q], "state");
    cr_assert(tok >= 0 && tok < len, "%s %s: tok %d outside [0, %lld)", t->label, c[q].name, tok, (long long)len);
    cr_assert(st[0] == st0[q][0] && st[1] == st0[q][1] + 1, "%s %s: state not { seed, counter + 1 }", t->label,
              c[q].name);
    double *s = malloc((size_t)len * sizeof *s);
    double mx = -INFINITY;
    int64_t pinf = 0;
    for (int64_t i = 0; i < len; i++) {
      s[i] = topk_s(&c[q], i);
      mx = s[i] > mx ? s[i] : mx;
      pinf += s[i] == INFINITY;
    }
    const double stok = s[tok];
    const int64_t k = tk <= 0 || tk >= len ? len : tk;
    qsort(s, (size_t)len, sizeof *s, cmp_desc);
    const double kth = s[k - 1];
    free(s);
    cr_assert(stok >= kth, "%s %s: tok %d has s %g below the k-th %g", t->label, c[q].name, tok, stok, kth);
    /* a nonzero weight: within exp's range of the max, a +inf when there is one, or all -inf */
    if (pinf) cr_assert(stok == INFINITY, "%s %s: a finite token beside +inf logits", t->label, c[q].name);
    else if (mx > -INFINITY) cr_assert(stok - mx > -104.0, "%s %s: tok %d has weight 0", t->label, c[q].name, tok);
    trimmed += k < len;
  }
  cr_assert(trimmed >= 100, "%s: only %d cases remove tokens", t->label, trimmed);
  cr_log_info("%s: %d topk cases: token kept, weight > 0, counter committed (%d with tokens removed)", t->label, n,
              trimmed);
  fkt_free_cases(c, n);
}

ParameterizedTestParameters(sample, topk_consecutive) {
  int n = fkt_fixture_targets("sample", "exact", topk_targets, 16);
  return cr_make_param_array(fkh_target, topk_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, sample, topk_consecutive, .timeout = 600) {
  fkt_need(t);
  enum { STEPS = 4, MAXC = 120 };
  fkh_call *all;
  int nall = fkt_sample_cases("sample_topk", &all);
  fkh_call *chain = calloc((size_t)MAXC, sizeof *chain), *fresh = calloc((size_t)MAXC * STEPS, sizeof *fresh);
  int n = 0;
  for (int q = 0; q < nall && n < MAXC; q++)
    if (fkh_i64_of(&all[q], "n") <= 5000) fkh_call_copy(&chain[n++], &all[q]);
  for (int q = 0; q < n; q++)
    for (int s = 0; s < STEPS; s++) {
      fkh_call *f = &fresh[q * STEPS + s];
      fkh_call_copy(f, &chain[q]);
      ((uint64_t *)fkh_buf_of(f, "state"))[1] += (uint64_t)s;
    }
  char err[256];
  cr_assert(fkh_run(t, fresh, n * STEPS, err, sizeof err) == 0, "%s", err);
  int differ = 0;
  for (int s = 0; s < STEPS; s++) {
    /* draw s of the chain: the same calls again, each on the state the previous draw left */
    cr_assert(fkh_run(t, chain, n, err, sizeof err) == 0, "%s", err);
    for (int q = 0; q < n; q++) {
      const fkh_call *f = &fresh[q * STEPS + s];
      const int32_t a = ((const int32_t *)fkh_buf_of(&chain[q], "tok"))[0];
      const int32_t b = ((const int32_t *)fkh_buf_of((fkh_call *)f, "tok"))[0];
      const uint64_t *sa = fkh_buf_of(&chain[q], "state"), *sb = fkh_buf_of((fkh_call *)f, "state");
      cr_assert(a == b && sa[0] == sb[0] && sa[1] == sb[1],
                "%s %s: draw %d after %d draws gives tok %d state %llu, a fresh draw at counter + %d: tok %d "
                "state %llu", t->label, chain[q].name, s, s, a, (unsigned long long)sa[1], s, b,
                (unsigned long long)sb[1]);
      if (s > 0) differ += a != ((const int32_t *)fkh_buf_of(&fresh[q * STEPS], "tok"))[0];
    }
  }
  cr_assert(differ > n / 4, "%s: consecutive draws hardly differ (%d)", t->label, differ);
  cr_log_info("%s: %d calls x %d consecutive draws == fresh draws at counter + t (%d tokens changed)", t->label, n,
              STEPS, differ);
  fkt_free_cases(chain, n);
  fkt_free_cases(fresh, n * STEPS);
  fkt_free_cases(all, nall);
}

/* Chi-square over 20000 draws. Distribution A: 8 logits, T = 1, no top-k (df 7); B: the same at
 * T = 0.7 with top_k = 3 (df 2). Critical values at alpha = 0.001: 24.322 (df 7), 13.816 (df 2).
 * Expected counts from the float64 softmax of the f32 quotients x / T over the kept tokens. */
ParameterizedTestParameters(sample, topk_chi_square) {
  int n = fkt_fixture_targets("sample", "exact", topk_targets, 16);
  return cr_make_param_array(fkh_target, topk_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, sample, topk_chi_square, .timeout = 600) {
  fkt_need(t);
  enum { DRAWS = 20000, N = 8 };
  static const float logits[N] = { 1.0f, 0.5f, 0.0f, -0.5f, 2.0f, -1.0f, 0.25f, 1.5f };
  static const struct { float temp; int64_t k; int df; double crit; } dist[] = { { 1.0f, 0, 7, 24.322 },
                                                                                  { 0.7f, 3, 2, 13.816 } };
  for (int d = 0; d < 2; d++) {
    fkh_call *c = calloc(DRAWS, sizeof *c);
    for (int i = 0; i < DRAWS; i++) {
      fkh_call_init(&c[i], "sample_topk", "chi_square");
      fkh_set_i64(&c[i], "n", N);
      fkh_set_i64(&c[i], "top_k", dist[d].k);
      fkh_set_f32(&c[i], "temperature", dist[d].temp);
      memcpy(fkh_set_buf(&c[i], "x", N), logits, sizeof logits);
      uint64_t *st = fkh_set_buf(&c[i], "state", 2);
      st[0] = 0x0123456789abcdefull, st[1] = (uint64_t)i;
      fkh_set_buf(&c[i], "tok", 1);
      fkh_set_buf(&c[i], "scratch", N);
    }
    char err[256];
    cr_assert(fkh_run(t, c, DRAWS, err, sizeof err) == 0, "%s", err);
    double p[N], z = 0, kth;
    double srt[N];
    for (int i = 0; i < N; i++) srt[i] = (double)(logits[i] / dist[d].temp);
    qsort(srt, N, sizeof *srt, cmp_desc);
    kth = dist[d].k > 0 ? srt[dist[d].k - 1] : -INFINITY;
    for (int i = 0; i < N; i++) {
      double s = (double)(logits[i] / dist[d].temp);
      p[i] = s >= kth ? exp(s - srt[0]) : 0.0;
      z += p[i];
    }
    long cnt[N] = { 0 };
    for (int i = 0; i < DRAWS; i++) cnt[((const int32_t *)fkh_buf_of(&c[i], "tok"))[0]]++;
    double chi = 0;
    for (int i = 0; i < N; i++) {
      double e = DRAWS * p[i] / z;
      if (e == 0) {
        cr_assert(cnt[i] == 0, "%s: token %d drawn %ld times with probability 0", t->label, i, cnt[i]);
        continue;
      }
      chi += ((double)cnt[i] - e) * ((double)cnt[i] - e) / e;
    }
    cr_log_info("%s: distribution %c: chi-square %.3f (df %d, critical %.3f at 0.001)", t->label, 'A' + d, chi,
                dist[d].df, dist[d].crit);
    cr_assert(chi < dist[d].crit, "%s: distribution %c: chi-square %.3f >= %.3f (df %d)", t->label, 'A' + d, chi,
              dist[d].crit, dist[d].df);
    fkt_free_cases(c, DRAWS);
  }
}

static void topk_caught(fkh_target stamp, int perturb, const char *what) {
  fkt_need(&stamp);
  char first[512];
  int bad = fkt_count_mismatches("sample_topk", fkt_sample_cases, stamp, fkh_contract(perturb), first, sizeof first);
  cr_log_info("%s on %s: %d cases differ; first: %s", what, stamp.label, bad, first);
  cr_assert(bad > 0, "%s on %s: the stamp-vs-contract gate saw nothing", what, stamp.label);
}

Test(sample, topk_perturb, .timeout = 600) {
  fkh_target host = fkh_host("avx512");
  char why[128];
  if (!fkh_available(&host, why, sizeof why)) host = fkh_host("avx2");
  topk_caught(host, FKC_SAMPLE_NO_COMMIT, "counter not committed");
  topk_caught(host, FKC_SAMPLE_TIE_LE, "ties at the k-th removed (s <= kth)");
  topk_caught(host, FKC_SAMPLE_RECIP_T, "x * (1 / T) for x / T");
  topk_caught(host, FKC_SAMPLE_CDF_REVERSED, "cumulative order reversed");
  topk_caught(fkh_remote("neon", "max"), FKC_SAMPLE_TIE_LE, "ties at the k-th removed (AArch64)");
  topk_caught(fkh_remote("neon", "neoverse-n1"), FKC_SAMPLE_NO_COMMIT, "counter not committed (AArch64)");
  /* the fixture gate (fixtures/sample, sample_draw and the state boundary) sees them too */
  static const struct { int p; const char *what; } fx[] = { { FKC_SAMPLE_NO_COMMIT, "counter not committed" },
                                                             { FKC_SAMPLE_CDF_REVERSED, "cumulative order reversed" },
                                                             { FKC_SAMPLE_TIE_LE, "ties at the k-th removed" } };
  for (int i = 0; i < 3; i++) {
    fkh_target c = fkh_contract(fx[i].p);
    int ncases, bad = fkt_fixture_gate("sample", &c, &ncases);
    cr_log_info("fixture gate, %s: %d failing boundaries over %d fixtures", fx[i].what, bad, ncases);
    cr_assert(bad > 0, "fixture gate: %s not seen", fx[i].what);
  }
}
