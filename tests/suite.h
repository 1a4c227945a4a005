/* tests/suite.h: what the Criterion suites share: target pairs drawn from the registry,
 * the bit-exact comparison of two targets over a form's cases, and the fixture gate. */
#ifndef FKT_SUITE_H
#define FKT_SUITE_H

#include "fixture/fkfix.h"
#include "harness/fkh.h"
#include "leaves/cases.h"

/* Comparisons of one form over the cases of `builder`: the outputs of a against those of each b[i]
 * (a runs once: an AArch64 stamp's one qemu run serves all its comparisons). */
enum { FKT_PAIR_MAX_B = 4 };
typedef struct fkt_pair {
  char form[40];
  fkh_target a, b[FKT_PAIR_MAX_B];
  int nb;
} fkt_pair;

/* Every exact-tier comparison of one leaf ("gemv"): for each form, each x86_64 stamp against the
 * contract model; each AArch64 stamp (under qemu, on the smaller of -cpu neoverse-n1 and -cpu max
 * that has its features: fkt_fixture_targets) against the contract model and against each x86_64
 * stamp; and the contract model built for AArch64 against the host one. Variants come from the
 * registry tables, never from a list in the tests. */
int fkt_exact_pairs(const char *leaf, fkt_pair *out, int cap);

/* Fixture targets of one tier ("exact": the contract model and every exact stamp; "fast": the fast
 * tier's contract models where the leaf has any (fkh_contract_fast: the quantized GEMV forms) and
 * every fast stamp variant): host stamps, and each AArch64 stamp once, under qemu -cpu neoverse-n1
 * when its features are ASIMD and FEAT_DotProd at most (neon, dotprod: proving they need no more),
 * else -cpu max (bfcvt, bf16: FEAT_BF16). A target runs only the forms it has (fkt_target_runs). */
int fkt_fixture_targets(const char *leaf, const char *tier, fkh_target *out, int cap);

/* 1 for a fast-tier target (a fast stamp variant, or the fast tier's contract models). */
int fkt_is_fast(const fkh_target *t);

/* 1 when target t runs form `form` (an index of fkh_forms): its variant has a stamp of it (from the
 * registry's stamp tables), or, for the contract models, the form has a model in t's tier. */
int fkt_target_runs(const fkh_target *t, int form);

/* Runs a and every b over every case and asserts bit-exactness of each comparison (fails the test
 * with the first mismatches), or skips the test when a side cannot run here. */
void fkt_check_pair(const fkt_pair *p, fkt_builder build);

/* Counts mismatching cases between a and b without asserting (for perturbation tests). */
int fkt_count_mismatches(const char *form, fkt_builder build, fkh_target a, fkh_target b,
                         char *first, size_t firstlen);

/* Skips the current test unless the target can run here. */
void fkt_need(const fkh_target *t);

/* The fixture gate: every manifest of fixtures/<leaf>/ is loaded and validated, its call run
 * on target t, and every boundary compared under its declared contract and tolerance.
 * Returns the number of failing (case, boundary) pairs; messages go to the Criterion log. */
int fkt_fixture_gate(const char *leaf, const fkh_target *t, int *ncases);

/* Fixture boundary check of one call against one loaded fixture (used by the gate and by the
 * perturbation tests). Returns the number of failing boundaries, with the first message. */
int fkt_fixture_check(const fkfix *fx, fkh_call *c, int fast, char *msg, size_t msglen);

/* A bitexact fixture boundary's element rule: got equals want bit for bit (es = 2 for bf16, 4 for
 * f32), or both are NaN. A NaN compares by class against a reference: its payload is the
 * reference's (numpy's integer RNE in fixtures/ref/fkfix.py keeps sign and payload, torch
 * gives 0x7fc0 or 0xffff), not our contract; the exact tier's canonical NaN (0x7fc0 / 0x7fc00000,
 * docs/design.md) is checked bit for bit against the contract model and across ISAs. */
int fkt_fixture_bits_equal(const void *got, const void *want, size_t es);

/* Builds the leaf call described by a fixture (inputs copied, outputs allocated). */
int fkt_fixture_call(const fkfix *fx, fkh_call *c, char *err, size_t errlen);

/* The companion forms' calls over a fixture call of their base form, for target t: every form
 * whose template runs it through the base form's fixtures (FK_FX_VIA) in t's tier: gemv's packed
 * and blocked layouts, attn's <form>_wide (yw laid out as y), embed's <form>_bf16. Returns how many
 * were built into out (at most cap: inputs and scalars copied, outputs zeroed); the first alone:
 * fkt_companion_call. fkt_fixture_check checks a companion against the base form's boundaries. */
int fkt_companion_calls(const fkh_call *base, const fkh_target *t, fkh_call *out, int cap);
int fkt_companion_call(const fkh_call *base, const fkh_target *t, fkh_call *out);

/* The fixture gate of one leaf on one target, as a Criterion test body. */
void fkt_fixture_test(const char *leaf, const fkh_target *t);

/* The fixture gate of a leaf with state (shortconv, qkprep: tests/suite_state.c): each
 * sequence's calls in order, each reading the state the leaf itself left. */
void fkt_state_fixture_test(const char *leaf, const fkh_target *t);

/* The same gate without asserting on the outcome: counts, for the perturbation tests and for
 * the clamp evidence (shortconv manifests with y_clamped: calls, and calls / outputs where
 * y_clamped lies outside the shortconv_f64 bound). */
typedef struct fkt_state_stats {
  int sequences, calls, chained, bad;
  int clamped_calls, clamped_off_calls, clamped_off_outputs;
  long samples;   /* istft: output samples checked */
} fkt_state_stats;
fkt_state_stats fkt_state_fixture_gate(const char *leaf, const fkh_target *t, int loud);

/* The istft streams (fixtures/istft: one manifest per stream): frames then flush on the
 * stamp's own ring, the concatenated output against each reference within its bound tensor. */
fkt_state_stats fkt_istft_fixture_gate(const fkh_target *t, int loud);
void fkt_istft_fixture_test(const fkh_target *t);   /* loud: failures
                                                                                             logged as errors */

/* Every leaf's exact pairs, fixture gates and the gate's own perturbation are tests/test_leaf.c,
 * built for each leaf of the registry; tests/test_<leaf>.c adds a leaf's further tests. */

#ifndef FKT_FIXTURE_DIR
#define FKT_FIXTURE_DIR "fixtures"
#endif

#endif
