/* tests/test_embed.c: embedding stamps (templates/embed.lua), exact tier.
 *   exact:    every stamp == contract model, bit for bit, over >= 200 random shapes and every
 *             edge case (every tail length, ids at both ends, NaN payloads, infinities, signed
 *             zeros, subnormals, ties of the sum), on x86_64 and on AArch64 (qemu -cpu max,
 *             -cpu neoverse-n1); AArch64 stamps == x86_64 stamps; AArch64 contract == host one.
 *   fixtures: every stamp bit-exact against transformers' Lfm2Model.embed_tokens rows and
 *             liquid-audio's LFM2AudioDetokenizer embedding (FusedEmbedding mean, the x6
 *             nearest-exact interpolate), fixtures/embed/.
 *   forms:    codebook_mean_x6 == codebook_mean with each row repeated 6 times,
 *             gather_bf16_wide == gather_bf16 widened, and codebook_mean_x6_bf16 == the integer
 *             RNE of codebook_mean_x6 (the padding between rows untouched), on every case and
 *             stamp. The fixture gate runs codebook_mean_x6_bf16 on the codebook_mean_x6
 *             fixtures against the RNE of liquid-audio's f32 mean.
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include <stdint.h>
#include <string.h>

#include "contract/contract.h"
#include "suite.h"


static fkh_target form_targets[16];
ParameterizedTestParameters(embed, forms_agree) {
  int n = fkt_fixture_targets("embed", "exact", form_targets, 16);
  return cr_make_param_array(fkh_target, form_targets, (size_t)n);
}

/* Runs the cases of two forms (built alike: the builders draw the same values) on t. */
static int run_two(const fkh_target *t, const char *fa, const char *fb, fkh_call **ca, fkh_call **cb) {
  int n = fkt_embed_cases(fa, ca), n2 = fkt_embed_cases(fb, cb);
  cr_assert_eq(n, n2);
  char err[256];
  cr_assert(fkh_run(t, *ca, n, err, sizeof err) == 0, "%s", err);
  cr_assert(fkh_run(t, *cb, n, err, sizeof err) == 0, "%s", err);
  return n;
}

ParameterizedTest(fkh_target *t, embed, forms_agree, .timeout = 300) {
  fkt_need(t);
  fkh_call *a, *b;
  long checked = 0;
  int n = run_two(t, "embed_codebook_mean", "embed_codebook_mean_x6", &a, &b);
  for (int i = 0; i < n; i++) {
    int64_t m = fkh_i64_of(&a[i], "m"), d = fkh_i64_of(&a[i], "d"), ldy = fkh_i64_of(&a[i], "ldy");
    int64_t ldy6 = fkh_i64_of(&b[i], "ldy");
    const uint32_t *y1 = fkh_buf_of(&a[i], "y"), *y6 = fkh_buf_of(&b[i], "y");
    for (int64_t j = 0; j < 6 * m; j++)
      for (int64_t k = 0; k < d; k++, checked++)
        cr_assert(y6[j * ldy6 + k] == y1[(j / 6) * ldy + k], "%s %s: x6 row %lld [%lld]: 0x%08x, mean row %lld 0x%08x",
                  t->label, a[i].name, (long long)j, (long long)k, y6[j * ldy6 + k], (long long)(j / 6), y1[(j / 6) * ldy + k]);
  }
  fkt_free_cases(a, n);
  fkt_free_cases(b, n);
  n = run_two(t, "embed_gather_bf16", "embed_gather_bf16_wide", &a, &b);
  for (int i = 0; i < n; i++) {
    int64_t m = fkh_i64_of(&a[i], "m"), d = fkh_i64_of(&a[i], "d"), ldy = fkh_i64_of(&a[i], "ldy");
    const uint16_t *yb = fkh_buf_of(&a[i], "y");
    const uint32_t *yw = fkh_buf_of(&b[i], "y");
    for (int64_t j = 0; j < m; j++)
      for (int64_t k = 0; k < d; k++, checked++)
        cr_assert(yw[j * ldy + k] == (uint32_t)yb[j * ldy + k] << 16, "%s %s [%lld][%lld]: wide 0x%08x, bf16 0x%04x",
                  t->label, a[i].name, (long long)j, (long long)k, yw[j * ldy + k], yb[j * ldy + k]);
  }
  fkt_free_cases(a, n);
  fkt_free_cases(b, n);
  long rounded = 0, ties = 0;
  n = run_two(t, "embed_codebook_mean_x6", "embed_codebook_mean_x6_bf16", &a, &b);
  for (int i = 0; i < n; i++) {
    int64_t m = fkh_i64_of(&a[i], "m"), d = fkh_i64_of(&a[i], "d"), ldy = fkh_i64_of(&a[i], "ldy");
    cr_assert_eq(ldy, fkh_i64_of(&b[i], "ldy"));
    const uint32_t *yf = fkh_buf_of(&a[i], "y");
    const uint16_t *yb = fkh_buf_of(&b[i], "y");
    for (int64_t j = 0; j < 6 * m; j++) {
      for (int64_t k = 0; k < d; k++, rounded++) {
        uint32_t u = yf[j * ldy + k];
        uint16_t want = fkc_rne_bits(u, FKC_EXACT);
        ties += (u & 0x7fffffffu) <= 0x7f800000u && (u & 0xffffu) == 0x8000u;
        cr_assert(yb[j * ldy + k] == want, "%s %s: row %lld [%lld]: bf16 0x%04x, RNE of the f32 mean 0x%08x: 0x%04x",
                  t->label, a[i].name, (long long)j, (long long)k, yb[j * ldy + k], u, want);
      }
      cr_assert(yb[j * ldy + d] == 0x7fa5, "%s %s: row %lld: padding written", t->label, a[i].name, (long long)j);
    }
  }
  fkt_free_cases(a, n);
  fkt_free_cases(b, n);
  cr_assert(ties > 0, "no RNE tie among the means");
  cr_log_info("%s: %ld outputs: codebook_mean_x6 == codebook_mean repeated, gather_bf16_wide == gather_bf16 widened; "
              "%ld codebook_mean_x6_bf16 outputs (%ld ties) == RNE(codebook_mean_x6)",
              t->label, checked, rounded, ties);
}

/* The gathers copy bits: on every stamp, y row j equals table row ids[j] exactly, but for a NaN,
 * which is the canonical 0x7fc0 whatever the table held (every NaN an exact leaf stores is). */
static fkh_target copy_targets[16];
ParameterizedTestParameters(embed, gather_copies_bits) {
  int n = fkt_fixture_targets("embed", "exact", copy_targets, 16);
  return cr_make_param_array(fkh_target, copy_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, embed, gather_copies_bits, .timeout = 300) {
  fkt_need(t);
  fkh_call *c;
  int n = fkt_embed_cases("embed_gather_bf16", &c);
  char err[256];
  cr_assert(fkh_run(t, c, n, err, sizeof err) == 0, "%s", err);
  for (int i = 0; i < n; i++) {
    int64_t m = fkh_i64_of(&c[i], "m"), d = fkh_i64_of(&c[i], "d"), ldy = fkh_i64_of(&c[i], "ldy");
    int64_t ldt = fkh_i64_of(&c[i], "ld_table");
    const int32_t *ids = fkh_buf_of(&c[i], "ids");
    const uint16_t *tab = fkh_buf_of(&c[i], "table"), *y = fkh_buf_of(&c[i], "y");
    for (int64_t j = 0; j < m; j++) {
      for (int64_t k = 0; k < d; k++) {
        uint16_t want = tab[(int64_t)ids[j] * ldt + k];
        if ((want & 0x7fff) > 0x7f80) want = 0x7fc0;
        cr_assert(y[j * ldy + k] == want, "%s %s: row %lld [%lld] is 0x%04x, table row %d: 0x%04x", t->label, c[i].name,
                  (long long)j, (long long)k, y[j * ldy + k], ids[j], tab[(int64_t)ids[j] * ldt + k]);
      }
      cr_assert(y[j * ldy + d] == 0x7fa5, "%s %s: row %lld: padding written", t->label, c[i].name, (long long)j);
    }
  }
  fkt_free_cases(c, n);
}
