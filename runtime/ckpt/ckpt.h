/* runtime/ckpt/ckpt.h: what the checkpoint loader's files share (libflashkern_ckpt; not installed):
 * the safetensors dtypes, a parsed safetensors header and a sharded checkpoint's index, the
 * configurations of an LFM2 stack and of LFM2.5-Audio's other parts, the model record behind
 * fk_model, and the entry points of each file:
 *   json.c         decoding JSON (jansson): duplicate keys refused, error positions
 *   safetensors.c  mapping a file (any of the checkpoint's); a safetensors header (dtypes, shapes,
 *                  data offsets)
 *   index.c        model.safetensors.index.json (weight_map: tensor -> shard)
 *   config.c       config.json: Lfm2Config in both styles, LFM2.5-Audio's sections, the kind
 *   names.c        the name maps: which tensor feeds which descriptor field, which are ignored
 *   convert.c      f32/f16 -> bf16 (the contract's RNE), bf16/f16 -> f32 for the kept-f32 tensors
 *   gguf.c         an LFM2 GGUF file (llama.cpp's): its keys and tensors under transformers' names
 *   model.c        fk_model_open/close/query/describe/tensor: the directory and its files
 * Errors go through the runtime's fk_error (FK_RETURN_ERROR_IF, fk_internal.h); every message
 * starts "fk_model_open: " and names the file (relative to the model's directory), the tensor and
 * the field. The core library never includes this (tests/runtime_layers.sh). */
#ifndef FK_CKPT_H
#define FK_CKPT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "fk_checkpoint.h"
#include "fk_internal.h"

/* A refusal of the open: FK_EINVAL from the enclosing function (an `fk_error *err` in scope), the
 * message "fk_model_open: " and the format's; and a call whose refusal is returned as it is. */
#define CK_BAD(...) FK_RETURN_ERROR_IF(1, err, FK_EINVAL, "fk_model_open: " __VA_ARGS__)
#define CK_TRY(x) \
  do { \
    fk_status s_ = (x); \
    if (s_ != FK_OK) return s_; \
  } while (0)

/* ---- safetensors ---------------------------------------------------------------------------- */

/* Every dtype of the safetensors format (its element size is known, so offsets can be checked);
 * the loader serves BF16, F16 and F32 tensors and refuses the others by name where it uses them. */
typedef enum ck_dtype {
  CK_BOOL, CK_U8, CK_I8, CK_F8_E5M2, CK_F8_E4M3, CK_I16, CK_U16, CK_F16, CK_BF16, CK_I32, CK_U32, CK_F32,
  CK_F64, CK_I64, CK_U64, CK_DTYPES,
  /* GGUF's block types (gguf.c; no safetensors name): a matrix of rows of 32-element blocks (Q4_K:
   * 256-element super-blocks) */
  CK_Q8_0 = CK_DTYPES, CK_Q4_0, CK_Q4_K
} ck_dtype;

/* 1 for the block types: served to the plan as GGUF blocks (fk_qmatrix), or dequantized */
#define CK_BLOCKS(d) ((d) == CK_Q8_0 || (d) == CK_Q4_0 || (d) == CK_Q4_K)
/* a block type's weight format */
#define CK_QFORMAT(d) ((d) == CK_Q8_0 ? FK_Q8 : (d) == CK_Q4_0 ? FK_Q4 : FK_Q4K)

const char *fk_ckpt_dtype_name(ck_dtype d); /* "BF16", "Q8_0" */
size_t fk_ckpt_dtype_bytes(ck_dtype d);      /* an element's bytes; 0 for the block types */

/* A header refuses more dimensions than this, and more than this many header bytes (the
 * safetensors crate's own limit: 100 MB). */
enum { CK_MAX_DIMS = 8 };
#define CK_HEADER_MAX ((uint64_t)100 * 1000 * 1000)

typedef struct ck_st_tensor {
  char *name;               /* as the header spells it (malloc'd) */
  ck_dtype dtype;
  int ndim;
  int64_t shape[CK_MAX_DIMS];
  uint64_t begin, end;      /* data_offsets: [begin, end) within the data area */
} ck_st_tensor;

/* A parsed header: the tensors in data order (they tile the data area: no gap, no overlap, no byte
 * after the last), where the data area starts, and the __metadata__ entries (strings only). */
typedef struct ck_st_header {
  uint64_t data_off;        /* 8 + the header length */
  ck_st_tensor *t;
  int n;
  int metadata;             /* entries of __metadata__ */
} ck_st_header;

/* fk_ckpt_st_parse(): the file image buf[0, len) named fname in messages: the 8-byte
 * little-endian header length N (at most CK_HEADER_MAX and within the file), the JSON header
 * (an object; duplicate keys refused), __metadata__ (a map of strings), each tensor's dtype (a
 * safetensors dtype), shape (0..CK_MAX_DIMS non-negative integers, the byte size without
 * overflow) and data_offsets [begin, end) (end - begin = the dtype's size x the elements; no
 * other key), the tensors tiling the data area exactly. @return FK_OK and *out (release with
 * fk_ckpt_st_free); FK_EINVAL naming the file, the tensor and the field; FK_ENOMEM. On failure
 * *out is empty. */
fk_status fk_ckpt_st_parse(const void *buf, size_t len, const char *fname, ck_st_header *out, fk_error *err);
void fk_ckpt_st_free(ck_st_header *h);

/* A file mapped read-only, whole (size 0: map NULL). */
typedef struct ck_map {
  const unsigned char *map;
  size_t size;
} ck_map;

/* fk_ckpt_map(): maps dir/rel. @return FK_OK; FK_ENOTFOUND when it does not exist; FK_EINVAL when
 * it is not a regular file; FK_ESYSTEM for a refused open, stat or mmap. The descriptor is
 * closed before returning. */
fk_status fk_ckpt_map(const char *dir, const char *rel, ck_map *out, fk_error *err);
void fk_ckpt_unmap(ck_map *m);

/* 1 when dir/rel exists (as anything), else 0. */
int fk_ckpt_exists(const char *dir, const char *rel);

/* ---- GGUF ------------------------------------------------------------------------------------- */

/* fk_ckpt_gguf(): maps m->dir/rel, an LFM2 GGUF file (gguf.c), into m->files and m->t (transformers'
 * names and shapes, GGUF's dtypes) and m->lm (its keys; vocab from token_embd, tied without an
 * output tensor). FK_EINVAL naming the file, the key or tensor and the field; FK_ENOTFOUND;
 * FK_ESYSTEM; FK_ENOMEM. */
fk_status fk_ckpt_gguf(fk_model *m, const char *rel, fk_error *err);


/* ---- JSON ----------------------------------------------------------------------------------- */

/* fk_ckpt_json_decode(): buf[0, len) as one JSON value (duplicate keys refused), `what` naming
 * it in messages ("config.json", "model.safetensors: header"). FK_EINVAL with the line, column
 * and byte of the error. */
fk_status fk_ckpt_json_decode(const void *buf, size_t len, const char *what, json_t **out, fk_error *err);
/* fk_ckpt_json_file(): dir/rel mapped (fk_ckpt_map's refusals: FK_ENOTFOUND when missing) and
 * decoded; at most 64 MiB. */
fk_status fk_ckpt_json_file(const char *dir, const char *rel, json_t **out, fk_error *err);

/* ---- the index of a sharded checkpoint ------------------------------------------------------ */

typedef struct ck_index_entry {
  char *tensor;             /* a weight_map key */
  int shard;                /* into shard[] */
} ck_index_entry;

typedef struct ck_index {
  char **shard;             /* the shard files named, sorted, each once */
  int nshards;
  ck_index_entry *e;        /* sorted by tensor */
  int n;
  uint64_t total_size;      /* metadata.total_size (0 when absent) */
} ck_index;

/* fk_ckpt_index_parse(): model.safetensors.index.json's text: an object of "weight_map" (tensor
 * -> shard file, a plain file name ending in .safetensors) and an optional "metadata" object.
 * @return FK_OK and *out (release with fk_ckpt_index_free); FK_EINVAL naming the file and the
 * key; FK_ENOMEM. */
fk_status fk_ckpt_index_parse(const void *buf, size_t len, const char *fname, ck_index *out, fk_error *err);
void fk_ckpt_index_free(ck_index *ix);
/* The shard the index names for `tensor`, or -1. */
int fk_ckpt_index_shard(const ck_index *ix, const char *tensor);

/* ---- configurations ------------------------------------------------------------------------- */

/* An LFM2 stack as its Lfm2Config describes it (transformers' rules for every key). */
typedef struct ck_lfm2 {
  int64_t vocab, hidden, ffn, layers, heads, kv_heads, head_dim, max_pos;
  int64_t ff_declared;      /* block_ff_dim / intermediate_size before the auto-adjust */
  int64_t window;           /* the detokenizer's sliding_window (an LM: 0) */
  int64_t attn_layers;
  float rope_theta, norm_eps;
  int tied;                 /* tie_embedding / tie_word_embeddings */
  unsigned char attn[FK_MAX_LAYERS];
} ck_lfm2;

/* LFM2.5-Audio's sections beside its backbone (liquid-audio's LFM2AudioConfig). */
typedef struct ck_audio {
  int64_t codebooks;
  int tie_audio;            /* tie_audio_embeddings */
  int64_t depth_layers, depth_dim, depth_ff, depth_head_dim, depth_qkv;
  int depth_tie;            /* depthformer.tie */
  int64_t n_text, n_audio;  /* interleaved_n_text, interleaved_n_audio */
} ck_audio;

/* fk_ckpt_config_kind(): the kind of directory a config.json describes (`want`: the caller's, or
 * FK_MODEL_AUTO) and its architecture's name. FK_EINVAL for an unknown architecture or one that
 * is not of kind `want`. */
fk_status fk_ckpt_config_kind(const json_t *cfg, const char *fname, fk_model_kind want, fk_model_kind *kind,
                              const char **arch, fk_error *err);
/* fk_ckpt_config_lfm2(): an Lfm2Config object; `key` prefixes its keys in messages ("lfm." in
 * LFM2.5-Audio's config.json); detok: the detokenizer's (layer types conv / sliding_attention /
 * full_attention, sliding_window), else an LM's (conv / full_attention). */
fk_status fk_ckpt_config_lfm2(const json_t *cfg, const char *fname, const char *key, int detok, ck_lfm2 *out,
                              fk_error *err);
/* fk_ckpt_config_audio(): LFM2.5-Audio's config.json: every key of LFM2AudioConfig and no other;
 * its lfm section through fk_ckpt_config_lfm2 into *lm. */
fk_status fk_ckpt_config_audio(const json_t *cfg, const char *fname, ck_audio *out, ck_lfm2 *lm, fk_error *err);

/* ---- the model ------------------------------------------------------------------------------ */

typedef enum ck_role { CK_UNCLAIMED = 0, CK_USED, CK_IGNORED } ck_role;

/* One tensor of the model's files. */
typedef struct ck_tensor {
  char *name;               /* the model's name for it (malloc'd): the audio model prefixes its
                               detokenizer's tensors with "audio_detokenizer/" */
  char *label;              /* its name in its file where that differs (a GGUF tensor's), malloc'd, else
                               NULL: what messages show (fk_ckpt_shown) */
  int file;                 /* into fk_model.files */
  ck_dtype dtype;
  int ndim;
  int64_t shape[CK_MAX_DIMS];
  const unsigned char *src; /* its bytes in the mapping */
  size_t nbytes;
  ck_role role;
  int blocks;               /* a Q8_0 / Q4_0 matrix the plan takes as GGUF blocks (fk_qmatrix), in place */
  fk_tensor_dtype out;      /* what it is served as (CK_USED, not blocks) */
  const void *data;         /* served bytes (fk_ckpt_convert): in place, or the model's buffer */
} ck_tensor;

/* A descriptor field a tensor feeds, filled once the tensor is converted. */
typedef struct ck_bind {
  const ck_tensor *t;
  const uint16_t **bf16;
  const float **f32;
} ck_bind;

typedef struct ck_file {
  char *name;               /* relative to the model's directory */
  ck_map map;
} ck_file;

struct fk_model {
  fk_model_kind kind;
  const char *arch;
  char *dir;
  ck_file *files;
  int nfiles;
  const char *where;        /* the main weights, for messages: "model.safetensors" or the index */
  ck_tensor *t;             /* sorted by name once every file is read */
  int nt;
  ck_bind *bind;
  int nbind, capbind;
  int has_lm, has_det;
  int gguf;                 /* read from a GGUF file (gguf.c): messages name its tensors as it does */
  ck_lfm2 lm, det;
  ck_audio audio;
  fk_lfm2_layer lm_layer[FK_MAX_LAYERS], det_layer[FK_MAX_LAYERS], depth_layer[FK_MAX_LAYERS];
  fk_audio_desc aud;        /* LFM2.5-Audio: its lm is lmd; the Depthformer's k/v are set by describe */
  fk_lm_desc lmd;           /* max_rows and max_pos are fk_model_describe's */
  fk_detok_desc detd;
  fk_tail_weights tail;
  void *owned;              /* the converted tensors, one buffer */
  size_t owned_bytes;
  int64_t used, ignored;
  uint64_t file_bytes;
  const char *dtype;        /* "bf16", "f32", "f16", "mixed" */
};

/* The name a message shows for a tensor: its file's (t->label), else the model's. */
static inline const char *fk_ckpt_shown(const ck_tensor *t) { return t->label ? t->label : t->name; }
/* fk_ckpt_gguf_name(): the GGUF name of a transformers name gguf.c maps (into out), else the name. */
const char *fk_ckpt_gguf_name(const char *hf, char *out, size_t size);
/* fk_ckpt_gguf_parse(): the same from the file image buf[0, len) named rel, its tensors' `file` the
 * index given (what fk_ckpt_gguf maps; the fuzzer's entry). On a refusal m->t may hold the tensors
 * read so far (fk_model_close frees them). */
fk_status fk_ckpt_gguf_parse(fk_model *m, const void *buf, size_t len, const char *rel, int file, fk_error *err);
/* refuses, naming the file, tensor, row and block, a GGUF block tensor t whose scales are not all finite */
fk_status fk_ckpt_blocks_finite(const fk_model *m, const ck_tensor *t, fk_error *err);

/* fk_ckpt_add_file(): appends dir/rel to m->files, mapped (fk_ckpt_map's refusals), into *out. */
fk_status fk_ckpt_add_file(fk_model *m, const char *rel, ck_file **out, fk_error *err);

/* The tensor called name, or NULL (model.c: binary search once sorted). */
ck_tensor *fk_ckpt_find(const fk_model *m, const char *name);
/* The file a tensor called name belongs to, for messages: its own file, or where it was expected. */
const char *fk_ckpt_file_of(const fk_model *m, const char *name);

/* names.c: the name maps. Each claims the tensors of one part of the model (checking dtype and
 * shape; used or ignored by name) and binds the descriptor fields they feed. */
fk_status fk_ckpt_names_lm(fk_model *m, fk_error *err);
fk_status fk_ckpt_names_audio(fk_model *m, fk_error *err);
fk_status fk_ckpt_names_detok(fk_model *m, const char *prefix, fk_error *err);
/* Why a tensor the maps ignore is ignored (names.c's table). */
const char *fk_ckpt_ignored_why(const char *name);
/* FK_EINVAL naming the first tensor no map claimed. */
fk_status fk_ckpt_names_unclaimed(const fk_model *m, fk_error *err);

/* convert.c: serves every used tensor (bf16 in place when aligned, else converted into one owned
 * buffer) and fills the bound fields. FK_ENOMEM. */
fk_status fk_ckpt_convert(fk_model *m, fk_error *err);
/* Element i of a float tensor (BF16, F16, F32) as f32, exactly. */
float fk_ckpt_f32_at(const ck_tensor *t, size_t i);

#endif
