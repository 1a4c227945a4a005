/* tests/test_qkprep.c: q/k norm + RoPE + RNE stamps (templates/qkprep.lua), exact tier.
 *   exact:                 every stamp == contract model, bit for bit (>= 200 random shapes and
 *                          every edge case; q rows, a linear K cache, a ring of W slots that
 *                          wraps), x86_64 and AArch64 (qemu -cpu max, neoverse-n1), AArch64 ==
 *                          x86_64, AArch64 contract build == host build.
 *   rows_one_by_one:       one call of m rows == m calls of one row at the next positions.
 *   writes_only_its_slots: only the heads of the slots of positions [pos, pos + m) change.
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "flashkern.h"
#include "suite.h"


static const char *const forms[] = { "qkprep_neox64", "qkprep_neox32", "qkprep_cis64", "qkprep_cis32" };
enum { NFORMS = 4 };

static int hd_of(const fkh_call *c) { return strstr(fkh_forms[c->form].id, "64") ? 64 : 32; }

/* 1 when element e of x belongs to a head of one of the call's rows. */
static int in_slots(const fkh_call *c, int64_t e) {
  int64_t m = fkh_i64_of(c, "m"), heads = fkh_i64_of(c, "heads"), ld_head = fkh_i64_of(c, "ld_head");
  int64_t ld_row = fkh_i64_of(c, "ld_row"), slot = fkh_i64_of(c, "slot"), ring = fkh_i64_of(c, "ring");
  for (int64_t j = 0; j < m; j++) {
    int64_t s = slot + j >= ring ? slot + j - ring : slot + j;
    for (int64_t g = 0; g < heads; g++) {
      int64_t b = g * ld_head + s * ld_row;
      if (e >= b && e < b + hd_of(c)) return 1;
    }
  }
  return 0;
}

static fkh_target stamp_targets[16];
ParameterizedTestParameters(qkprep, rows_one_by_one) {
  int n = fkt_fixture_targets("qkprep", "exact", stamp_targets, 16);
  return cr_make_param_array(fkh_target, stamp_targets + 1, (size_t)(n - 1));   /* not the contract */
}

ParameterizedTest(fkh_target *t, qkprep, rows_one_by_one, .timeout = 600) {
  fkt_need(t);
  for (int f = 0; f < NFORMS; f++) {
    fkh_call *whole;
    int n = fkt_qkprep_cases(forms[f], &whole), nparts = 0, multi = 0;
    int cap = 0;
    for (int i = 0; i < n; i++) cap += (int)fkh_i64_of(&whole[i], "m");
    fkh_call *parts = calloc((size_t)cap + 1, sizeof *parts);
    int *owner = calloc((size_t)cap + 1, sizeof *owner);
    int64_t *row = calloc((size_t)cap + 1, sizeof *row);
    cr_assert(parts && owner && row);
    for (int i = 0; i < n; i++) {
      int64_t m = fkh_i64_of(&whole[i], "m"), ring = fkh_i64_of(&whole[i], "ring");
      multi += m > 1;
      for (int64_t j = 0; j < m; j++) {
        fkh_call *p = &parts[nparts];
        fkh_call_copy(p, &whole[i]);
        int64_t s = fkh_i64_of(&whole[i], "slot") + j;
        fkh_set_i64(p, "m", 1);
        fkh_set_i64(p, "pos", fkh_i64_of(&whole[i], "pos") + j);
        fkh_set_i64(p, "slot", s >= ring && ring > 0 ? s - ring : s);
        owner[nparts] = i, row[nparts] = j;
        nparts++;
      }
    }
    char err[256];
    cr_assert(fkh_run(t, whole, n, err, sizeof err) == 0, "%s", err);
    cr_assert(fkh_run(t, parts, nparts, err, sizeof err) == 0, "%s", err);
    for (int p = 0; p < nparts; p++) {
      const fkh_call *w = &whole[owner[p]];
      const uint16_t *xw = fkh_buf_of((fkh_call *)w, "x"), *xp = fkh_buf_of(&parts[p], "x");
      size_t nx = w->v[fkh_field_index(w, "x")].buf.nbytes / 2;
      for (size_t e = 0; e < nx; e++)
        if (in_slots(&parts[p], (int64_t)e) && xw[e] != xp[e])
          cr_assert_fail("%s %s %s: row %lld, x[%zu]: %lld rows at once 0x%04x, row alone 0x%04x", t->label, forms[f],
                         w->name, (long long)row[p], e, (long long)fkh_i64_of(w, "m"), xw[e], xp[e]);
    }
    cr_log_info("%s %s: %d cases (%d with m > 1), %d one-row calls", t->label, forms[f], n, multi, nparts);
    cr_assert(multi > 100);
    fkt_free_cases(whole, n);
    fkt_free_cases(parts, nparts);
    free(owner);
    free(row);
  }
}

static fkh_target slot_targets[16];
ParameterizedTestParameters(qkprep, writes_only_its_slots) {
  int n = fkt_fixture_targets("qkprep", "exact", slot_targets, 16);
  return cr_make_param_array(fkh_target, slot_targets, (size_t)n);   /* the contract too */
}

ParameterizedTest(fkh_target *t, qkprep, writes_only_its_slots, .timeout = 600) {
  fkt_need(t);
  for (int f = 0; f < NFORMS; f++) {
    fkh_call *calls, *orig;
    int n = fkt_qkprep_cases(forms[f], &calls), ring_wraps = 0;
    long changed = 0;
    fkt_qkprep_cases(forms[f], &orig);
    char err[256];
    cr_assert(fkh_run(t, calls, n, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < n; i++) {
      fkh_call *c = &calls[i];
      const uint16_t *x = fkh_buf_of(c, "x"), *x0 = fkh_buf_of(&orig[i], "x");
      size_t nx = c->v[fkh_field_index(c, "x")].buf.nbytes / 2;
      for (size_t e = 0; e < nx; e++) {
        if (x[e] == x0[e]) continue;
        if (!in_slots(c, (int64_t)e))
          cr_assert_fail("%s %s %s: wrote x[%zu] outside the slots of positions [%lld, %lld)", t->label, forms[f],
                         c->name, e, (long long)fkh_i64_of(c, "pos"), (long long)(fkh_i64_of(c, "pos") + fkh_i64_of(c, "m")));
        changed++;
      }
      for (int v = 0; v < fkh_forms[c->form].nfields; v++) {
        const fkh_field *fd = &fkh_forms[c->form].fields[v];
        if (fd->kind != FK_FIELD_PTR || fd->dir != FK_DIR_IN) continue;
        cr_assert(memcmp(c->v[v].buf.data, orig[i].v[v].buf.data, c->v[v].buf.nbytes) == 0,
                  "%s %s %s: input %s changed", t->label, forms[f], c->name, fd->name);
      }
      ring_wraps += fkh_i64_of(c, "ring") > 0 && fkh_i64_of(c, "slot") + fkh_i64_of(c, "m") > fkh_i64_of(c, "ring");
    }
    cr_log_info("%s %s: %d cases (%d wrap their ring), %ld elements changed, all inside the slots", t->label, forms[f],
                n, ring_wraps, changed);
    cr_assert(ring_wraps >= 10 && changed > 10000);
    fkt_free_cases(calls, n);
    fkt_free_cases(orig, n);
  }
}

/* ------------------------------------------- K and V straight from their projections ----- */

/* The K and V projections write their cache slots themselves (GEMV-RNE's strided destination:
 * per kv head, rows [g*hd, (g+1)*hd) to y_off = g*ld_head + slot*hd - g*hd, ldy = hd, split
 * where the ring wraps), then qkprep transforms K in place: the same bytes as projecting into a
 * scratch plane, copying each head row to its slot and transforming there, with no copy step.
 * Linear cache and a ring of 4 slots that wraps inside the call. */
typedef struct kvgeom { int64_t pos, slot, ring, extent, m; } kvgeom;

static void gemv_into(const fkh_target *t, const uint16_t *w, const float *x, int64_t k, int64_t rb, int64_t re,
                      int64_t m, uint16_t *y, int64_t ny, int64_t y_off, int64_t ldy) {
  fkh_call c;
  fkh_call_init(&c, "gemv_bf16_rne", "kv");
  fkh_set_i64(&c, "k", k);
  fkh_set_i64(&c, "ldw", k);
  fkh_set_i64(&c, "ldx", k);
  fkh_set_i64(&c, "m", m);
  fkh_set_i64(&c, "row_begin", rb);
  fkh_set_i64(&c, "row_end", re);
  fkh_set_i64(&c, "y_off", y_off);
  fkh_set_i64(&c, "ldy", ldy);
  memcpy(fkh_set_buf(&c, "w", (size_t)(re * k)), w, (size_t)(re * k) * 2);
  memcpy(fkh_set_buf(&c, "x", (size_t)(m * k)), x, (size_t)(m * k) * 4);
  fkh_set_buf(&c, "xs", (size_t)fkt_gemv_xs_elems(m, k));
  memcpy(fkh_set_buf(&c, "y", (size_t)ny), y, (size_t)ny * 2);
  char err[256];
  cr_assert(fkh_run(t, &c, 1, err, sizeof err) == 0 && !c.failed, "%s %s", err, c.why);
  memcpy(y, fkh_buf_of(&c, "y"), (size_t)ny * 2);
  fkh_call_free(&c);
}

static void qk_in_place(const fkh_target *t, const char *form, int hd, uint16_t *cache, int64_t n, int64_t heads,
                        kvgeom g, const uint16_t *w, const float *ct, const float *st) {
  fkh_call c;
  fkh_call_init(&c, form, "kv");
  fkh_set_i64(&c, "heads", heads);
  fkh_set_i64(&c, "m", g.m);
  fkh_set_i64(&c, "ld_head", g.extent * hd);
  fkh_set_i64(&c, "ld_row", hd);
  fkh_set_i64(&c, "pos", g.pos);
  fkh_set_i64(&c, "slot", g.slot);
  fkh_set_i64(&c, "ring", g.ring);
  fkh_set_f32(&c, "eps", 1e-5f);
  memcpy(fkh_set_buf(&c, "x", (size_t)n), cache, (size_t)n * 2);
  memcpy(fkh_set_buf(&c, "w", (size_t)hd), w, (size_t)hd * 2);
  int64_t rows = (g.pos + g.m) * hd / 2;
  memcpy(fkh_set_buf(&c, "cos", (size_t)rows), ct, (size_t)rows * 4);
  memcpy(fkh_set_buf(&c, "sin", (size_t)rows), st, (size_t)rows * 4);
  char err[256];
  cr_assert(fkh_run(t, &c, 1, err, sizeof err) == 0 && !c.failed, "%s %s", err, c.why);
  memcpy(cache, fkh_buf_of(&c, "x"), (size_t)n * 2);
  fkh_call_free(&c);
}

static fkh_target kv_targets[16];
ParameterizedTestParameters(qkprep, kv_projection_writes_the_cache_slots) {
  int n = fkt_fixture_targets("qkprep", "exact", kv_targets, 16), k = 0;
  for (int i = 0; i < n; i++)
    if (kv_targets[i].kind != FKH_REMOTE) kv_targets[k++] = kv_targets[i];   /* host stamps and the contract */
  return cr_make_param_array(fkh_target, kv_targets, (size_t)k);
}

ParameterizedTest(fkh_target *t, qkprep, kv_projection_writes_the_cache_slots, .timeout = 120) {
  fkt_need(t);
  static const kvgeom geoms[] = { { 5, 5, 0, 12, 3 }, { 6, 2, 4, 4, 3 }, { 0, 0, 0, 3, 3 } };
  const int64_t k = 96, nkv = 2;
  fkh_rng rng = { 0x6b76u };
  for (int f = 0; f < NFORMS; f++) {
    const int hd = strstr(forms[f], "64") ? 64 : 32;
    for (size_t gi = 0; gi < sizeof geoms / sizeof geoms[0]; gi++) {
      kvgeom g = geoms[gi];
      const int64_t n = nkv * g.extent * hd, rows = nkv * hd;
      uint16_t *wk = malloc((size_t)(rows * k) * 2), *wv = malloc((size_t)(rows * k) * 2), *wn = malloc((size_t)hd * 2);
      float *x = malloc((size_t)(g.m * k) * 4), *ct = malloc((size_t)((g.pos + g.m) * hd / 2) * 4),
            *st = malloc((size_t)((g.pos + g.m) * hd / 2) * 4);
      uint16_t *kd = malloc((size_t)n * 2), *vd = malloc((size_t)n * 2), *ks = malloc((size_t)n * 2),
               *vs = malloc((size_t)n * 2), *plane = malloc((size_t)(g.m * rows) * 2);
      cr_assert(wk && wv && wn && x && ct && st && kd && vd && ks && vs && plane);
      for (int64_t i = 0; i < rows * k; i++) wk[i] = fkh_bf16(&rng, -4, 0), wv[i] = fkh_bf16(&rng, -4, 0);
      for (int64_t i = 0; i < g.m * k; i++) x[i] = fkh_f32(&rng, -2, 2);
      for (int i = 0; i < hd; i++) wn[i] = fkh_bf16(&rng, -1, 0);
      for (int64_t i = 0; i < n; i++) kd[i] = ks[i] = vd[i] = vs[i] = fkh_bf16(&rng, -3, 3);   /* older positions */
      fk_error err;
      cr_assert(fk_rope_table(1e6f, hd, 0, g.pos + g.m, ct, st, &err) == FK_OK);
      /* direct: per kv head, per run of consecutive slots, the projection writes the slots */
      for (int64_t h = 0; h < nkv; h++)
        for (int64_t j = 0; j < g.m;) {
          int64_t s = g.slot + j >= g.ring && g.ring ? g.slot + j - g.ring : g.slot + j;
          int64_t len = g.ring ? (g.ring - s < g.m - j ? g.ring - s : g.m - j) : g.m - j;
          int64_t y_off = h * g.extent * hd + s * hd - h * hd;
          gemv_into(t, wk, x + j * k, k, h * hd, (h + 1) * hd, len, kd, n, y_off, hd);
          gemv_into(t, wv, x + j * k, k, h * hd, (h + 1) * hd, len, vd, n, y_off, hd);
          j += len;
        }
      /* scratch: the plane of m rows, then a copy of each head row to its slot */
      uint16_t *planes[2] = { ks, vs };
      const uint16_t *ws[2] = { wk, wv };
      for (int kv = 0; kv < 2; kv++) {
        for (int64_t i = 0; i < g.m * rows; i++) plane[i] = 0x7fa5;
        gemv_into(t, ws[kv], x, k, 0, rows, g.m, plane, g.m * rows, 0, rows);
        for (int64_t j = 0; j < g.m; j++) {
          int64_t s = g.slot + j >= g.ring && g.ring ? g.slot + j - g.ring : g.slot + j;
          for (int64_t h = 0; h < nkv; h++)
            memcpy(planes[kv] + h * g.extent * hd + s * hd, plane + j * rows + h * hd, (size_t)hd * 2);
        }
      }
      cr_assert(memcmp(vd, vs, (size_t)n * 2) == 0, "%s: V written at its slots differs from V copied there", t->label);
      qk_in_place(t, forms[f], hd, kd, n, nkv, g, wn, ct, st);
      qk_in_place(t, forms[f], hd, ks, n, nkv, g, wn, ct, st);
      cr_assert(memcmp(kd, ks, (size_t)n * 2) == 0, "%s %s: K projected into its slots and transformed in place "
                "differs from the scratch-and-copy path", t->label, forms[f]);
      free(wk), free(wv), free(wn), free(x), free(ct), free(st), free(kd), free(vd), free(ks), free(vs), free(plane);
    }
  }
  cr_log_info("%s: K and V written by their projections at linear and ring slots == scratch plane + copy, "
              "%d forms x %zu geometries", t->label, NFORMS, sizeof geoms / sizeof geoms[0]);
}
