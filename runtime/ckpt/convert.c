/* runtime/ckpt/convert.c: the tensors as the runtime reads them. A used tensor is served bf16
 * (the weights) or f32 (what the runtime keeps f32: the detokenizer head's bias, desc.tail.bias,
 * and the Depthformer's depth_linear.bias). bf16 served as bf16 stays where the file maps it (no
 * copy) unless its address is odd; everything else is converted once, here, into one buffer the
 * model owns: f32 -> bf16 by the contract's RNE (fk_bf16_from_f32), f16 -> f32 exactly and then
 * the same RNE, bf16 -> f32 exactly, f32 -> f32 copied when misaligned; a GGUF Q8_0 / Q4_0 / Q4_K matrix
 * stays in place as blocks (the plan packs them), and one a gather reads (token_embd) is dequantized
 * by fk_q_dequantize (q * d exact; Q4_K one rounding) and rounded by the same RNE. Elements are read with memcpy, so the file's alignment
 * never matters. safetensors and GGUF are little-endian, as the hosts are. */
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the checkpoint loader reads little-endian safetensors in place: a little-endian host only"
#endif

/* bytes of a GGUF block (Q8_0: 34, Q4_0: 18, Q4_K: 144 a super-block of 256) and its k */
static size_t block_bytes(const ck_tensor *t) { return t->dtype == CK_Q8_0 ? 34 : t->dtype == CK_Q4_0 ? 18 : 144; }
static size_t block_k(const ck_tensor *t) { return t->dtype == CK_Q4_K ? 256 : 32; }

/* binary16 scale h of block b of a GGUF block tensor (Q4_K: h = 0 its d, 1 its dmin) */
static uint16_t block_scale(const ck_tensor *t, size_t b, int h) {
  uint16_t v;
  memcpy(&v, t->src + b * block_bytes(t) + 2 * (size_t)h, 2);
  return v;
}

float fk_ckpt_f32_at(const ck_tensor *t, size_t i) {
  uint16_t h;
  float f;
  switch (t->dtype) {
  case CK_BF16: memcpy(&h, t->src + 2 * i, 2); return fk_f32_from_bf16(h);
  case CK_F16: memcpy(&h, t->src + 2 * i, 2); return fk_f32_from_f16(h);
  case CK_F32: memcpy(&f, t->src + 4 * i, 4); return f;
  default: return 0.0f; /* float dtypes only: GGUF blocks go through convert_blocks */
  }
}

/* every scale of a GGUF block tensor finite (the plan refuses the others too; here the file and tensor
 * are named, and a dequantized token_embd is never read with one) */
fk_status fk_ckpt_blocks_finite(const fk_model *m, const ck_tensor *t, fk_error *err) {
  const size_t cols = (size_t)t->shape[t->ndim - 1], blocks = t->nbytes / block_bytes(t), bk = block_k(t);
  for (size_t b = 0; b < blocks; b++)
    for (int h = 0; h < (t->dtype == CK_Q4_K ? 2 : 1); h++)
      if ((block_scale(t, b, h) & 0x7c00u) == 0x7c00u)
        CK_BAD("%s: tensor '%s': row %zu, %s %zu: the %s 0x%04x is not finite", m->files[t->file].name,
               fk_ckpt_shown(t), b * bk / cols, bk == 256 ? "super-block" : "block", b % (cols / bk),
               h ? "minimum scale dmin" : bk == 256 ? "scale d" : "scale", block_scale(t, b, h));
  return FK_OK;
}

static size_t elems(const ck_tensor *t) {
  size_t n = 1;
  for (int d = 0; d < t->ndim; d++) n *= (size_t)t->shape[d];
  return n;
}

/* 1 when the tensor can be served from the mapping as it is (GGUF blocks always are) */
static int in_place(const ck_tensor *t) {
  uintptr_t a = (uintptr_t)t->src;
  if (t->blocks) return 1;
  return t->out == FK_DTYPE_BF16 ? t->dtype == CK_BF16 && a % 2 == 0 : t->dtype == CK_F32 && a % 4 == 0;
}

static size_t served_bytes(const ck_tensor *t) { return elems(t) * (t->out == FK_DTYPE_BF16 ? 2u : 4u); }

/* a GGUF block tensor a gather reads (token_embd): row by row, fk_q_dequantize (q * d, exact), then
 * for bf16 the contract's RNE (fk_bf16_from_f32_n) from one row of floats; its scales are finite
 * (fk_ckpt_blocks_finite ran first) */
static fk_status convert_blocks(const ck_tensor *t, unsigned char *at, fk_error *err) {
  const fk_qformat f = CK_QFORMAT(t->dtype);
  const int64_t k = t->shape[t->ndim - 1], rows = (int64_t)(elems(t) / (size_t)k);
  const size_t rb = fk_q_gguf_bytes(f, 1, k);
  const int bf16 = t->out == FK_DTYPE_BF16;
  float *row = bf16 ? malloc((size_t)k * sizeof(float)) : NULL;
  FK_RETURN_ERROR_IF(bf16 && !row, err, FK_ENOMEM, "fk_model_open: %lld floats for a row of '%s'", (long long)k,
                     fk_ckpt_shown(t));
  fk_status s = FK_OK;
  for (int64_t r = 0; r < rows && s == FK_OK; r++) {
    float *o = bf16 ? row : (float *)(void *)at + r * k;
    s = fk_q_dequantize(f, t->src + (size_t)r * rb, rb, 1, k, o, k, err);
    if (s == FK_OK && bf16) s = fk_bf16_from_f32_n(row, (uint16_t *)(void *)at + r * k, (size_t)k, err);
  }
  free(row);
  return s;
}

fk_status fk_ckpt_convert(fk_model *m, fk_error *err) {
  size_t total = 0;
  for (int i = 0; i < m->nt; i++) {
    const ck_tensor *t = &m->t[i];
    if (t->role == CK_USED && !in_place(t)) total += (served_bytes(t) + 63) / 64 * 64;
  }
  if (total) {
    m->owned = aligned_alloc(64, total);
    FK_RETURN_ERROR_IF(!m->owned, err, FK_ENOMEM, "fk_model_open: %zu bytes for the converted tensors", total);
  }
  unsigned char *at = m->owned;
  for (int i = 0; i < m->nt; i++) {
    ck_tensor *t = &m->t[i];
    if (t->role != CK_USED) continue;
    if (CK_BLOCKS(t->dtype)) CK_TRY(fk_ckpt_blocks_finite(m, t, err));
    if (in_place(t)) {
      t->data = t->src;
      continue;
    }
    const size_t n = elems(t);
    if (CK_BLOCKS(t->dtype)) {
      CK_TRY(convert_blocks(t, at, err));
    } else if (t->out == FK_DTYPE_BF16) {
      uint16_t *d = (uint16_t *)(void *)at;
      if (t->dtype == CK_BF16) memcpy(d, t->src, t->nbytes);
      else if (t->dtype == CK_F32 && (uintptr_t)t->src % 4 == 0) {
        /* the bulk form (flashkern.h): the same RNE in blocks the compiler vectorises (f32 checkpoints
         * are most of a readiness: bench/results/ckpt.md) */
        fk_status s = fk_bf16_from_f32_n((const float *)(const void *)t->src, d, n, err);
        if (s != FK_OK) return s;
      } else
        for (size_t k = 0; k < n; k++) d[k] = fk_bf16_from_f32(fk_ckpt_f32_at(t, k));
    } else {
      float *d = (float *)(void *)at;
      for (size_t k = 0; k < n; k++) d[k] = fk_ckpt_f32_at(t, k);
    }
    t->data = at;
    m->owned_bytes += served_bytes(t);
    at += (served_bytes(t) + 63) / 64 * 64;
  }
  for (int i = 0; i < m->nbind; i++) {
    const ck_bind *b = &m->bind[i];
    if (b->bf16) *b->bf16 = b->t->data;
    if (b->f32) *b->f32 = b->t->data;
  }
  return FK_OK;
}
