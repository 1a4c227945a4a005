/* tests/test_perturb.c: each gate must see the error it exists for.
 *
 * A gate that cannot fail proves nothing. Here every gate is fed a known error and must
 * report it: a changed rounding bias, a reordered reduction (tree and chains), a skipped
 * residual commit, a wrong row stride, a flipped fixture byte, a write past a buffer, and the
 * same errors seen through the AArch64 runner; for the quantized GEMV forms' fast tier, each
 * perturbation of its model against the fast stamps, and the bound and fixture gates. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contract/contract.h"
#include "suite.h"

static fkh_target best_host(void) {
  fkh_target t = fkh_host("avx512");
  char why[128];
  return fkh_available(&t, why, sizeof why) ? t : fkh_host("avx2");
}

static void expect_caught(const char *form, fkt_builder build, fkh_target stamp, int perturb, const char *what) {
  fkt_need(&stamp);
  char first[512];
  int bad = fkt_count_mismatches(form, build, stamp, fkh_contract(perturb), first, sizeof first);
  cr_log_info("%s on %s: %d cases differ; first: %s", what, form, bad, first);
  cr_assert(bad > 0, "%s on %s: the stamp-vs-contract gate saw nothing", what, form);
}

/* Whether a form writes bf16 (so has a rounding rule to perturb). */
static int rounds_to_bf16(const fkh_form *fm) {
  for (int i = 0; i < fm->nfields; i++)
    if (fm->fields[i].kind == FK_FIELD_PTR && (fm->fields[i].dir == FK_DIR_OUT || fm->fields[i].dir == FK_DIR_INOUT) &&
        fm->fields[i].elem == FK_ELEM_BF16)
      return 1;
  return 0;
}

/* Every form of a leaf, one perturbation. */
static void expect_caught_all(const char *leaf, fkt_builder build, int perturb, const char *what) {
  int n = 0;
  for (int f = 0; f < fkh_nforms; f++) {
    if (strcmp(fkh_forms[f].leaf, leaf) != 0) continue;
    /* the commit perturbation applies to the forms with state: RMSNorm's add forms, ShortConv */
    if (perturb == FKC_SKIP_COMMIT && strncmp(fkh_forms[f].form, "add", 3) != 0 && strcmp(leaf, "shortconv") != 0 &&
        strcmp(leaf, "istft") != 0)
      continue;
    if (perturb == FKC_RNE_BIAS && !rounds_to_bf16(&fkh_forms[f])) continue;
    /* int16 PCM and a ring the flush zeroes: istft_flush_i16 stores no float at all */
    if (perturb == FKC_NAN_PAYLOAD && !strcmp(fkh_forms[f].id, "istft_flush_i16")) continue;
    /* q4k's k is a multiple of 256: no tile past k, no tail */
    if ((perturb == FKC_TAIL_PADDED || perturb == FKC_TAIL_RESET) && !strncmp(fkh_forms[f].id, "gemv_q4k_", 9)) continue;
    fkh_target host = best_host();
    if (!fkh_host_stamp(f, host.variant, NULL)) continue;   /* a form of the fast tier only */
    expect_caught(fkh_forms[f].id, build, best_host(), perturb, what);
    n++;
  }
  cr_assert(n > 0, "no forms of %s", leaf);
}

Test(perturb, rounding_bias) {
  expect_caught_all("gemv", fkt_gemv_cases, FKC_RNE_BIAS, "round-half-up");
  expect_caught_all("rmsnorm", fkt_rmsnorm_cases, FKC_RNE_BIAS, "round-half-up");
  expect_caught_all("shortconv", fkt_shortconv_cases, FKC_RNE_BIAS, "round-half-up");
  expect_caught_all("qkprep", fkt_qkprep_cases, FKC_RNE_BIAS, "round-half-up");
  expect_caught_all("swiglu", fkt_swiglu_cases, FKC_RNE_BIAS, "round-half-up");
}

/* swiglu: silu computed as g * sigmoid(g) = g * (1 / (1 + exp(-g))) (one rounding more than the
 * template's g / (1 + exp(-g)); no bf16 g rounds to another bf16 silu that way, so form f32 shows
 * it), silu not rounded to bf16 before the product (bf16 forms), and the product rounded half-up
 * (the bf16 forms' RNE ties; bf16_wide stores f32, so expect_caught_all skips it for the rounding
 * bias: it is checked here on its own, its h holding the rounded bits widened) */
Test(perturb, swiglu_silu_and_product_rounding) {
  expect_caught("swiglu_f32", fkt_swiglu_cases, best_host(), FKC_SILU_SIGMOID, "silu as g * sigmoid(g)");
  expect_caught("swiglu_bf16", fkt_swiglu_cases, best_host(), FKC_SILU_UNROUNDED, "silu not rounded to bf16");
  expect_caught("swiglu_bf16_wide", fkt_swiglu_cases, best_host(), FKC_SILU_UNROUNDED, "silu not rounded to bf16");
  expect_caught("swiglu_bf16_wide", fkt_swiglu_cases, best_host(), FKC_RNE_BIAS, "round-half-up (widened)");
  expect_caught("swiglu_f32", fkt_swiglu_cases, fkh_remote("neon", "max"), FKC_SILU_SIGMOID,
                "silu as g * sigmoid(g) (AArch64)");
  expect_caught("swiglu_bf16", fkt_swiglu_cases, fkh_remote("neon", "neoverse-n1"), FKC_RNE_BIAS,
                "round-half-up (AArch64)");
}

/* The canonical NaN (issue 18): a contract that stores a NaN as its arithmetic made it (RNE's NaN
 * (u >> 16) | 0x40 with sign and payload, f32 NaNs and copies as they are) differs from the stamps
 * on every form that stores floats, through the multi-NaN cases (tests/leaves/cases_*.c,
 * nan_meet*) and the NaN cases before them; on the host and through the AArch64 runner. */
Test(perturb, nan_payload_kept, .timeout = 600) {
  static const struct { const char *leaf; fkt_builder build; } leaves[] = {
    { "rmsnorm", fkt_rmsnorm_cases }, { "gemv", fkt_gemv_cases }, { "shortconv", fkt_shortconv_cases },
    { "qkprep", fkt_qkprep_cases }, { "vmath", fkt_vmath_cases }, { "irfft", fkt_irfft_cases },
    { "istft", fkt_istft_cases }, { "swiglu", fkt_swiglu_cases }, { "embed", fkt_embed_cases },
    { "attn", fkt_attn_cases },
  };
  for (size_t i = 0; i < sizeof leaves / sizeof leaves[0]; i++)
    expect_caught_all(leaves[i].leaf, leaves[i].build, FKC_NAN_PAYLOAD, "NaN payload kept");
  fkh_target neon = fkh_remote("neon", "max"), n1 = fkh_remote("neon", "neoverse-n1");
  expect_caught("gemv_f32_bias", fkt_gemv_cases, neon, FKC_NAN_PAYLOAD, "NaN payload kept (AArch64)");
  expect_caught("gemv_bf16_rne_add_packed", fkt_gemv_cases, n1, FKC_NAN_PAYLOAD, "NaN payload kept (AArch64)");
  expect_caught("shortconv_bf16", fkt_shortconv_cases, neon, FKC_NAN_PAYLOAD, "NaN payload kept (AArch64)");
  expect_caught("embed_gather_bf16", fkt_embed_cases, n1, FKC_NAN_PAYLOAD, "NaN copied with its payload (AArch64)");
  expect_caught("istft_frame", fkt_istft_cases, neon, FKC_NAN_PAYLOAD, "NaN payload kept (AArch64)");
  expect_caught("swiglu_f32", fkt_swiglu_cases, neon, FKC_NAN_PAYLOAD, "NaN payload kept (AArch64)");
  /* the bfcvt variant's stamps (BFCVTN keeps a NaN's payload until the stamp replaces it) */
  fkh_target bfcvt = fkh_remote("bfcvt", "max");
  expect_caught("shortconv_bf16", fkt_shortconv_cases, bfcvt, FKC_NAN_PAYLOAD, "NaN payload kept (AArch64 bfcvt)");
  expect_caught("gemv_bf16_rne_packed", fkt_gemv_cases, bfcvt, FKC_NAN_PAYLOAD, "NaN payload kept (AArch64 bfcvt)");
}

/* sample argmax: ties at the maximum (and among NaNs) going to the highest index instead of the
 * lowest (torch's and numpy's rule); seen on the host and through the AArch64 runner */
Test(perturb, sample_argmax_tie_rule) {
  expect_caught("sample_argmax", fkt_sample_cases, best_host(), FKC_SAMPLE_TIE_LAST, "ties to the last index");
  expect_caught("sample_argmax", fkt_sample_cases, fkh_remote("neon", "max"), FKC_SAMPLE_TIE_LAST,
                "ties to the last index (AArch64)");
}

Test(perturb, reordered_reduction_tree) {
  expect_caught_all("gemv", fkt_gemv_cases, FKC_TREE_PAIRWISE, "pairwise tree");
  expect_caught_all("rmsnorm", fkt_rmsnorm_cases, FKC_TREE_PAIRWISE, "pairwise tree");
  expect_caught_all("qkprep", fkt_qkprep_cases, FKC_TREE_PAIRWISE, "pairwise tree");
}

Test(perturb, reordered_reduction_lanes) {
  expect_caught_all("gemv", fkt_gemv_cases, FKC_LANES_PERMUTED, "permuted lanes");
  expect_caught_all("rmsnorm", fkt_rmsnorm_cases, FKC_LANES_PERMUTED, "permuted lanes");
  expect_caught_all("qkprep", fkt_qkprep_cases, FKC_LANES_PERMUTED, "permuted lanes");
}

/* gemv tails: the stamps add -0 in the accumulator lanes past K (xs holds -0 past k, the weights
 * +0), which leaves -0, inf and NaN lanes as they are. A tail over +0 padding on both sides turns
 * a -0 lane into +0, a tail that clears those lanes loses an inf or NaN: the tail_* cases of
 * tests/leaves/cases_gemv.c see both, on every exact gemv form (the packed ones through
 * fk_gemv_pack), on the host and through the AArch64 runner. */
static int gemv_cases_named(const char *form, fkh_call **out, const char *prefix) {
  fkh_call *all;
  int n = fkt_gemv_cases(form, &all), k = 0;
  for (int i = 0; i < n; i++) {
    if (strncmp(all[i].name, prefix, strlen(prefix)) == 0) all[k++] = all[i];
    else fkh_call_free(&all[i]);
  }
  *out = all;
  return k;
}
/* the -0 cases alone, and the inf and NaN ones alone: each perturbation is seen by the cases
 * made for it, not only by the others */
static int gemv_tail_zero_cases(const char *form, fkh_call **out) { return gemv_cases_named(form, out, "tail_neg_zero"); }
static int gemv_tail_inf_cases(const char *form, fkh_call **out) { return gemv_cases_named(form, out, "tail_inf"); }
static int gemv_tail_nan_cases(const char *form, fkh_call **out) { return gemv_cases_named(form, out, "tail_nan"); }

Test(perturb, gemv_tail_lanes, .timeout = 300) {
  expect_caught_all("gemv", gemv_tail_zero_cases, FKC_TAIL_PADDED, "tail over +0 padding");
  expect_caught_all("gemv", gemv_tail_inf_cases, FKC_TAIL_RESET, "tail lanes reset (inf)");
  expect_caught_all("gemv", gemv_tail_nan_cases, FKC_TAIL_RESET, "tail lanes reset (NaN)");
  expect_caught("gemv_bf16_rne_packed", gemv_tail_zero_cases, fkh_remote("neon", "max"), FKC_TAIL_PADDED,
                "tail over +0 padding (AArch64)");
  expect_caught("gemv_f32", gemv_tail_nan_cases, fkh_remote("neon", "max"), FKC_TAIL_RESET,
                "tail lanes reset (NaN, AArch64)");
}

/* the quantized formats' traps (docs/design.md "Quantized weights"): a block's weights scaled by the
 * other block of its tile, a q4 byte's nibbles read the other way round, the block boundary one
 * element early; on every quantized gemv form on the host, and through the AArch64 runner */
Test(perturb, gemv_quant_layout, .timeout = 300) {
  int n = 0;
  for (int f = 0; f < fkh_nforms; f++) {
    const char *id = fkh_forms[f].id;
    if (strncmp(id, "gemv_q8_", 8) != 0 && strncmp(id, "gemv_q4_", 8) != 0) continue;
    expect_caught(id, fkt_gemv_cases, best_host(), FKC_Q_SCALE_NEIGHBOR, "scale of the other block");
    expect_caught(id, fkt_gemv_cases, best_host(), FKC_Q_BLOCK_SHIFT, "block boundary one element early");
    if (id[6] == '4') expect_caught(id, fkt_gemv_cases, best_host(), FKC_Q_NIBBLES_SWAPPED, "nibbles swapped");
    n++;
  }
  cr_assert_eq(n, 8, "quantized gemv forms: %d", n);
  expect_caught("gemv_q4_bf16_rne", fkt_gemv_cases, fkh_remote("neon", "max"), FKC_Q_NIBBLES_SWAPPED,
                "nibbles swapped (AArch64)");
  expect_caught("gemv_q8_f32_bias", fkt_gemv_cases, fkh_remote("neon", "neoverse-n1"), FKC_Q_SCALE_NEIGHBOR,
                "scale of the other block (AArch64)");
}

/* q4k's traps (docs/design.md "Quantized weights"): a sub-block's d sc and dmin m from the other
 * sub-block of its tile, the sub-block boundary one element early (past a super-record: the next
 * one's), a byte's nibbles read the other way round, the minimum added instead of subtracted; on
 * every q4k form on the host, and through the AArch64 runner */
Test(perturb, gemv_q4k_layout, .timeout = 300) {
  int n = 0;
  for (int f = 0; f < fkh_nforms; f++) {
    const char *id = fkh_forms[f].id;
    if (strncmp(id, "gemv_q4k_", 9) != 0) continue;
    expect_caught(id, fkt_gemv_cases, best_host(), FKC_Q_SCALE_NEIGHBOR, "sc and m of the other sub-block");
    expect_caught(id, fkt_gemv_cases, best_host(), FKC_Q_BLOCK_SHIFT, "sub-block boundary one element early");
    expect_caught(id, fkt_gemv_cases, best_host(), FKC_Q_NIBBLES_SWAPPED, "nibbles swapped");
    expect_caught(id, fkt_gemv_cases, best_host(), FKC_Q4K_MIN_ADDED, "minimum added");
    n++;
  }
  cr_assert_eq(n, 4, "q4k gemv forms: %d", n);
  expect_caught("gemv_q4k_bf16_rne_add", fkt_gemv_cases, fkh_remote("neon", "neoverse-n1"), FKC_Q_BLOCK_SHIFT,
                "sub-block boundary one element early (AArch64)");
  expect_caught("gemv_q4k_f32", fkt_gemv_cases, fkh_remote("neon", "max"), FKC_Q4K_MIN_ADDED,
                "minimum added (AArch64)");
}

Test(perturb, skipped_residual_commit) {
  expect_caught_all("rmsnorm", fkt_rmsnorm_cases, FKC_SKIP_COMMIT, "skipped commit");
}

/* embed: the codebooks summed in another order (reversed, a pairwise tree), and the x6 repeat one
 * row short; each must differ from the stamps of the forms it applies to */
Test(perturb, embed_codebook_order_and_repeat) {
  static const char *const forms[] = { "embed_codebook_mean", "embed_codebook_mean_x6" };
  for (int i = 0; i < 2; i++) {
    expect_caught(forms[i], fkt_embed_cases, best_host(), FKC_LANES_PERMUTED, "codebooks summed in reverse");
    expect_caught(forms[i], fkt_embed_cases, best_host(), FKC_TREE_PAIRWISE, "codebooks summed pairwise");
  }
  expect_caught("embed_codebook_mean_x6", fkt_embed_cases, best_host(), FKC_CURSOR_OFF_BY_ONE, "x6 repeat one row short");
  expect_caught("embed_gather_bf16", fkt_embed_cases, best_host(), FKC_CURSOR_OFF_BY_ONE, "ids read one slot late");
  expect_caught("embed_codebook_mean_x6", fkt_embed_cases, fkh_remote("neon", "max"), FKC_LANES_PERMUTED,
                "codebooks summed in reverse (AArch64)");
  /* the bf16 form: the same sum orders and repeat, and the mean rounded half up */
  expect_caught("embed_codebook_mean_x6_bf16", fkt_embed_cases, best_host(), FKC_LANES_PERMUTED,
                "codebooks summed in reverse (bf16)");
  expect_caught("embed_codebook_mean_x6_bf16", fkt_embed_cases, best_host(), FKC_TREE_PAIRWISE,
                "codebooks summed pairwise (bf16)");
  expect_caught("embed_codebook_mean_x6_bf16", fkt_embed_cases, best_host(), FKC_CURSOR_OFF_BY_ONE,
                "x6 repeat one row short (bf16)");
  expect_caught("embed_codebook_mean_x6_bf16", fkt_embed_cases, best_host(), FKC_RNE_BIAS, "mean rounded half up");
  expect_caught("embed_codebook_mean_x6_bf16", fkt_embed_cases, fkh_remote("neon", "max"), FKC_RNE_BIAS,
                "mean rounded half up (AArch64)");
  /* the fixture check sees them too: liquid-audio's sums are in codebook order, its x6 repeat whole */
  static const struct { const char *fixture; int perturb; } fx_cases[] = {
    { "codebook_mean_frames12", FKC_LANES_PERMUTED }, { "codebook_mean_frames12", FKC_TREE_PAIRWISE },
    { "codebook_mean_x6_frames5", FKC_LANES_PERMUTED }, { "codebook_mean_x6_frames5", FKC_CURSOR_OFF_BY_ONE },
  };
  for (int i = 0; i < 4; i++) {
    char path[600], err[600], msg[600];
    snprintf(path, sizeof path, "%s/embed/%s.manifest", FKT_FIXTURE_DIR, fx_cases[i].fixture);
    fkfix fx;
    fkh_call c;
    cr_assert(fkfix_load(path, &fx, err, sizeof err) == 0, "%s", err);
    cr_assert(fkt_fixture_call(&fx, &c, err, sizeof err) == 0, "%s", err);
    fkh_invoke_contract(&c, FKC_EXACT);
    cr_assert(fkt_fixture_check(&fx, &c, 0, msg, sizeof msg) == 0, "exact contract fails %s: %s", path, msg);
    fkh_call_free(&c);
    cr_assert(fkt_fixture_call(&fx, &c, err, sizeof err) == 0, "%s", err);
    fkh_invoke_contract(&c, fx_cases[i].perturb);
    cr_assert(fkt_fixture_check(&fx, &c, 0, msg, sizeof msg) > 0, "perturbation %d passed %s", fx_cases[i].perturb, path);
    cr_log_info("embed fixture, perturbation %d caught: %s", fx_cases[i].perturb, msg);
    fkh_call_free(&c);
    fkfix_free(&fx);
  }
}

/* attn: the softmax sum (and the dot products) along another tree, the softmax sum in another
 * lane order, the window off by one slot, round half up: each must differ from the stamps of
 * every form; the off-by-one window also through the AArch64 runner and the fixture gate
 * (transformers' window). */
Test(perturb, attn_softmax_order_and_window, .timeout = 300) {
  expect_caught_all("attn", fkt_attn_cases, FKC_TREE_PAIRWISE, "softmax sum and dots along the pairwise tree");
  expect_caught_all("attn", fkt_attn_cases, FKC_LANES_PERMUTED, "softmax sum in one lane, in order of j");
  expect_caught_all("attn", fkt_attn_cases, FKC_CURSOR_OFF_BY_ONE, "window off by one slot");
  expect_caught_all("attn", fkt_attn_cases, FKC_RNE_BIAS, "round-half-up");
  expect_caught("attn_decode_ring64", fkt_attn_cases, fkh_remote("neon", "max"), FKC_CURSOR_OFF_BY_ONE,
                "window off by one slot (AArch64)");
  /* one fixture per kind of window, through fkt_fixture_check (the gate itself logs failures as
   * errors, which fail the process): the exact contract passes, the window off by one does not */
  static const char *const fixtures[] = { "decode64_g1_pos16", "decode_ring64_w30_kv2_g4_pos29" };
  for (int i = 0; i < 2; i++) {
    char path[600], err[600], msg[600];
    snprintf(path, sizeof path, "%s/attn/%s.manifest", FKT_FIXTURE_DIR, fixtures[i]);
    fkfix fx;
    cr_assert(fkfix_load(path, &fx, err, sizeof err) == 0, "%s", err);
    for (int perturb = FKC_EXACT; perturb <= FKC_CURSOR_OFF_BY_ONE; perturb += FKC_CURSOR_OFF_BY_ONE) {
      fkh_call c;
      cr_assert(fkt_fixture_call(&fx, &c, err, sizeof err) == 0, "%s", err);
      fkh_invoke_contract(&c, perturb);
      int bad = fkt_fixture_check(&fx, &c, 0, msg, sizeof msg);
      if (perturb == FKC_EXACT) cr_assert(bad == 0, "exact contract fails %s: %s", fixtures[i], msg);
      else cr_assert(bad > 0, "the window off by one passed the fixture %s", fixtures[i]);
      if (bad) cr_log_info("window off by one caught: %s", msg);
      fkh_call_free(&c);
    }
    fkfix_free(&fx);
  }
}

/* The fixture gates of the state leaves (sequences on the leaf's own state) see each error
 * alone, with no contract model to compare with: the perturbed model is the target. */
static void expect_state_gate_fails(const char *leaf, int perturb, const char *what) {
  fkh_target t = fkh_contract(perturb);
  fkt_state_stats st = fkt_state_fixture_gate(leaf, &t, 0);
  cr_log_info("%s fixture gate, %s: %d failures over %d calls", leaf, what, st.bad, st.calls);
  cr_assert(st.bad > 0, "%s fixture gate: %s went unseen", leaf, what);
}

Test(perturb, skipped_carry_commit) {
  expect_caught_all("shortconv", fkt_shortconv_cases, FKC_SKIP_COMMIT, "skipped carry commit");
  expect_state_gate_fails("shortconv", FKC_SKIP_COMMIT, "skipped carry commit");
}

Test(perturb, off_by_one_cursor) {
  expect_caught_all("qkprep", fkt_qkprep_cases, FKC_CURSOR_OFF_BY_ONE, "off-by-one cursor");
  expect_state_gate_fails("qkprep", FKC_CURSOR_OFF_BY_ONE, "off-by-one cursor");
}

Test(perturb, swapped_rotate_half) {
  expect_caught_all("qkprep", fkt_qkprep_cases, FKC_ROTATE_SWAPPED, "swapped rotation halves");
  expect_state_gate_fails("qkprep", FKC_ROTATE_SWAPPED, "swapped rotation halves");
}

Test(perturb, fft_twiddle_sign) {
  expect_caught_all("irfft", fkt_irfft_cases, FKC_ROTATE_SWAPPED, "conjugated twiddles");
}

static void expect_istft_gate_fails(int perturb, const char *what) {
  fkh_target t = fkh_contract(perturb);
  fkt_state_stats st = fkt_istft_fixture_gate(&t, 0);
  cr_log_info("istft stream fixtures, %s: %d of %d streams fail", what, st.bad, st.sequences);
  cr_assert(st.bad > 0, "istft stream fixtures: %s went unseen", what);
}

Test(perturb, istft_ring_order_and_commit, .timeout = 120) {
  expect_caught_all("istft", fkt_istft_cases, FKC_CURSOR_OFF_BY_ONE, "frame one ring segment late");
  expect_caught_all("istft", fkt_istft_cases, FKC_SKIP_COMMIT, "finished segment not cleared");
  expect_istft_gate_fails(FKC_CURSOR_OFF_BY_ONE, "frame one ring segment late");
  expect_istft_gate_fails(FKC_SKIP_COMMIT, "finished segment not cleared");
}

Test(perturb, state_gates_see_rounding) {
  expect_state_gate_fails("shortconv", FKC_RNE_BIAS, "round-half-up");
}

Test(perturb, seen_through_the_aarch64_runner, .timeout = 300) {
  fkh_target neon = fkh_remote("neon", "max");
  expect_caught("gemv_bf16_rne", fkt_gemv_cases, neon, FKC_RNE_BIAS, "round-half-up (AArch64)");
  expect_caught("rmsnorm_f32", fkt_rmsnorm_cases, neon, FKC_TREE_PAIRWISE, "pairwise tree (AArch64)");
  expect_caught("shortconv_bf16", fkt_shortconv_cases, neon, FKC_SKIP_COMMIT, "skipped carry commit (AArch64)");
  expect_caught("qkprep_cis64", fkt_qkprep_cases, neon, FKC_CURSOR_OFF_BY_ONE, "off-by-one cursor (AArch64)");
  fkh_target bfcvt = fkh_remote("bfcvt", "max");
  expect_caught("shortconv_bf16_wide", fkt_shortconv_cases, bfcvt, FKC_RNE_BIAS, "round-half-up (AArch64 bfcvt)");
  expect_caught("gemv_bf16_rne_add", fkt_gemv_cases, bfcvt, FKC_RNE_BIAS, "round-half-up (AArch64 bfcvt)");
}

/* A stamp run with a wrong row stride against the contract run with the right one. */
static void wrong_stride(const char *form, fkt_builder build, const char *field, int64_t delta) {
  fkh_target t = best_host();
  fkt_need(&t);
  fkh_call *calls;
  int n = build(form, &calls), bad = 0, tried = 0;
  for (int i = 0; i < n; i++) {
    fkh_call ref, wrong;
    fkh_call_copy(&ref, &calls[i]);
    fkh_call_copy(&wrong, &calls[i]);
    int64_t s = fkh_i64_of(&wrong, field);
    /* only where the shrunk stride stays inside the buffer */
    if (s + delta < 1 || strstr(calls[i].name, "random_") == NULL) goto next;
    fkh_set_i64(&wrong, field, s + delta);
    char err[256], msg[512];
    cr_assert(fkh_run(&t, &wrong, 1, err, sizeof err) == 0, "%s", err);
    fkh_invoke_contract(&ref, FKC_EXACT);
    tried++;
    if (!fkh_same_outputs(&wrong, &ref, msg, sizeof msg)) bad++;
  next:
    fkh_call_free(&ref);
    fkh_call_free(&wrong);
  }
  fkt_free_cases(calls, n);
  cr_log_info("%s with %s %+lld: %d of %d cases caught", form, field, (long long)delta, bad, tried);
  cr_assert(tried > 50 && bad > tried / 2, "%s: wrong %s caught in only %d of %d cases", form, field, bad, tried);
}

Test(perturb, wrong_row_stride) {
  wrong_stride("gemv_bf16_rne", fkt_gemv_cases, "ldw", -1);
  wrong_stride("rmsnorm_f32", fkt_rmsnorm_cases, "x_stride", -1);
  wrong_stride("rmsnorm_add_bf16", fkt_rmsnorm_cases, "r_stride", -1);
}

/* A stamp writing past its output buffer breaks the canary and fails the call. */
Test(perturb, write_past_the_end) {
  fkh_target targets[2] = { best_host(), fkh_remote("neon", "max") };
  for (int k = 0; k < 2; k++) {
    fkt_need(&targets[k]);
    fkh_call c;
    fkh_call_init(&c, "gemv_bf16_rne", "short_y");
    fkh_set_i64(&c, "k", 40);
    fkh_set_i64(&c, "ldw", 40);
    fkh_set_i64(&c, "ldx", 40);
    fkh_set_i64(&c, "m", 1);
    fkh_set_i64(&c, "ldy", 4);
    fkh_set_i64(&c, "row_begin", 0);
    fkh_set_i64(&c, "row_end", 4);
    fkh_set_buf(&c, "w", 160);
    fkh_set_buf(&c, "x", 40);
    fkh_set_buf(&c, "xs", 64);
    fkh_set_buf(&c, "y", 3);       /* one row short */
    char err[256];
    cr_assert(fkh_run(&targets[k], &c, 1, err, sizeof err) == 0, "%s", err);
    cr_assert(c.failed, "%s: write past the end not seen", targets[k].label);
    cr_assert(strstr(c.why, "outside buffer 'y'") != NULL, "%s", c.why);
    fkh_call_free(&c);
  }
}

/* ---------------------------------------------------------------- fixtures -------------- */

static void copy_file(const char *from, const char *to) {
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  cr_assert(a && b, "copy %s -> %s", from, to);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, a)) > 0) cr_assert(fwrite(buf, 1, n, b) == n);
  fclose(a);
  fclose(b);
}

/* A flipped payload byte fails the reader with a digest error naming the payload. */
Test(perturb, flipped_fixture_byte) {
  char dir[] = "/tmp/fkt_fixXXXXXX";
  cr_assert(mkdtemp(dir));
  const char *names[] = { "bf16_rne_k1_ties_normal.manifest", "bf16_rne_k1_ties_normal.w.zst", "bf16_rne_k1_ties_normal.x.zst",
                          "bf16_rne_k1_ties_normal.s_f64.zst", "bf16_rne_k1_ties_normal.y_rne.zst" };
  char from[600], to[600], err[600];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(from, sizeof from, "%s/gemv/%s", FKT_FIXTURE_DIR, names[i]);
    snprintf(to, sizeof to, "%s/%s", dir, names[i]);
    copy_file(from, to);
  }
  snprintf(to, sizeof to, "%s/%s", dir, names[0]);
  fkfix fx;
  cr_assert(fkfix_load(to, &fx, err, sizeof err) == 0, "intact copy must load: %s", err);
  fkfix_free(&fx);
  /* flip one bit of the decompressed content: rewrite the x payload with one value changed */
  const char *xz = "/bf16_rne_k1_ties_normal.x.zst";
  char xpath[600];
  snprintf(xpath, sizeof xpath, "%s%s", dir, xz);
  FILE *f = fopen(xpath, "r+b");
  cr_assert(f);
  fseek(f, -4, SEEK_END);   /* inside the (uncompressed, stored) block of a small frame */
  int ch = fgetc(f);
  fseek(f, -4, SEEK_END);
  fputc(ch ^ 0x01, f);
  fclose(f);
  int rc = fkfix_load(to, &fx, err, sizeof err);
  cr_log_info("flipped byte: %s", err);
  cr_assert(rc != 0, "a flipped payload byte was not seen");
  cr_assert(strstr(err, "'x'") != NULL || strstr(err, ".x.zst") != NULL, "error does not name the tensor: %s", err);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(to, sizeof to, "%s/%s", dir, names[i]);
    unlink(to);
  }
  rmdir(dir);
}

/* The fixture gate, independent of the contract model, sees a changed rounding rule (the
 * bit-exact tie boundaries) and a wrong stride (the float64 bound). */
Test(perturb, fixture_gate_sees_rounding_and_stride) {
  char path[600], err[600], msg[600];
  snprintf(path, sizeof path, "%s/gemv/bf16_rne_k1_ties_normal.manifest", FKT_FIXTURE_DIR);
  fkfix fx;
  cr_assert(fkfix_load(path, &fx, err, sizeof err) == 0, "%s", err);
  fkh_call c;
  cr_assert(fkt_fixture_call(&fx, &c, err, sizeof err) == 0, "%s", err);
  fkh_invoke_contract(&c, FKC_EXACT);
  cr_assert(fkt_fixture_check(&fx, &c, 0, msg, sizeof msg) == 0, "exact contract fails the ties fixture: %s", msg);
  fkh_call_free(&c);
  cr_assert(fkt_fixture_call(&fx, &c, err, sizeof err) == 0, "%s", err);
  fkh_invoke_contract(&c, FKC_RNE_BIAS);
  cr_assert(fkt_fixture_check(&fx, &c, 0, msg, sizeof msg) > 0, "round-half-up passed the ties fixture");
  cr_log_info("rounding caught: %s", msg);
  fkh_call_free(&c);
  fkfix_free(&fx);

  snprintf(path, sizeof path, "%s/gemv/bf16_rne_ldw_ldx.manifest", FKT_FIXTURE_DIR);
  cr_assert(fkfix_load(path, &fx, err, sizeof err) == 0, "%s", err);
  cr_assert(fkt_fixture_call(&fx, &c, err, sizeof err) == 0, "%s", err);
  fkh_set_i64(&c, "ldw", fkh_i64_of(&c, "k"));
  fkh_target t = best_host();
  cr_assert(fkh_run(&t, &c, 1, err, sizeof err) == 0, "%s", err);
  cr_assert(fkt_fixture_check(&fx, &c, 0, msg, sizeof msg) > 0, "a wrong row stride passed the fixture gate");
  cr_log_info("stride caught: %s", msg);
  fkh_call_free(&c);
  fkfix_free(&fx);
}

/* The fast-tier gate (gemv_fast_f64) sees an x rounded by truncation instead of RNE: the fast
 * stamp is fed x already truncated to bf16 (which it then passes through unchanged), and its
 * outputs are checked against the bound of the original x. */
Test(perturb, fast_gate_sees_truncated_x) {
  fkh_target t = fkh_host("avx512bf16");
  fkt_need(&t);
  fkh_call *calls;
  int n = fkt_gemv_cases("gemv_f32", &calls), caught = 0, tried = 0;
  for (int i = 0; i < n; i++) {
    if (strcmp(calls[i].name, "fast_round_up") != 0) continue;
    fkh_call cut;
    fkh_call_copy(&cut, &calls[i]);
    float *x = fkh_buf_of(&cut, "x");
    int64_t total = fkh_i64_of(&cut, "m") * fkh_i64_of(&cut, "ldx");
    for (int64_t e = 0; e < total; e++) x[e] = fkt_f32((uint32_t)fkt_bf16_of(x[e]) << 16);
    char err[256];
    cr_assert(fkh_run(&t, &cut, 1, err, sizeof err) == 0, "%s", err);
    for (int64_t r = fkh_i64_of(&cut, "row_begin"); r < fkh_i64_of(&cut, "row_end"); r++) {
      double e, ref = fkt_gemv_reference(&calls[i], 0, r, 1, &e), bound = fkt_gemv_bound(&calls[i], ref, e, 1);
      tried++;
      if (!fkt_gemv_within(fkt_gemv_output(&cut, 0, r), ref, bound)) caught++;
    }
    fkh_call_free(&cut);
  }
  fkt_free_cases(calls, n);
  cr_log_info("truncated x: %d of %d outputs outside gemv_fast_f64", caught, tried);
  cr_assert(tried > 0 && caught == tried, "truncated x passed the fast gate in %d of %d outputs", tried - caught, tried);
}

/* attn prefill: the causal limit one past the row inside the block (row i < P - 1 also sees
 * position pos + i + 1, the next row's key, already in the cache): every prefill form's gate
 * fails, on the host and through the AArch64 runner. */
Test(perturb, attn_prefill_causal_limit, .timeout = 300) {
  static const char *const pf[] = { "attn_prefill64", "attn_prefill32", "attn_prefill_ring64", "attn_prefill_ring32" };
  for (int i = 0; i < 4; i++) {
    expect_caught(pf[i], fkt_attn_cases, best_host(), FKC_CURSOR_OFF_BY_ONE, "prefill causal limit off by one");
    expect_caught(pf[i], fkt_attn_cases, fkh_remote("neon", "max"), FKC_CURSOR_OFF_BY_ONE,
                  "prefill causal limit off by one");
  }
}

/* attn wide forms: yw holding o before its RNE, or RNE(o) keeping a NaN's sign and payload (the
 * rule before issue 18): every wide form's gate fails, on the host and through the AArch64 runner;
 * the fixture gate (yw against the reference, bit for bit y widened) sees the unrounded yw, and
 * the embed fixture gate sees codebook_mean_x6_bf16's repeat one row short. */
Test(perturb, wide_outputs_rounding_and_nan_rule, .timeout = 300) {
  static const char *const wf[] = { "attn_decode64_wide", "attn_decode_ring64_wide", "attn_prefill64_wide",
                                    "attn_prefill_ring64_wide", "attn_decode32_wide" };
  for (int i = 0; i < 5; i++) {
    expect_caught(wf[i], fkt_attn_cases, best_host(), FKC_WIDE_UNROUNDED, "yw not rounded to bf16");
    expect_caught(wf[i], fkt_attn_cases, best_host(), FKC_NAN_PAYLOAD, "NaN payload kept in y and yw");
  }
  expect_caught("attn_prefill_ring64_wide", fkt_attn_cases, fkh_remote("neon", "max"), FKC_NAN_PAYLOAD,
                "NaN payload kept in y and yw (AArch64)");
  expect_caught("attn_decode64_wide", fkt_attn_cases, fkh_remote("neon", "neoverse-n1"), FKC_WIDE_UNROUNDED,
                "yw not rounded to bf16 (AArch64)");
  static const struct { const char *fixture; int perturb; } fx_cases[] = {
    { "attn/decode64_g1_pos16", FKC_WIDE_UNROUNDED }, { "attn/decode32_g1_pos100", FKC_WIDE_UNROUNDED },
    { "attn/prefill_ring64_w30_kv2_g4_pos77_p16", FKC_WIDE_UNROUNDED },
    { "embed/codebook_mean_x6_frames5", FKC_CURSOR_OFF_BY_ONE },
  };
  const fkh_target host = best_host();
  for (size_t i = 0; i < sizeof fx_cases / sizeof fx_cases[0]; i++) {
    char path[600], err[600], msg[600];
    snprintf(path, sizeof path, "%s/%s.manifest", FKT_FIXTURE_DIR, fx_cases[i].fixture);
    fkfix fx;
    cr_assert(fkfix_load(path, &fx, err, sizeof err) == 0, "%s", err);
    for (int perturb = FKC_EXACT; perturb >= 0; perturb = perturb == FKC_EXACT ? fx_cases[i].perturb : -1) {
      fkh_call base, c;
      cr_assert(fkt_fixture_call(&fx, &base, err, sizeof err) == 0, "%s", err);
      cr_assert(fkt_companion_call(&base, &host, &c), "%s: no companion form", path);
      fkh_invoke_contract(&c, perturb);
      int bad = fkt_fixture_check(&fx, &c, 0, msg, sizeof msg);
      if (perturb == FKC_EXACT)
        cr_assert(bad == 0, "exact contract (%s) fails %s: %s", fkh_forms[c.form].id, path, msg);
      else cr_assert(bad > 0, "perturbation %d of %s passed %s", perturb, fkh_forms[c.form].id, path);
      if (bad) cr_log_info("%s fixture, perturbation %d caught: %s", fkh_forms[c.form].id, perturb, msg);
      fkh_call_free(&base);
      fkh_call_free(&c);
    }
    fkfix_free(&fx);
  }
}

/* A fixture-backed form under one perturbation of its contract: the exact contract passes the
 * fixture's boundaries, the perturbed one fails at least one. */
static void expect_fixture_caught(const char *fixture, int perturb, const char *what) {
  char path[600], err[600], msg[600];
  snprintf(path, sizeof path, "%s/%s.manifest", FKT_FIXTURE_DIR, fixture);
  fkfix fx;
  fkh_call c;
  cr_assert(fkfix_load(path, &fx, err, sizeof err) == 0, "%s", err);
  cr_assert(fkt_fixture_call(&fx, &c, err, sizeof err) == 0, "%s", err);
  fkh_invoke_contract(&c, FKC_EXACT);
  cr_assert(fkt_fixture_check(&fx, &c, 0, msg, sizeof msg) == 0, "exact contract fails %s: %s", path, msg);
  fkh_call_free(&c);
  cr_assert(fkt_fixture_call(&fx, &c, err, sizeof err) == 0, "%s", err);
  fkh_invoke_contract(&c, perturb);
  int bad = fkt_fixture_check(&fx, &c, 0, msg, sizeof msg);
  cr_assert(bad > 0, "%s passed %s", what, path);
  cr_log_info("%s caught by %s: %s", what, fixture, msg);
  fkh_call_free(&c);
  fkfix_free(&fx);
}

/* rmsnorm once forms (liquid-audio's RMSNorm): rounded twice as the LFM2 forms are, on the host
 * and through the AArch64 runner, and by liquid-audio's fixtures (rmsnorm_once_f64 / _torch);
 * the order and bias perturbations reach them through the expect_caught_all tests above. */
Test(perturb, rmsnorm_once_rounded_twice, .timeout = 300) {
  static const char *const of[] = { "rmsnorm_bf16_wide_once", "rmsnorm_add_f32_wide_once" };
  for (int i = 0; i < 2; i++) {
    expect_caught(of[i], fkt_rmsnorm_cases, best_host(), FKC_ONCE_ROUNDED_TWICE, "once form rounded twice");
    expect_caught(of[i], fkt_rmsnorm_cases, fkh_remote("neon", "max"), FKC_ONCE_ROUNDED_TWICE,
                  "once form rounded twice (AArch64)");
  }
  expect_fixture_caught("rmsnorm/bf16_wide_once_hidden1024", FKC_ONCE_ROUNDED_TWICE, "once form rounded twice");
  expect_fixture_caught("rmsnorm/add_f32_wide_once_n1023", FKC_ONCE_ROUNDED_TWICE, "once form rounded twice");
  expect_fixture_caught("rmsnorm/add_f32_wide_once_ties", FKC_RNE_BIAS, "residual rounded half up");
}

/* embed codebook_sum_bf16: the codebooks summed in reverse or pairwise, the sum rounded half up;
 * on the host, through the AArch64 runner, and by torch's Embedding(...).sum(0) fixtures */
Test(perturb, embed_codebook_sum_order_and_rounding, .timeout = 300) {
  expect_caught("embed_codebook_sum_bf16", fkt_embed_cases, best_host(), FKC_LANES_PERMUTED, "codebooks summed in reverse");
  expect_caught("embed_codebook_sum_bf16", fkt_embed_cases, best_host(), FKC_TREE_PAIRWISE, "codebooks summed pairwise");
  expect_caught("embed_codebook_sum_bf16", fkt_embed_cases, best_host(), FKC_RNE_BIAS, "sum rounded half up");
  expect_caught("embed_codebook_sum_bf16", fkt_embed_cases, fkh_remote("neon", "max"), FKC_LANES_PERMUTED,
                "codebooks summed in reverse (AArch64)");
  expect_caught("embed_codebook_sum_bf16", fkt_embed_cases, fkh_remote("neon", "neoverse-n1"), FKC_RNE_BIAS,
                "sum rounded half up (AArch64)");
  static const int perturbs[] = { FKC_LANES_PERMUTED, FKC_TREE_PAIRWISE, FKC_RNE_BIAS };
  for (int i = 0; i < 3; i++) {
    expect_fixture_caught("embed/codebook_sum_bf16_vocab2049_frames1", perturbs[i], "codebook sum order or rounding");
    expect_fixture_caught("embed/codebook_sum_bf16_hidden2048_frames2", perturbs[i], "codebook sum order or rounding");
  }
}

/* ---------------------------------------------------------------- quantized, fast tier -- */

/* The quantized forms' fast tier (tests/contract/gemv_qfast.c) is deterministic: its stamps equal the
 * fast contract model bit for bit (gemv::q_fast). Each perturbation of that model must differ from
 * the stamps: lanes reading other elements, the pairwise tree, a block's weights scaled by the other
 * block of its tile or the block boundary one element early, q4 nibbles swapped, activations
 * quantized toward zero, the activation scale rounded to binary16 (llama.cpp's Q8_0 activations),
 * round half up (bf16 outputs), a NaN stored with its payload. On every quantized form on the host
 * stamps (each variant's forms) and each perturbation on one form through the AArch64 runner. */
static const struct { int perturb; const char *what; } q_fast_perturbs[] = {
  { FKC_LANES_PERMUTED, "elements in other lanes (lane l: q8 k = 64t + 4l + i, q4 k = 64t + l + 8i)" },
  { FKC_TREE_PAIRWISE, "pairwise tree" },
  { FKC_Q_SCALE_NEIGHBOR, "scale of the other block" },
  { FKC_Q_BLOCK_SHIFT, "block boundary one element early" },
  { FKC_Q_NIBBLES_SWAPPED, "nibbles swapped" },
  { FKC_XQ_TRUNC, "activations quantized toward zero" },
  { FKC_XQ_SCALE_F16, "activation scale rounded to binary16" },
  { FKC_RNE_BIAS, "round-half-up" },
  { FKC_NAN_PAYLOAD, "NaN payload kept" },
};
enum { NQ_PERTURBS = sizeof q_fast_perturbs / sizeof q_fast_perturbs[0] };

static int q_fast_applies(const char *form, int perturb) {
  if (perturb == FKC_Q_NIBBLES_SWAPPED) return strstr(form, "_q4_") != NULL;
  if (perturb == FKC_RNE_BIAS) return rounds_to_bf16(&fkh_forms[fkh_form_index(form)]);
  return 1;
}

/* The fast stamps of the quantized forms in the registry: host variants, AArch64 ones (qemu -cpu max). */
static int q_fast_stamps(fkh_target *out, int cap) {
  fkh_target all[16];
  int n = fkt_fixture_targets("gemv", "fast", all, 16), k = 0;
  for (int i = 0; i < n && k < cap; i++)
    if (all[i].kind != FKH_CONTRACT && fkt_target_runs(&all[i], fkh_form_index("gemv_q8_f32"))) out[k++] = all[i];
  return k;
}

/* Runs form's cases on the stamp once, then each selected perturbation of the fast model against
 * them; asserts each differs somewhere. */
static void expect_q_fast_caught(const char *form, fkh_target stamp, const int *which, int nwhich) {
  fkt_need(&stamp);
  fkh_call *got, *want;
  const int n = fkt_gemv_cases(form, &got);
  char err[256], msg[512];
  cr_assert(fkh_run(&stamp, got, n, err, sizeof err) == 0, "%s: %s", stamp.label, err);
  for (int k = 0; k < nwhich; k++) {
    const int p = q_fast_perturbs[which[k]].perturb;
    const fkh_target model = fkh_contract_fast(p);
    fkt_gemv_cases(form, &want);
    cr_assert(fkh_run(&model, want, n, err, sizeof err) == 0, "%s", err);
    int bad = 0;
    char first[512] = "";
    for (int i = 0; i < n; i++) {
      cr_assert(!got[i].failed, "%s %s: %s", stamp.label, got[i].name, got[i].why);
      if (fkh_same_outputs(&got[i], &want[i], msg, sizeof msg)) continue;
      if (!bad++) snprintf(first, sizeof first, "%s", msg);
    }
    cr_log_info("%s on %s (%s): %d of %d cases differ; first: %s", q_fast_perturbs[which[k]].what, form, stamp.label,
                bad, n, first);
    cr_assert(bad > 0, "%s on %s: the stamp-vs-fast-contract gate saw nothing (%s)", q_fast_perturbs[which[k]].what,
              form, stamp.label);
    fkt_free_cases(want, n);
  }
  fkt_free_cases(got, n);
}

Test(perturb, gemv_q_fast_order_and_quantizer, .timeout = 300) {
  fkh_target stamps[8];
  const int ns = q_fast_stamps(stamps, 8);
  cr_assert(ns > 0, "no fast stamps of the quantized gemv forms in the registry");
  const char *qf[16];
  int nf = 0, last = -1;
  for (int f = 0; f < fkh_nforms && nf < 16; f++)
    if (!strncmp(fkh_forms[f].id, "gemv_q8_", 8) || !strncmp(fkh_forms[f].id, "gemv_q4_", 8)) {
      if (!strcmp(fkh_forms[f].id, "gemv_q4_bf16_rne_add")) last = nf;   /* every perturbation applies to it */
      qf[nf++] = fkh_forms[f].id;
    }
  cr_assert(nf == 8 && last >= 0, "quantized gemv forms: %d", nf);
  for (int s = 0; s < ns; s++)
    for (int f = 0; f < nf; f++) {
      cr_assert(fkt_target_runs(&stamps[s], fkh_form_index(qf[f])), "%s has no stamp of %s", stamps[s].label, qf[f]);
      int which[NQ_PERTURBS], nw = 0;
      for (int k = 0; k < NQ_PERTURBS; k++) {
        const int p = q_fast_perturbs[k].perturb;
        /* the host: every perturbation on every form; AArch64 (qemu): perturbation k on form k mod 8,
         * or on q4_bf16_rne_add where it does not apply to that one */
        const int home = q_fast_applies(qf[k % nf], p) ? k % nf : last;
        if (q_fast_applies(qf[f], p) && (stamps[s].kind == FKH_HOST || home == f)) which[nw++] = k;
      }
      if (nw) expect_q_fast_caught(qf[f], stamps[s], which, nw);
    }
}

/* The bound gate (gemv_q_fast_f64, tests/leaves/gemv_bounds.c), independent of the model: activations
 * quantized toward zero (the fast model with FKC_XQ_TRUNC) put every output of the designed case
 * q_fast_round_up (x = q + 0.9 on its block's grid, all products positive: to nearest errs by 0.1
 * per element, truncation by 0.9, all one way) outside the bound, on every quantized form, while
 * the model itself lies within it there. */
Test(perturb, gemv_q_fast_bound_sees_truncation) {
  int forms = 0;
  for (int f = 0; f < fkh_nforms; f++) {
    const char *id = fkh_forms[f].id;
    if (strncmp(id, "gemv_q8_", 8) != 0 && strncmp(id, "gemv_q4_", 8) != 0) continue;
    for (int p = FKC_EXACT; p >= 0; p = p == FKC_EXACT ? FKC_XQ_TRUNC : -1) {
      fkh_call *calls;
      const int n = gemv_cases_named(id, &calls, "q_fast_round_up");
      const fkh_target t = fkh_contract_fast(p);
      char err[256];
      cr_assert(n == 1 && fkh_run(&t, calls, n, err, sizeof err) == 0, "%s: %d cases: %s", id, n, err);
      int tried = 0, outside = 0;
      for (int64_t r = fkh_i64_of(&calls[0], "row_begin"); r < fkh_i64_of(&calls[0], "row_end"); r++) {
        double e, ref = fkt_gemv_reference(&calls[0], 0, r, 1, &e), bound = fkt_gemv_bound(&calls[0], ref, e, 1);
        double y = fkt_gemv_output(&calls[0], 0, r);
        tried++;
        if (!fkt_gemv_within(y, ref, bound)) outside++;
        if (r == 0) cr_log_info("%s %s: row 0: %.9g, reference %.9g, bound %.3g", t.label, id, y, ref, bound);
      }
      if (p == FKC_EXACT) cr_assert(tried > 0 && outside == 0, "%s: the fast model outside its bound", id);
      else cr_assert(outside == tried, "%s: truncation passed the bound in %d of %d outputs", id, tried - outside, tried);
      fkt_free_cases(calls, n);
    }
    forms++;
  }
  cr_assert_eq(forms, 8, "quantized gemv forms: %d", forms);
}

/* The quantized fixtures' gemv_q_fast_f64 boundaries (the fast-tier fixture gate) see the layout
 * traps in the fast contract model, on every manifest of a quantized form: a block's weights scaled
 * by the other block, the block boundary one element early, q4 nibbles swapped (the float bound is
 * blind to an order change, and to a quantizer as good as the tier's: toward zero or a binary16
 * scale, whose errors are as large as to nearest's but not one-signed on gguf's weights). */
Test(perturb, gemv_q_fast_fixture_gate, .timeout = 120) {
  /* the first four asserted (the model passes every fixture, each trap fails most), the others logged */
  static const int perturbs[] = { FKC_EXACT, FKC_Q_SCALE_NEIGHBOR, FKC_Q_BLOCK_SHIFT, FKC_Q_NIBBLES_SWAPPED,
                                  FKC_XQ_TRUNC, FKC_XQ_SCALE_F16, FKC_LANES_PERMUTED, FKC_TREE_PAIRWISE };
  char dir[512], err[600], msg[600];
  snprintf(dir, sizeof dir, "%s/gemv", FKT_FIXTURE_DIR);
  char **paths;
  const int n = fkfix_list(dir, &paths, err, sizeof err);
  cr_assert(n > 0, "%s", err);
  for (size_t p = 0; p < sizeof perturbs / sizeof perturbs[0]; p++) {
    int tried = 0, caught = 0;
    for (int i = 0; i < n; i++) {
      fkfix fx;
      fkh_call c;
      cr_assert(fkfix_load(paths[i], &fx, err, sizeof err) == 0, "%s", err);
      if (strncmp(fx.form, "q8_", 3) && strncmp(fx.form, "q4_", 3)) {
        fkfix_free(&fx);
        continue;
      }
      if (perturbs[p] == FKC_Q_NIBBLES_SWAPPED && strncmp(fx.form, "q4_", 3)) {
        fkfix_free(&fx);
        continue;
      }
      cr_assert(fkt_fixture_call(&fx, &c, err, sizeof err) == 0, "%s", err);
      fkh_invoke_contract_tier(&c, perturbs[p], 1);
      tried++;
      if (fkt_fixture_check(&fx, &c, 1, msg, sizeof msg) > 0) caught++;
      fkh_call_free(&c);
      fkfix_free(&fx);
    }
    cr_log_info("fast model, perturbation %d: %d of %d quantized fixtures fail gemv_q_fast_f64", perturbs[p], caught, tried);
    if (p == 0) cr_assert(tried == 48 && caught == 0, "the fast model fails %d of %d quantized fixtures", caught, tried);
    else if (p < 4) cr_assert(tried >= 24 && 2 * caught > tried, "perturbation %d: only %d of %d fixtures fail",
                              perturbs[p], caught, tried);
  }
  fkfix_list_free(paths, n);
}
