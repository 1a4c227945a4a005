/* runtime/ckpt/model.c: fk_model_open, _close, _query, _describe and _tensor (fk_checkpoint.h):
 * which files of a directory make a model of each kind, how they are read into one table of
 * tensors, and the descriptors a host receives.
 *
 * A directory:
 *   LFM2 LM        config.json; model.safetensors, or model.safetensors.index.json and its shards
 *                  (transformers' rule; a directory with both is refused as ambiguous)
 *   LFM2.5-Audio   the same, and audio_detokenizer/ when the folder exists (liquid-audio's
 *                  processor loads it only then): its config.json and model.safetensors, whose
 *                  tensors are named "audio_detokenizer/<name>" here
 *   detokenizer    config.json and model.safetensors (LFM2AudioProcessor.audio_detokenizer)
 * or a GGUF file (not a directory): an LFM2 language model as llama.cpp writes it (gguf.c).
 * fk_model_open reads everything, or refuses and releases everything it took. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt.h"

#define DETOK_DIR "audio_detokenizer"
/* fk_model_describe's defaults for the host's zero fields */
enum { DEFAULT_ROWS = 64, DEFAULT_FRAMES = 64, DEFAULT_MAX_POS = 4096 };

/* ---- the table of tensors --------------------------------------------------------------------- */

static int by_name(const void *a, const void *b) { return strcmp(((const ck_tensor *)a)->name, ((const ck_tensor *)b)->name); }

ck_tensor *fk_ckpt_find(const fk_model *m, const char *name) {
  int lo = 0, hi = m->nt - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2, c = strcmp(name, m->t[mid].name);
    if (c == 0) return &m->t[mid];
    if (c < 0) hi = mid - 1;
    else lo = mid + 1;
  }
  return NULL;
}

const char *fk_ckpt_file_of(const fk_model *m, const char *name) {
  const ck_tensor *t = fk_ckpt_find(m, name);
  if (t) return m->files[t->file].name;
  return !strncmp(name, DETOK_DIR "/", sizeof DETOK_DIR) ? DETOK_DIR "/model.safetensors" : m->where;
}

fk_status fk_ckpt_add_file(fk_model *m, const char *rel, ck_file **out, fk_error *err) {
  ck_file *f = realloc(m->files, (size_t)(m->nfiles + 1) * sizeof *f);
  FK_RETURN_ERROR_IF(!f, err, FK_ENOMEM, "fk_model_open: %s", rel);
  m->files = f;
  f = &m->files[m->nfiles];
  memset(f, 0, sizeof *f);
  FK_RETURN_ERROR_IF(!(f->name = strdup(rel)), err, FK_ENOMEM, "fk_model_open: %s", rel);
  m->nfiles++;
  CK_TRY(fk_ckpt_map(m->dir, rel, &f->map, err));
  m->file_bytes += f->map.size;
  *out = f;
  return FK_OK;
}

/* Maps dir/rel and appends its tensors, named prefix + their name; with an index, each must be
 * where the index says (shard `shard`). */
static fk_status add_file(fk_model *m, const char *rel, const char *prefix, const ck_index *ix, int shard,
                          fk_error *err) {
  ck_file *f;
  CK_TRY(fk_ckpt_add_file(m, rel, &f, err));
  ck_st_header h;
  CK_TRY(fk_ckpt_st_parse(f->map.map, f->map.size, rel, &h, err));
  fk_status s = FK_OK;
  ck_tensor *t = realloc(m->t, (size_t)(m->nt + h.n + 1) * sizeof *t);
  if (!t) s = fk_error_set(err, FK_ENOMEM, __FILE__, __LINE__, "fk_model_open: %s: %d tensors", rel, h.n);
  else m->t = t;
  for (int i = 0; i < h.n && s == FK_OK; i++) {
    const ck_st_tensor *st = &h.t[i];
    if (ix) {
      int in = fk_ckpt_index_shard(ix, st->name);
      if (in < 0)
        s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__,
                         "fk_model_open: %s: tensor '%s' is not in model.safetensors.index.json's weight_map", rel, st->name);
      else if (in != shard)
        s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__,
                         "fk_model_open: %s: tensor '%s': model.safetensors.index.json puts it in %s", rel, st->name,
                         ix->shard[in]);
      if (s != FK_OK) break;
    }
    ck_tensor *c = &m->t[m->nt];
    memset(c, 0, sizeof *c);
    size_t pn = strlen(prefix), nn = strlen(st->name);
    if (!(c->name = malloc(pn + nn + 1))) {
      s = fk_error_set(err, FK_ENOMEM, __FILE__, __LINE__, "fk_model_open: %s: tensor names", rel);
      break;
    }
    memcpy(c->name, prefix, pn);
    memcpy(c->name + pn, st->name, nn + 1);
    m->nt++;
    c->file = m->nfiles - 1;
    c->dtype = st->dtype;
    c->ndim = st->ndim;
    memcpy(c->shape, st->shape, sizeof c->shape);
    c->src = f->map.map + h.data_off + st->begin;
    c->nbytes = (size_t)(st->end - st->begin);
  }
  fk_ckpt_st_free(&h);
  return s;
}

/* The main weights: model.safetensors, or the index and every shard it names (each must exist and
 * hold exactly the tensors the index gives it). */
static fk_status main_weights(fk_model *m, fk_error *err) {
  const char *single = "model.safetensors", *index = "model.safetensors.index.json";
  int has_single = fk_ckpt_exists(m->dir, single), has_index = fk_ckpt_exists(m->dir, index);
  if (has_single && has_index) CK_BAD("%s and %s are both here: which one is the checkpoint is ambiguous (in %s)", single, index, m->dir);
  FK_RETURN_ERROR_IF(!has_single && !has_index, err, FK_ENOTFOUND, "fk_model_open: no %s nor %s (in %s)", single,
                     index, m->dir);
  if (has_single) {
    m->where = single;
    return add_file(m, single, "", NULL, 0, err);
  }
  m->where = index;
  ck_map map;
  CK_TRY(fk_ckpt_map(m->dir, index, &map, err));
  ck_index ix;
  fk_status s = fk_ckpt_index_parse(map.map, map.size, index, &ix, err);
  fk_ckpt_unmap(&map);
  if (s != FK_OK) return s;
  for (int k = 0; k < ix.nshards && s == FK_OK; k++) {
    if (!fk_ckpt_exists(m->dir, ix.shard[k])) {
      const char *one = "";
      for (int i = 0; i < ix.n; i++)
        if (ix.e[i].shard == k) {
          one = ix.e[i].tensor;
          break;
        }
      s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__,
                       "fk_model_open: %s: weight_map names shard %s (tensor '%s' among others): no such file", index,
                       ix.shard[k], one);
      break;
    }
    s = add_file(m, ix.shard[k], "", &ix, k, err);
  }
  /* every tensor was checked against the index: the index has one no shard holds when counts differ */
  int held = 0;
  for (int i = 0; i < m->nt; i++) held += strncmp(m->t[i].name, DETOK_DIR "/", sizeof DETOK_DIR) != 0;
  if (s == FK_OK && held != ix.n) {
    qsort(m->t, (size_t)m->nt, sizeof *m->t, by_name);
    for (int i = 0; i < ix.n; i++)
      if (!fk_ckpt_find(m, ix.e[i].tensor)) {
        s = fk_error_set(err, FK_EINVAL, __FILE__, __LINE__,
                         "fk_model_open: %s: weight_map['%s'] = %s: the shard has no such tensor", index,
                         ix.e[i].tensor, ix.shard[ix.e[i].shard]);
        break;
      }
  }
  fk_ckpt_index_free(&ix);
  return s;
}

/* ---- open --------------------------------------------------------------------------------------- */

static fk_status detokenizer(fk_model *m, const char *sub, const char *prefix, fk_error *err) {
  char cfg[64], st[64];
  snprintf(cfg, sizeof cfg, "%s%sconfig.json", sub, *sub ? "/" : "");
  snprintf(st, sizeof st, "%s%smodel.safetensors", sub, *sub ? "/" : "");
  json_t *j;
  CK_TRY(fk_ckpt_json_file(m->dir, cfg, &j, err));
  fk_status s = fk_ckpt_config_lfm2(j, cfg, "", 1, &m->det, err);
  json_decref(j);
  if (s == FK_OK) s = add_file(m, st, prefix, NULL, 0, err);
  m->has_det = s == FK_OK;
  return s;
}

static const char *dtype_of(const fk_model *m) {
  int seen = -1;
  for (int i = 0; i < m->nt; i++) {
    if (m->t[i].role != CK_USED) continue;
    if (seen >= 0 && seen != (int)m->t[i].dtype) return "mixed";
    seen = (int)m->t[i].dtype;
  }
  return seen == CK_BF16 ? "bf16" : seen == CK_F16 ? "f16" : seen == CK_F32 ? "f32" : "none";
}

/* The table, once every file is read: sorted, each name once, claimed by the kind's maps, served. */
static fk_status claim_all(fk_model *m, fk_error *err) {
  qsort(m->t, (size_t)m->nt, sizeof *m->t, by_name);
  for (int i = 1; i < m->nt; i++)
    if (!strcmp(m->t[i].name, m->t[i - 1].name))
      CK_BAD("tensor '%s' is in %s and in %s", m->t[i].name, m->files[m->t[i - 1].file].name, m->files[m->t[i].file].name);
  if (m->kind == FK_MODEL_LFM2_LM) CK_TRY(fk_ckpt_names_lm(m, err));
  if (m->kind == FK_MODEL_LFM2_AUDIO) CK_TRY(fk_ckpt_names_audio(m, err));
  if (m->has_det) CK_TRY(fk_ckpt_names_detok(m, m->kind == FK_MODEL_DETOK ? "" : DETOK_DIR "/", err));
  CK_TRY(fk_ckpt_names_unclaimed(m, err));
  CK_TRY(fk_ckpt_convert(m, err));
  for (int64_t i = 0; m->kind == FK_MODEL_LFM2_AUDIO && i < m->audio.depth_layers; i++) {
    fk_lfm2_layer *l = &m->depth_layer[i]; /* the Depthformer's k and v: rows of qkv_proj (bound to q_proj) */
    int64_t dim = m->audio.depth_dim, kd = 8 * m->audio.depth_head_dim;
    l->k_proj = l->q_proj + dim * dim;
    l->v_proj = l->q_proj + (dim + kd) * dim;
  }
  for (int i = 0; i < m->nt; i++) {
    m->used += m->t[i].role == CK_USED;
    m->ignored += m->t[i].role == CK_IGNORED;
  }
  m->dtype = dtype_of(m);
  return FK_OK;
}

/* An LFM2 GGUF file (gguf.c): a language model; its quantized matrices go to the plan as blocks. */
static fk_status load_gguf(fk_model *m, fk_model_kind want, const char *rel, fk_error *err) {
  FK_RETURN_ERROR_IF(want != FK_MODEL_AUTO && want != FK_MODEL_LFM2_LM, err, FK_EINVAL,
                     "fk_model_open: %s: a GGUF file is read as an LFM2 language model (FK_MODEL_LFM2_LM), not kind %d",
                     rel, (int)want);
  m->kind = FK_MODEL_LFM2_LM;
  m->arch = "lfm2 (GGUF)";
  m->where = rel; /* (the caller's string: it outlives the open) */
  m->has_lm = 1;
  m->gguf = 1;
  CK_TRY(fk_ckpt_gguf(m, rel, err));
  m->where = m->files[0].name;
  return claim_all(m, err);
}

static fk_status load(fk_model *m, fk_model_kind want, fk_error *err) {
  json_t *cfg;
  CK_TRY(fk_ckpt_json_file(m->dir, "config.json", &cfg, err));
  fk_status s = fk_ckpt_config_kind(cfg, "config.json", want, &m->kind, &m->arch, err);
  if (s == FK_OK) {
    switch (m->kind) {
    case FK_MODEL_LFM2_LM: s = fk_ckpt_config_lfm2(cfg, "config.json", "", 0, &m->lm, err); break;
    case FK_MODEL_LFM2_AUDIO: s = fk_ckpt_config_audio(cfg, "config.json", &m->audio, &m->lm, err); break;
    default: s = FK_OK; break;
    }
  }
  json_decref(cfg);
  if (s != FK_OK) return s;
  if (m->kind == FK_MODEL_DETOK) {
    m->where = "model.safetensors";
    CK_TRY(detokenizer(m, "", "", err));
  } else {
    m->has_lm = 1;
    CK_TRY(main_weights(m, err));
    if (m->kind == FK_MODEL_LFM2_AUDIO && fk_ckpt_exists(m->dir, DETOK_DIR)) CK_TRY(detokenizer(m, DETOK_DIR, DETOK_DIR "/", err));
  }
  return claim_all(m, err);
}

fk_status fk_model_open(const char *dir, fk_model_kind kind, fk_model **out, fk_error *err) {
  FK_RETURN_ERROR_IF(!out, err, FK_EINVAL, "fk_model_open: out is NULL");
  *out = NULL;
  FK_RETURN_ERROR_IF(!dir, err, FK_EINVAL, "fk_model_open: dir is NULL");
  FK_RETURN_ERROR_IF(kind < FK_MODEL_AUTO || kind > FK_MODEL_DETOK, err, FK_EINVAL,
                     "fk_model_open: kind = %d: not an fk_model_kind", (int)kind);
  struct stat st;
  const int file = stat(dir, &st) == 0 && S_ISREG(st.st_mode);
  FK_RETURN_ERROR_IF(!file && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)), err, FK_ENOTFOUND,
                     "fk_model_open: %s: no such directory or file", dir);
  fk_model *m = calloc(1, sizeof *m);
  FK_RETURN_ERROR_IF(!m, err, FK_ENOMEM, "fk_model_open: the model record");
  fk_status s;
  if (file) {
    /* a GGUF file: its folder is the model's directory, its name the one file */
    const char *slash = strrchr(dir, '/');
    const char *rel = slash ? slash + 1 : dir;
    m->dir = slash ? strndup(dir, (size_t)(slash - dir) + (slash == dir)) : strdup(".");
    s = m->dir ? load_gguf(m, kind, rel, err) : fk_error_set(err, FK_ENOMEM, __FILE__, __LINE__, "fk_model_open: %s", dir);
  } else {
    s = (m->dir = strdup(dir)) ? load(m, kind, err)
                               : fk_error_set(err, FK_ENOMEM, __FILE__, __LINE__, "fk_model_open: %s", dir);
  }
  if (s != FK_OK) {
    fk_model_close(m);
    return s;
  }
  *out = m;
  return FK_OK;
}

void fk_model_close(fk_model *m) {
  if (!m) return;
  for (int i = 0; i < m->nt; i++) {
    free(m->t[i].name);
    free(m->t[i].label);
  }
  for (int i = 0; i < m->nfiles; i++) {
    fk_ckpt_unmap(&m->files[i].map);
    free(m->files[i].name);
  }
  free(m->t);
  free(m->files);
  free(m->bind);
  free(m->owned);
  free(m->dir);
  free(m);
}

/* ---- what it holds ---------------------------------------------------------------------------- */

fk_status fk_model_query(const fk_model *m, fk_model_info *info, fk_error *err) {
  FK_RETURN_ERROR_IF(!m, err, FK_EINVAL, "fk_model_query: m is NULL");
  FK_RETURN_ERROR_IF(!info, err, FK_EINVAL, "fk_model_query: info is NULL");
  fk_model_info o;
  memset(&o, 0, sizeof o);
  o.kind = m->kind;
  o.architecture = m->arch;
  if (m->has_lm) {
    const ck_lfm2 *c = &m->lm;
    o.vocab = c->vocab;
    o.hidden = c->hidden;
    o.ffn = c->ffn;
    o.layers = c->layers;
    o.attn_layers = c->attn_layers;
    o.heads = c->heads;
    o.kv_heads = c->kv_heads;
    o.head_dim = c->head_dim;
    o.max_pos = c->max_pos;
    o.rope_theta = c->rope_theta;
    o.norm_eps = c->norm_eps;
    o.tied = m->lmd.lm_head == NULL && (m->lmd.lm_head_q.format == FK_QNONE || m->lm.tied); /* (GGUF: a head of blocks) */
  }
  if (m->has_det) {
    o.det_hidden = m->det.hidden;
    o.det_layers = m->det.layers;
    o.det_window = m->det.window;
    o.codebook_vocab = m->detd.codebook_vocab;
  }
  if (m->kind == FK_MODEL_LFM2_AUDIO) {
    o.codebooks = m->audio.codebooks;
    o.depth_layers = m->audio.depth_layers;
    o.depth_dim = m->audio.depth_dim;
  }
  o.files = m->nfiles;
  o.tensors = m->used;
  o.ignored = m->ignored;
  o.file_bytes = m->file_bytes;
  o.owned_bytes = m->owned_bytes;
  o.dtype = m->dtype;
  *info = o;
  return FK_OK;
}

static int64_t cap_pos(int64_t max_pos) { return max_pos < DEFAULT_MAX_POS ? max_pos : DEFAULT_MAX_POS; }

fk_status fk_model_describe(const fk_model *m, fk_plan_desc *desc, fk_error *err) {
  FK_RETURN_ERROR_IF(!m, err, FK_EINVAL, "fk_model_describe: m is NULL");
  FK_RETURN_ERROR_IF(!desc, err, FK_EINVAL, "fk_model_describe: desc is NULL");
  const int audio = m->kind == FK_MODEL_LFM2_AUDIO;
  const uint32_t have = (m->has_lm ? FK_PROGRAMS_LM : 0u) | (m->has_det ? FK_PROGRAMS_DETOK | FK_PROGRAMS_TAIL : 0u) |
                        (audio ? FK_PROGRAMS_AUDIO : 0u);
  /* by default the text model and the detokenizer; the audio programs when asked */
  const uint32_t want = desc->programs ? desc->programs : have & ~(FK_PROGRAMS_TAIL | FK_PROGRAMS_AUDIO);
  FK_RETURN_ERROR_IF(want & ~have, err, FK_EINVAL,
                     "fk_model_describe: desc.programs = 0x%x: this %s checkpoint describes 0x%x (%s%s%s%s)",
                     (unsigned)desc->programs, m->arch, (unsigned)have, m->has_lm ? "FK_PROGRAMS_LM" : "",
                     m->has_lm && m->has_det ? ", " : "", m->has_det ? "FK_PROGRAMS_DETOK, FK_PROGRAMS_TAIL" : "",
                     audio ? ", FK_PROGRAMS_AUDIO" : "");
  FK_RETURN_ERROR_IF((want & FK_PROGRAMS_AUDIO) && m->audio.codebooks != FK_CODEBOOKS, err, FK_EUNSUPPORTED,
                     "fk_model_describe: this %s checkpoint has %lld codebooks: the audio programs run %d", m->arch,
                     (long long)m->audio.codebooks, FK_CODEBOOKS);
  fk_plan_desc d = *desc;
  d.programs = want;
  if (want & FK_PROGRAMS_LM) {
    d.lm = m->lmd;
    d.lm.max_rows = desc->lm.max_rows ? desc->lm.max_rows : DEFAULT_ROWS;
    d.lm.stack.max_pos = desc->lm.stack.max_pos ? desc->lm.stack.max_pos : cap_pos(m->lm.max_pos);
  }
  if (want & FK_PROGRAMS_AUDIO) {
    d.audio = m->aud;
    d.audio.lm = m->lmd;
    d.audio.lm.max_rows = desc->audio.lm.max_rows ? desc->audio.lm.max_rows : DEFAULT_ROWS;
    d.audio.lm.stack.max_pos = desc->audio.lm.stack.max_pos ? desc->audio.lm.stack.max_pos : cap_pos(m->lm.max_pos);
  }
  if (want & FK_PROGRAMS_DETOK) {
    d.detok = m->detd;
    d.detok.max_frames = desc->detok.max_frames ? desc->detok.max_frames : DEFAULT_FRAMES;
    d.detok.stack.max_pos = desc->detok.stack.max_pos ? desc->detok.stack.max_pos : cap_pos(m->det.max_pos);
  }
  if (want & (FK_PROGRAMS_DETOK | FK_PROGRAMS_TAIL)) {
    d.tail_in = m->det.hidden;
    d.tail = m->tail;
    d.max_frames = desc->max_frames ? desc->max_frames : DEFAULT_FRAMES;
    /* a zero clip can only be unset (desc.clip must be > 0): LFM2.5's detokenizer clips nothing */
    d.clip = desc->clip != 0.0f ? desc->clip : INFINITY;
  }
  d.norm_eps = m->has_lm ? m->lm.norm_eps : m->det.norm_eps;
  *desc = d;
  return FK_OK;
}

fk_status fk_model_tensor(const fk_model *m, const char *name, fk_tensor_view *view, fk_error *err) {
  FK_RETURN_ERROR_IF(!m, err, FK_EINVAL, "fk_model_tensor: m is NULL");
  FK_RETURN_ERROR_IF(!name, err, FK_EINVAL, "fk_model_tensor: name is NULL");
  FK_RETURN_ERROR_IF(!view, err, FK_EINVAL, "fk_model_tensor: view is NULL");
  const ck_tensor *t = fk_ckpt_find(m, name);
  FK_RETURN_ERROR_IF(!t, err, FK_ENOTFOUND, "fk_model_tensor: no tensor '%s' in this %s checkpoint", name, m->arch);
  FK_RETURN_ERROR_IF(t->blocks, err, FK_EUNSUPPORTED,
                     "fk_model_tensor: tensor '%s' is GGUF %s blocks: the descriptor carries them (fk_qmatrix)", name,
                     fk_ckpt_dtype_name(t->dtype));
  FK_RETURN_ERROR_IF(t->role != CK_USED, err, FK_ENOTFOUND, "fk_model_tensor: tensor '%s' is ignored by name (%s)",
                     name, fk_ckpt_ignored_why(name));
  fk_tensor_view v;
  memset(&v, 0, sizeof v);
  v.dtype = t->out;
  v.ndim = t->ndim;
  for (int i = 0; i < t->ndim && i < 4; i++) v.shape[i] = t->shape[i];
  v.data = t->data;
  *view = v;
  return FK_OK;
}
