/* tests/harness/contract_call.c: the contract model of each form, behind the call interface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../contract/contract.h"
#include "fkh.h"

typedef void (*contract_fn)(const void *args, fkc_perturb p);

/* CHECK: one row per form of FK_FORMS (a missing row fails every test of that form). */
static const struct { const char *id; contract_fn fn; } models[] = {
  { "rmsnorm_f32", (contract_fn)(void (*)(void))fkc_rmsnorm_f32 },
  { "rmsnorm_bf16", (contract_fn)(void (*)(void))fkc_rmsnorm_bf16 },
  { "rmsnorm_add_f32", (contract_fn)(void (*)(void))fkc_rmsnorm_add_f32 },
  { "rmsnorm_add_bf16", (contract_fn)(void (*)(void))fkc_rmsnorm_add_bf16 },
  { "rmsnorm_bf16_wide", (contract_fn)(void (*)(void))fkc_rmsnorm_bf16_wide },
  { "gemv_f32", (contract_fn)(void (*)(void))fkc_gemv_f32 },
  { "gemv_f32_bias", (contract_fn)(void (*)(void))fkc_gemv_f32_bias },
  { "gemv_bf16_rne", (contract_fn)(void (*)(void))fkc_gemv_bf16_rne },
  { "gemv_bf16_rne_add", (contract_fn)(void (*)(void))fkc_gemv_bf16_rne_add },
  { "gemv_f32_packed", (contract_fn)(void (*)(void))fkc_gemv_f32_packed },
  { "gemv_f32_bias_packed", (contract_fn)(void (*)(void))fkc_gemv_f32_bias_packed },
  { "gemv_bf16_rne_packed", (contract_fn)(void (*)(void))fkc_gemv_bf16_rne_packed },
  { "gemv_bf16_rne_add_packed", (contract_fn)(void (*)(void))fkc_gemv_bf16_rne_add_packed },
  { "shortconv_bf16", (contract_fn)(void (*)(void))fkc_shortconv_bf16 },
  { "shortconv_bf16_bias", (contract_fn)(void (*)(void))fkc_shortconv_bf16_bias },
  { "shortconv_bf16_wide", (contract_fn)(void (*)(void))fkc_shortconv_bf16_wide },
  { "shortconv_bf16_bias_wide", (contract_fn)(void (*)(void))fkc_shortconv_bf16_bias_wide },
  { "qkprep_neox64", (contract_fn)(void (*)(void))fkc_qkprep_neox64 },
  { "qkprep_neox32", (contract_fn)(void (*)(void))fkc_qkprep_neox32 },
  { "qkprep_cis64", (contract_fn)(void (*)(void))fkc_qkprep_cis64 },
  { "qkprep_cis32", (contract_fn)(void (*)(void))fkc_qkprep_cis32 },
  { "vmath_exp", (contract_fn)(void (*)(void))fkc_vmath_exp },
  { "vmath_sincos", (contract_fn)(void (*)(void))fkc_vmath_sincos },
  { "vmath_polar", (contract_fn)(void (*)(void))fkc_vmath_polar },
  { "irfft_n256", (contract_fn)(void (*)(void))fkc_irfft_n256 },
  { "irfft_n512", (contract_fn)(void (*)(void))fkc_irfft_n512 },
  { "irfft_n1024", (contract_fn)(void (*)(void))fkc_irfft_n1024 },
  { "irfft_n1280", (contract_fn)(void (*)(void))fkc_irfft_n1280 },
  { "irfft_n2048", (contract_fn)(void (*)(void))fkc_irfft_n2048 },
  { "istft_frame", (contract_fn)(void (*)(void))fkc_istft_frame },
  { "istft_frame_i16", (contract_fn)(void (*)(void))fkc_istft_frame_i16 },
  { "istft_flush", (contract_fn)(void (*)(void))fkc_istft_flush },
  { "istft_flush_i16", (contract_fn)(void (*)(void))fkc_istft_flush_i16 },
  { "swiglu_bf16", (contract_fn)(void (*)(void))fkc_swiglu_bf16 },
  { "swiglu_bf16_wide", (contract_fn)(void (*)(void))fkc_swiglu_bf16_wide },
  { "swiglu_f32", (contract_fn)(void (*)(void))fkc_swiglu_f32 },
  { "embed_gather_bf16", (contract_fn)(void (*)(void))fkc_embed_gather_bf16 },
  { "embed_gather_bf16_wide", (contract_fn)(void (*)(void))fkc_embed_gather_bf16_wide },
  { "embed_codebook_mean", (contract_fn)(void (*)(void))fkc_embed_codebook_mean },
  { "embed_codebook_mean_x6", (contract_fn)(void (*)(void))fkc_embed_codebook_mean_x6 },
  { "embed_codebook_mean_x6_bf16", (contract_fn)(void (*)(void))fkc_embed_codebook_mean_x6_bf16 },
  { "attn_decode64", (contract_fn)(void (*)(void))fkc_attn_decode64 },
  { "attn_decode32", (contract_fn)(void (*)(void))fkc_attn_decode32 },
  { "attn_decode_ring64", (contract_fn)(void (*)(void))fkc_attn_decode_ring64 },
  { "attn_decode_ring32", (contract_fn)(void (*)(void))fkc_attn_decode_ring32 },
  { "attn_prefill64", (contract_fn)(void (*)(void))fkc_attn_prefill64 },
  { "attn_prefill32", (contract_fn)(void (*)(void))fkc_attn_prefill32 },
  { "attn_prefill_ring64", (contract_fn)(void (*)(void))fkc_attn_prefill_ring64 },
  { "attn_prefill_ring32", (contract_fn)(void (*)(void))fkc_attn_prefill_ring32 },
  { "attn_decode64_wide", (contract_fn)(void (*)(void))fkc_attn_decode64_wide },
  { "attn_decode_ring64_wide", (contract_fn)(void (*)(void))fkc_attn_decode_ring64_wide },
  { "attn_prefill64_wide", (contract_fn)(void (*)(void))fkc_attn_prefill64_wide },
  { "attn_prefill_ring64_wide", (contract_fn)(void (*)(void))fkc_attn_prefill_ring64_wide },
  { "sample_argmax", (contract_fn)(void (*)(void))fkc_sample_argmax },
  { "sample_topk", (contract_fn)(void (*)(void))fkc_sample_topk },
};

void fkh_invoke_contract(fkh_call *c, int perturb) {
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    if (strcmp(models[i].id, fkh_forms[c->form].id) != 0) continue;
    _Alignas(16) uint8_t s[256];
    fkh_fill_struct(c, s);   /* the contract reads the same struct the stamps read */
    models[i].fn(s, (fkc_perturb)perturb);
    return;
  }
  c->failed = 1;
  snprintf(c->why, sizeof c->why, "no contract model for form %s", fkh_forms[c->form].id);
}
