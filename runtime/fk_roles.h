/* runtime/fk_roles.h: the stamp roles, one row each: what a program's step may call (not
 * installed).
 *
 * A role is one use of a leaf form: its enum value, the name a readiness error gives the phase,
 * the form fk_leaf_resolve picks a stamp of, and its tier (EXACT always, or PLAN: desc.tier, the
 * GEMV phases). A family lists the roles its steps call (fk_family.roles); readiness resolves
 * each role any ready family lists, once, in the order of the rows (the first refusal names its
 * phase), and a step calls plan->leaf[its role]. A form a program may call with another argument
 * layout or output (the conv with a bias, int16 PCM) is a row of its own. A quantized matrix's
 * GEMV calls the _Q8 / _Q4 / _Q4K row of its role (fk_gemv_run picks it from the matrix's format, in
 * the plan's tier like the bf16 GEMVs; q4k in the exact tier always: its fast tier is not built);
 * readiness adds those rows when the plan has such matrices. */
#ifndef FK_ROLES_H
#define FK_ROLES_H

#include <stdint.h>

/*      enum             phase name    leaf form                       tier */
#define FK_ROLES(X) \
  X(R_NORM,          "rmsnorm",   "rmsnorm_bf16_wide",            EXACT) \
  X(R_IN,            "in_proj",   "gemv_bf16_rne_packed",         PLAN)  \
  X(R_CONV,          "conv",      "shortconv_bf16_wide",          EXACT) \
  X(R_CONV_BIAS,     "conv",      "shortconv_bf16_bias_wide",     EXACT) \
  X(R_OUT,           "out_proj",  "gemv_bf16_rne_add_packed",     PLAN)  \
  X(R_HEAD,          "head",      "gemv_f32_bias_packed",         PLAN)  \
  X(R_FRAME,         "frames",    "istft_frame",                  EXACT) \
  X(R_FRAME_I16,     "frames",    "istft_frame_i16",              EXACT) \
  X(R_FLUSH,         "flush",     "istft_flush",                  EXACT) \
  X(R_FLUSH_I16,     "flush",     "istft_flush_i16",              EXACT) \
  X(R_QKPREP,        "qkprep",    "qkprep_neox64",                EXACT) \
  X(R_SWIGLU,        "swiglu",    "swiglu_bf16_wide",             EXACT) \
  X(R_ATTN_DEC,      "attention", "attn_decode64_wide",           EXACT) \
  X(R_ATTN_PRE,      "attention", "attn_prefill64_wide",          EXACT) \
  X(R_ATTN_DEC_RING, "attention", "attn_decode_ring64_wide",      EXACT) \
  X(R_ATTN_PRE_RING, "attention", "attn_prefill_ring64_wide",     EXACT) \
  X(R_EMBED,         "embed",     "embed_gather_bf16",            EXACT) \
  X(R_LOGITS,        "logits",    "gemv_f32_packed",              PLAN)  \
  X(R_ARGMAX,        "argmax",    "sample_argmax",                EXACT) \
  X(R_TOPK,          "sample",    "sample_topk",                  EXACT) \
  X(R_CODEBOOK,      "codebooks", "embed_codebook_mean_x6_bf16",  EXACT) \
  X(R_NORM_ONCE,     "rmsnorm",   "rmsnorm_bf16_wide_once",       EXACT) \
  X(R_NORM_ADD_ONCE, "rmsnorm",   "rmsnorm_add_f32_wide_once",    EXACT) \
  X(R_QKPREP32,      "qkprep",    "qkprep_cis32",                 EXACT) \
  X(R_ATTN_DEC32,    "attention", "attn_decode32_wide",           EXACT) \
  X(R_CBSUM,         "audio_embed", "embed_codebook_sum_bf16",    EXACT) \
  X(R_IN_Q8,         "in_proj",   "gemv_q8_bf16_rne",             PLAN)  \
  X(R_OUT_Q8,        "out_proj",  "gemv_q8_bf16_rne_add",         PLAN)  \
  X(R_HEAD_Q8,       "head",      "gemv_q8_f32_bias",             PLAN)  \
  X(R_LOGITS_Q8,     "logits",    "gemv_q8_f32",                  PLAN)  \
  X(R_IN_Q4,         "in_proj",   "gemv_q4_bf16_rne",             PLAN)  \
  X(R_OUT_Q4,        "out_proj",  "gemv_q4_bf16_rne_add",         PLAN)  \
  X(R_HEAD_Q4,       "head",      "gemv_q4_f32_bias",             PLAN)  \
  X(R_LOGITS_Q4,     "logits",    "gemv_q4_f32",                  PLAN)  \
  X(R_IN_Q4K,        "in_proj",   "gemv_q4k_bf16_rne",            EXACT) \
  X(R_OUT_Q4K,       "out_proj",  "gemv_q4k_bf16_rne_add",        EXACT) \
  X(R_HEAD_Q4K,      "head",      "gemv_q4k_f32_bias",            EXACT) \
  X(R_LOGITS_Q4K,    "logits",    "gemv_q4k_f32",                 EXACT)

typedef enum fk_role {
#define FK_ROLE_ENUM(id, name, form, tier) id,
  FK_ROLES(FK_ROLE_ENUM)
#undef FK_ROLE_ENUM
  R_COUNT
} fk_role;

/* A set of roles (fk_family.roles). */
#define FK_ROLE_BIT(r) ((uint64_t)1 << (r))
_Static_assert(R_COUNT <= 64, "fk_roles.h: a role set is a uint64_t");

#endif
