/* tests/test_swiglu.c: SwiGLU activation-and-gate stamps (templates/swiglu.lua), exact tier.
 *   exact:                 every stamp == contract model, bit for bit (>= 200 random shapes and
 *                          every edge case), x86_64 and AArch64 (qemu -cpu max, neoverse-n1),
 *                          AArch64 == x86_64, AArch64 contract build == host build.
 *   fixtures:              torch (transformers' Lfm2MLP activation path) and numpy float64
 *                          references (fixtures/swiglu/, fixtures/README.md: swiglu_*).
 *   writes_only_its_slots: h outside its rows x n slots, and every input, untouched.
 *   wide_is_the_bf16_form_widened: bf16_wide stores exactly the bf16 form's results widened.
 *   rows_are_independent:  a call of several rows == one call per row.
 *   named_values:          the values the template header states (RNE ties of the product, NaN
 *                          payloads, silu(+-inf), exp overflow to -0, signed zeros), every target.
 *   in_place:              h == g and h == u (forms bf16, f32) give the out-of-place results
 *                          (host stamps and the contract: the AArch64 runner's protocol has one
 *                          buffer per field, so aliasing is exercised on the host only).
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "contract/contract.h"
#include "suite.h"


static const char *const forms[] = { "swiglu_bf16", "swiglu_bf16_wide", "swiglu_f32" };
enum { NFORMS = 3 };
static const uint32_t CANARY32 = 0x7fa5a5a5u;

static size_t elem_size(fkh_call *c, const char *field) {
  return fkh_forms[c->form].fields[fkh_field_index(c, field)].elem == FK_ELEM_F32 ? 4 : 2;
}

static fkh_target slot_targets[16];
ParameterizedTestParameters(swiglu, writes_only_its_slots) {
  int n = fkt_fixture_targets("swiglu", "exact", slot_targets, 16);
  return cr_make_param_array(fkh_target, slot_targets, (size_t)n);   /* the contract too */
}

ParameterizedTest(fkh_target *t, swiglu, writes_only_its_slots, .timeout = 600) {
  fkt_need(t);
  for (int f = 0; f < NFORMS; f++) {
    fkh_call *calls, *orig;
    int n = fkt_swiglu_cases(forms[f], &calls);
    fkt_swiglu_cases(forms[f], &orig);
    long checked = 0;
    char err[256];
    cr_assert(fkh_run(t, calls, n, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < n; i++) {
      fkh_call *c = &calls[i];
      int64_t nn = fkh_i64_of(c, "n"), rows = fkh_i64_of(c, "rows"), hs = fkh_i64_of(c, "h_stride");
      size_t es = elem_size(c, "h"), nh = c->v[fkh_field_index(c, "h")].buf.nbytes / es;
      const uint8_t *h = fkh_buf_of(c, "h");
      for (size_t e = 0; e < nh; e++) {
        int slot = (int64_t)e / hs < rows && (int64_t)e % hs < nn;
        int canary = es == 4 ? !memcmp(h + 4 * e, &CANARY32, 4) : ((const uint16_t *)h)[e] == 0x7fa5;
        if (!slot && !canary) cr_assert_fail("%s %s %s: wrote h[%zu] outside its slots", t->label, forms[f], c->name, e);
        checked += slot;
      }
      for (int v = 0; v < fkh_forms[c->form].nfields; v++) {
        const fkh_field *fd = &fkh_forms[c->form].fields[v];
        if (fd->kind != FK_FIELD_PTR || fd->dir != FK_DIR_IN) continue;
        cr_assert(memcmp(c->v[v].buf.data, orig[i].v[v].buf.data, c->v[v].buf.nbytes) == 0,
                  "%s %s %s: input %s changed", t->label, forms[f], c->name, fd->name);
      }
    }
    cr_log_info("%s %s: %d cases, %ld output slots, nothing written elsewhere", t->label, forms[f], n, checked);
    fkt_free_cases(calls, n);
    fkt_free_cases(orig, n);
  }
}

static fkh_target wide_targets[16];
ParameterizedTestParameters(swiglu, wide_is_the_bf16_form_widened) {
  int n = fkt_fixture_targets("swiglu", "exact", wide_targets, 16);
  return cr_make_param_array(fkh_target, wide_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, swiglu, wide_is_the_bf16_form_widened, .timeout = 300) {
  fkt_need(t);
  fkh_call *nb, *nw;
  int n = fkt_swiglu_cases("swiglu_bf16", &nb), n2 = fkt_swiglu_cases("swiglu_bf16_wide", &nw);
  cr_assert_eq(n, n2);
  char err[256];
  cr_assert(fkh_run(t, nb, n, err, sizeof err) == 0, "%s", err);
  cr_assert(fkh_run(t, nw, n, err, sizeof err) == 0, "%s", err);
  long checked = 0;
  for (int i = 0; i < n; i++) {
    int64_t rows = fkh_i64_of(&nb[i], "rows"), nn = fkh_i64_of(&nb[i], "n"), hs = fkh_i64_of(&nb[i], "h_stride");
    const uint16_t *yb = fkh_buf_of(&nb[i], "h");
    const uint32_t *yw = fkh_buf_of(&nw[i], "h");
    for (int64_t r = 0; r < rows; r++)
      for (int64_t k = 0; k < nn; k++, checked++) {
        uint32_t a = yw[r * hs + k], b = (uint32_t)yb[r * hs + k] << 16;
        /* a NaN created by an invalid operation is the ISA's default one, either sign */
        int both_default = (a & 0x7fffffffu) == 0x7fc00000u && (b & 0x7fffffffu) == 0x7fc00000u;
        cr_assert(a == b || (nb[i].nan_policy == FKH_NAN_DEFAULT && both_default),
                  "%s %s [%lld][%lld]: wide 0x%08x, bf16 0x%04x", t->label, nb[i].name, (long long)r, (long long)k, a,
                  yb[r * hs + k]);
      }
  }
  cr_log_info("%s: swiglu_bf16_wide, %d cases, %ld outputs == swiglu_bf16 widened", t->label, n, checked);
  fkt_free_cases(nb, n);
  fkt_free_cases(nw, n);
}

static fkh_target row_targets[16];
ParameterizedTestParameters(swiglu, rows_are_independent) {
  int n = fkt_fixture_targets("swiglu", "exact", row_targets, 16);
  return cr_make_param_array(fkh_target, row_targets + 1, (size_t)(n - 1));   /* not the contract */
}

/* Row r of a call as a one-row call: g and u advanced by r rows, h fresh. */
ParameterizedTest(fkh_target *t, swiglu, rows_are_independent, .timeout = 600) {
  fkt_need(t);
  for (int f = 0; f < NFORMS; f++) {
    fkh_call *whole;
    int n = fkt_swiglu_cases(forms[f], &whole), k = 0;
    char err[256];
    cr_assert(fkh_run(t, whole, n, err, sizeof err) == 0, "%s", err);
    int cap = 0;
    for (int i = 0; i < n; i++) cap += (int)fkh_i64_of(&whole[i], "rows");
    fkh_call *one = calloc((size_t)cap + 1, sizeof *one);
    int *from = calloc((size_t)cap + 1, sizeof *from), *row = calloc((size_t)cap + 1, sizeof *row);
    cr_assert(one && from && row);
    fkh_call *orig;
    fkt_swiglu_cases(forms[f], &orig);
    for (int i = 0; i < n; i++) {
      int64_t rows = fkh_i64_of(&orig[i], "rows");
      if (rows < 2) continue;
      for (int64_t r = 0; r < rows; r++) {
        fkh_call *c = &one[k];
        fkh_call_copy(c, &orig[i]);
        const char *ins[2] = { "g", "u" }, *strides[2] = { "g_stride", "u_stride" };
        for (int q = 0; q < 2; q++) {
          size_t es = elem_size(c, ins[q]);
          uint8_t *b = fkh_buf_of(c, ins[q]);
          size_t nbytes = c->v[fkh_field_index(c, ins[q])].buf.nbytes, off = (size_t)(r * fkh_i64_of(c, strides[q])) * es;
          memmove(b, b + off, nbytes - off);
        }
        fkh_set_i64(c, "rows", 1);
        from[k] = i;
        row[k++] = (int)r;
      }
    }
    cr_assert(fkh_run(t, one, k, err, sizeof err) == 0, "%s", err);
    for (int s = 0; s < k; s++) {
      fkh_call *w = &whole[from[s]];
      size_t es = elem_size(w, "h");
      int64_t nn = fkh_i64_of(w, "n");
      const uint8_t *a = (const uint8_t *)fkh_buf_of(w, "h") + (size_t)(row[s] * fkh_i64_of(w, "h_stride")) * es;
      const uint8_t *b = fkh_buf_of(&one[s], "h");
      cr_assert(memcmp(a, b, (size_t)nn * es) == 0, "%s %s %s: row %d differs between one call and a call per row",
                t->label, forms[f], w->name, row[s]);
      fkh_call_free(&one[s]);
    }
    cr_log_info("%s %s: %d rows of multi-row cases, each == its own one-row call", t->label, forms[f], k);
    cr_assert(k > 200);
    free(one);
    free(from);
    free(row);
    fkt_free_cases(whole, n);
    fkt_free_cases(orig, n);
  }
}

/* In place: the argument struct of a case with h pointed at g (or u), strides equal. */
typedef struct { const void *g, *u; void *h; int64_t n, rows, gs, us, hs; } sw_args;   /* ORDER: fk_swiglu_*_args */

static void run_aliased(fkh_call *c, fkh_fn stamp, int onto_u) {
  _Alignas(16) uint8_t s[256];
  fkh_fill_struct(c, s);
  sw_args *a = (sw_args *)(void *)s;
  a->h = onto_u ? (void *)a->u : (void *)a->g;
  a->hs = onto_u ? a->us : a->gs;
  if (stamp) stamp(s);
  else if (!strcmp(fkh_forms[c->form].id, "swiglu_bf16")) fkc_swiglu_bf16((const fk_swiglu_bf16_args *)(void *)s, FKC_EXACT);
  else fkc_swiglu_f32((const fk_swiglu_f32_args *)(void *)s, FKC_EXACT);
}

Test(swiglu, in_place, .timeout = 300) {
  cr_assert_eq(sizeof(sw_args), sizeof(fk_swiglu_bf16_args));
  cr_assert_eq(sizeof(sw_args), sizeof(fk_swiglu_f32_args));
  static const char *const variants[] = { "contract", "avx2", "avx512" };
  static const char *const inplace_forms[] = { "swiglu_bf16", "swiglu_f32" };
  int ran = 0;
  for (int v = 0; v < 3; v++) {
    fkh_fn stamp = NULL;
    if (v > 0) {
      fkh_target t = fkh_host(variants[v]);
      char why[128];
      if (!fkh_available(&t, why, sizeof why)) continue;
    }
    for (int f = 0; f < 2; f++) {
      if (v > 0) stamp = fkh_host_stamp(fkh_form_index(inplace_forms[f]), variants[v], NULL);
      fkh_call *ref;
      int n = fkt_swiglu_cases(inplace_forms[f], &ref);
      fkh_target contract = fkh_contract(0);
      char err[256];
      cr_assert(fkh_run(&contract, ref, n, err, sizeof err) == 0, "%s", err);
      for (int onto_u = 0; onto_u < 2; onto_u++) {
        fkh_call *c;
        fkt_swiglu_cases(inplace_forms[f], &c);
        for (int i = 0; i < n; i++) {
          run_aliased(&c[i], stamp, onto_u);
          const char *dst = onto_u ? "u" : "g";
          size_t es = elem_size(&c[i], "h");
          int64_t rows = fkh_i64_of(&c[i], "rows"), nn = fkh_i64_of(&c[i], "n");
          int64_t ds = fkh_i64_of(&c[i], onto_u ? "u_stride" : "g_stride"), hs = fkh_i64_of(&ref[i], "h_stride");
          const uint8_t *got = fkh_buf_of(&c[i], dst), *want = fkh_buf_of(&ref[i], "h");
          for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < nn; k++) {
              const uint8_t *p = got + (size_t)(r * ds + k) * es, *q = want + (size_t)(r * hs + k) * es;
              if (memcmp(p, q, es) == 0) continue;
              uint32_t pa = 0, qa = 0;
              memcpy(&pa, p, es);
              memcpy(&qa, q, es);
              /* the default NaN of an invalid operation: either sign (fkh.h, FKH_NAN_DEFAULT) */
              uint32_t dn = es == 4 ? 0x7fc00000u : 0x7fc0u, mag = es == 4 ? 0x7fffffffu : 0x7fffu;
              cr_assert(c[i].nan_policy == FKH_NAN_DEFAULT && (pa & mag) == dn && (qa & mag) == dn,
                        "%s %s %s, h == %s: [%lld][%lld] 0x%x, out of place 0x%x", variants[v], inplace_forms[f],
                        c[i].name, dst, (long long)r, (long long)k, pa, qa);
            }
        }
        fkt_free_cases(c, n);
        ran++;
      }
      fkt_free_cases(ref, n);
    }
  }
  cr_log_info("in place: %d (target, form, aliasing) runs == out of place", ran);
  cr_assert(ran >= 4);
}

/* Named values, on every exact target: what the template header promises, element by element.
 * Expected patterns are f32 bits; bf16 forms compare their high halves. DEFAULT_NAN: the ISA's
 * default NaN, either sign (0 * inf, -inf / inf). */
enum { DEFAULT_NAN = 1, PAYLOAD_NAN = 2 };
typedef struct { const char *name; int index; uint32_t want; int flags; } named;

static const named expected_values[] = {
  /* RNE ties of u * silu(48) (silu(48) = 48 exactly): 48.375 -> 48.5, 49.125 -> 49, 49.875 -> 50 */
  { "tie_product", 0, 0x42420000u, 0 }, { "tie_product", 1, 0x42440000u, 0 }, { "tie_product", 2, 0xc2420000u, 0 },
  { "tie_product", 3, 0xc2440000u, 0 }, { "tie_product", 5, 0x42480000u, 0 },
  { "tie_product", 4, 0x42410000u, 0 },                           /* 32 * 1.5078125 = 48.25, exact */
  /* NaN g keeps g's payload, quieted; NaN u keeps u's; both: u's (the product is u * s) */
  { "nan_payloads", 0, 0x7fc10000u, PAYLOAD_NAN }, { "nan_payloads", 2, 0x7fc10000u, PAYLOAD_NAN },
  { "nan_payloads", 3, 0xffc50000u, PAYLOAD_NAN }, { "nan_payloads", 8, 0x7fc10000u, PAYLOAD_NAN },
  { "nan_payloads", 9, 0xffc50000u, PAYLOAD_NAN }, { "nan_payloads", 12, 0xffff0000u, PAYLOAD_NAN },
  { "nan_payloads", 14, 0xffc50000u, PAYLOAD_NAN }, { "nan_payloads", 15, 0x7fc10000u, PAYLOAD_NAN },
  /* silu(+inf) = +inf; silu(-inf) = NaN (torch too); inf * 0 = NaN; silu(+inf) * -1 = -inf */
  { "inf", 0, 0x7f800000u, 0 }, { "inf", 1, 0x7fc00000u, DEFAULT_NAN }, { "inf", 2, 0x7fc00000u, DEFAULT_NAN },
  { "inf", 3, 0xff800000u, 0 }, { "inf", 4, 0x7fc00000u, DEFAULT_NAN },
  /* g = -100: exp(100) overflows, silu = -0, times u = 1 (odd index); silu(+-0) = +-0, times
   * u = 1, 1, -0, -0 */
  { "exp_edges", 25, 0x80000000u, 0 }, { "signed_zero", 0, 0x00000000u, 0 }, { "signed_zero", 1, 0x80000000u, 0 },
  { "signed_zero", 2, 0x80000000u, 0 }, { "signed_zero", 3, 0x00000000u, 0 },
};

static fkh_target named_targets[16];
ParameterizedTestParameters(swiglu, named_values) {
  int n = fkt_fixture_targets("swiglu", "exact", named_targets, 16);
  return cr_make_param_array(fkh_target, named_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, swiglu, named_values, .timeout = 300) {
  fkt_need(t);
  int checked = 0;
  for (int f = 0; f < NFORMS; f++) {
    fkh_call *calls;
    int n = fkt_swiglu_cases(forms[f], &calls);
    char err[256];
    cr_assert(fkh_run(t, calls, n, err, sizeof err) == 0, "%s", err);
    for (size_t e = 0; e < sizeof expected_values / sizeof expected_values[0]; e++) {
      const named *x = &expected_values[e];
      int i = 0;
      while (i < n && strcmp(calls[i].name, x->name)) i++;
      cr_assert(i < n, "no case %s", x->name);
      uint32_t got;
      if (elem_size(&calls[i], "h") == 4) got = ((const uint32_t *)fkh_buf_of(&calls[i], "h"))[x->index];
      else got = (uint32_t)((const uint16_t *)fkh_buf_of(&calls[i], "h"))[x->index] << 16;
      uint32_t want = x->want;
      if (!strcmp(forms[f], "swiglu_f32") && !strcmp(x->name, "tie_product")) {
        /* no rounding to bf16: u * 48 (or 32) exactly */
        static const uint32_t us[] = { 0x3f810000, 0x3f830000, 0xbf810000, 0xbf830000, 0x3fc10000, 0x3f850000 };
        float fu, fw;
        memcpy(&fu, &us[x->index], 4);
        fw = fu * (x->index == 4 ? 32.0f : 48.0f);
        memcpy(&want, &fw, 4);
      }
      /* the bf16 forms store the canonical NaN (the integer RNE's NaN result) */
      if (x->flags == PAYLOAD_NAN && strcmp(forms[f], "swiglu_f32") != 0) want = 0x7fc00000u;
      int ok = got == want || (x->flags == DEFAULT_NAN && (got & 0x7fffffffu) == 0x7fc00000u);
      cr_assert(ok, "%s %s %s[%d]: 0x%08x, want 0x%08x", t->label, forms[f], x->name, x->index, got, want);
      checked++;
    }
    fkt_free_cases(calls, n);
  }
  cr_log_info("%s: %d named values as the template states them", t->label, checked);
}
