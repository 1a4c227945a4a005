/* fk_models.h: the models a plan's programs run, as a host describes them (part of the public
 * API; flashkern.h includes it, so a host includes only flashkern.h).
 *
 * The weights of the ShortConv block and of the detokenizer's spectral head, the LFM2 stack of
 * conv and attention layers the language model and the detokenizer are made of, their
 * descriptors, and the LM's sampling parameters. Weights are the checkpoint's bytes (bf16 bit
 * patterns, row-major), read once by fk_plan_create. */
#ifndef FK_MODELS_H
#define FK_MODELS_H

#include <stdint.h>

/* Types only (no function); C linkage all the same, as every installed header. */
#ifdef __cplusplus
extern "C" {
#endif

/* Weight formats (docs/design.md, "Quantized weights"): FK_QNONE is bf16; FK_Q8 and FK_Q4 carry
 * GGUF's Q8_0 and Q4_0 (blocks of 32 k of one row, a binary16 scale each); FK_Q4K GGUF's Q4_K
 * (super-blocks of 256 k: per 32 a 6-bit scale and minimum under two binary16 ones): blocks, their
 * packed layout and the exact tier's gemv_q4k_* stamps; no plan takes it yet. */
typedef enum fk_qformat { FK_QNONE = 0, FK_Q8 = 1, FK_Q4 = 2, FK_Q4K = 3 } fk_qformat;

/* A weight matrix (n x k) given as GGUF blocks: format FK_Q8 or FK_Q4, and blocks pointing at
 * fk_q_gguf_bytes(format, n, k) bytes (a GGUF file's tensor data: rows of k / 32 blocks, k the
 * contiguous dimension), read once by fk_plan_create (fk_q_pack, a lossless re-layout). format
 * FK_QNONE: not given (the bf16 pointer beside it is read). */
typedef struct fk_qmatrix {
  fk_qformat format;
  const void *blocks;
} fk_qmatrix;

/* The tail's spectral head writes this many f32 per frame: 641 log-magnitudes, 641 phases. */
#define FK_TAIL_SPEC 1282

/* Weights of one ShortConv block, as the checkpoint stores them (bf16 bit patterns, row-major).
 * They are read once, by fk_plan_create (packed into the arena); the host may free them after. */
typedef struct fk_block_weights {
  const uint16_t *norm;      /* hidden: operator_norm.weight */
  const uint16_t *in_proj;   /* 3*hidden x hidden: in_proj.weight (rows: B, then C, then x) */
  const uint16_t *conv;      /* hidden x 3: conv.weight[c, 0, k] at conv[3c + k] */
  const uint16_t *conv_bias; /* hidden, or NULL (LFM2's conv_bias = False) */
  const uint16_t *out_proj;  /* hidden x hidden: out_proj.weight */
} fk_block_weights;

/* Weights of the detokenizer's spectral head (a Linear tail_in -> 1282 before the ISTFT). */
typedef struct fk_tail_weights {
  const uint16_t *lin;  /* 1282 x tail_in bf16, row-major */
  const float *bias;    /* 1282 f32 */
} fk_tail_weights;

/* One LFM2 layer (transformers' Lfm2DecoderLayer), weights as the checkpoint stores them (bf16
 * bit patterns, row-major, read once at readiness). A conv layer uses in_proj, conv, out_proj
 * (fk_block_weights' layouts, no bias); an attention layer q_proj (heads*head_dim x hidden), k_proj
 * and v_proj (kv_heads*head_dim x hidden), q_norm and k_norm (head_dim: q_layernorm, k_layernorm),
 * o_proj (hidden x heads*head_dim: self_attn.out_proj). Every layer: operator_norm, ffn_norm
 * (hidden) and the feed-forward w1, w3 (ffn x hidden), w2 (hidden x ffn). */
typedef enum fk_layer_kind { FK_LAYER_CONV = 0, FK_LAYER_ATTN = 1 } fk_layer_kind;

/* The layer's GEMV matrices as GGUF blocks, each instead of its bf16 pointer (which may then be
 * NULL); shapes as above. */
typedef struct fk_lfm2_qlayer {
  fk_qmatrix in_proj, out_proj;                     /* FK_LAYER_CONV */
  fk_qmatrix q_proj, k_proj, v_proj, o_proj;        /* FK_LAYER_ATTN */
  fk_qmatrix w1, w3, w2;
} fk_lfm2_qlayer;

typedef struct fk_lfm2_layer {
  fk_layer_kind kind;
  const uint16_t *operator_norm, *ffn_norm;
  const uint16_t *in_proj, *conv, *out_proj;                        /* FK_LAYER_CONV */
  const uint16_t *q_proj, *k_proj, *v_proj, *q_norm, *k_norm, *o_proj; /* FK_LAYER_ATTN */
  const uint16_t *w1, *w3, *w2;
  fk_lfm2_qlayer q;   /* zero: every matrix from its bf16 pointer */
} fk_lfm2_layer;

/* An LFM2 stack: the shapes and the layers of Lfm2Model (embedding_norm = final_norm). */
typedef struct fk_lfm2_stack {
  int64_t hidden;     /* 1..65536, a multiple of 16 */
  int64_t ffn;        /* feed-forward width (intermediate_size after any auto-adjust), 1..65536 */
  int64_t layers;     /* 1..FK_MAX_LAYERS */
  int64_t heads, kv_heads; /* attention heads; kv_heads divides heads (GQA) */
  int64_t head_dim;   /* 64 */
  int64_t window;     /* 0: full causal attention; W >= 1: sliding window of W positions */
  int64_t max_pos;    /* positions a sequence may reach (RoPE table, linear KV cache), 1..2^20 */
  float rope_theta;   /* RoPE base, (1, 1e30) */
  float norm_eps;     /* RMSNorm epsilon, finite and > 0 */
  const fk_lfm2_layer *layer; /* `layers` entries */
  const uint16_t *final_norm; /* hidden */
} fk_lfm2_stack;

enum { FK_MAX_LAYERS = 64 };

/* The language model (FK_PROGRAMS_LM). */
typedef struct fk_lm_desc {
  fk_lfm2_stack stack;
  int64_t vocab;            /* 1..2^20 */
  int64_t max_rows;         /* most prompt tokens of one prefill call, 1..65536 */
  const uint16_t *embed;    /* vocab x hidden: embed_tokens.weight */
  const uint16_t *lm_head;  /* vocab x hidden, or NULL: tied to embed (LFM2) */
  fk_qmatrix lm_head_q;     /* the head as GGUF blocks (vocab x hidden), instead of lm_head / embed */
} fk_lm_desc;

/* The LFM2.5 audio detokenizer (FK_PROGRAMS_DETOK); its head and spectral tail are desc.tail
 * (tail_in = stack.hidden), desc.clip and FK_PLAN_PCM_I16. */
typedef struct fk_detok_desc {
  fk_lfm2_stack stack;      /* window: the sliding window (LFM2.5: 30) */
  int64_t codebook_vocab;   /* codes per codebook (2048) */
  int64_t max_frames;       /* most code frames of one call, 1..4096 */
  const uint16_t *codebooks; /* (8 * codebook_vocab) x hidden: emb.emb.weight */
} fk_detok_desc;

/* LFM2.5-Audio (liquid-audio's LFM2AudioModel) has 8 codebooks. */
#define FK_CODEBOOKS 8

/* The Depthformer and its codebook heads: from the backbone's last hidden state h, depth_linear
 * (with bias) gives 8 inputs of stack.hidden; for codebook c = 0..7 the Depthformer runs one
 * position (c: its KV cache restarts every frame) on input c plus the feedback embedding of code
 * c-1 (depth_embeddings[c-1]), then codebook c's head (embedding_norm, to_logits) and sampler.
 * The norms are liquid-audio's RMSNorm (f32, the weight applied before the one rounding). */
typedef struct fk_depth_desc {
  /* layers: FK_LAYER_ATTN only (a StandardBlock each: q_proj, k_proj, v_proj are the rows of its
   * fused qkv_proj (heads*32 rows of q, then kv_heads*32 of k, then of v), q_norm / k_norm its
   * q_layernorm / k_layernorm, o_proj its out_proj, w1 / w3 / w2 its GLU's); head_dim 32 (liquid's
   * MHA: 32 heads, 8 kv heads at dim 1024); window 0; max_pos >= codebooks; final_norm unused */
  fk_lfm2_stack stack;
  int64_t audio_vocab;        /* codes per codebook: 2049 (code 2048 ends the audio), 2..65536 */
  const uint16_t *linear;     /* (8 * stack.hidden) x backbone hidden: depth_linear.weight */
  const float *bias;          /* 8 * stack.hidden f32: depth_linear.bias (a bf16 checkpoint's values widened) */
  const uint16_t *embed[FK_CODEBOOKS]; /* audio_vocab x stack.hidden: depth_embeddings[c].embedding.weight */
  const uint16_t *norm[FK_CODEBOOKS];  /* stack.hidden: depth_embeddings[c].embedding_norm.weight */
  const uint16_t *head[FK_CODEBOOKS];  /* audio_vocab x stack.hidden: to_logits.weight, or NULL: tied to embed[c] */
} fk_depth_desc;

/* The audio model (FK_PROGRAMS_AUDIO): the backbone with its tied text head, the Depthformer,
 * and the backbone's input after an audio frame, audio_embedding(codes + c * audio_vocab).sum(0). */
typedef struct fk_audio_desc {
  fk_lm_desc lm;              /* the backbone (LFM2AudioModel.lfm); lm_head NULL: text logits are
                                 linear(h, embed_tokens.weight) as the loops compute them */
  fk_depth_desc depth;
  const uint16_t *audio_embed; /* (8 * audio_vocab) x lm.stack.hidden: audio_embedding.embedding.weight */
  int64_t n_text, n_audio;    /* generate_interleaved's turns: interleaved_n_text, interleaved_n_audio, 1..2^30 */
} fk_audio_desc;

/* Sampling of FK_PROGRAMS_LM (transformers' order: temperature, top-k with the reference's tie
 * rule, softmax, a draw; templates/sample.lua, form topk). The draw's uniform comes from a
 * counter-based generator (splitmix64 of seed and counter) whose counter is plan state, committed
 * per draw and carried by snapshots; fk_sampler_seed sets the seed. */
typedef struct fk_sampling {
  float temperature;  /* > 0, finite */
  int64_t top_k;      /* 0: no top-k */
} fk_sampling;

#ifdef __cplusplus
}
#endif

#endif /* FK_MODELS_H */
