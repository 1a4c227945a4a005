/* tests/test_shortconv.c: ShortConv FIR/gate/carry stamps (templates/shortconv.lua), exact tier.
 *   exact:                 every stamp == contract model, bit for bit (>= 200 random shapes and
 *                          every edge case), x86_64 and AArch64 (qemu -cpu max, neoverse-n1),
 *                          AArch64 == x86_64, AArch64 contract build == host build.
 *   prefill_equals_decode: one call of m rows == m calls of one row, each reading the carry the
 *                          call before committed: outputs and final carry, bit for bit.
 *   writes_only_its_slots: y outside its m x h slots, and every input, untouched.
 *   wide_is_the_bf16_form_widened: the _wide forms store exactly the bf16 forms' results
 *                          widened to f32, and commit the same carry.
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"


static const char *const forms[] = { "shortconv_bf16", "shortconv_bf16_bias" };
enum { NFORMS = 2, CANARY = 0x7fa5 };

static fkh_target stamp_targets[16];
ParameterizedTestParameters(shortconv, prefill_equals_decode) {
  int n = fkt_fixture_targets("shortconv", "exact", stamp_targets, 16);
  return cr_make_param_array(fkh_target, stamp_targets + 1, (size_t)(n - 1));   /* not the contract */
}

/* Row r of a case as a one-row call: in advanced by r rows, the carry given, y a fresh canary. */
static void one_row(fkh_call *out, const fkh_call *whole, int64_t r, const uint16_t *carry) {
  fkh_call_copy(out, whole);
  int64_t ld_in = fkh_i64_of(whole, "ld_in"), m = fkh_i64_of(whole, "m"), h = fkh_i64_of(whole, "h");
  uint16_t *in = fkh_buf_of(out, "in");
  memmove(in, in + r * ld_in, (size_t)((m - r) * ld_in) * sizeof *in);
  memcpy(fkh_buf_of(out, "carry"), carry, (size_t)(2 * h) * sizeof *carry);
  fkh_set_i64(out, "m", 1);
}

ParameterizedTest(fkh_target *t, shortconv, prefill_equals_decode, .timeout = 600) {
  fkt_need(t);
  for (int f = 0; f < NFORMS; f++) {
    fkh_call *whole, *orig;
    int n = fkt_shortconv_cases(forms[f], &whole), multi = 0, steps = 0;
    fkt_shortconv_cases(forms[f], &orig);
    char err[256];
    cr_assert(fkh_run(t, whole, n, err, sizeof err) == 0, "%s", err);
    /* carry[i]: the state after the rows run so far, one call per row */
    uint16_t **carry = calloc((size_t)n, sizeof *carry);
    fkh_call *step = calloc((size_t)n, sizeof *step);
    int *idx = calloc((size_t)n, sizeof *idx);
    cr_assert(carry && step && idx);
    int64_t maxm = 0;
    for (int i = 0; i < n; i++) {
      int64_t h = fkh_i64_of(&orig[i], "h"), m = fkh_i64_of(&orig[i], "m");
      carry[i] = malloc((size_t)(2 * h) * sizeof **carry);
      memcpy(carry[i], fkh_buf_of(&orig[i], "carry"), (size_t)(2 * h) * sizeof **carry);
      if (m > maxm) maxm = m;
      multi += m > 1;
    }
    for (int64_t r = 0; r < maxm; r++) {
      int k = 0;
      for (int i = 0; i < n; i++)
        if (fkh_i64_of(&orig[i], "m") > r) {
          one_row(&step[k], &orig[i], r, carry[i]);
          idx[k++] = i;
        }
      cr_assert(fkh_run(t, step, k, err, sizeof err) == 0, "%s", err);
      for (int s = 0; s < k; s++) {
        const fkh_call *w = &whole[idx[s]];
        int64_t h = fkh_i64_of(w, "h");
        const uint16_t *yw = (const uint16_t *)fkh_buf_of((fkh_call *)w, "y") + r * fkh_i64_of(w, "ldy");
        const uint16_t *ys = fkh_buf_of(&step[s], "y");
        for (int64_t c = 0; c < h; c++)
          if (yw[c] != ys[c])
            cr_assert_fail("%s %s %s: row %lld, channel %lld: %lld rows at once 0x%04x, row by row 0x%04x", t->label,
                           forms[f], w->name, (long long)r, (long long)c, (long long)fkh_i64_of(w, "m"), yw[c], ys[c]);
        memcpy(carry[idx[s]], fkh_buf_of(&step[s], "carry"), (size_t)(2 * h) * sizeof **carry);
        fkh_call_free(&step[s]);
        steps++;
      }
    }
    for (int i = 0; i < n; i++) {
      int64_t h = fkh_i64_of(&whole[i], "h");
      cr_assert(memcmp(carry[i], fkh_buf_of(&whole[i], "carry"), (size_t)(2 * h) * sizeof **carry) == 0,
                "%s %s %s: the final carry differs between %lld rows at once and row by row", t->label, forms[f],
                whole[i].name, (long long)fkh_i64_of(&whole[i], "m"));
      free(carry[i]);
    }
    cr_log_info("%s %s: %d cases (%d with m > 1), %d one-row calls chained through the carry", t->label, forms[f], n,
                multi, steps);
    cr_assert(multi > 100);
    free(carry);
    free(step);
    free(idx);
    fkt_free_cases(whole, n);
    fkt_free_cases(orig, n);
  }
}

static fkh_target slot_targets[16];
ParameterizedTestParameters(shortconv, writes_only_its_slots) {
  int n = fkt_fixture_targets("shortconv", "exact", slot_targets, 16);
  return cr_make_param_array(fkh_target, slot_targets, (size_t)n);   /* the contract too */
}

ParameterizedTest(fkh_target *t, shortconv, writes_only_its_slots, .timeout = 600) {
  fkt_need(t);
  for (int f = 0; f < NFORMS; f++) {
    fkh_call *calls, *orig;
    int n = fkt_shortconv_cases(forms[f], &calls), checked = 0;
    fkt_shortconv_cases(forms[f], &orig);
    char err[256];
    cr_assert(fkh_run(t, calls, n, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < n; i++) {
      fkh_call *c = &calls[i];
      int64_t h = fkh_i64_of(c, "h"), m = fkh_i64_of(c, "m"), ldy = fkh_i64_of(c, "ldy");
      const uint16_t *y = fkh_buf_of(c, "y");
      size_t ny = c->v[fkh_field_index(c, "y")].buf.nbytes / 2;
      for (size_t e = 0; e < ny; e++) {
        int slot = (int64_t)e / ldy < m && (int64_t)e % ldy < h;
        if (!slot && y[e] != CANARY)
          cr_assert_fail("%s %s %s: wrote y[%zu] outside its slots", t->label, forms[f], c->name, e);
        checked += slot;
      }
      for (int v = 0; v < fkh_forms[c->form].nfields; v++) {
        const fkh_field *fd = &fkh_forms[c->form].fields[v];
        if (fd->kind != FK_FIELD_PTR || fd->dir != FK_DIR_IN) continue;
        cr_assert(memcmp(c->v[v].buf.data, orig[i].v[v].buf.data, c->v[v].buf.nbytes) == 0,
                  "%s %s %s: input %s changed", t->label, forms[f], c->name, fd->name);
      }
    }
    cr_log_info("%s %s: %d cases, %d output slots, nothing written elsewhere", t->label, forms[f], n, checked);
    fkt_free_cases(calls, n);
    fkt_free_cases(orig, n);
  }
}

/* The evidence for fixtures/README.md "ShortConv: the clamp": transformers 4.54-5.3 decode a
 * one-row prefill's first steps with a misplaced conv window; their output (y_clamped, in the
 * P = 1 sequences) must fail the gate that the stamps pass, or the case shows nothing. */
Test(shortconv, the_clamped_reference_fails_the_gate, .timeout = 120) {
  fkh_target t = fkh_contract(0);
  fkt_state_stats st = fkt_state_fixture_gate("shortconv", &t, 1);
  cr_log_info("y_clamped in %d calls: outside the shortconv_f64 bound in %d calls (%d outputs); the contract: %d failing",
              st.clamped_calls, st.clamped_off_calls, st.clamped_off_outputs, st.bad);
  cr_assert_eq(st.bad, 0);
  cr_assert(st.clamped_calls >= 5 && st.clamped_off_calls >= 15, "the clamped decodes should fail at least the first "
            "three decodes of each one-row prefill: %d of %d calls", st.clamped_off_calls, st.clamped_calls);
}

static fkh_target wide_targets[16];
ParameterizedTestParameters(shortconv, wide_is_the_bf16_form_widened) {
  int n = fkt_fixture_targets("shortconv", "exact", wide_targets, 16);
  return cr_make_param_array(fkh_target, wide_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, shortconv, wide_is_the_bf16_form_widened, .timeout = 300) {
  fkt_need(t);
  static const char *const narrow[] = { "shortconv_bf16", "shortconv_bf16_bias" };
  static const char *const wide[] = { "shortconv_bf16_wide", "shortconv_bf16_bias_wide" };
  for (int f = 0; f < 2; f++) {
    fkh_call *nb, *nw;
    int n = fkt_shortconv_cases(narrow[f], &nb), n2 = fkt_shortconv_cases(wide[f], &nw);
    cr_assert_eq(n, n2);
    char err[256];
    cr_assert(fkh_run(t, nb, n, err, sizeof err) == 0, "%s", err);
    cr_assert(fkh_run(t, nw, n, err, sizeof err) == 0, "%s", err);
    long checked = 0;
    for (int i = 0; i < n; i++) {
      int64_t m = fkh_i64_of(&nb[i], "m"), h = fkh_i64_of(&nb[i], "h"), ldy = fkh_i64_of(&nb[i], "ldy");
      const uint16_t *yb = fkh_buf_of(&nb[i], "y"), *cb = fkh_buf_of(&nb[i], "carry"), *cw = fkh_buf_of(&nw[i], "carry");
      const uint32_t *yw = fkh_buf_of(&nw[i], "y");
      for (int64_t r = 0; r < m; r++)
        for (int64_t c = 0; c < h; c++, checked++)
          cr_assert(yw[r * ldy + c] == (uint32_t)yb[r * ldy + c] << 16, "%s %s %s [%lld][%lld]: wide 0x%08x, bf16 0x%04x",
                    t->label, wide[f], nb[i].name, (long long)r, (long long)c, yw[r * ldy + c], yb[r * ldy + c]);
      cr_assert(memcmp(cb, cw, (size_t)(2 * h) * sizeof *cb) == 0, "%s %s %s: carry differs", t->label, wide[f], nb[i].name);
    }
    cr_log_info("%s: %s, %d cases, %ld outputs == %s widened", t->label, wide[f], n, checked, narrow[f]);
    fkt_free_cases(nb, n);
    fkt_free_cases(nw, n);
  }
}
