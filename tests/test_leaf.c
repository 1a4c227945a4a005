/* tests/test_leaf.c: the suite every leaf gets from the registry. CMakeLists.txt builds one
 * test_<leaf> per leaf of the stamp manifest from this file (FKT_LEAF names the leaf) and, where
 * it exists, tests/test_<leaf>.c with the leaf's further tests; ctest runs it as `<leaf>`.
 *   leaf::exact           every exact stamp == the contract model, bit for bit, over the leaf's
 *                         cases (>= 200 per form), on x86_64 and on AArch64 (each stamp once under
 *                         qemu: -cpu neoverse-n1 for neon, -cpu max for bfcvt); AArch64 stamps ==
 *                         x86_64 stamps (the same qemu run); the contract model built for AArch64 ==
 *                         the host's
 *   leaf::fixtures        the leaf's fixture gate (its template's fixture_gate) on the contract
 *                         model and every exact stamp, companion forms through their base form's
 *                         fixtures
 *   leaf::fast_fixtures   every fast stamp against the boundaries of the leaf's fast-tier class
 *   leaf::gate_sees_every_output  the comparison itself perturbed: one flipped bit at either end of
 *                         any output field's extent, in any case, makes two runs differ */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "suite.h"

#ifndef FKT_LEAF
#error "FKT_LEAF names the leaf (CMakeLists.txt defines it per test_<leaf>)"
#endif

static fkt_builder builder(void) {
  fkt_builder b = fkt_builder_of(FKT_LEAF);
  cr_assert(b, "leaf %s has no case builder (tests/leaves/cases_%s.c: fkt_%s_cases)", FKT_LEAF, FKT_LEAF, FKT_LEAF);
  return b;
}

static fkt_pair pairs[256];
ParameterizedTestParameters(leaf, exact) {
  return cr_make_param_array(fkt_pair, pairs, (size_t)fkt_exact_pairs(FKT_LEAF, pairs, 256));
}
ParameterizedTest(fkt_pair *p, leaf, exact, .timeout = 600) { fkt_check_pair(p, builder()); }

/* The targets of a tier's fixture gate: none when no form of the leaf has fixtures of its own in
 * that tier (each form's template says why: FK_FX_EXEMPT; the coverage test holds it to that). */
static int gate_targets(const char *tier, fkh_target *out, int cap) {
  const fkh_leaf *l = fkh_leaf_of(FKT_LEAF);
  const int bit = !strcmp(tier, "fast") ? FK_TIERS_FAST : FK_TIERS_EXACT;
  int own = 0;
  for (int f = 0; f < fkh_nforms; f++)
    own |= !strcmp(fkh_forms[f].leaf, FKT_LEAF) && fkh_forms[f].fixtures == FK_FX_OWN && (fkh_forms[f].tiers & bit);
  if (!l || l->gate == FK_GATE_NONE || !own) return 0;
  return fkt_fixture_targets(FKT_LEAF, tier, out, cap);
}

static fkh_target exact_targets[16];
ParameterizedTestParameters(leaf, fixtures) {
  return cr_make_param_array(fkh_target, exact_targets, (size_t)gate_targets("exact", exact_targets, 16));
}
ParameterizedTest(fkh_target *t, leaf, fixtures, .timeout = 600) { fkt_fixture_test(FKT_LEAF, t); }

static fkh_target fast_targets[16];
ParameterizedTestParameters(leaf, fast_fixtures) {
  return cr_make_param_array(fkh_target, fast_targets, (size_t)gate_targets("fast", fast_targets, 16));
}
ParameterizedTest(fkh_target *t, leaf, fast_fixtures, .timeout = 600) { fkt_fixture_test(FKT_LEAF, t); }

/* Flips bit 0 of element `at` of field f; returns 0 when the field has no such element. */
static int flip(fkh_call *c, int f, int64_t at) {
  const fkh_field *fd = &fkh_forms[c->form].fields[f];
  const size_t es = (size_t)FK_ELEM_BYTES(fd->elem);
  if (at < 0 || (size_t)(at + 1) * es > c->v[f].buf.nbytes) return 0;
  c->v[f].buf.data[(size_t)at * es] ^= 1;
  return 1;
}

Test(leaf, gate_sees_every_output, .timeout = 300) {
  const fkt_builder build = builder();
  int forms = 0, flips = 0;
  for (int f = 0; f < fkh_nforms; f++) {
    const fkh_form *fm = &fkh_forms[f];
    if (strcmp(fm->leaf, FKT_LEAF) || !(fm->tiers & FK_TIERS_EXACT)) continue;
    fkh_call *a, *b;
    const int n = build(fm->id, &a);
    cr_assert(n > 0, "%s: no cases", fm->id);
    b = calloc((size_t)n, sizeof *b);
    cr_assert(b);
    for (int i = 0; i < n; i++) fkh_call_copy(&b[i], &a[i]);
    char err[256], msg[512];
    const fkh_target contract = fkh_contract(0);
    cr_assert(fkh_run(&contract, a, n, err, sizeof err) == 0, "%s", err);
    cr_assert(fkh_run(&contract, b, n, err, sizeof err) == 0, "%s", err);
    for (int k = 0; k < fm->nfields; k++) {
      const fkh_field *fd = &fm->fields[k];
      if (fd->kind != FK_FIELD_PTR || (fd->dir != FK_DIR_OUT && fd->dir != FK_DIR_INOUT)) continue;
      int seen = 0;
      for (int i = 0; i < n && !seen; i++) {
        cr_assert(fkh_same_outputs(&a[i], &b[i], msg, sizeof msg), "%s %s: the contract differs from itself: %s",
                  fm->id, a[i].name, msg);
        const int64_t e = fkh_extent(&b[i], k);
        const int64_t ends[2] = { 0, e - 1 };
        for (int j = 0; j < 2 && e > 0; j++) {
          cr_assert(flip(&b[i], k, ends[j]), "%s %s: field %s is shorter than its extent %lld", fm->id, a[i].name,
                    fd->name, (long long)e);
          cr_assert(!fkh_same_outputs(&a[i], &b[i], msg, sizeof msg), "%s %s: bit 0 of %s[%lld] flipped, not seen",
                    fm->id, a[i].name, fd->name, (long long)ends[j]);
          flip(&b[i], k, ends[j]);
          flips++;
          seen = 1;
        }
      }
      cr_assert(seen, "%s: no case writes output field %s", fm->id, fd->name);
    }
    fkt_free_cases(a, n);
    fkt_free_cases(b, n);
    forms++;
  }
  cr_log_info("%s: %d exact forms, %d flipped output bits, every one seen by the comparison", FKT_LEAF, forms, flips);
}
