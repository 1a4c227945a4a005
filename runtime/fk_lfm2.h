/* runtime/fk_lfm2.h: an LFM2 stack made ready, as the LM and detokenizer programs share it (not
 * installed): its shapes, packed weights, transient planes and state (position, conv carries, KV
 * caches), and its steps, one set per layer.
 *
 * A stack is transformers' Lfm2Model: per layer, operator_norm -> (ShortConv | attention) ->
 * + residual, then ffn_norm -> w2(silu(w1 x) * w3 x) -> + residual; embedding_norm at the end.
 * Its residual stream is bf16 (torch's bf16 path rounds there too); every GEMV reads the
 * previous leaf's bf16 results widened to f32 and writes its consumer's buffer: K and V go
 * straight into their cache slots, out_proj, o_proj and w2 add into the residual row. */
#ifndef FK_LFM2_H
#define FK_LFM2_H

#include "fk_program.h"

enum { FK_LFM2_HD = 64 }; /* the head size of LFM2's attention stamps (the Depthformer's: 32) */

typedef struct fk_layer_rt {
  fk_layer_kind kind;
  uint16_t *norm1, *norm2;         /* operator_norm, ffn_norm */
  fk_wmat in_w, out_w;             /* conv: packed in_proj, out_proj */
  uint16_t *conv_w;                /* conv: tap-major taps */
  fk_wmat q_w, k_w, v_w, o_w;      /* attention: packed projections */
  uint16_t *q_norm, *k_norm;
  fk_wmat w1, w3, w2;              /* packed feed-forward */
  /* state */
  uint16_t *carry;                 /* conv: 2 x h, Bx[t-2] then Bx[t-1] */
  uint16_t *kc, *vc;               /* attention: slots x kv_heads x head_dim */
} fk_layer_rt;

/* An LFM2 stack made ready. A model family's record begins with its stack, so every step of a
 * model program finds the stack at step->ctx. */
typedef struct fk_stack_rt {
  int64_t h, ffn, layers, heads, kv, hd, window, max_pos, max_rows;
  /* the forms its steps call: LFM2 (fk_lfm2_shapes): R_NORM, R_QKPREP, R_ATTN_DEC; the
   * Depthformer (fk_depth_shapes): R_NORM_ONCE, R_QKPREP32, R_ATTN_DEC32, and its first norm
   * R_NORM_ADD_ONCE, which adds in_x's row `pos` (f32, row stride h) into the residual first */
  fk_role r_norm, r_norm_in, r_qkprep, r_attn_dec;
  const float *in_x;
  int64_t rep;       /* stack rows per job row: 1 (LM tokens), 6 (detokenizer code frames) */
  int64_t slots;     /* KV slots: max_pos (linear) or the ring R = window + max_rows - 1 */
  int64_t ring;      /* 0: linear cache; R: ring */
  float eps;
  fk_layer_rt layer[FK_MAX_LAYERS];
  uint16_t *final_norm;
  float *cos, *sin;  /* RoPE tables, max_pos rows */
  /* transient planes (max_rows rows each) */
  uint16_t *res;     /* the residual stream */
  float *xn;         /* a norm's output widened: a GEMV's x */
  uint16_t *bcx;     /* conv in_proj out [B | C | x] */
  float *cy;         /* conv gated output widened */
  uint16_t *q;       /* query rows, heads * hd */
  uint16_t *ay;      /* attention output bf16 */
  float *ayw;        /* attention output widened: o_proj's x */
  uint16_t *g, *u;   /* w1 x, w3 x */
  float *hf;         /* swiglu output widened: w2's x */
  float *s[FK_MAX_THREADS]; /* attention scores per member */
  /* state */
  int64_t pos;       /* the next position (the job's first row's, while a program runs) */
} fk_stack_rt;

/* Readiness: every field of desc.<w>.stack (w: "lm", "detok"), the matrices' formats under
 * quantize (desc.quantize); FK_EINVAL naming it. */
fk_status fk_lfm2_check(const char *w, const fk_lfm2_stack *s, fk_qformat quantize, fk_error *err);
/* The same for a Depthformer (desc.<w>, w: "audio.depth"): attention layers only, head_dim 32, no
 * sliding window, final_norm unused. */
fk_status fk_depth_check(const char *w, const fk_lfm2_stack *s, fk_qformat quantize, fk_error *err);
/* The formats (fk_format_bit) the stack's GEMV matrices run in under quantize; after its check. */
unsigned fk_lfm2_formats(const fk_lfm2_stack *s, fk_qformat quantize);
/* The roles a stack's steps call (decode: an LM's decode steps, also the decode attention forms). */
uint64_t fk_lfm2_roles(int decode);
/* Shapes from s, for calls of up to max_rows stack rows, rep rows per job row, and each matrix's
 * format (its GGUF blocks', else quantize). */
void fk_lfm2_shapes(fk_stack_rt *t, const fk_lfm2_stack *s, int64_t max_rows, int64_t rep, fk_qformat quantize);
/* A Depthformer's shapes (one row per call, its own forms; in_x: see fk_stack_rt). */
void fk_depth_shapes(fk_stack_rt *t, const fk_lfm2_stack *s, fk_qformat quantize);
/* Carves the stack's weights, planes and state (threads: members with score buffers). */
void fk_lfm2_layout(fk_stack_rt *t, int threads, fk_carver *c);
/* Packs (or quantizes) the weights; w names the stack in errors ("lm", "detok", "audio.depth"). */
fk_status fk_lfm2_pack(fk_stack_rt *t, const fk_lfm2_stack *s, const char *w, fk_error *err);
/* An LM's head (desc.<w>, w: "lm", "audio.lm"): its own weights, the tied embedding, or GGUF blocks
 * (lm_head_q); packed or quantized into m (vocab x hidden, m carved in the head's format). */
fk_status fk_lfm2_head_pack(fk_wmat *m, const fk_lm_desc *lm, const char *w, fk_error *err);
/* Lists every layer's steps (ctx: the stack); decode: an LM's one-token steps. */
void fk_lfm2_steps(fk_step_list *l, fk_stack_rt *t, int decode);

/* Rows of the running job through the stack. */
static inline int64_t fk_lfm2_rows(const fk_plan *p, const fk_stack_rt *t) { return t->rep * p->job.io.rows; }
/* Member m's share of the embedding gather: rows ids[0, rows) of table (row stride h) into the residual stream. */
void fk_lfm2_embed(fk_plan *p, const fk_stack_rt *t, int m, const uint16_t *table, const int32_t *ids, int64_t rows);
/* Member m's share of a final norm: rows [row0, row0 + rows) of the residual stream by w into y. */
void fk_lfm2_norm(fk_plan *p, const fk_stack_rt *t, int m, const uint16_t *w, int64_t row0, int64_t rows, float *y);

/* State: zeros the carries and caches, position 0. The image: i64 pos, then per layer the carry
 * (conv) or the K and V caches (all slots). */
void fk_lfm2_reset(fk_stack_rt *t);
size_t fk_lfm2_state_bytes(const fk_stack_rt *t);
/* Copies the state into (save) or out of (load) img; returns img past the stack's bytes. */
unsigned char *fk_lfm2_state_copy(fk_stack_rt *t, unsigned char *img, int save);
/* The position an image holds (its first 8 bytes). */
int64_t fk_lfm2_state_pos(const unsigned char *img);
/* Folds the shapes the state depends on into a digest. */
uint64_t fk_lfm2_digest(const fk_stack_rt *t, uint64_t h);

#endif
