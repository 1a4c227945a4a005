/* tests/test_attn.c: decode attention stamps (templates/attn.lua), exact tier.
 *   exact:             every stamp == contract model, bit for bit (>= 200 random shapes and every
 *                      edge case: GQA groups 1, 2, 4, 8, d 64 and 32, linear caches and rings at
 *                      positions 0, 1, W-1, W and after many wraps, NaN/inf, ties), x86_64 and
 *                      AArch64 (qemu -cpu max, neoverse-n1), AArch64 == x86_64, AArch64 contract
 *                      build == host build.
 *   fixtures:          transformers' eager LFM2 attention and float64 numpy (fixtures/attn).
 *   writes_only_y:     y is written, the inputs and the scratch past round_up(n, 16) are not.
 *   ring_is_window:    a ring call == the linear form over the window's positions copied out
 *                      in order (the slot mapping, bit for bit).
 *   gqa_is_repeat_kv:  kv_heads x group == kv_heads*group kv heads with k and v repeated
 *                      (transformers' repeat_kv), bit for bit.
 *   prefill_is_decodes: a prefill call of P rows == P decode calls (row i: the decode form at
 *                      position pos + i; ring forms: the window copied into a W-slot ring), bit
 *                      for bit, on every target; the ring limit P = R - W + 1 past a full window.
 *                      The prefill forms' stamps == contract through the exact suite as well.
 *   wide_is_base:      each wide form (decode64_wide, decode_ring64_wide, prefill64_wide,
 *                      prefill_ring64_wide, decode32_wide) on the base form's cases: y == the
 *                      base form's y, yw == y widened (<< 16) element for element, the gaps
 *                      between yw rows untouched,
 *                      on every target. The wide stamps == contract through the exact suite, and
 *                      the fixture gate runs them on the base forms' fixtures (y and yw).
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"


static const char *const forms[] = { "attn_decode64",  "attn_decode32",  "attn_decode_ring64",  "attn_decode_ring32",
                                     "attn_prefill64", "attn_prefill32", "attn_prefill_ring64", "attn_prefill_ring32" };
enum { NFORMS = 4, NALL = 8 };   /* forms[0..NFORMS): decode, then the prefill forms */

static int hd_of(const fkh_call *c) { return strstr(fkh_forms[c->form].id, "64") ? 64 : 32; }
static int ring_of(const fkh_call *c) { return fkh_field_index(c, "ring") >= 0; }

static fkh_target all_targets[16];
static int ntargets(void) { return fkt_fixture_targets("attn", "exact", all_targets, 16); }

ParameterizedTestParameters(attn, writes_only_y) {
  return cr_make_param_array(fkh_target, all_targets, (size_t)ntargets());   /* the contract too */
}

ParameterizedTest(fkh_target *t, attn, writes_only_y, .timeout = 600) {
  fkt_need(t);
  for (int f = 0; f < NALL; f++) {
    fkh_call *calls, *orig;
    int n = fkt_attn_cases(forms[f], &calls);
    fkt_attn_cases(forms[f], &orig);
    for (int i = 0; i < n; i++) {   /* y poisoned: every element must be written */
      uint16_t *y = fkh_buf_of(&calls[i], "y");
      size_t ny = calls[i].v[fkh_field_index(&calls[i], "y")].buf.nbytes / 2;
      for (size_t e = 0; e < ny; e++) y[e] = 0x7fa5;
    }
    char err[256];
    cr_assert(fkh_run(t, calls, n, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < n; i++) {
      fkh_call *c = &calls[i];
      const uint16_t *y = fkh_buf_of(c, "y");
      size_t ny = c->v[fkh_field_index(c, "y")].buf.nbytes / 2;
      /* prefill: rows y_ld apart, the gaps between them (and a 0-row call's y) untouched */
      const int pf = fkh_field_index(c, "rows") >= 0;
      const int64_t yld = pf ? fkh_i64_of(c, "y_ld") : 0, rows = pf ? fkh_i64_of(c, "rows") : 1;
      const int64_t width = fkh_i64_of(c, "kv_heads") * fkh_i64_of(c, "group") * hd_of(c);
      for (size_t e = 0; e < ny; e++) {
        int inside = !pf || (rows > 0 && (int64_t)e % (yld ? yld : 1) < width);
        if (inside)
          cr_assert(y[e] != 0x7fa5, "%s %s %s: y[%zu] not written", t->label, forms[f], c->name, e);
        else
          cr_assert(y[e] == 0x7fa5, "%s %s %s: y[%zu] between rows written", t->label, forms[f], c->name, e);
      }
      const float *s = fkh_buf_of(c, "s");
      size_t ns = c->v[fkh_field_index(c, "s")].buf.nbytes / 4;
      for (size_t e = (size_t)fkt_attn_scratch_used(c); e < ns; e++)
        cr_assert(s[e] == 0.0f, "%s %s %s: scratch s[%zu] written past round_up(n, 16)", t->label, forms[f], c->name, e);
      for (int v = 0; v < fkh_forms[c->form].nfields; v++) {
        const fkh_field *fd = &fkh_forms[c->form].fields[v];
        if (fd->kind != FK_FIELD_PTR || fd->dir != FK_DIR_IN) continue;
        cr_assert(memcmp(c->v[v].buf.data, orig[i].v[v].buf.data, c->v[v].buf.nbytes) == 0,
                  "%s %s %s: input %s changed", t->label, forms[f], c->name, fd->name);
      }
    }
    cr_log_info("%s %s: %d cases", t->label, forms[f], n);
    fkt_free_cases(calls, n);
    fkt_free_cases(orig, n);
  }
}

/* The linear call over the window of ring call r: positions 0..n-1 = the window in order. */
static void window_call(fkh_call *r, fkh_call *lin) {
  const int hd = hd_of(r);
  char id[40];
  snprintf(id, sizeof id, "attn_decode%d", hd);
  fkh_call_init(lin, id, r->name);
  int64_t W = fkh_i64_of(r, "ring"), pos = fkh_i64_of(r, "pos"), n = pos + 1 < W ? pos + 1 : W;
  int64_t kvh = fkh_i64_of(r, "kv_heads"), group = fkh_i64_of(r, "group");
  int64_t start = (fkh_i64_of(r, "slot") + 1 - n + W) % W;
  fkh_set_i64(lin, "kv_heads", kvh);
  fkh_set_i64(lin, "group", group);
  fkh_set_i64(lin, "k_ld_head", n * hd);
  fkh_set_i64(lin, "k_ld_row", hd);
  fkh_set_i64(lin, "v_ld_head", n * hd);
  fkh_set_i64(lin, "v_ld_row", hd);
  fkh_set_i64(lin, "pos", n - 1);
  uint16_t *q = fkh_set_buf(lin, "q", (size_t)(kvh * group * hd));
  memcpy(q, fkh_buf_of(r, "q"), (size_t)(kvh * group * hd) * 2);
  uint16_t *k = fkh_set_buf(lin, "k", (size_t)(kvh * n * hd + 1)), *v = fkh_set_buf(lin, "v", (size_t)(kvh * n * hd + 1));
  const uint16_t *rk = fkh_buf_of(r, "k"), *rv = fkh_buf_of(r, "v");
  for (int64_t g = 0; g < kvh; g++)
    for (int64_t j = 0; j < n; j++) {
      int64_t sl = (start + j) % W;
      memcpy(k + (g * n + j) * hd, rk + g * fkh_i64_of(r, "k_ld_head") + sl * fkh_i64_of(r, "k_ld_row"), (size_t)hd * 2);
      memcpy(v + (g * n + j) * hd, rv + g * fkh_i64_of(r, "v_ld_head") + sl * fkh_i64_of(r, "v_ld_row"), (size_t)hd * 2);
    }
  fkh_set_buf(lin, "y", (size_t)(kvh * group * hd));
  fkh_set_buf(lin, "s", (size_t)((n + 15) / 16 * 16));
}

static fkh_target ring_targets[16];
ParameterizedTestParameters(attn, ring_is_window) {
  int n = fkt_fixture_targets("attn", "exact", ring_targets, 16);
  return cr_make_param_array(fkh_target, ring_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, attn, ring_is_window, .timeout = 600) {
  fkt_need(t);
  for (int f = 2; f < NFORMS; f++) {
    fkh_call *calls;
    int n = fkt_attn_cases(forms[f], &calls), wraps = 0;
    fkh_call *lin = calloc((size_t)n, sizeof *lin);
    cr_assert(lin);
    for (int i = 0; i < n; i++) {
      window_call(&calls[i], &lin[i]);
      wraps += fkh_i64_of(&calls[i], "pos") >= 2 * fkh_i64_of(&calls[i], "ring");
    }
    char err[256], msg[512];
    cr_assert(fkh_run(t, calls, n, err, sizeof err) == 0, "%s", err);
    cr_assert(fkh_run(t, lin, n, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < n; i++) {
      const uint16_t *a = fkh_buf_of(&calls[i], "y"), *b = fkh_buf_of(&lin[i], "y");
      size_t ny = calls[i].v[fkh_field_index(&calls[i], "y")].buf.nbytes / 2;
      for (size_t e = 0; e < ny; e++)
        if (a[e] != b[e])
          cr_assert_fail("%s %s %s: y[%zu] ring 0x%04x, linear window 0x%04x", t->label, forms[f], calls[i].name, e,
                         a[e], b[e]);
    }
    (void)msg;
    cr_log_info("%s %s: %d ring calls (%d after >= 2 wraps) == the linear form over their window", t->label,
                forms[f], n, wraps);
    cr_assert(wraps > 50);
    fkt_free_cases(calls, n);
    fkt_free_cases(lin, n);
  }
}

/* kv_heads x group == (kv_heads*group) x 1 with every kv head repeated group times */
static void repeat_kv_call(fkh_call *c, fkh_call *r) {
  const int hd = hd_of(c);
  fkh_call_copy(r, c);
  int64_t kvh = fkh_i64_of(c, "kv_heads"), group = fkh_i64_of(c, "group");
  int64_t kh = fkh_i64_of(c, "k_ld_head"), vh = fkh_i64_of(c, "v_ld_head");
  int64_t kr = fkh_i64_of(c, "k_ld_row"), vr = fkh_i64_of(c, "v_ld_row");
  int64_t slots = ring_of(c) ? fkh_i64_of(c, "ring") : fkh_i64_of(c, "pos") + 1;
  fkh_set_i64(r, "kv_heads", kvh * group);
  fkh_set_i64(r, "group", 1);
  fkh_set_i64(r, "k_ld_head", slots * hd);
  fkh_set_i64(r, "k_ld_row", hd);
  fkh_set_i64(r, "v_ld_head", slots * hd);
  fkh_set_i64(r, "v_ld_row", hd);
  /* fkh_set_buf replaces the copied buffer */
  uint16_t *k = fkh_set_buf(r, "k", (size_t)(kvh * group * slots * hd + 1));
  uint16_t *v = fkh_set_buf(r, "v", (size_t)(kvh * group * slots * hd + 1));
  const uint16_t *ck = fkh_buf_of(c, "k"), *cv = fkh_buf_of(c, "v");
  for (int64_t h = 0; h < kvh * group; h++)
    for (int64_t sl = 0; sl < slots; sl++) {
      memcpy(k + (h * slots + sl) * hd, ck + (h / group) * kh + sl * kr, (size_t)hd * 2);
      memcpy(v + (h * slots + sl) * hd, cv + (h / group) * vh + sl * vr, (size_t)hd * 2);
    }
}

static fkh_target gqa_targets[16];
ParameterizedTestParameters(attn, gqa_is_repeat_kv) {
  int n = fkt_fixture_targets("attn", "exact", gqa_targets, 16);
  return cr_make_param_array(fkh_target, gqa_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, attn, gqa_is_repeat_kv, .timeout = 600) {
  fkt_need(t);
  for (int f = 0; f < NFORMS; f++) {
    fkh_call *calls;
    int n = fkt_attn_cases(forms[f], &calls), grouped = 0;
    fkh_call *rep = calloc((size_t)n, sizeof *rep);
    cr_assert(rep);
    for (int i = 0; i < n; i++) {
      repeat_kv_call(&calls[i], &rep[i]);
      grouped += fkh_i64_of(&calls[i], "group") > 1;
    }
    char err[256];
    cr_assert(fkh_run(t, calls, n, err, sizeof err) == 0, "%s", err);
    cr_assert(fkh_run(t, rep, n, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < n; i++) {
      const uint16_t *a = fkh_buf_of(&calls[i], "y"), *b = fkh_buf_of(&rep[i], "y");
      size_t ny = calls[i].v[fkh_field_index(&calls[i], "y")].buf.nbytes / 2;
      for (size_t e = 0; e < ny; e++)
        if (a[e] != b[e])
          cr_assert_fail("%s %s %s: y[%zu] grouped 0x%04x, repeat_kv 0x%04x", t->label, forms[f], calls[i].name, e,
                         a[e], b[e]);
    }
    cr_log_info("%s %s: %d calls (%d with group > 1) == repeat_kv", t->label, forms[f], n, grouped);
    cr_assert(grouped > 100);
    fkt_free_cases(calls, n);
    fkt_free_cases(rep, n);
  }
}

/* prefill == P decode calls: row i of a prefill call == the decode form (same d, linear or ring)
 * at position pos + i over the same cache, bit for bit, on the same target. A ring prefill's R
 * slots (R = W + P - 1 + slack) are copied into a W-slot ring (position p at slot p mod W) for
 * the decode: the decode form's ring is its window. */
static void decode_rows(fkh_call *pc, fkh_call *dc) {
  const int hd = hd_of(pc), ring = ring_of(pc);
  const int64_t rows = fkh_i64_of(pc, "rows"), kvh = fkh_i64_of(pc, "kv_heads"), group = fkh_i64_of(pc, "group");
  const int64_t pos = fkh_i64_of(pc, "pos"), heads = kvh * group;
  char id[40], name[200];
  snprintf(id, sizeof id, ring ? "attn_decode_ring%d" : "attn_decode%d", hd);
  for (int64_t i = 0; i < rows; i++) {
    fkh_call *d = &dc[i];
    snprintf(name, sizeof name, "%s_row%lld", pc->name, (long long)i);
    fkh_call_init(d, id, name);
    const int64_t p = pos + i;
    fkh_set_i64(d, "kv_heads", kvh);
    fkh_set_i64(d, "group", group);
    fkh_set_i64(d, "pos", p);
    int64_t slots = p + 1, W = 0, R = 0;
    if (ring) {
      W = fkh_i64_of(pc, "window"), R = fkh_i64_of(pc, "ring");
      slots = W;
      fkh_set_i64(d, "slot", p % W);
      fkh_set_i64(d, "ring", W);
    }
    fkh_set_i64(d, "k_ld_head", slots * hd);
    fkh_set_i64(d, "k_ld_row", hd);
    fkh_set_i64(d, "v_ld_head", hd);
    fkh_set_i64(d, "v_ld_row", kvh * hd);
    uint16_t *q = fkh_set_buf(d, "q", (size_t)(heads * hd + 1));
    memcpy(q, (const uint16_t *)fkh_buf_of(pc, "q") + i * fkh_i64_of(pc, "q_ld"), (size_t)(heads * hd) * 2);
    uint16_t *k = fkh_set_buf(d, "k", (size_t)(kvh * slots * hd + 1));
    uint16_t *v = fkh_set_buf(d, "v", (size_t)(slots * kvh * hd + 1));
    const uint16_t *pk = fkh_buf_of(pc, "k"), *pv = fkh_buf_of(pc, "v");
    const int64_t first = ring ? (p + 1 > W ? p + 1 - W : 0) : 0;
    for (int64_t g = 0; g < kvh; g++)
      for (int64_t a = first; a <= p; a++) {   /* positions of the row's window */
        int64_t src = ring ? a % R : a, dst = ring ? a % W : a;
        memcpy(k + g * slots * hd + dst * hd, pk + g * fkh_i64_of(pc, "k_ld_head") + src * fkh_i64_of(pc, "k_ld_row"),
               (size_t)hd * 2);
        memcpy(v + dst * kvh * hd + g * hd, pv + g * fkh_i64_of(pc, "v_ld_head") + src * fkh_i64_of(pc, "v_ld_row"),
               (size_t)hd * 2);
      }
    fkh_set_buf(d, "y", (size_t)(heads * hd + 1));
    int64_t n = ring ? (p + 1 < W ? p + 1 : W) : p + 1;
    fkh_set_buf(d, "s", (size_t)((n + 15) / 16 * 16));
  }
}

static fkh_target prefill_targets[16];
ParameterizedTestParameters(attn, prefill_is_decodes) {
  int n = fkt_fixture_targets("attn", "exact", prefill_targets, 16);
  return cr_make_param_array(fkh_target, prefill_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, attn, prefill_is_decodes, .timeout = 900) {
  fkt_need(t);
  for (int f = NFORMS; f < NALL; f++) {
    fkh_call *calls;
    int n = fkt_attn_cases(forms[f], &calls), nd = 0, multi = 0, at_limit = 0;
    for (int i = 0; i < n; i++) {
      nd += (int)fkh_i64_of(&calls[i], "rows");
      multi += fkh_i64_of(&calls[i], "rows") > 1;
      if (ring_of(&calls[i]))
        at_limit += fkh_i64_of(&calls[i], "rows") > 1 &&
                    fkh_i64_of(&calls[i], "rows") == fkh_i64_of(&calls[i], "ring") - fkh_i64_of(&calls[i], "window") + 1 &&
                    fkh_i64_of(&calls[i], "pos") >= fkh_i64_of(&calls[i], "window");
    }
    fkh_call *dec = calloc((size_t)nd + 1, sizeof *dec);
    cr_assert(dec);
    for (int i = 0, o = 0; i < n; i++) {
      decode_rows(&calls[i], &dec[o]);
      o += (int)fkh_i64_of(&calls[i], "rows");
    }
    char err[256];
    cr_assert(fkh_run(t, calls, n, err, sizeof err) == 0, "%s", err);
    cr_assert(fkh_run(t, dec, nd, err, sizeof err) == 0, "%s", err);
    for (int i = 0, o = 0; i < n; i++) {
      fkh_call *c = &calls[i];
      const int64_t rows = fkh_i64_of(c, "rows"), yld = fkh_i64_of(c, "y_ld");
      const int64_t width = fkh_i64_of(c, "kv_heads") * fkh_i64_of(c, "group") * hd_of(c);
      const uint16_t *y = fkh_buf_of(c, "y");
      for (int64_t r = 0; r < rows; r++, o++) {
        const uint16_t *yd = fkh_buf_of(&dec[o], "y");
        for (int64_t e = 0; e < width; e++)
          if (y[r * yld + e] != yd[e])
            cr_assert_fail("%s %s %s: row %lld y[%lld] prefill 0x%04x, decode at pos %lld 0x%04x", t->label, forms[f],
                           c->name, (long long)r, (long long)e, y[r * yld + e], yd[e],
                           (long long)(fkh_i64_of(c, "pos") + r));
      }
    }
    cr_log_info("%s %s: %d prefill calls (%d with P > 1, %d at the ring limit P = R - W + 1 past a full window) == %d "
                "decode calls", t->label, forms[f], n, multi, at_limit, nd);
    cr_assert(multi > 30);
    if (f >= NFORMS + 2) cr_assert(at_limit > 5);
    fkt_free_cases(calls, n);
    fkt_free_cases(dec, nd);
  }
}

/* the wide forms and their base forms */
static const char *const wide_forms[][2] = { { "attn_decode64_wide", "attn_decode64" },
                                             { "attn_decode_ring64_wide", "attn_decode_ring64" },
                                             { "attn_prefill64_wide", "attn_prefill64" },
                                             { "attn_prefill_ring64_wide", "attn_prefill_ring64" },
                                             { "attn_decode32_wide", "attn_decode32" } };
enum { NWIDE = sizeof wide_forms / sizeof wide_forms[0] };

static fkh_target wide_targets[16];
ParameterizedTestParameters(attn, wide_is_base) {
  int n = fkt_fixture_targets("attn", "exact", wide_targets, 16);
  return cr_make_param_array(fkh_target, wide_targets, (size_t)n);
}

ParameterizedTest(fkh_target *t, attn, wide_is_base, .timeout = 900) {
  fkt_need(t);
  for (int f = 0; f < NWIDE; f++) {
    fkh_call *w, *b;
    int n = fkt_attn_cases(wide_forms[f][0], &w), nb = fkt_attn_cases(wide_forms[f][1], &b);
    cr_assert_eq(n, nb, "%s: %d cases, %s: %d", wide_forms[f][0], n, wide_forms[f][1], nb);
    char err[256];
    cr_assert(fkh_run(t, w, n, err, sizeof err) == 0, "%s", err);
    cr_assert(fkh_run(t, b, n, err, sizeof err) == 0, "%s", err);
    long widened = 0, nan = 0;
    for (int i = 0; i < n; i++) {
      fkh_call *c = &w[i];
      cr_assert(!c->failed && !b[i].failed, "%s %s: %s", t->label, c->name, c->failed ? c->why : b[i].why);
      size_t yb = c->v[fkh_field_index(c, "y")].buf.nbytes;
      cr_assert(yb == b[i].v[fkh_field_index(&b[i], "y")].buf.nbytes);
      cr_assert(memcmp(fkh_buf_of(c, "y"), fkh_buf_of(&b[i], "y"), yb) == 0, "%s %s: y differs from %s's", t->label,
                c->name, wide_forms[f][1]);
      const int pf = fkh_field_index(c, "rows") >= 0;
      const int64_t rows = pf ? fkh_i64_of(c, "rows") : 1, yld = pf ? fkh_i64_of(c, "y_ld") : 0;
      const int64_t ywld = pf ? fkh_i64_of(c, "yw_ld") : 0;
      const int64_t width = fkh_i64_of(c, "kv_heads") * fkh_i64_of(c, "group") * hd_of(c);
      const uint16_t *y = fkh_buf_of(c, "y");
      const uint32_t *yw = fkh_buf_of(c, "yw");
      const size_t nyw = c->v[fkh_field_index(c, "yw")].buf.nbytes / 4;
      for (size_t e = 0; e < nyw; e++) {
        const int64_t r = ywld ? (int64_t)e / ywld : 0, col = ywld ? (int64_t)e % ywld : (int64_t)e;
        if (r < rows && col < width) {
          const uint32_t want = (uint32_t)y[r * yld + col] << 16;
          if (yw[e] != want)
            cr_assert_fail("%s %s %s: row %lld yw[%lld] 0x%08x, y 0x%04x widened 0x%08x", t->label, wide_forms[f][0],
                           c->name, (long long)r, (long long)col, yw[e], y[r * yld + col], want);
          widened++;
          nan += (want & 0x7fffffffu) > 0x7f800000u;
        } else {
          cr_assert(yw[e] == 0x7fa5a5a5u, "%s %s %s: yw[%zu] outside the rows written (0x%08x)", t->label,
                    wide_forms[f][0], c->name, e, yw[e]);
        }
      }
    }
    cr_log_info("%s %s: %d cases, %ld outputs (%ld NaN) == %s's y, widened", t->label, wide_forms[f][0], n, widened,
                nan, wide_forms[f][1]);
    cr_assert(nan > 0, "%s: no NaN output reached yw", wide_forms[f][0]);
    fkt_free_cases(w, n);
    fkt_free_cases(b, n);
  }
}
