/* fk_checkpoint.h: released checkpoints in (libflashkern_ckpt, beside libflashkern).
 *
 * fk_model_open() reads a checkpoint directory as its authors ship it and fills the plan
 * descriptors of flashkern.h from it, so that a host goes from a directory to fk_plan_create in
 * three calls:
 *
 *   fk_model *m;  fk_model_open("LFM2-350M/", FK_MODEL_AUTO, &m, &err);
 *   fk_plan_desc d = { .threads = 2, .tier = FK_TIER_EXACT };  fk_model_describe(m, &d, &err);
 *   fk_plan_create(&d, &plan, &err);  fk_model_close(m);   ...   fk_plan_destroy(plan);
 *
 * Directories (the names, shapes and layouts of transformers' and liquid-audio's own loaders):
 *   FK_MODEL_LFM2_LM     transformers' Lfm2ForCausalLM: config.json (either style: the released
 *                        checkpoints' top-level rope_theta / block_ff_dim / tie_embedding, or what
 *                        transformers 5 writes: rope_parameters, dtype, intermediate_size) and
 *                        model.safetensors, or model.safetensors.index.json and its shards (not
 *                        both: which one is the checkpoint would be ambiguous).
 *   FK_MODEL_LFM2_AUDIO  liquid-audio's LFM2.5-Audio: config.json with its lfm, depthformer,
 *                        codebooks, ... sections, its safetensors (the backbone lfm.*, depth_linear,
 *                        depth_embeddings.*, audio_embedding, the Depthformer; the encoder's tensors
 *                        are ignored by name), and audio_detokenizer/ (config.json, model.safetensors)
 *                        when the folder is there (liquid-audio's processor loads it only then);
 *                        its tensors are named "audio_detokenizer/<name>" here.
 *   FK_MODEL_DETOK       an audio_detokenizer/ folder alone (LFM2AudioDetokenizer).
 *   FK_MODEL_AUTO        whichever of these the directory is (config.json decides).
 * A path to a file (not a directory) is a GGUF file (versions 2 and 3), read as FK_MODEL_LFM2_LM (or
 * AUTO): an LFM2 language model as llama.cpp's converter writes it (general.architecture "lfm2", its
 * lfm2.* keys, token_embd / blk.N.* / token_embd_norm / output tensors, mapped onto transformers'
 * names). Its F32, F16 and BF16 tensors are served as above; its Q8_0, Q4_0 and Q4_K weight matrices go
 * to the descriptor as GGUF blocks (fk_lfm2_layer.q, fk_lm_desc.lm_head_q: packed losslessly at
 * readiness, no requantization; Q4_K's rows whole super-blocks of 256), and a Q8_0 / Q4_0 / Q4_K
 * token_embd is dequantized (exactly, one rounding for Q4_K) and rounded to bf16 (RNE) for the
 * embedding gather, its blocks also the tied head's. Other ggml types (Q6_K, Q5_K, Q4_1, ...: a
 * llama.cpp Q4_K_M file mixes Q6_K in) are refused by name.
 *
 * Tensors: bf16 tensors are used where the file maps them (mmap, read-only; no copy beyond what
 * fk_plan_create packs); f32 and f16 tensors are converted to bf16 by the contract's RNE
 * (fk_bf16_from_f32) into buffers the model owns. The schema is strict: every tensor of the files
 * is used, or ignored by name (the audio encoder), or the open fails; every tensor the model needs
 * must be there with its dtype and shape (a GGUF file's keys other than lfm2.* and general.alignment,
 * such as its tokenizer's, are read past). Everything is read by fk_model_open: a plan made from the
 * descriptors reads nothing from disk. The descriptors point into the model, so it must be open
 * while fk_plan_create (or fk_plan_check) reads them; the plan copies and packs every weight at
 * readiness and keeps nothing of the model, which may be closed as soon as the plans are made.
 *
 * Errors: every failure is an fk_status whose message names the file, the tensor and the field
 * (expected and found), and leaves no mapping, descriptor or allocation behind (*out is NULL). */
#ifndef FK_CHECKPOINT_H
#define FK_CHECKPOINT_H

#include "flashkern.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fk_model_kind {
  FK_MODEL_AUTO = 0,
  FK_MODEL_LFM2_LM = 1,
  FK_MODEL_LFM2_AUDIO = 2,
  FK_MODEL_DETOK = 3,
} fk_model_kind;

typedef struct fk_model fk_model;

/* What a directory holds (fk_model_query). Shapes are those of the language model's (or the
 * backbone's) stack; a detokenizer's in the det_* fields. */
typedef struct fk_model_info {
  fk_model_kind kind;
  const char *architecture;   /* "Lfm2ForCausalLM", "LFM2AudioModel", "LFM2AudioDetokenizer", "lfm2 (GGUF)" */
  int64_t vocab, hidden, ffn, layers, attn_layers, heads, kv_heads, head_dim, max_pos;
  float rope_theta, norm_eps;
  int tied;                   /* lm_head tied to embed_tokens (LFM2.5-Audio's backbone: always) */
  int64_t det_hidden, det_layers, det_window, codebook_vocab; /* 0 when there is no detokenizer */
  int64_t codebooks;          /* LFM2.5-Audio: audio codebooks (8), else 0 */
  int64_t depth_layers, depth_dim; /* LFM2.5-Audio: the Depthformer's, else 0 */
  int files;                  /* safetensors files read (shards included), or 1: the GGUF file */
  int64_t tensors, ignored;   /* tensors used (by a descriptor or fk_model_tensor); ignored by name */
  uint64_t file_bytes;        /* bytes of the safetensors (or GGUF) files */
  uint64_t owned_bytes;       /* bytes the model converted (f32/f16 -> bf16) and owns */
  const char *dtype;          /* the used tensors' dtype in the files: "bf16", "f32", "f16" or "mixed" (a
                                 GGUF file with Q8_0 / Q4_0 / Q4_K matrices beside F32 norms) */
} fk_model_info;

/* fk_model_open(): reads directory `dir` as a model of kind `kind` (FK_MODEL_AUTO: as its
 * config.json says), or the GGUF file `dir` names (above). @return FK_OK and *out; FK_ENOTFOUND for a missing file or tensor; FK_EINVAL
 * for a malformed or inconsistent file (header, offsets, dtype, shape, config value, an unexpected
 * tensor, duplicate keys, an index naming a missing shard) or an unknown architecture; FK_ESYSTEM
 * for a failed open, stat or mmap; FK_ENOMEM. The message names the file, tensor and field. On
 * failure *out is NULL and nothing stays mapped or allocated. */
fk_status fk_model_open(const char *dir, fk_model_kind kind, fk_model **out, fk_error *err);

/* fk_model_close(): unmaps and frees the model (NULL: nothing). Plans made from its descriptors
 * keep running: fk_plan_create copied what it needed. Descriptors filled by fk_model_describe
 * point into the model and must not be used after. */
void fk_model_close(fk_model *m);

/* fk_model_query(): fills *info (its strings live as long as the model). FK_EINVAL for NULLs. */
fk_status fk_model_query(const fk_model *m, fk_model_info *info, fk_error *err);

/* fk_model_describe(): fills the parts of *desc the checkpoint knows: the programs (FK_PROGRAMS_LM
 * for an LM or an audio model's backbone; FK_PROGRAMS_DETOK, desc.detok and desc.tail for a
 * detokenizer), desc.lm's stack, vocab, embed and lm_head (NULL when tied), desc.norm_eps, the
 * detokenizer's stack, codebooks and spectral head (tail_in, tail). desc.programs 0 asks for every
 * family the checkpoint has (an LFM2.5-Audio directory: FK_PROGRAMS_LM | FK_PROGRAMS_DETOK); a
 * host's nonzero programs are kept and only those families are filled (FK_PROGRAMS_TAIL: the
 * detokenizer's head alone). The host's fields stay as it set them (threads, tier, team_of, flags,
 * forbid_features, lm.max_rows, lm.stack.max_pos when set, detok.max_frames, detok.stack.max_pos
 * when set, max_frames, clip); zero max_rows / max_pos / max_frames get defaults (64 / the config's
 * max_position_embeddings capped at 4096 / 64), and a zero clip INFINITY (desc.clip must be > 0, so
 * 0 is unset; LFM2.5's detokenizer clips nothing). FK_EINVAL for NULLs, or programs naming a family
 * the checkpoint has not (*desc untouched). */
fk_status fk_model_describe(const fk_model *m, fk_plan_desc *desc, fk_error *err);

/* A tensor of the model by its checkpoint name (after any conversion: bf16 data, or f32 where the
 * model keeps f32: the biases, lin.bias and depth_linear.bias), for the parts no descriptor carries
 * yet (the Depthformer). An LFM2.5-Audio model names its detokenizer's tensors
 * "audio_detokenizer/<name>"; a GGUF file's tensors go by transformers' names too
 * ("model.layers.0.feed_forward.w1.weight" for blk.0.ffn_gate.weight), and its Q8_0 / Q4_0 / Q4_K matrices,
 * which the descriptor carries as blocks, are FK_EUNSUPPORTED here. The data lives as long as the model.
 * @return FK_OK and *view; FK_ENOTFOUND for a name the model has not got, or one it ignores by
 * name (the message says why); FK_EINVAL for NULLs. */
typedef enum fk_tensor_dtype { FK_DTYPE_BF16 = 0, FK_DTYPE_F32 = 1 } fk_tensor_dtype;
typedef struct fk_tensor_view {
  fk_tensor_dtype dtype;
  int ndim;
  int64_t shape[4];
  const void *data;   /* row-major, contiguous */
} fk_tensor_view;
fk_status fk_model_tensor(const fk_model *m, const char *name, fk_tensor_view *view, fk_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FK_CHECKPOINT_H */
