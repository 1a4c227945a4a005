/* tests/test_qkprep.c: q/k norm + RoPE + RNE stamps (templates/qkprep.lua), exact tier.
 *   exact:                 every stamp == contract model, bit for bit (>= 200 random shapes and
 *                          every edge case; q rows, a linear K cache, a ring of W slots that
 *                          wraps), x86_64 and AArch64 (qemu -cpu max, neoverse-n1), AArch64 ==
 *                          x86_64, AArch64 contract build == host build.
 *   rows_one_by_one:       one call of m rows == m calls of one row at the next positions.
 *   writes_only_its_slots: only the heads of the slots of positions [pos, pos + m) change. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

FKT_EXACT_SUITE(qkprep, fkt_qkprep_cases)

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
