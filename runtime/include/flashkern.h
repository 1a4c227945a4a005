/* flashkern.h: the public API of libflashkern.
 *
 * A host resolves, once, the stamp each leaf form runs on this CPU, then calls it through the
 * returned function pointer with the form's argument struct (declared in fk_leaves.h, which
 * is generated from the templates). Resolution fails with an error naming the missing CPU
 * feature; there is no scalar fallback. Library code never aborts: errors are values. */
#ifndef FLASHKERN_H
#define FLASHKERN_H

#include <stddef.h>
#include <stdint.h>

#include "fk_leaves.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes; fk_strerror() names each one. */
typedef enum fk_status {
  FK_OK = 0,
  FK_EINVAL,        /* an argument is invalid (the message names it) */
  FK_EUNSUPPORTED,  /* this CPU lacks a feature every stamp of the leaf needs */
  FK_ENOTFOUND,     /* no such leaf form */
  FK_STATUS_COUNT
} fk_status;

typedef struct fk_error {
  fk_status status;
  char message[256];
  const char *file; /* where in the library the error was raised */
  int line;
} fk_error;

/* The name of a status ("FK_EUNSUPPORTED: ..."); never NULL. */
const char *fk_strerror(fk_status s);

/* CPU features (FK_CPU_* bits of fk_leaves.h) detected on first call and cached. The
 * environment variable FK_CPU_MASK (hex) is ANDed in, so a test or a user can forbid
 * features and reach every variant and every refusal. */
uint64_t fk_cpu_features(void);

/* Writes the names of the features in `f` ("avx2 fma avx512f") into buf; returns buf. */
const char *fk_cpu_feature_names(uint64_t f, char *buf, size_t len);

/* A leaf's numerical tier: exact stamps are bit-identical on every ISA and to the contract
 * model; fast stamps use the CPU's bf16 dot instructions and are faithful within the bound
 * their fixtures derive (fixtures/README.md). */
typedef enum fk_tier { FK_TIER_EXACT = 0, FK_TIER_FAST = 1 } fk_tier;

typedef void (*fk_leaf_fn)(const void *args);

typedef struct fk_leaf {
  fk_leaf_fn fn;        /* call as fn(&args) with the form's fk_<form>_args */
  const char *form;     /* "gemv_bf16_rne" */
  const char *symbol;   /* "fk_gemv_bf16_rne__x86_64_avx512_exact" */
  const char *variant;  /* "avx512" */
  const char *tier;     /* "exact" */
} fk_leaf;

/* fk_leaf_resolve(): picks the widest stamp of form `form` ("rmsnorm_f32", "gemv_bf16_rne")
 * in tier `tier` whose features are all in `features` (usually fk_cpu_features()).
 * @return FK_OK and *out filled; FK_ENOTFOUND for an unknown form, or a form without stamps of
 * that tier; FK_EUNSUPPORTED when no stamp fits, the message naming the features the narrowest
 * stamp lacks. There is never a fallback to another tier. With FK_VARIANT_DEBUG set in the
 * environment, each resolution is logged to stderr. */
fk_status fk_leaf_resolve(const char *form, fk_tier tier, uint64_t features, fk_leaf *out, fk_error *err);

/* fk_gemv_packed_elems(): elements (bf16) of the packed copy of an n x k weight matrix, 0 when
 * n or k is < 1 or the size overflows. */
size_t fk_gemv_packed_elems(int64_t n, int64_t k);

/* fk_gemv_pack(): writes the n x k row-major bf16 weights w (row stride ldw) into out in the
 * layout the gemv *_packed forms read (templates/gemv.lua: FK_GEMV_PACK_ROWS rows per group,
 * FK_GEMV_PACK_TILE elements per tile, zero padding). Call it before readiness, once.
 * @return FK_OK; FK_EINVAL naming the argument when a pointer is NULL, n or k < 1, ldw < k, or
 * out holds fewer than fk_gemv_packed_elems(n, k) elements (out is then untouched). */
fk_status fk_gemv_pack(const uint16_t *w, int64_t ldw, int64_t n, int64_t k, uint16_t *out, size_t out_elems,
                       fk_error *err);

/* fk_gemv_blocked_elems(), fk_gemv_pack_blocked(): the same for the blocked layout of the fast
 * tier's *_blocked forms (templates/gemv.lua: FK_GEMV_BLOCK_ROWS rows per block, FK_GEMV_BLOCK_GROUP
 * blocks interleaved per pair of k, k padded to FK_GEMV_BLOCK_KALIGN, rows to a whole group). */
size_t fk_gemv_blocked_elems(int64_t n, int64_t k);
fk_status fk_gemv_pack_blocked(const uint16_t *w, int64_t ldw, int64_t n, int64_t k, uint16_t *out,
                               size_t out_elems, fk_error *err);

/* fk_rope_table(): the RoPE tables of one head size, at readiness (never during a pass):
 * cos_out[(p - pos_begin) * (head_dim / 2) + i] = cos(a), sin_out[...] = sin(a) for positions
 * p in [pos_begin, pos_begin + npos) and i < head_dim / 2, with a = (float)p * inv_freq[i] and
 * inv_freq[i] = 1.0f / f32(theta^((float)(2i) / head_dim)) in f32, as transformers and
 * liquid-audio compute them; cos and sin rounded once from a double evaluation. No libm: the
 * same bytes on every ISA. The qkprep leaf reads table row pos + j for row j (pass tables from
 * pos_begin = 0, or shift the pointers by pos_begin rows and the leaf's pos likewise).
 * @return FK_OK; FK_EINVAL naming the argument for NULL tables, theta not in (1, 1e30),
 * head_dim odd or outside 2..1024, or positions outside [0, 2^24) (nothing is written then). */
fk_status fk_rope_table(float theta, int64_t head_dim, int64_t pos_begin, int64_t npos, float *cos_out,
                        float *sin_out, fk_error *err);

/* fk_rope_inv_freq(): the head_dim / 2 f32 inverse frequencies fk_rope_table uses (inv[i] above).
 * @return FK_OK; FK_EINVAL as fk_rope_table for inv NULL, theta or head_dim. */
fk_status fk_rope_inv_freq(float theta, int64_t head_dim, float *inv, fk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FLASHKERN_H */
