/* tests/ckpt/ckpt_write.h: checkpoints written by the tests themselves, in C (no Python runs in
 * a test): a small safetensors writer, and whole directories as their authors' loaders lay them
 * out (transformers' Lfm2ForCausalLM, liquid-audio's LFM2.5-Audio and its audio detokenizer),
 * from the synthetic weights by formula of tests/model/synth.h under the checkpoints' names. The
 * bad-input rows edit a directory through the hooks of fkw_opts, or write a file byte by byte. */
#ifndef FKW_CKPT_WRITE_H
#define FKW_CKPT_WRITE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "flashkern.h"
#include "synth.h"

/* One tensor of a file being written: its header entry and its bytes (an owned copy). */
typedef struct fkw_tensor {
  char name[160];
  char dtype[16];         /* a safetensors dtype ("BF16", "F32", ...) or anything a row wants */
  int ndim;
  int64_t shape[4];
  unsigned char *data;
  size_t nbytes;
} fkw_tensor;

typedef struct fkw_file {
  fkw_tensor *t;
  int n, cap;
} fkw_file;

/* Appends a tensor (its bytes copied). */
void fkw_add(fkw_file *f, const char *name, const char *dtype, int ndim, const int64_t *shape, const void *data,
             size_t nbytes);
/* Appends n = prod(shape) bf16 values stored as dtype: "BF16" as they are, "F32" widened (exact),
 * "F16" narrowed when every value is exact in f16, else kept BF16. Returns the dtype written. */
const char *fkw_add_bf16(fkw_file *f, const char *name, const char *dtype, int ndim, const int64_t *shape,
                         const uint16_t *v);
/* Appends n f32 values stored as dtype: "F32" as they are, "BF16" rounded (fk_bf16_from_f32); any
 * other dtype: F32. Returns the dtype written. */
const char *fkw_add_f32(fkw_file *f, const char *name, const char *dtype, int ndim, const int64_t *shape,
                        const float *v);
fkw_tensor *fkw_find(fkw_file *f, const char *name);
/* Removes a tensor; returns 0, or -1 when there is none of that name. */
int fkw_remove(fkw_file *f, const char *name);
void fkw_free(fkw_file *f);

/* Writes path: the header (__metadata__ {"format": "pt"}, then the tensors in list order with
 * data_offsets in that order), padded with spaces to 8 bytes, then the data. 0 or -1. */
int fkw_write(const fkw_file *f, const char *path);
/* The same with the header padded to misalign (mod 8) bytes past a multiple of 8 instead: the data
 * then starts 8 + misalign bytes past one, so every tensor sits that far off its usual alignment
 * (safetensors pads to 8; a reader must not rely on it). */
int fkw_write_pad(const fkw_file *f, const char *path, int misalign);
/* Writes path byte by byte: the u64 hlen, header_len bytes of header, then n data bytes. */
int fkw_write_raw(const char *path, uint64_t hlen, const char *header, size_t header_len, const void *data, size_t n);
/* Writes a text file (config.json, the index). */
int fkw_write_text(const char *path, const char *text);
int fkw_write_json(const char *path, const json_t *j);

/* How a directory is written. Zero: bf16, one model.safetensors, transformers 5's config, the
 * LM's own head (as the traces' LM has one). */
typedef struct fkw_opts {
  const char *dtype;      /* "BF16" (NULL), "F32", "F16" (where exact, else BF16) */
  int shards;             /* >= 2: model.safetensors.index.json and this many shards */
  int released;           /* config.json in the released checkpoints' style (block_ff_dim and the
                             auto-adjust, tie_embedding, top-level rope_theta, full_attn_idxs) */
  int tied;               /* LM: the head tied to embed_tokens: no lm_head.weight ... */
  int store_head;         /* ... unless this: lm_head.weight equal to embed_tokens */
  int no_detok;           /* LFM2.5-Audio: no audio_detokenizer/ folder */
  int misalign;           /* the safetensors files through fkw_write_pad(misalign) */
  int64_t depth_dim;      /* LFM2.5-Audio: the Depthformer's dim (0: FKW_DEPTH_DIM; 1024 runs: head_dim 32) */
  int64_t n_text, n_audio; /* LFM2.5-Audio: interleaved_n_text / _n_audio (0: 6 / 12, the released ones) */
  /* hooks: config.json (each one written) before it is written, each safetensors file likewise
   * (fname relative to the directory) */
  void (*edit_config)(json_t *cfg, const char *fname, void *arg);
  void (*edit_file)(fkw_file *f, const char *fname, void *arg);
  void *arg;
} fkw_opts;

/* the dtype lin.bias / depth_linear.bias are written in under opts dtype (f32 values): F32, or
 * BF16 when the checkpoint is BF16 */
const char *fkw_bias_dtype(const fkw_opts *o);

/* A directory of each kind from the synthetic weights (tests/model/synth.h): lm the traces' LM
 * ("lm"), detok their detokenizer ("detok"). 0, or -1 with a message on stderr. */
int fkw_lm_dir(const char *dir, const fkm_weights *lm, const fkw_opts *o);
int fkw_detok_dir(const char *dir, const fkm_weights *detok, const fkw_opts *o);
int fkw_audio_dir(const char *dir, const fkm_weights *lm, const fkm_weights *detok, const fkw_opts *o);

/* An LFM2 LM as one GGUF file, as llama.cpp's convert_hf_to_gguf.py (the `gguf` package's GGUFWriter)
 * writes an Lfm2ForCausalLM and runtime/ckpt/gguf.c reads it: GGUF v3, general.alignment absent (32),
 * general.architecture "lfm2" and the lfm2.* keys of lm's config (block_count, context_length 128000 as
 * fkw_lm_dir's max_position_embeddings, embedding_length, feed_forward_length, attention.head_count,
 * attention.head_count_kv one INT32 per layer, 0 on a ShortConv layer, rope.freq_base,
 * attention.layer_norm_rms_epsilon, vocab_size, shortconv.l_cache 3), general.file_type and
 * quantization_version, a placeholder tokenizer (tokenizer.ggml.model "none", tokens "<tok_N>",
 * token_type 1) a reader reads past; the tensors in the order of their transformers names (sorted, as
 * the converter iterates them), named by gguf's TensorNameMap for LFM2 (token_embd, token_embd_norm,
 * output unless tied, blk.N.attn_norm / ffn_norm / ffn_gate / ffn_up / ffn_down / shortconv.in_proj /
 * shortconv.conv / shortconv.out_proj / attn_q / attn_k / attn_v / attn_output / attn_q_norm /
 * attn_k_norm), ne innermost first; the norms and the ShortConv taps (ne [3, hidden]) F32 (the bf16
 * values widened, exact); every 2-D weight matrix (token_embd and output included) GGUF blocks of
 * format q by fk_q_quantize_bf16 of the bf16 weights (FK_Q8: Q8_0, FK_Q4: Q4_0, FK_Q4K: Q4_K, ggml
 * types 8, 2, 12), or BF16 (the bytes) for FK_QNONE. Each tensor's data at a multiple of 32 from the
 * data's start (itself 32-aligned). tied: no output tensor (the head is token_embd). 0, or -1 with a
 * message on stderr. */
int fkw_lm_gguf(const char *path, const fkm_weights *lm, fk_qformat q, int tied);
/* The GGUF name (gguf.c's map, in reverse) of a transformers Lfm2ForCausalLM name, into out (size
 * bytes); NULL when it has none. */
const char *fkw_gguf_name(const char *hf, char *out, size_t size);

/* The LFM2.5-Audio directory's Depthformer: layers and dim written by fkw_audio_dir. */
enum { FKW_DEPTH_LAYERS = 2, FKW_DEPTH_DIM = 64, FKW_CODEBOOKS = 8 };

/* A fresh directory /tmp/fk_ckpt_XXXXXX into buf (64 bytes); NULL on failure. */
char *fkw_tmpdir(char *buf);
/* rm -rf dir */
void fkw_rmdir(const char *dir);

#endif
