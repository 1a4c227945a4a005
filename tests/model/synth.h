/* tests/model/synth.h - synthetic model weights by formula, the C twin of fixtures/ref/gen_trace.py.
 *
 * No weight payload is stored anywhere: the reference traces (fixtures/lfm2/, fixtures/detok/) were
 * computed on weights that this file recomputes bit for bit, and each trace manifest records the
 * XXH3-64 of every tensor (weight_digests) and of its name (weight_names), in sorted-name order.
 *
 * For model tag T ("lm" | "detok" | "audio" | "audio_peaked", the last below) and tensor name N (the torch state_dict key: Lfm2Model's keys for
 * "lm", e.g. "layers.2.self_attn.q_proj.weight", "embed_tokens.weight"; LFM2AudioDetokenizer's for
 * "detok", e.g. "emb.emb.weight", "lfm.layers.0.conv.in_proj.weight", "lin.weight", "lin.bias";
 * liquid-audio's LFM2AudioModel's for "audio", e.g. "lfm.embed_tokens.weight", "depth_linear.bias",
 * "depthformer.layers.1.operator.qkv_proj.weight", "depth_embeddings.7.embedding.weight"):
 *   key = FNV-1a-64 of the bytes "T:N";
 *   for the flat row-major element index i: z = key + (i+1)*0x9E3779B97F4A7C15 (mod 2^64);
 *   z = (z ^ (z>>30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z>>27)) * 0x94D049BB133111EB; z ^= z>>31;
 *   v = f32((z>>40) * 2^-23 - 1)                    exact, in [-1, 1)
 *   FKM_LINEAR (out, in):  bf16_rne(v * a), a = 1.0f / sqrtf((float)in)
 *   FKM_CONV (h, 1, 3):    bf16_rne(v * a), a = 1.0f / sqrtf(3.0f)
 *   FKM_EMBED:             bf16_rne(v)
 *   FKM_NORM:              bf16_rne(1.0f + v * 0.25f)
 *   FKM_BIAS (lin.bias):   v * (1.0f / sqrtf(512.0f)), f32, not rounded
 *   FKM_BIAS16 (audio's depth_linear.bias): bf16_rne(v * a), a = 1.0f / sqrtf((float)in), in = 256 (depth_linear's
 *                          in_features; the model runs in bf16, so its bias is bf16)
 * Tag "audio" (fixtures/ref/gen_audio.py, fixtures/audio/): FKM_EMBED for lfm.embed_tokens.weight and every
 * "*.embedding.weight" (audio_embedding, depth_embeddings.<c>); FKM_NORM for every RMSNorm weight (the names
 * ending in operator_norm / ffn_norm / q_layernorm / k_layernorm / embedding_norm .weight); FKM_CONV for the
 * lfm's conv.conv.weight; FKM_BIAS16 for depth_linear.bias; FKM_LINEAR (fan_in = in) for every other 2-D weight.
 * Not synthesised there: the tied aliases audio_embedding.to_logits.weight and depth_embeddings.<c>.to_logits.weight
 * (the embedding tensors themselves), the buffers codebook_offsets / audio_loss_weights, the conformer encoder and
 * its adapter (built by LFM2AudioModel, never run: the traces' prompts hold no audio input).
 * Tag "audio_peaked" (fixtures/audio/seq_peaked, gen_audio.py's peaked_rule): tag "audio"'s model, the same config,
 * tensor names, kinds and counts, every key FNV-1a-64 of "audio:N" (the key's tag is "audio", not T), except:
 *   depth_embeddings.<c>.embedding.weight (c = 0..7): ONE shared table, key = FNV-1a-64 of
 *     "audio:depth_embeddings.shared.embedding.weight", FKM_EMBED bf16_rne(v);
 *   depth_linear.weight, depthformer.layers.<i>.operator.out_proj.weight, depthformer.layers.<i>.feed_forward.w2.weight:
 *     FKM_LINEAR scaled, bf16_rne((v * a) * 0.125f) (a power of two: exactly tag "audio"'s bits times 1/8).
 *   13 tensors differ from tag "audio"'s, 65 are equal. fkm_synth_tensor does the remap and the scale for this tag
 *   from the ORIGINAL per-codebook names (a descriptor built from liquid-audio's state_dict names gets the peaked
 *   bytes); fkm_synth_key itself is not remapped. Its purpose: the Depthformer's input for codebook c >= 1 is
 *   dlin[c] + E[code of c-1], so codebook c's tied head scores the code of c-1 highest by a margin wide enough that
 *   the greedy codes of codebooks 1..7 are required (code_required).
 * (every f32 operation correctly rounded; bf16_rne = the contract's integer RNE, DESIGN.md, as
 * flashkern.h's fk_bf16_from_f32 computes it).
 * Not synthesised: the detokenizer's istft.window (torch's hann window buffer) and lfm.embed_tokens
 * (unused: the detokenizer's forward passes inputs_embeds). */
#ifndef FKM_SYNTH_H
#define FKM_SYNTH_H

#include <stddef.h>
#include <stdint.h>

typedef enum { FKM_LINEAR, FKM_CONV, FKM_EMBED, FKM_NORM, FKM_BIAS, FKM_BIAS16 } fkm_kind;

/* One model of the traces: the configuration both the reference and the runtime use. */
typedef struct {
  const char *tag;           /* "lm" | "detok" | "audio" | "audio_peaked" */
  const char *prefix;        /* state_dict prefix of the Lfm2Model part: "" (lm) | "lfm." (detok, audio) */
  int64_t vocab;             /* lm, audio: embed_tokens rows (text vocab); detok: codebook vocab (emb.emb has 8 * vocab rows) */
  int64_t codebooks;         /* detok, audio: 8; lm: 0 */
  int64_t hidden, ff, heads, kv_heads, head_dim;
  int nlayers;
  int is_attn[16];           /* layer i is full_attention (1) or conv (0) */
  int64_t head_out;          /* detok: lin 512 -> 1282; lm: 0 (tied lm_head: embed_tokens) */
  float rope_theta, norm_eps;
  int64_t sliding_window;    /* detok: 30; lm: 0 (none) */
  /* audio (LFM2AudioModel) only, 0 elsewhere: the text head is tied (lfm.embed_tokens.weight); 2049 codes per
   * codebook (2048: end of audio); the Depthformer: dim, layers, MHA heads (of depth_dim / depth_heads), gqa kv heads,
   * GLU width; depth_linear hidden -> codebooks * depth_dim with a bias */
  int64_t audio_vocab;
  int64_t depth_dim, depth_layers, depth_heads, depth_kv_heads, depth_ff;
} fkm_config;

typedef struct {
  char name[96];             /* state_dict key */
  fkm_kind kind;
  int ndim;
  int64_t shape[3];
  int64_t count;             /* elements */
  int64_t fan_in;            /* FKM_LINEAR, FKM_BIAS16: in; FKM_CONV: 3; else 0 */
  size_t nbytes;             /* count * 2 (bf16 as uint16_t), FKM_BIAS: count * 4 (float) */
} fkm_tensor;

typedef struct {
  const fkm_config *cfg;
  int n;                     /* tensors, sorted by name (strcmp) */
  fkm_tensor *t;
  void **data;               /* data[i]: t[i].nbytes bytes (uint16_t bf16 bits, or float for FKM_BIAS) */
} fkm_weights;

/* The configuration of tag ("lm", "detok", "audio", "audio_peaked"; "lm_350m": bench only, no trace), or NULL. */
const fkm_config *fkm_config_get(const char *tag);

uint64_t fkm_fnv1a64(const void *p, size_t n);
/* FNV-1a-64 of "tag:name". */
uint64_t fkm_synth_key(const char *tag, const char *name);
/* v of element i (exact f32 in [-1, 1)). */
float fkm_synth_v(uint64_t key, uint64_t i);
/* The kind of a state_dict key (by its name, as gen_trace.py's kind_of), or -1 when no rule applies. */
int fkm_kind_of(const char *tag, const char *name, int ndim);

/* Synthesises count elements of tensor name into out (uint16_t bf16 bits, or float for FKM_BIAS); for tag
 * "audio_peaked" with its key remap and scale (above), from the state_dict name.
 * fan_in: FKM_LINEAR's and FKM_BIAS16's `in` (ignored by the other kinds). Returns 0, or -1 for a bad argument. */
int fkm_synth_tensor(const char *tag, const char *name, fkm_kind kind, int64_t count, int64_t fan_in, void *out);

/* The tensor list of a model (sorted by name), without data: *out malloc'd (free()), *n its length.
 * Returns 0, or -1 (unknown tag, no memory). */
int fkm_model_tensors(const char *tag, fkm_tensor **out, int *n);

/* Synthesises every tensor of a model. Returns 0, or -1 with a message in err. */
int fkm_synth_model(const char *tag, fkm_weights *w, char *err, size_t errlen);
/* The data of tensor name (and its description in *desc if desc), or NULL. */
const void *fkm_weight(const fkm_weights *w, const char *name, const fkm_tensor **desc);
void fkm_weights_free(fkm_weights *w);

/* Formats a message into err (if err && errlen) and returns -1: the library's one error path. */
int fkm_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* XXH3-64 of a tensor's little-endian bytes (bf16 as u16, FKM_BIAS as f32), as the manifests hold it. */
uint64_t fkm_weight_digest(const fkm_tensor *t, const void *data);
/* XXH3-64 of a name's bytes (weight_names). */
uint64_t fkm_name_digest(const char *name);

#endif
