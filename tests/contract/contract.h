/* tests/contract/contract.h: the scalar contract models of the exact-tier leaves (and of the
 * deterministic fast tier of the quantized GEMV forms: fkc_<id>_fast below).
 *
 * Plain C over the same argument structs as the stamps (generated/fk_leaves.h). Each model
 * follows its template's order exactly: lane l of chain c, fmaf for every fused multiply-add,
 * the template's reduction tree, the integer RNE rule. They are the bit-exact oracles of the
 * tests and are never linked into the library. Build with -ffp-contract=off: the compiler must
 * neither fuse nor split what is written here.
 *
 * Special values, as every model here and every exact stamp computes them: accumulators start
 * at +0.0f, so a sum of -0 products is +0; lanes past the valid length are left as they are
 * (nothing is added, not even +0). Every NaN a leaf stores (bf16 or f32, outputs and state,
 * copies included) is the canonical quiet NaN 0x7fc00000 / 0x7fc0: the models round with
 * fkc_rne_bits (whose NaN is 0x7fc0) and pass every other stored float through fkc_canon /
 * fkc_canon_bf16, so the payload a NaN has inside a model (the compiler's and the ISA's choice
 * where NaNs meet or are made) never reaches an output; tests compare NaNs bit for bit.
 *
 * A perturbation (fkc_perturb) changes one rule on purpose; the perturbation tests use it to
 * prove that the gates see that kind of error. FKC_EXACT is the contract itself. */
#ifndef FK_CONTRACT_H
#define FK_CONTRACT_H

#include <stdint.h>

#include "fk_leaves.h"

typedef enum fkc_perturb {
  FKC_EXACT = 0,
  FKC_RNE_BIAS,        /* round half up: u + 0x8000, no tie-to-even */
  FKC_TREE_PAIRWISE,   /* lanes summed adjacent-pairwise instead of the halving tree */
  FKC_LANES_PERMUTED,  /* elements reach other lanes than the template's mapping says */
  FKC_SKIP_COMMIT,     /* add forms of RMSNorm: the residual stream is not written; ShortConv:
                          the carry is not committed */
  FKC_CURSOR_OFF_BY_ONE, /* qkprep: rows land one slot (and one table row) past the cursor */
  FKC_ROTATE_SWAPPED,  /* qkprep: the rotation's sign on the other element of each pair */
  FKC_SILU_SIGMOID,    /* swiglu: silu(g) as g * (1 / (1 + exp(-g))), one rounding more (seen in
                          form f32 only: no bf16 g rounds differently in the bf16 forms) */
  FKC_SILU_UNROUNDED,  /* swiglu bf16 forms: silu not rounded to bf16 before the product */
  FKC_SAMPLE_TIE_LAST, /* sample argmax: ties (and NaNs) go to the highest index, not the lowest */
  FKC_SAMPLE_NO_COMMIT, /* sample topk: the PRNG counter is not committed (state left as read) */
  FKC_SAMPLE_TIE_LE,   /* sample topk: s <= kth removed (ties at the k-th value dropped), not s < kth */
  FKC_SAMPLE_RECIP_T,  /* sample topk: s = x * (1 / T) instead of x / T */
  FKC_SAMPLE_CDF_REVERSED, /* sample topk: the cumulative sums run from the highest index down */
  FKC_WIDE_UNROUNDED,  /* attn wide forms: yw holds the f32 output o before its RNE to bf16 */
  FKC_ONCE_ROUNDED_TWICE, /* rmsnorm once forms: h * inv rounded to bf16 before the weight product (the
                             LFM2 forms' two roundings instead of liquid-audio's one) */
  FKC_NAN_PAYLOAD,     /* every leaf: a NaN stored with its payload instead of the canonical one (RNE's
                          NaN is (u >> 16) | 0x40, sign and top payload kept: the rule before issue 18;
                          fkc_canon and fkc_canon_bf16 leave a NaN as the model's arithmetic made it) */
  FKC_TAIL_PADDED,     /* gemv: the accumulator lanes past K in the last tile take fma(+0, +0, acc), a tail
                          over +0 padding on both sides (a -0 lane becomes +0) */
  FKC_TAIL_RESET,      /* gemv: the accumulator lanes past K in the last tile are reset to +0 (a blend
                          from the wrong side: an inf or NaN they held is lost) */
  FKC_Q_SCALE_NEIGHBOR, /* gemv quantized forms: each block's weights scaled by the other block of its tile */
  FKC_Q_NIBBLES_SWAPPED, /* gemv q4 forms: a byte's nibbles read the other way round (the parities swapped) */
  FKC_Q_BLOCK_SHIFT,   /* gemv quantized forms: the block boundary one element early (k = 32b + 31 takes block
                          b + 1's scale) */
  FKC_XQ_TRUNC,        /* gemv quantized forms, fast tier: activations quantized toward zero (truncf) instead of
                          to nearest, ties to even */
  FKC_XQ_SCALE_F16,    /* gemv quantized forms, fast tier: the activation scale d rounded to binary16 (RNE) and
                          used so, as llama.cpp's Q8_0 activations hold it */
  FKC_Q4K_MIN_ADDED,   /* gemv q4k forms: the minimum added, fma(u, d sc, +dmin m), not subtracted */
} fkc_perturb;

/* Integer RNE of an f32 bit pattern to bf16 (contract rule; NaN -> the canonical 0x7fc0). */
uint16_t fkc_rne_bits(uint32_t u, fkc_perturb p);
/* The canonical NaN of every stored value: NaN -> 0x7fc00000 (f32), 0x7fc0 (bf16); other values
 * unchanged. FKC_NAN_PAYLOAD: the NaN as it is. */
float fkc_canon(float x, fkc_perturb p);
uint16_t fkc_canon_bf16(uint16_t h, fkc_perturb p);
float fkc_bf16_to_f32(uint16_t h);
uint32_t fkc_f32_bits(float f);
float fkc_bits_f32(uint32_t u);

/* Weight (n, i) of an n x k matrix in a quantized packed layout (q4: 1, q8: 0), q * d from the
 * layout's formula (docs/design.md "Quantized weights"; tests/contract/gemv.c), or as perturbed. */
float fkc_gemv_quant_weight(const uint8_t *wp, int q4, int64_t n, int64_t k, int64_t i, fkc_perturb p);
/* Weight (n, i) of an n x k matrix in q4k's packed layout: RN(d sc u - dmin m) from the layout's
 * formula (docs/design.md "Quantized weights"; tests/contract/gemv.c), or as perturbed. */
float fkc_gemv_q4k_weight(const uint8_t *wp, int64_t n, int64_t k, int64_t i, fkc_perturb p);
/* The same weight as its quant *q and its binary16 scale *d (widened exactly), apart. */
void fkc_gemv_quant_parts(const uint8_t *wp, int q4, int64_t n, int64_t k, int64_t i, fkc_perturb p, int *q, float *d);
/* The quantized forms' fast tier: one activation row x of k (a multiple of 32) quantized per block of
 * 32 as the stamps do (tests/contract/gemv_qfast.c): q[0..k) int8 in [-127, 127], d[0..k/32) the f32
 * scales (NaN for a block holding a non-finite x), so that x ~ q * d. */
void fkc_gemv_q_quantize_x(const float *x, int64_t k, int8_t *q, float *d, fkc_perturb p);

/* Sum of 16 canonical lanes by the halving tree (or the perturbation's tree). */
float fkc_reduce16(const float lanes[16], fkc_perturb p);
/* The same over 8 lanes: i + 4, i + 2, i + 1 (the quantized fast tier's q4 rows). */
float fkc_reduce8(const float lanes[8], fkc_perturb p);

/* The contract model of every form: fkc_<id>, one per exact-tier form, in tests/contract/<leaf>.c.
 * Declared weak from the registry (FK_FORMS): a form without a model links, and its address is
 * NULL, which the coverage test reports by the form's name (tests/test_coverage.c). */
#define FKC_DECLARE(leaf, form, id, tiers, fx, fxarg) \
  void fkc_##id(const fk_##id##_args *a, fkc_perturb p) __attribute__((weak));
FK_FORMS(FKC_DECLARE)
#undef FKC_DECLARE
/* The model of a form's fast tier where that tier is deterministic (its stamps equal a plain-C model
 * bit for bit on every ISA): fkc_<id>_fast, today the quantized GEMV forms' (gemv_qfast.c). The fast
 * tier of the other forms (the bf16 GEMV's dot instructions) is faithful only: no model, NULL here. */
#define FKC_DECLARE_FAST(leaf, form, id, tiers, fx, fxarg) \
  void fkc_##id##_fast(const fk_##id##_args *a, fkc_perturb p) __attribute__((weak));
FK_FORMS(FKC_DECLARE_FAST)
#undef FKC_DECLARE_FAST

/* Helpers the models share or expose to the tests. */
float fkc_exp(float x);                                  /* gen/vmath.lua's exp */
void fkc_sincos(float x, float *s, float *c);            /* gen/vmath.lua's sincos */
void fkc_irfft1280_z(const float *re, const float *im, float *zr, float *zi);   /* 1280 * irfft, split */
/* splitmix64 of (seed, counter): the u of one topk draw, in [0, 1) (exact f32). */
float fkc_sample_u(uint64_t seed, uint64_t counter);

#endif
