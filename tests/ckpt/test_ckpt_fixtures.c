/* tests/ckpt/test_ckpt_fixtures.c: the checkpoint fixtures (fixtures/ckpt/: directories written by
 * transformers and liquid-audio themselves, each beside the trace of the model that code loads back
 * from it; fixtures/ref/gen_ckpt.py, fixtures/README.md "Checkpoints") against the checkpoint loader
 * (libflashkern_ckpt, fk_checkpoint.h). Every manifest of fixtures/ckpt/ is a case:
 *   files_and_tensors: the directory holds exactly the files its manifest lists (paths, sizes,
 *     XXH3-64); fk_model_open reads it as its config.json says; fk_model_query reports the
 *     manifest's stack, files and tensor count; fk_model_tensor serves every tensor the model uses
 *     with the bytes the manifest digests (bf16 as stored, f32 rounded by the contract's RNE, a
 *     kept-f32 tensor as stored or widened) and refuses the others, which are the ignored ones.
 *   traces: fk_model_describe into plans of 1, 2 and 3 members; the trace's calls (the prompt, then
 *     the decodes fed the trace's tokens) within the manifest's bound at every boundary (the
 *     embedding, every layer, the final norm, the logits, the K/V caches and conv states after every
 *     call), the greedy tokens where the margin requires them; an audio directory's detokenizer on
 *     its code frames (dt_ boundaries, the PCM at the end). The outputs (logits, the planes, PCM, the
 *     state) are the same bits for every team size, and for the four directories of one model
 *     (bf16 and f32, whole and sharded: the f32 weights round to the bf16 ones by the contract's RNE).
 *   perturb_*: a flipped checkpoint byte fails the files' check; weights changed in a copy of a
 *     checkpoint (which opens) fail the trace's boundaries.
 *   same_on_aarch64: fk_ckpt_scenario (tests/ckpt/fk_ckpt_scenario.c) opens a checkpoint and prints
 *     the session's digests (tests/model/session.c) and its tensors'; under qemu-aarch64 it must print
 *     what the host prints. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <sndfile.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "fk_checkpoint.h"
#include "fk_prog_lm.h"
#include "model_desc.h"
#include "trace.h"
#include "cmd.h"

enum { NAME_W = 96, MAX_CASES = 16, MAX_FILES = 64 };

/* ---- the cases: every manifest of fixtures/ckpt/ -------------------------------------------------- */

typedef struct ckcase {
  fkm_trace tr;
  char dir[512];            /* the checkpoint directory beside the manifest */
} ckcase;

/* one case: a manifest's path (the parameter of the per-case tests) */
typedef struct ckparam {
  char manifest[512];
} ckparam;

static int list_cases(char ***paths) {
  char dir[512], err[256];
  snprintf(dir, sizeof dir, "%s/ckpt", FKT_FIXTURE_DIR);
  int n = fkfix_list(dir, paths, err, sizeof err);
  cr_assert_gt(n, 0, "no manifest in %s: %s", dir, n < 0 ? err : "");
  cr_assert_leq(n, MAX_CASES);
  return n;
}

static void load_case(ckcase *c, const char *manifest) {
  char err[512];
  cr_assert_eq(fkm_trace_load(manifest, &c->tr, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(c->tr.tag, "ckpt", "%s: not a checkpoint's trace", manifest);
  size_t n = strlen(manifest) - strlen(".manifest");
  cr_assert_lt(n, sizeof c->dir);
  memcpy(c->dir, manifest, n);
  c->dir[n] = 0;
}

static const fkfix_tensor *need(const ckcase *c, const char *name, fkfix_dtype dt) {
  const fkfix_tensor *t = fkfix_tensor_get(&c->tr.fx, name);
  cr_assert(t && t->dtype == dt, "%s: tensor %s missing or of another dtype", c->tr.fx.casename, name);
  return t;
}

static int64_t scalar(const ckcase *c, const char *name) {
  int64_t v;
  cr_assert_eq(fkfix_scalar_i64(&c->tr.fx, name, &v), 0, "%s: scalar %s", c->tr.fx.casename, name);
  return v;
}

static int has_scalar(const ckcase *c, const char *name) {
  int64_t v;
  return fkfix_scalar_i64(&c->tr.fx, name, &v) == 0;
}

/* row i of a u16 name tensor (names x NAME_W, ASCII) */
static void name_at(const fkfix_tensor *t, int64_t i, char *out) {
  cr_assert_eq(t->shape[1], NAME_W);
  const uint16_t *r = (const uint16_t *)t->data + i * NAME_W;
  int k = 0;
  for (; k < NAME_W - 1 && r[k]; k++) out[k] = (char)r[k];
  out[k] = 0;
}

static fk_model *open_model(const char *dir) {
  fk_model *m = NULL;
  fk_error e;
  fk_status s = fk_model_open(dir, FK_MODEL_AUTO, &m, &e);
  cr_assert_eq(s, FK_OK, "fk_model_open(%s): %s: %s", dir, fk_strerror(s), e.message);
  return m;
}

/* ---- the directory: its files, what the loader makes of it ------------------------------------------ */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* every regular file under root/rel, as paths relative to root */
static void walk(const char *root, const char *rel, char **out, int *n) {
  char path[1024];
  snprintf(path, sizeof path, "%s%s%s", root, *rel ? "/" : "", rel);
  DIR *d = opendir(path);
  cr_assert(d, "cannot read %s", path);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char sub[512], full[1536];
    snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
    snprintf(full, sizeof full, "%s/%s", root, sub);
    struct stat st;
    cr_assert_eq(stat(full, &st), 0, "stat %s", full);
    if (S_ISDIR(st.st_mode)) {
      walk(root, sub, out, n);
    } else {
      cr_assert_lt(*n, MAX_FILES);
      out[(*n)++] = strdup(sub);
    }
  }
  closedir(d);
}

/* The directory holds exactly the manifest's files, each of its size and XXH3-64. Returns the number of
 * mismatches (0: all equal); the first goes to first. */
static int check_files(const ckcase *c, const char *dir, char *first, size_t firstlen) {
  const fkfix_tensor *names = need(c, "file_names", FKFIX_U16), *sizes = need(c, "file_sizes", FKFIX_I64),
                     *digs = need(c, "file_digests", FKFIX_I64);
  char *got[MAX_FILES];
  int n = 0, bad = 0;
  walk(dir, "", got, &n);
  qsort(got, (size_t)n, sizeof got[0], cmp_str);
  if (n != names->shape[0]) {
    snprintf(first, firstlen, "%s: %d files, the manifest lists %lld", dir, n, (long long)names->shape[0]);
    bad++;
  }
  for (int i = 0; i < n && i < names->shape[0]; i++) {
    char want[NAME_W], path[1024];
    name_at(names, i, want);
    snprintf(path, sizeof path, "%s/%s", dir, got[i]);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc((size_t)size + 1);
    cr_assert_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    uint64_t h = XXH3_64bits(buf, (size_t)size);
    free(buf);
    int ok = !strcmp(want, got[i]) && size == ((const int64_t *)sizes->data)[i] &&
             h == (uint64_t)((const int64_t *)digs->data)[i];
    if (!ok && !bad++)
      snprintf(first, firstlen, "%s: file %d is %s (%ld bytes, xxh3 %016llx), the manifest's %s", dir, i, got[i], size,
               (unsigned long long)h, want);
  }
  for (int i = 0; i < n; i++) free(got[i]);
  return bad;
}

static void files_and_tensors(const ckcase *c) {
  const char *cs = c->tr.fx.casename;
  char first[512] = "";
  cr_assert_eq(check_files(c, c->dir, first, sizeof first), 0, "%s", first);
  fk_model *m = open_model(c->dir);
  fk_model_info in;
  fk_error e;
  cr_assert_eq(fk_model_query(m, &in, &e), FK_OK);
  int audio = has_scalar(c, "ckpt_codebooks");
  cr_assert_eq(in.kind, audio ? FK_MODEL_LFM2_AUDIO : FK_MODEL_LFM2_LM, "%s: kind %d", cs, in.kind);
  static const struct { const char *name; size_t off; } fields[] = {
    { "ckpt_vocab", offsetof(fk_model_info, vocab) }, { "ckpt_hidden", offsetof(fk_model_info, hidden) },
    { "ckpt_ffn", offsetof(fk_model_info, ffn) }, { "ckpt_layers", offsetof(fk_model_info, layers) },
    { "ckpt_attn_layers", offsetof(fk_model_info, attn_layers) }, { "ckpt_heads", offsetof(fk_model_info, heads) },
    { "ckpt_kv_heads", offsetof(fk_model_info, kv_heads) }, { "ckpt_head_dim", offsetof(fk_model_info, head_dim) },
    { "ckpt_max_pos", offsetof(fk_model_info, max_pos) },
  };
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    int64_t got;
    memcpy(&got, (const char *)&in + fields[i].off, sizeof got);
    cr_assert_eq(got, scalar(c, fields[i].name), "%s: %s %lld, the manifest's %lld", cs, fields[i].name + 5,
                 (long long)got, (long long)scalar(c, fields[i].name));
  }
  float theta, eps;
  fkfix_scalar_f32(&c->tr.fx, "ckpt_rope_theta", &theta);
  fkfix_scalar_f32(&c->tr.fx, "ckpt_norm_eps", &eps);
  cr_assert(in.rope_theta == theta && in.norm_eps == eps, "%s: rope_theta %g eps %g, the manifest's %g %g", cs,
            (double)in.rope_theta, (double)in.norm_eps, (double)theta, (double)eps);
  cr_assert_eq(in.tied, (int)scalar(c, "ckpt_tied"), "%s: tied %d", cs, in.tied);
  cr_assert_eq(in.files, (int)scalar(c, "ckpt_files"), "%s: %d safetensors files", cs, in.files);
  if (audio) {
    static const struct { const char *name; size_t off; } afields[] = {
      { "ckpt_codebooks", offsetof(fk_model_info, codebooks) },
      { "ckpt_codebook_vocab", offsetof(fk_model_info, codebook_vocab) },
      { "ckpt_depth_layers", offsetof(fk_model_info, depth_layers) },
      { "ckpt_depth_dim", offsetof(fk_model_info, depth_dim) }, { "ckpt_det_hidden", offsetof(fk_model_info, det_hidden) },
      { "ckpt_det_layers", offsetof(fk_model_info, det_layers) }, { "ckpt_det_window", offsetof(fk_model_info, det_window) },
    };
    for (size_t i = 0; i < sizeof afields / sizeof afields[0]; i++) {
      int64_t got;
      memcpy(&got, (const char *)&in + afields[i].off, sizeof got);
      cr_assert_eq(got, scalar(c, afields[i].name), "%s: %s %lld", cs, afields[i].name + 5, (long long)got);
    }
  } else {
    int f32 = (int)scalar(c, "ckpt_f32");
    cr_assert_str_eq(in.dtype, f32 ? "f32" : "bf16", "%s: dtype %s", cs, in.dtype);
    cr_assert_eq(in.owned_bytes > 0, f32, "%s: %llu bytes converted", cs, (unsigned long long)in.owned_bytes);
  }
  /* every tensor: served with the manifest's bytes, or refused as ignored */
  const fkfix_tensor *names = need(c, "weight_names", FKFIX_U16), *dts = need(c, "weight_dtypes", FKFIX_I64),
                     *digs = need(c, "weight_digests", FKFIX_I64), *d16 = need(c, "weight_digests_bf16", FKFIX_I64);
  int64_t nt = names->shape[0], used = 0, ignored = 0;
  cr_assert_eq(nt, scalar(c, "ckpt_tensors"));
  for (int64_t i = 0; i < nt; i++) {
    char name[NAME_W];
    name_at(names, i, name);
    fk_tensor_view v;
    fk_status s = fk_model_tensor(m, name, &v, &e);
    if (s == FK_ENOTFOUND) {
      ignored++;
      continue;
    }
    cr_assert_eq(s, FK_OK, "%s: fk_model_tensor(%s): %s", cs, name, e.message);
    used++;
    size_t count = 1;
    for (int k = 0; k < v.ndim; k++) count *= (size_t)v.shape[k];
    int64_t stored = ((const int64_t *)dts->data)[i];
    uint64_t h, want;
    if (v.dtype == FK_DTYPE_F32 && stored == 32) { /* kept f32: the stored bytes */
      h = XXH3_64bits(v.data, count * 4);
      want = (uint64_t)((const int64_t *)digs->data)[i];
    } else { /* bf16 data, or f32 widened from bf16 (exact: back to the same bits) */
      uint16_t *b = malloc(count * 2);
      if (v.dtype == FK_DTYPE_BF16) memcpy(b, v.data, count * 2);
      else cr_assert_eq(fk_bf16_from_f32_n(v.data, b, count, &e), FK_OK);
      h = XXH3_64bits(b, count * 2);
      free(b);
      want = (uint64_t)((const int64_t *)d16->data)[i];
    }
    cr_assert_eq(h, want, "%s: tensor %s: xxh3 %016llx, the manifest's %016llx (%s %s)", cs, name, (unsigned long long)h,
                 (unsigned long long)want, v.dtype == FK_DTYPE_BF16 ? "bf16" : "f32",
                 stored == 32 ? "stored f32" : stored == 16 ? "stored bf16" : "stored i64");
  }
  cr_assert_eq(used, in.tensors, "%s: %lld tensors served, the model reports %lld used", cs, (long long)used,
               (long long)in.tensors);
  cr_assert_eq(ignored, in.ignored, "%s: %lld tensors refused, the model reports %lld ignored", cs, (long long)ignored,
               (long long)in.ignored);
  cr_log_info("%s: %d files, %lld tensors (%lld used, %lld ignored), %s, as the manifest says", cs,
              (int)need(c, "file_names", FKFIX_U16)->shape[0], (long long)nt, (long long)used, (long long)ignored,
              in.architecture);
  fk_model_close(m);
}

static ckparam params[MAX_CASES];

static struct criterion_test_params case_params(void) {
  char **paths;
  int n = list_cases(&paths);
  for (int i = 0; i < n; i++) snprintf(params[i].manifest, sizeof params[i].manifest, "%s", paths[i]);
  fkfix_list_free(paths, n);
  return cr_make_param_array(ckparam, params, (size_t)n);
}

ParameterizedTestParameters(ckpt_fixtures, files_and_tensors) { return case_params(); }

ParameterizedTest(ckparam *cp, ckpt_fixtures, files_and_tensors, .timeout = 300) {
  ckcase c;
  load_case(&c, cp->manifest);
  files_and_tensors(&c);
  fkm_trace_free(&c.tr);
}

/* ---- the traces ------------------------------------------------------------------------------------- */

/* A plan of the families `programs` of the checkpoint in dir, on `threads` members, exact tier; the model
 * is closed once the plan is made (fk_checkpoint.h: the plan keeps nothing of it). */
static fk_plan *plan_of_q(const char *dir, uint32_t programs, int threads, fk_qformat quantize) {
  fk_model *m = open_model(dir);
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.programs = programs;
  d.threads = threads;
  d.tier = FK_TIER_EXACT;
  d.quantize = quantize;
  fk_error e;
  fk_status s = fk_model_describe(m, &d, &e);
  cr_assert_eq(s, FK_OK, "fk_model_describe(%s): %s", dir, e.message);
  fk_plan *p = NULL;
  s = fk_plan_create(&d, &p, &e);
  cr_assert_eq(s, FK_OK, "fk_plan_create(%s, %d members): %s", dir, threads, e.message);
  fk_model_close(m);
  return p;
}

static fk_plan *plan_of(const char *dir, uint32_t programs, int threads) {
  return plan_of_q(dir, programs, threads, FK_QNONE);
}

static uint64_t state_digest(fk_plan *p, uint64_t h) {
  size_t len = fk_state_bytes(p);
  void *snap = malloc(len);
  fk_error e;
  cr_assert_eq(fk_state_save(p, snap, len, &e), FK_OK, "%s", e.message);
  h = fkt_fnv(snap, len, h);
  free(snap);
  return h;
}

/* The LM trace of case c on a plan of `threads` members: every call judged into t; returns a digest of
 * every output (logits, tokens, the captured planes, the state after the last call). The plan runs
 * FK_PROGRAMS_LM (an audio directory's backbone, its head tied). */
static uint64_t lm_against(const ckcase *c, const char *dir, int threads, fkm_tally *t, FILE *rep) {
  fk_plan *p = plan_of(dir, FK_PROGRAMS_LM, threads);
  fkm_capture *cap = calloc(1, sizeof *cap);
  fk_plan_set_trace(p, fkm_observe, cap);
  const fk_stack_rt *st = &fk_lm_of(p)->stack;
  const fkm_trace *tr = &c->tr;
  const int64_t *tokens = need(c, "tokens", FKFIX_I64)->data, *rows = need(c, "call_rows", FKFIX_I64)->data,
                *tok = need(c, "tok", FKFIX_I64)->data, *req = need(c, "tok_required", FKFIX_I64)->data;
  const float *labs = need(c, "logits_abs", FKFIX_F32)->data;
  const fkfix_tensor *l64 = fkm_trace_ref(tr, "logits", 1);
  int64_t calls = scalar(c, "calls"), vocab = l64->shape[1], h = st->h, pos = 0;
  cr_assert_eq(need(c, "call_rows", FKFIX_I64)->shape[0], calls);
  cr_assert_leq(rows[0], FKM_CAP_ROWS);
  float *logits = malloc((size_t)vocab * 4);
  uint64_t dig = 0;
  for (int64_t k = 0; k < calls; k++) {
    int32_t ids[FKM_CAP_ROWS];
    for (int64_t r = 0; r < rows[k]; r++) ids[r] = (int32_t)tokens[pos + r];
    fk_io io = { .rows = rows[k], .tokens = ids, .logits = logits };
    fk_error e;
    fk_status s = fk_run(p, k == 0 ? FK_PROG_LM_PREFILL : FK_PROG_LM_DECODE, &io, &e);
    cr_assert_eq(s, FK_OK, "%s call %lld: %s", tr->fx.casename, (long long)k, e.message);
    char b[32], what[192];
    fkm_cmp_rows(t, tr, "emb", FKFIX_BF16, cap->emb, pos, rows[k], h);
    dig = fkt_fnv(cap->emb, (size_t)(rows[k] * h) * 2, dig);
    for (int i = 0; i < st->layers; i++) {
      snprintf(b, sizeof b, "h%d", i);
      fkm_cmp_rows(t, tr, b, FKFIX_BF16, cap->hid[i], pos, rows[k], h);
      dig = fkt_fnv(cap->hid[i], (size_t)(rows[k] * h) * 2, dig);
    }
    fkm_cmp_rows(t, tr, "norm", FKFIX_F32, cap->norm, pos + rows[k] - 1, 1, h); /* the LM norms its last row */
    fkm_cmp_rows(t, tr, "logits", FKFIX_F32, logits, k, 1, vocab);
    dig = fkt_fnv(logits, (size_t)vocab * 4, dig);
    pos += rows[k];
    cr_assert_eq(st->pos, pos);
    for (int i = 0; i < st->layers; i++) { /* the state after the call */
      const fk_layer_rt *l = &st->layer[i];
      if (l->kind == FK_LAYER_CONV) {
        snprintf(b, sizeof b, "bx%d", i);
        fkm_cmp_rows(t, tr, b, FKFIX_BF16, l->carry, pos - 2, 2, h); /* B*x of the last two positions */
      } else {
        snprintf(b, sizeof b, "k%d", i);
        fkm_cmp_rows(t, tr, b, FKFIX_BF16, l->kc, 0, pos * st->kv, 64);
        snprintf(b, sizeof b, "v%d", i);
        fkm_cmp_rows(t, tr, b, FKFIX_BF16, l->vc, 0, pos * st->kv, 64);
      }
    }
    snprintf(what, sizeof what, "%s call %lld", tr->fx.casename, (long long)k);
    fkm_judge_token(t, what, io.next, tok[k], (int)req[k], (const double *)l64->data + k * vocab, labs[k]);
    dig = fkt_fnv(&io.next, sizeof io.next, dig);
    if (rep)
      fprintf(rep, "%s call %lld: %lld row(s), greedy %d (the trace's %lld)\n", tr->fx.casename, (long long)k,
              (long long)rows[k], (int)io.next, (long long)tok[k]);
  }
  dig = state_digest(p, dig);
  free(logits);
  free(cap);
  fk_plan_destroy(p);
  return dig;
}

/* The detokenizer of an audio directory on its trace's code frames (one per call): judged into t;
 * returns a digest of the PCM, the captured planes and the state. */
static uint64_t detok_against(const ckcase *c, int threads, fkm_tally *t, FILE *rep) {
  fk_plan *p = plan_of(c->dir, FK_PROGRAMS_DETOK, threads);
  fkm_capture *cap = calloc(1, sizeof *cap);
  fk_plan_set_trace(p, fkm_observe, cap);
  int64_t samples = scalar(c, "dt_samples"), cappcm = samples + 480;
  float *pcm = calloc((size_t)cappcm, 4);
  char err[256];
  int64_t n = fkm_detok_trace(p, &c->tr, "dt_", NULL, cap, t, pcm, cappcm, rep, err, sizeof err);
  cr_assert_eq(n, samples, "%s: %lld PCM samples: %s", c->tr.fx.casename, (long long)n, n < 0 ? err : "");
  uint64_t dig = fkt_fnv(pcm, (size_t)n * 4, 0);
  dig = fkt_fnv(cap->emb, sizeof cap->emb, dig);
  dig = fkt_fnv(cap->lin, sizeof cap->lin, dig);
  dig = state_digest(p, dig);
  free(pcm);
  free(cap);
  fk_plan_destroy(p);
  return dig;
}

ParameterizedTestParameters(ckpt_fixtures, traces) { return case_params(); }

/* every boundary of the trace on 1, 2 and 3 members, the same bits for each */
ParameterizedTest(ckparam *cp, ckpt_fixtures, traces, .timeout = 600) {
  ckcase c;
  load_case(&c, cp->manifest);
  uint64_t first = 0;
  for (int threads = 1; threads <= 3; threads++) {
    fkm_tally t = { 0 };
    uint64_t dig = lm_against(&c, c.dir, threads, &t, threads == 1 ? stdout : NULL);
    if (has_scalar(&c, "dt_frames")) {
      uint64_t dt = detok_against(&c, threads, &t, threads == 1 ? stdout : NULL);
      dig = fkt_fnv(&dt, sizeof dt, dig);
    }
    cr_assert_eq(t.failed, 0, "%s, %d member(s): %d of %d checks fail; first: %s", c.tr.fx.casename, threads, t.failed,
                 t.checked, t.first);
    if (threads == 1) {
      first = dig;
      cr_log_info("%s: %d checks within their bounds", c.tr.fx.casename, t.checked);
    }
    cr_assert_eq(dig, first, "%s: %d members give other bits than 1", c.tr.fx.casename, threads);
  }
  fkm_trace_free(&c.tr);
}

/* The directories of one model (their manifests share the seed that names the model and its prompt: the
 * four of fixtures/ckpt/lfm2_*, bf16 and f32, whole and sharded) give the same bits: the f32 weights round
 * to the bf16 ones by the contract's RNE, which the loader's conversion must be. */
Test(ckpt_fixtures, one_model_same_bits, .timeout = 600) {
  char **paths;
  int n = list_cases(&paths), same = 0;
  uint64_t seed[MAX_CASES], dig[MAX_CASES];
  for (int i = 0; i < n; i++) {
    ckcase c;
    load_case(&c, paths[i]);
    seed[i] = c.tr.fx.seed;
    dig[i] = 0;
    for (int j = 0; j < i; j++)
      if (seed[j] == seed[i]) {
        fkm_tally t = { 0 };
        if (!dig[i]) dig[i] = lm_against(&c, c.dir, 2, &t, NULL);
        if (!dig[j]) {
          ckcase o;
          load_case(&o, paths[j]);
          dig[j] = lm_against(&o, o.dir, 2, &t, NULL);
          fkm_trace_free(&o.tr);
        }
        cr_assert_eq(dig[i], dig[j], "%s gives other bits than %s, a directory of the same model", paths[i], paths[j]);
        same++;
      }
    fkm_trace_free(&c.tr);
  }
  fkfix_list_free(paths, n);
  cr_assert_geq(same, 3, "only %d pairs of directories of one model", same);
}

/* ---- perturbations: the gates see a changed checkpoint ------------------------------------------------ */

static void copy_tree(const char *from, const char *to) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", from, to);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static void rm_tree(const char *dir) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* flips bit `bit` of every byte in [from, to) of file path */
static void flip(const char *path, long from, long to, int bit) {
  FILE *f = fopen(path, "r+b");
  cr_assert(f, "open %s", path);
  for (long o = from; o < to; o++) {
    fseek(f, o, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, o, SEEK_SET);
    fputc(ch ^ (1 << bit), f);
  }
  fclose(f);
}

static void case_named(ckcase *c, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/ckpt/%s.manifest", FKT_FIXTURE_DIR, name);
  load_case(c, path);
}

Test(ckpt_fixtures, perturb_checkpoint_byte_seen_by_files, .timeout = 120) {
  ckcase c;
  case_named(&c, "lfm2_bf16");
  char tmp[] = "/tmp/fk_ckpt_fixtures.XXXXXX", dir[600], st[700], first[512] = "";
  cr_assert_not_null(mkdtemp(tmp));
  snprintf(dir, sizeof dir, "%s/lfm2_bf16", tmp);
  copy_tree(c.dir, dir);
  cr_assert_eq(check_files(&c, dir, first, sizeof first), 0, "the intact copy: %s", first);
  snprintf(st, sizeof st, "%s/model.safetensors", dir);
  flip(st, 4096, 4097, 0);
  cr_assert_gt(check_files(&c, dir, first, sizeof first), 0, "a flipped byte passed the files' check");
  cr_log_info("one flipped byte: %s", first);
  rm_tree(tmp);
  fkm_trace_free(&c.tr);
}

Test(ckpt_fixtures, perturb_weights_seen_by_the_trace, .timeout = 300) {
  ckcase c;
  case_named(&c, "lfm2_bf16");
  char tmp[] = "/tmp/fk_ckpt_fixtures.XXXXXX", dir[600], st[700];
  cr_assert_not_null(mkdtemp(tmp));
  snprintf(dir, sizeof dir, "%s/lfm2_bf16", tmp);
  copy_tree(c.dir, dir);
  /* the sign of every weight in the file's last 64 KiB (the tail of its data: the layers' tensors, which
   * the loader still opens) */
  snprintf(st, sizeof st, "%s/model.safetensors", dir);
  struct stat sb;
  cr_assert_eq(stat(st, &sb), 0);
  flip(st, (long)sb.st_size - 65536, (long)sb.st_size, 7);
  fkm_tally t = { 0 };
  lm_against(&c, dir, 2, &t, NULL);
  cr_assert_gt(t.failed, 0, "weights with flipped signs passed the trace");
  cr_log_info("64 KiB of weights negated: %d of %d checks fail (%s)", t.failed, t.checked, t.first);
  rm_tree(tmp);
  fkm_trace_free(&c.tr);
}

/* ---- the same bits on AArch64 -------------------------------------------------------------------------- */


Test(ckpt_fixtures, same_on_aarch64, .timeout = 1800) {
  if (access(FKT_CKPT_SCENARIO_AARCH64, X_OK) != 0)
    cr_skip_test("no AArch64 checkpoint scenario at %s: the cross build makes it where it builds the checkpoint "
                 "loader (an AArch64 jansson; tests/ckpt/fixtures.cmake)", FKT_CKPT_SCENARIO_AARCH64);
  char **paths;
  int n = list_cases(&paths);
  for (int i = 0; i < n; i++) {
    char dir[512], cmd[2048];
    size_t len = strlen(paths[i]) - strlen(".manifest");
    memcpy(dir, paths[i], len);
    dir[len] = 0;
    snprintf(cmd, sizeof cmd, "%s '%s' 2", FKT_CKPT_SCENARIO_HOST, dir);
    char *host = fkt_run_cmd(cmd);
    snprintf(cmd, sizeof cmd, "%s -cpu max %s '%s' 2", FKH_QEMU, FKT_CKPT_SCENARIO_AARCH64, dir);
    char *arm = fkt_run_cmd(cmd);
    cr_assert_str_eq(arm, host, "%s: aarch64:\n%s\nhost:\n%s", dir, arm, host);
    cr_log_info("aarch64 (qemu -cpu max) == x86_64:\n%s", host);
    free(host);
    free(arm);
  }
  fkfix_list_free(paths, n);
}

/* ---- flashkern-run: the command on the committed checkpoints ----------------------------------------- */

/* The trace's prompt through `flashkern-run --tokens`, as many new tokens as the trace has calls: the ids it
 * prints are the trace's greedy tokens, in order, up to a token the margin rule lets differ (the trace feeds
 * its own tokens after that, the command its own: nothing after it is comparable). On lfm2_peaked every token
 * is decided by the margin, so all of them must be equal; there the prompt's last id changed must fail. */
static char *run_prompt(const ckcase *c, const int64_t *tokens, int64_t rows, int64_t max_new, int64_t bump) {
  char cmd[8192];
  int at = snprintf(cmd, sizeof cmd, "%s --model '%s' --max-new %lld --threads 2 --tokens ", FKT_FLASHKERN_RUN, c->dir,
                    (long long)max_new);
  for (int64_t r = 0; r < rows; r++)
    at += snprintf(cmd + at, sizeof cmd - (size_t)at, "%s%lld", r ? "," : "",
                   (long long)(tokens[r] + (r == rows - 1 ? bump : 0)));
  snprintf(cmd + at, sizeof cmd - (size_t)at, " 2>/dev/null");
  return fkt_run_cmd(cmd);
}

/* judges the ids printed in out against the trace's tokens; -> how many equal before the first difference */
static int64_t judge_run(const ckcase *c, const char *out, fkm_tally *t) {
  const int64_t *tok = need(c, "tok", FKFIX_I64)->data, *req = need(c, "tok_required", FKFIX_I64)->data;
  const float *labs = need(c, "logits_abs", FKFIX_F32)->data;
  const fkfix_tensor *l64 = fkm_trace_ref(&c->tr, "logits", 1);
  const int64_t calls = scalar(c, "calls"), vocab = l64->shape[1];
  int64_t k = 0, same = 0;
  for (const char *p = out; k < calls; k++) {
    char *e;
    long long id = strtoll(p, &e, 10);
    cr_assert(e != p, "%s: flashkern-run printed %lld ids, want %lld: '%s'", c->tr.fx.casename, (long long)k,
              (long long)calls, out);
    p = e;
    char what[192];
    snprintf(what, sizeof what, "%s: flashkern-run's token %lld", c->tr.fx.casename, (long long)k);
    fkm_judge_token(t, what, id, tok[k], (int)req[k], (const double *)l64->data + k * vocab, labs[k]);
    if (id != tok[k]) break;   /* allowed by the margin (else judged failed): the sequences part here */
    same++;
  }
  return same;
}

ParameterizedTestParameters(ckpt_fixtures, flashkern_run_tokens) { return case_params(); }

ParameterizedTest(ckparam *cp, ckpt_fixtures, flashkern_run_tokens, .timeout = 300) {
  ckcase c;
  load_case(&c, cp->manifest);
  const int64_t *tokens = need(&c, "tokens", FKFIX_I64)->data, *rows = need(&c, "call_rows", FKFIX_I64)->data,
                *req = need(&c, "tok_required", FKFIX_I64)->data;
  const int64_t calls = scalar(&c, "calls");
  int64_t required = 0;
  for (int64_t k = 0; k < calls; k++) required += req[k] != 0;
  char *out = run_prompt(&c, tokens, rows[0], calls, 0);
  fkm_tally t = { 0 };
  int64_t same = judge_run(&c, out, &t);
  cr_assert_eq(t.failed, 0, "%s", t.first);
  if (required == calls) cr_assert_eq(same, calls, "%s: every token is decided, %lld equal", c.tr.fx.casename,
                                      (long long)same);
  cr_log_info("%s: flashkern-run printed the trace's first %lld greedy tokens (of %lld; %lld decided by the margin)",
              c.tr.fx.casename, (long long)same, (long long)calls, (long long)required);
  free(out);
  if (!strcmp(c.tr.fx.casename, "lfm2_peaked")) {
    cr_assert_eq(required, calls, "lfm2_peaked: its tokens are no longer all decided by the margin");
    /* the control: the prompt's last id one higher changes every decided token, and the judge says so */
    out = run_prompt(&c, tokens, rows[0], calls, 1);
    fkm_tally bad = { 0 };
    cr_assert_eq(judge_run(&c, out, &bad), 0, "lfm2_peaked: another prompt, yet the trace's first token");
    cr_assert_eq(bad.failed, 1, "lfm2_peaked: the judge missed another prompt's tokens");
    free(out);
  }
  fkm_trace_free(&c.tr);
}

/* An audio directory's detokenizer through `flashkern-run --codes --wav`: the WAV holds, sample for sample
 * and bit for bit, the PCM the plan gives in process, and that PCM passes the trace's gates. */
Test(ckpt_fixtures, flashkern_run_wav, .timeout = 300) {
  char **paths;
  int n = list_cases(&paths), done = 0;
  for (int i = 0; i < n; i++) {
    ckcase c;
    load_case(&c, paths[i]);
    const fkfix_tensor *codes = fkfix_tensor_get(&c.tr.fx, "dt_codes");
    if (!codes) {
      fkm_trace_free(&c.tr);
      continue;
    }
    /* the code frames, one per line (the tensor is codebook-major: 8 x frames) */
    const int64_t frames = codes->shape[1];
    char codes_path[] = "/tmp/fkt_codes_XXXXXX", wav_path[64];
    int fd = mkstemp(codes_path);
    cr_assert_geq(fd, 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# %s: %lld code frames, codebooks 0..7\n", c.tr.fx.casename, (long long)frames);
    for (int64_t j = 0; j < frames; j++)
      for (int k = 0; k < 8; k++)
        fprintf(f, "%lld%c", (long long)((const int64_t *)codes->data)[k * frames + j], k == 7 ? '\n' : ' ');
    fclose(f);
    snprintf(wav_path, sizeof wav_path, "%s.wav", codes_path);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --model '%s' --codes %s --wav %s --threads 2 2>&1", FKT_FLASHKERN_RUN, c.dir,
             codes_path, wav_path);
    free(fkt_run_cmd(cmd));
    SF_INFO info = { 0 };
    SNDFILE *sf = sf_open(wav_path, SFM_READ, &info);
    cr_assert(sf, "%s: %s", wav_path, sf_strerror(NULL));
    cr_assert_eq(info.samplerate, 24000);
    cr_assert_eq(info.channels, 1);
    cr_assert_eq(info.format & SF_FORMAT_SUBMASK, SF_FORMAT_FLOAT);
    float *wav = malloc((size_t)info.frames * 4);
    cr_assert_eq(sf_read_float(sf, wav, info.frames), info.frames);
    sf_close(sf);
    unlink(codes_path);
    unlink(wav_path);
    /* in process: the same checkpoint's plan on the trace's frames, gated */
    fk_plan *p = plan_of(c.dir, FK_PROGRAMS_DETOK, 1);
    fkm_capture *cap = calloc(1, sizeof *cap);
    fk_plan_set_trace(p, fkm_observe, cap);
    int64_t samples = scalar(&c, "dt_samples");
    float *pcm = calloc((size_t)samples + 480, 4);
    fkm_tally t = { 0 };
    char err[256];
    int64_t got = fkm_detok_trace(p, &c.tr, "dt_", NULL, cap, &t, pcm, samples + 480, NULL, err, sizeof err);
    cr_assert_eq(got, samples, "%s: %s", c.tr.fx.casename, got < 0 ? err : "PCM samples");
    cr_assert_eq(t.failed, 0, "%s: %s", c.tr.fx.casename, t.first);
    cr_assert_eq(info.frames, samples, "%s: the WAV holds %lld samples, the plan gave %lld", c.tr.fx.casename,
                 (long long)info.frames, (long long)samples);
    int64_t first_diff = -1;
    for (int64_t s = 0; s < samples && first_diff < 0; s++)
      if (memcmp(&wav[s], &pcm[s], 4)) first_diff = s;
    cr_assert_eq(first_diff, -1, "%s: WAV sample %lld differs from the plan's PCM", c.tr.fx.casename,
                 (long long)first_diff);
    cr_log_info("%s: flashkern-run's WAV: %lld float samples at 24 kHz, bit for bit the plan's PCM (%d gate checks)",
                c.tr.fx.casename, (long long)samples, t.checked);
    fk_plan_destroy(p);
    free(cap), free(pcm), free(wav);
    fkm_trace_free(&c.tr);
    done++;
  }
  fkfix_list_free(paths, n);
  cr_assert_gt(done, 0, "no checkpoint with a detokenizer trace (dt_codes) in fixtures/ckpt");
}

/* `flashkern-run --quantize q8|q4` on an LM checkpoint prints the greedy ids of a plan made from the same
 * directory with desc.quantize (prefill of the trace's prompt, then decodes fed back), and the q4 ids are not
 * the bf16 plan's (the option reaches the plan). */
static void greedy_ids(const char *dir, fk_qformat q, const int64_t *prompt, int64_t rows, int64_t n, char *out,
                       size_t len) {
  fk_plan *p = plan_of_q(dir, FK_PROGRAMS_LM, 2, q);
  int32_t tok[64];
  cr_assert_leq(rows, 64);
  for (int64_t r = 0; r < rows; r++) tok[r] = (int32_t)prompt[r];
  size_t at = 0;
  fk_error e;
  for (int64_t k = 0; k < n; k++) {
    fk_io io = { .rows = k ? 1 : rows, .tokens = tok };
    cr_assert_eq(fk_run(p, k ? FK_PROG_LM_DECODE : FK_PROG_LM_PREFILL, &io, &e), FK_OK, "%s", e.message);
    at += (size_t)snprintf(out + at, len - at, "%s%d", k ? " " : "", (int)io.next);
    tok[0] = io.next;
  }
  fk_plan_destroy(p);
}

Test(ckpt_fixtures, flashkern_run_quantize, .timeout = 300) {
  ckcase c;
  char path[512];
  snprintf(path, sizeof path, "%s/ckpt/lfm2_bf16.manifest", FKT_FIXTURE_DIR);
  load_case(&c, path);
  const int64_t *tokens = need(&c, "tokens", FKFIX_I64)->data, *rows = need(&c, "call_rows", FKFIX_I64)->data;
  const int64_t n = 8;
  char want[3][512];
  static const fk_qformat fmt[] = { FK_QNONE, FK_Q8, FK_Q4 };
  for (int f = 0; f < 3; f++) greedy_ids(c.dir, fmt[f], tokens, rows[0], n, want[f], sizeof want[f]);
  for (int f = 1; f < 3; f++) {
    char cmd[8192];
    int at = snprintf(cmd, sizeof cmd, "%s --model '%s' --max-new %lld --threads 2 --quantize %s --tokens ",
                      FKT_FLASHKERN_RUN, c.dir, (long long)n, f == 1 ? "q8" : "q4");
    for (int64_t r = 0; r < rows[0]; r++)
      at += snprintf(cmd + at, sizeof cmd - (size_t)at, "%s%lld", r ? "," : "", (long long)tokens[r]);
    snprintf(cmd + at, sizeof cmd - (size_t)at, " 2>/dev/null");
    char *out = fkt_run_cmd(cmd);
    size_t l = strlen(out);
    while (l && (out[l - 1] == '\n' || out[l - 1] == ' ')) out[--l] = 0;
    cr_assert_str_eq(out, want[f], "flashkern-run --quantize %s: '%s', the plan's: '%s'", f == 1 ? "q8" : "q4", out,
                     want[f]);
    free(out);
  }
  cr_assert_str_neq(want[2], want[0], "q4's greedy ids are the bf16 plan's: '%s'", want[0]);
  cr_log_info("flashkern-run --quantize: bf16 %s | q8 %s | q4 %s", want[0], want[1], want[2]);
  fkm_trace_free(&c.tr);
}

/* The command's refusals: a bad argument exits 2 naming it, a bad directory 1 naming it. */
Test(ckpt_fixtures, flashkern_run_refusals) {
  static const struct { const char *args; int code; const char *says; } rows[] = {
    { "--help", 0, "usage: flashkern-run" },
    { "", 2, "--model DIR is required" },
    { "--model D --tokens 1,2 --tier bogus", 2, "--tier 'bogus'" },
    { "--model D --tokens 1,2 --quantize q5", 2, "--quantize 'q5': q8, q4 or q4k" },
    { "--model D --tokens 1 --quantize q8 --quantize q4", 2, "--quantize given twice" },
    { "--model D --tokens 1,x", 2, "'x' is not a token id" },
    { "--model D --tokens 1 --codes c --wav w", 2, "either a prompt" },
    { "--model D --tokens 1 --top-k 3", 2, "--top-k needs --temperature" },
    { "--model D --tokens 1 --threads 0", 2, "--threads '0'" },
    { "--model /nonexistent --tokens 1", 1, "/nonexistent" },
    { "--model D --tokens 99999", 1, "outside the vocabulary" },
    /* q4k's super-blocks of 256 do not tile the fixture's hidden 128: the matrix and k named */
    { "--model D --tokens 1,2 --quantize q4k", 1, "k = 128 is not a multiple of 256, a q4k super-block (desc.quantize)" },
  };
  char dir[512];
  snprintf(dir, sizeof dir, "%s/ckpt/lfm2_bf16", FKT_FIXTURE_DIR);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char args[512], cmd[2048], out[4096];
    const char *a = rows[i].args;
    size_t w = 0;
    for (; *a && w < sizeof args - 600; a++) {   /* D: the fixture directory */
      if (*a == 'D' && (a[1] == ' ' || !a[1]) && a > rows[i].args && a[-1] == ' ') w += (size_t)snprintf(args + w, sizeof args - w, "%s", dir);
      else args[w++] = *a;
    }
    args[w] = 0;
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", FKT_FLASHKERN_RUN, args);
    FILE *f = popen(cmd, "r");
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = 0;
    int st = pclose(f);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == rows[i].code, "flashkern-run %s: exit %d, want %d:\n%s", args,
              WIFEXITED(st) ? WEXITSTATUS(st) : -1, rows[i].code, out);
    cr_assert(strstr(out, rows[i].says), "flashkern-run %s: no '%s' in:\n%s", args, rows[i].says, out);
  }
}
