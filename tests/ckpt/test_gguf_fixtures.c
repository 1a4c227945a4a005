/* tests/ckpt/test_gguf_fixtures.c: the GGUF fixtures (fixtures/gguf/: the checkpoints of fixtures/ckpt/ written as
 * llama.cpp's GGUF files by fixtures/ref/gen_gguf.py, fixtures/README.md "GGUF files") against the checkpoint
 * loader's GGUF reader (runtime/ckpt/gguf.c, fk_model_open of a file). Every file of every manifest of
 * fixtures/gguf/ is a case:
 *   same_as_safetensors: the case's files are the manifest's (names, sizes, XXH3-64), and the file's quantized
 *     tensors its rows (read by tests/ckpt/gguf_read.h, the tests' own reader); fk_model_open(file) reads an
 *     LFM2 LM whose fk_model_query equals the source directory's (fk_model_open of fixtures/ckpt/<case>/);
 *     fk_model_describe's descriptor equals the directory's: every norm, conv and bf16 matrix byte for byte, every
 *     quantized matrix as GGUF blocks of the file's format equal to fk_q_quantize_bf16 of the directory's bf16
 *     matrix (and to the file's bytes, and to the manifest's digest), the embedding bf16 RNE(q * d) of
 *     token_embd's blocks (fk_q_dequantize, fk_bf16_from_f32) or the directory's, the head tied (lm_head NULL,
 *     lm_head_q token_embd's blocks) or the file's output. Then plans of both descriptors (the reference: the
 *     directory's, its matrices given as the quantizer's blocks and its embedding as the dequantized one; for a
 *     BF16 file the directory's as it is) on 2 members, exact tier, run the source trace's 12-token prompt and 4
 *     greedy decodes: the logits bit for bit the same, every call.
 *   perturb_*: a copy of a file with two tensors' names swapped (two layers' ffn_gate; attn_q_norm and
 *     attn_k_norm) opens, and the same comparison fails.
 *   flashkern_run: `flashkern-run --model FILE.gguf --tokens <prompt> --max-new 8` prints the greedy ids of the
 *     plan made from the file in process.
 * The refusals of bad GGUF files are rows of tests/badinput/test_badinput.c (gguf_*, docs/bad-input.md). */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "fk_checkpoint.h"
#include "fkfix.h"
#include "cmd.h"
#include "gguf_read.h"

enum { NAME_W = 96, MAX_PARAMS = 16, MAX_FILES = 8, DECODES = 4, RUN_NEW = 8 };

/* one case: a manifest and one of its files */
typedef struct gparam {
  char manifest[512];
  int file;
} gparam;

typedef struct gcase {
  fkfix fx;
  char dir[512];   /* fixtures/gguf/<case> */
  char src[512];   /* fixtures/ckpt/<case>: the source directory */
  char name[128];  /* the file's name */
  char path[700];  /* dir/name */
  int file;        /* its row in file_names */
  int64_t type;    /* the ggml type of its matrices: 30 BF16, 8 Q8_0, 2 Q4_0 */
  fk_qformat fmt;  /* FK_QNONE, FK_Q8, FK_Q4 */
} gcase;

static const fkfix_tensor *need(const fkfix *f, const char *name, fkfix_dtype dt) {
  const fkfix_tensor *t = fkfix_tensor_get(f, name);
  cr_assert(t && t->dtype == dt, "%s: tensor %s missing or of another dtype", f->casename, name);
  return t;
}

static int64_t scalar(const fkfix *f, const char *name) {
  int64_t v;
  cr_assert_eq(fkfix_scalar_i64(f, name, &v), 0, "%s: scalar %s", f->casename, name);
  return v;
}

static float scalar_f32(const fkfix *f, const char *name) {
  float v;
  cr_assert_eq(fkfix_scalar_f32(f, name, &v), 0, "%s: scalar %s", f->casename, name);
  return v;
}

static void name_at(const fkfix_tensor *t, int64_t i, char *out) {
  cr_assert_eq(t->shape[1], NAME_W);
  const uint16_t *r = (const uint16_t *)t->data + i * NAME_W;
  int k = 0;
  for (; k < NAME_W - 1 && r[k]; k++) out[k] = (char)r[k];
  out[k] = 0;
}

static unsigned char *read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "cannot open %s", path);
  cr_assert_eq(fseek(f, 0, SEEK_END), 0);
  long size = ftell(f);
  cr_assert_geq(size, 0);
  rewind(f);
  unsigned char *b = malloc((size_t)size + 1);
  cr_assert_not_null(b);
  cr_assert_eq(fread(b, 1, (size_t)size, f), (size_t)size, "read %s", path);
  fclose(f);
  *n = (size_t)size;
  return b;
}

static void write_all(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert(f, "cannot write %s", path);
  cr_assert_eq(fwrite(b, 1, n, f), n);
  cr_assert_eq(fclose(f), 0);
}

static void load_case(gcase *c, const char *manifest, int file) {
  char err[512];
  memset(c, 0, sizeof *c);
  cr_assert_eq(fkfix_load(manifest, &c->fx, err, sizeof err), 0, "%s", err);
  cr_assert_str_eq(c->fx.leaf, "gguf", "%s: not a GGUF fixture", manifest);
  size_t n = strlen(manifest) - strlen(".manifest");
  cr_assert_lt(n, sizeof c->dir);
  memcpy(c->dir, manifest, n);
  c->dir[n] = 0;
  snprintf(c->src, sizeof c->src, "%s/ckpt/%s", FKT_FIXTURE_DIR, c->fx.casename);
  const fkfix_tensor *names = need(&c->fx, "file_names", FKFIX_U16);
  cr_assert(file >= 0 && file < names->shape[0], "%s: file %d of %lld", manifest, file, (long long)names->shape[0]);
  c->file = file;
  name_at(names, file, c->name);
  snprintf(c->path, sizeof c->path, "%s/%s", c->dir, c->name);
  c->type = ((const int64_t *)need(&c->fx, "file_types", FKFIX_I64)->data)[file];
  cr_assert(c->type == GGR_BF16 || c->type == GGR_Q8_0 || c->type == GGR_Q4_0, "%s: file type %lld", c->name,
            (long long)c->type);
  c->fmt = c->type == GGR_Q8_0 ? FK_Q8 : c->type == GGR_Q4_0 ? FK_Q4 : FK_QNONE;
}

static int list_manifests(char ***paths) {
  char dir[512], err[256];
  snprintf(dir, sizeof dir, "%s/gguf", FKT_FIXTURE_DIR);
  int n = fkfix_list(dir, paths, err, sizeof err);
  cr_assert_gt(n, 0, "no manifest in %s: %s", dir, n < 0 ? err : "");
  return n;
}

static gparam params[MAX_PARAMS];

/* every (manifest, file) pair */
static struct criterion_test_params file_params(void) {
  char **paths;
  int n = list_manifests(&paths), np = 0;
  for (int i = 0; i < n; i++) {
    fkfix fx;
    char err[512];
    cr_assert_eq(fkfix_load(paths[i], &fx, err, sizeof err), 0, "%s", err);
    const fkfix_tensor *names = fkfix_tensor_get(&fx, "file_names");
    cr_assert_not_null(names, "%s: no file_names", paths[i]);
    for (int64_t f = 0; f < names->shape[0]; f++) {
      cr_assert_lt(np, MAX_PARAMS);
      snprintf(params[np].manifest, sizeof params[np].manifest, "%s", paths[i]);
      params[np++].file = (int)f;
    }
    fkfix_free(&fx);
  }
  fkfix_list_free(paths, n);
  return cr_make_param_array(gparam, params, (size_t)np);
}

/* ---- the files are the manifest's ------------------------------------------------------------------ */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* fixtures/gguf/<case>/ holds exactly the manifest's files, each of its size and XXH3-64 */
static void check_files(const gcase *c) {
  const fkfix_tensor *names = need(&c->fx, "file_names", FKFIX_U16), *sizes = need(&c->fx, "file_sizes", FKFIX_I64),
                     *digs = need(&c->fx, "file_digests", FKFIX_I64);
  char *got[MAX_FILES];
  int n = 0;
  DIR *d = opendir(c->dir);
  cr_assert(d, "cannot read %s", c->dir);
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    cr_assert_lt(n, MAX_FILES, "%s: more than %d files", c->dir, MAX_FILES);
    got[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(got, (size_t)n, sizeof got[0], cmp_str);
  cr_assert_eq(n, names->shape[0], "%s: %d files, the manifest lists %lld", c->dir, n, (long long)names->shape[0]);
  for (int i = 0; i < n; i++) {
    char want[NAME_W], path[1024];
    name_at(names, i, want);
    cr_assert_str_eq(got[i], want, "%s: file %d is %s, the manifest's %s", c->dir, i, got[i], want);
    snprintf(path, sizeof path, "%s/%s", c->dir, got[i]);
    size_t size;
    unsigned char *b = read_all(path, &size);
    uint64_t h = XXH3_64bits(b, size);
    free(b);
    cr_assert(size == (size_t)((const int64_t *)sizes->data)[i] && h == (uint64_t)((const int64_t *)digs->data)[i],
              "%s: %zu bytes, xxh3-64 %016llx; the manifest's %lld bytes, %016llx", path, size, (unsigned long long)h,
              (long long)((const int64_t *)sizes->data)[i], (unsigned long long)((const int64_t *)digs->data)[i]);
    free(got[i]);
  }
}

/* the manifest's digest of quantized tensor `gname` of the case's file; 0 when it lists no such tensor */
static int qt_digest(const gcase *c, const char *gname, uint64_t *dig, int64_t *type) {
  const fkfix_tensor *qf = need(&c->fx, "qt_file", FKFIX_I64), *qn = need(&c->fx, "qt_names", FKFIX_U16),
                     *qt = need(&c->fx, "qt_types", FKFIX_I64), *qd = need(&c->fx, "qt_digests", FKFIX_I64);
  for (int64_t j = 0; j < qf->shape[0]; j++) {
    char nm[NAME_W];
    name_at(qn, j, nm);
    if (((const int64_t *)qf->data)[j] == c->file && !strcmp(nm, gname)) {
      *dig = (uint64_t)((const int64_t *)qd->data)[j];
      *type = ((const int64_t *)qt->data)[j];
      return 1;
    }
  }
  return 0;
}

static int64_t qt_rows_of(const gcase *c) {
  const fkfix_tensor *qf = need(&c->fx, "qt_file", FKFIX_I64);
  int64_t n = 0;
  for (int64_t j = 0; j < qf->shape[0]; j++) n += ((const int64_t *)qf->data)[j] == c->file;
  return n;
}

/* ---- the comparison ---------------------------------------------------------------------------------- */

typedef struct tally {
  int bad, checked;
  char first[768];
} tally;

static void check(tally *t, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void check(tally *t, int ok, const char *fmt, ...) {
  t->checked++;
  if (ok || t->bad++) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->first, sizeof t->first, fmt, ap);
  va_end(ap);
}

static fk_model *open_model(const char *path, fk_model_kind kind) {
  fk_model *m = NULL;
  fk_error e;
  fk_status s = fk_model_open(path, kind, &m, &e);
  cr_assert_eq(s, FK_OK, "fk_model_open(%s): %s: %s", path, fk_strerror(s), e.message);
  cr_assert_not_null(m);
  return m;
}

static fk_plan_desc describe(const fk_model *m, const char *what) {
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.programs = FK_PROGRAMS_LM;
  d.threads = 2;
  d.tier = FK_TIER_EXACT;
  fk_error e;
  fk_status s = fk_model_describe(m, &d, &e);
  cr_assert_eq(s, FK_OK, "fk_model_describe(%s): %s", what, e.message);
  return d;
}

/* the weight matrices of a layer: their GGUF name after "blk.N.", the bf16 and fk_qmatrix fields, the layer
 * kind (-1: every layer), rows and columns ('H' hidden, 'F' ffn, 'Q' heads * 64, 'K' kv_heads * 64, '3' 3 * hidden) */
static const struct {
  const char *gguf;
  size_t bf, q;
  int kind;
  char n, k;
} MATS[] = {
  { "shortconv.in_proj", offsetof(fk_lfm2_layer, in_proj), offsetof(fk_lfm2_layer, q.in_proj), FK_LAYER_CONV, '3', 'H' },
  { "shortconv.out_proj", offsetof(fk_lfm2_layer, out_proj), offsetof(fk_lfm2_layer, q.out_proj), FK_LAYER_CONV, 'H', 'H' },
  { "attn_q", offsetof(fk_lfm2_layer, q_proj), offsetof(fk_lfm2_layer, q.q_proj), FK_LAYER_ATTN, 'Q', 'H' },
  { "attn_k", offsetof(fk_lfm2_layer, k_proj), offsetof(fk_lfm2_layer, q.k_proj), FK_LAYER_ATTN, 'K', 'H' },
  { "attn_v", offsetof(fk_lfm2_layer, v_proj), offsetof(fk_lfm2_layer, q.v_proj), FK_LAYER_ATTN, 'K', 'H' },
  { "attn_output", offsetof(fk_lfm2_layer, o_proj), offsetof(fk_lfm2_layer, q.o_proj), FK_LAYER_ATTN, 'H', 'Q' },
  { "ffn_gate", offsetof(fk_lfm2_layer, w1), offsetof(fk_lfm2_layer, q.w1), -1, 'F', 'H' },
  { "ffn_up", offsetof(fk_lfm2_layer, w3), offsetof(fk_lfm2_layer, q.w3), -1, 'F', 'H' },
  { "ffn_down", offsetof(fk_lfm2_layer, w2), offsetof(fk_lfm2_layer, q.w2), -1, 'H', 'F' },
};
enum { NMATS = sizeof MATS / sizeof MATS[0] };

/* the norms and taps: GGUF name, field, kind, elements ('H' hidden, 'C' 3 * hidden, 'D' 64) */
static const struct {
  const char *gguf;
  size_t off;
  int kind;
  char n;
} VECS[] = {
  { "attn_norm", offsetof(fk_lfm2_layer, operator_norm), -1, 'H' },
  { "ffn_norm", offsetof(fk_lfm2_layer, ffn_norm), -1, 'H' },
  { "shortconv.conv", offsetof(fk_lfm2_layer, conv), FK_LAYER_CONV, 'C' },
  { "attn_q_norm", offsetof(fk_lfm2_layer, q_norm), FK_LAYER_ATTN, 'D' },
  { "attn_k_norm", offsetof(fk_lfm2_layer, k_norm), FK_LAYER_ATTN, 'D' },
};

static int64_t dim_of(char code, const fk_lfm2_stack *s) {
  switch (code) {
  case 'H': return s->hidden;
  case 'F': return s->ffn;
  case 'Q': return s->heads * s->head_dim;
  case 'K': return s->kv_heads * s->head_dim;
  case '3': case 'C': return 3 * s->hidden;
  default: return s->head_dim;
  }
}

static const uint16_t *bf_field(const fk_lfm2_layer *l, size_t off) {
  const uint16_t *p;
  memcpy(&p, (const char *)l + off, sizeof p);
  return p;
}

static fk_qmatrix q_field(const fk_lfm2_layer *l, size_t off) {
  fk_qmatrix q;
  memcpy(&q, (const char *)l + off, sizeof q);
  return q;
}

static void *quantize(fk_qformat f, const uint16_t *w, int64_t n, int64_t k) {
  size_t bytes = fk_q_gguf_bytes(f, n, k);
  cr_assert_gt(bytes, 0);
  void *out = malloc(bytes);
  cr_assert_not_null(out);
  fk_error e;
  cr_assert_eq(fk_q_quantize_bf16(f, w, k, n, k, out, bytes, &e), FK_OK, "fk_q_quantize_bf16: %s", e.message);
  return out;
}

/* the source trace's prompt (fixtures/ckpt/<case>.manifest: tokens, call_rows[0]) */
static int64_t prompt_of(const gcase *c, int32_t *ids, int64_t cap) {
  char path[700], err[512];
  snprintf(path, sizeof path, "%s.manifest", c->src);
  fkfix fx;
  cr_assert_eq(fkfix_load(path, &fx, err, sizeof err), 0, "%s", err);
  const int64_t *tok = need(&fx, "tokens", FKFIX_I64)->data, rows = ((const int64_t *)need(&fx, "call_rows", FKFIX_I64)->data)[0];
  cr_assert(rows > 0 && rows <= cap);
  for (int64_t r = 0; r < rows; r++) ids[r] = (int32_t)tok[r];
  fkfix_free(&fx);
  return rows;
}

typedef struct outcome {
  tally desc;       /* the descriptor and the query against the directory's */
  tally run;        /* the logits and tokens of the two plans */
  char ids[256];    /* the GGUF plan's greedy tokens */
} outcome;

/* Everything of same_as_safetensors on the GGUF file at `path` (the case's, or a perturbed copy): mismatches are
 * counted into *o, nothing asserted but what makes the comparison impossible. */
static void compare(const gcase *c, const char *path, outcome *o) {
  memset(o, 0, sizeof *o);
  size_t fsize;
  unsigned char *img = read_all(path, &fsize);
  ggr *g = calloc(1, sizeof *g);
  char err[256];
  cr_assert_eq(ggr_parse(img, fsize, g, err, sizeof err), 0, "%s: %s", path, err);
  tally *t = &o->desc;

  fk_model *gm = open_model(path, FK_MODEL_AUTO), *sm = open_model(c->src, FK_MODEL_AUTO);
  fk_model_close(open_model(path, FK_MODEL_LFM2_LM)); /* the kind a GGUF file is */
  fk_model_info gi, si;
  fk_error e;
  cr_assert_eq(fk_model_query(gm, &gi, &e), FK_OK, "%s", e.message);
  cr_assert_eq(fk_model_query(sm, &si, &e), FK_OK, "%s", e.message);
  const char *cs = c->name;
  check(t, gi.kind == FK_MODEL_LFM2_LM, "%s: kind %d", cs, gi.kind);
  static const struct { const char *name, *scalar; size_t off; } I[] = {
    { "vocab", "vocab", offsetof(fk_model_info, vocab) }, { "hidden", "hidden", offsetof(fk_model_info, hidden) },
    { "ffn", "ffn", offsetof(fk_model_info, ffn) }, { "layers", "layers", offsetof(fk_model_info, layers) },
    { "attn_layers", "attn_layers", offsetof(fk_model_info, attn_layers) },
    { "heads", "heads", offsetof(fk_model_info, heads) }, { "kv_heads", "kv_heads", offsetof(fk_model_info, kv_heads) },
    { "head_dim", NULL, offsetof(fk_model_info, head_dim) }, { "max_pos", "max_pos", offsetof(fk_model_info, max_pos) },
  };
  for (size_t i = 0; i < sizeof I / sizeof I[0]; i++) {
    int64_t a, b;
    memcpy(&a, (const char *)&gi + I[i].off, 8);
    memcpy(&b, (const char *)&si + I[i].off, 8);
    check(t, a == b, "%s: fk_model_query %s %lld, the directory's %lld", cs, I[i].name, (long long)a, (long long)b);
    if (I[i].scalar)
      check(t, a == scalar(&c->fx, I[i].scalar), "%s: fk_model_query %s %lld, the manifest's %lld", cs, I[i].name,
            (long long)a, (long long)scalar(&c->fx, I[i].scalar));
  }
  check(t, gi.rope_theta == si.rope_theta && gi.rope_theta == scalar_f32(&c->fx, "rope_theta"),
        "%s: rope_theta %g, the directory's %g", cs, (double)gi.rope_theta, (double)si.rope_theta);
  check(t, gi.norm_eps == si.norm_eps && gi.norm_eps == scalar_f32(&c->fx, "norm_eps"), "%s: norm_eps %g, the directory's %g",
        cs, (double)gi.norm_eps, (double)si.norm_eps);
  const int tied = (int)scalar(&c->fx, "tied");
  check(t, gi.tied == tied && si.tied == tied, "%s: tied %d (the directory's %d), the manifest's %d", cs, gi.tied,
        si.tied, tied);
  check(t, gi.files == 1, "%s: %d files", cs, gi.files);

  fk_plan_desc gd = describe(gm, path), sd = describe(sm, c->src);
  const fk_lfm2_stack *gs = &gd.lm.stack, *ss = &sd.lm.stack;
  check(t, gs->hidden == ss->hidden && gs->ffn == ss->ffn && gs->layers == ss->layers && gs->heads == ss->heads &&
               gs->kv_heads == ss->kv_heads && gs->head_dim == ss->head_dim && gs->window == ss->window &&
               gs->max_pos == ss->max_pos && gs->rope_theta == ss->rope_theta && gs->norm_eps == ss->norm_eps &&
               gd.lm.vocab == sd.lm.vocab && gd.norm_eps == sd.norm_eps && gd.lm.max_rows == sd.lm.max_rows,
        "%s: the descriptor's stack differs from the directory's", cs);
  cr_assert(gs->layers == ss->layers && gs->hidden == ss->hidden && gd.lm.vocab == sd.lm.vocab, "%s: shapes differ", cs);
  const int64_t H = ss->hidden, V = sd.lm.vocab;

  /* the layers: the norms and taps, the matrices; the reference's quantized matrices */
  fk_lfm2_layer *rl = calloc(FK_MAX_LAYERS, sizeof *rl);
  void *qbuf[FK_MAX_LAYERS * NMATS + 2] = { 0 };
  int nq = 0;
  int64_t qseen = 0;
  for (int64_t i = 0; i < ss->layers; i++) {
    const fk_lfm2_layer *gl = &gs->layer[i], *sl = &ss->layer[i];
    rl[i] = *sl;
    check(t, gl->kind == sl->kind, "%s: layer %lld kind %d, the directory's %d", cs, (long long)i, gl->kind, sl->kind);
    for (size_t v = 0; v < sizeof VECS / sizeof VECS[0]; v++) {
      if (VECS[v].kind >= 0 && VECS[v].kind != (int)sl->kind) continue;
      const uint16_t *a = bf_field(gl, VECS[v].off), *b = bf_field(sl, VECS[v].off);
      size_t n = (size_t)dim_of(VECS[v].n, ss);
      check(t, a && b && !memcmp(a, b, n * 2), "%s: blk.%lld.%s.weight: %s the directory's bytes", cs, (long long)i,
            VECS[v].gguf, a ? "not" : "NULL, not");
    }
    for (int mi = 0; mi < NMATS; mi++) {
      if (MATS[mi].kind >= 0 && MATS[mi].kind != (int)sl->kind) continue;
      const int64_t n = dim_of(MATS[mi].n, ss), k = dim_of(MATS[mi].k, ss);
      const uint16_t *sw = bf_field(sl, MATS[mi].bf), *gw = bf_field(gl, MATS[mi].bf);
      const fk_qmatrix gq = q_field(gl, MATS[mi].q);
      char gname[GGR_NAME];
      snprintf(gname, sizeof gname, "blk.%lld.%s.weight", (long long)i, MATS[mi].gguf);
      cr_assert_not_null(sw, "%s: the directory's %s", cs, gname);
      if (c->fmt == FK_QNONE) {
        check(t, gq.format == FK_QNONE && gw && !memcmp(gw, sw, (size_t)(n * k) * 2),
              "%s: %s: format %d, bf16 %s the directory's", cs, gname, gq.format, gw ? "not" : "NULL, not");
        continue;
      }
      const size_t bytes = fk_q_gguf_bytes(c->fmt, n, k);
      void *want = qbuf[nq++] = quantize(c->fmt, sw, n, k);
      fk_qmatrix *rq = (fk_qmatrix *)(void *)((char *)&rl[i] + MATS[mi].q);
      *rq = (fk_qmatrix){ c->fmt, want };
      check(t, gq.format == c->fmt && gq.blocks && !memcmp(gq.blocks, want, bytes),
            "%s: %s: format %d (want %d), blocks %s fk_q_quantize_bf16 of the directory's bf16 matrix", cs, gname,
            gq.format, c->fmt, gq.blocks ? "not" : "NULL, not");
      const ggr_tensor *ft = ggr_tensor_named(g, gname);
      check(t, ft && ft->type == (uint32_t)c->type && ft->nbytes == bytes && gq.blocks &&
                   !memcmp(gq.blocks, img + ft->data, bytes),
            "%s: %s: the descriptor's blocks are not the file's tensor %s", cs, gname, gname);
      uint64_t dig;
      int64_t type;
      check(t, qt_digest(c, gname, &dig, &type) && type == c->type && gq.blocks && XXH3_64bits(gq.blocks, bytes) == dig,
            "%s: %s: the blocks' xxh3-64 is not the manifest's (or it lists no such tensor)", cs, gname);
      qseen++;
    }
  }
  check(t, gs->final_norm && !memcmp(gs->final_norm, ss->final_norm, (size_t)H * 2), "%s: token_embd_norm.weight: "
        "not the directory's embedding_norm", cs);

  /* the embedding, and the head */
  const ggr_tensor *te = ggr_tensor_named(g, "token_embd.weight"), *to = ggr_tensor_named(g, "output.weight");
  cr_assert_not_null(te, "%s: no token_embd.weight", path);
  uint16_t *emb = malloc((size_t)(V * H) * 2);
  const fkfix_tensor *ed = need(&c->fx, "embed_digests", FKFIX_I64);
  if (c->fmt == FK_QNONE) {
    memcpy(emb, sd.lm.embed, (size_t)(V * H) * 2);
  } else {
    const size_t bytes = fk_q_gguf_bytes(c->fmt, V, H);
    float *f = malloc((size_t)(V * H) * 4);
    check(t, te->type == (uint32_t)c->type && te->nbytes == bytes, "%s: token_embd.weight of type %u", cs, te->type);
    cr_assert_eq(fk_q_dequantize(c->fmt, img + te->data, te->nbytes, V, H, f, H, &e), FK_OK, "%s", e.message);
    cr_assert_eq(fk_bf16_from_f32_n(f, emb, (size_t)(V * H), &e), FK_OK, "%s", e.message);
    free(f);
    void *want = qbuf[nq++] = quantize(c->fmt, sd.lm.embed, V, H);
    check(t, !memcmp(img + te->data, want, bytes), "%s: token_embd.weight: not fk_q_quantize_bf16 of the directory's "
          "embed_tokens", cs);
    uint64_t dig;
    int64_t type;
    check(t, qt_digest(c, "token_embd.weight", &dig, &type) && type == c->type && XXH3_64bits(img + te->data, bytes) == dig,
          "%s: token_embd.weight: the blocks' xxh3-64 is not the manifest's", cs);
    qseen++;
  }
  check(t, gd.lm.embed && !memcmp(gd.lm.embed, emb, (size_t)(V * H) * 2), "%s: the embedding is not %s", cs,
        c->fmt == FK_QNONE ? "the directory's" : "bf16 RNE(q * d) of token_embd's blocks");
  check(t, XXH3_64bits(emb, (size_t)(V * H) * 2) == (uint64_t)((const int64_t *)ed->data)[c->file],
        "%s: the embedding's xxh3-64 is not the manifest's", cs);
  fk_qmatrix rhead = { FK_QNONE, NULL };
  if (tied) {
    check(t, !to && !gd.lm.lm_head && !sd.lm.lm_head, "%s: tied, yet an output tensor or an lm_head", cs);
    if (c->fmt == FK_QNONE) {
      check(t, gd.lm.lm_head_q.format == FK_QNONE, "%s: tied BF16, yet lm_head_q format %d", cs, gd.lm.lm_head_q.format);
    } else {
      rhead = (fk_qmatrix){ c->fmt, qbuf[nq - 1] };
      check(t, gd.lm.lm_head_q.format == c->fmt && gd.lm.lm_head_q.blocks &&
                   !memcmp(gd.lm.lm_head_q.blocks, img + te->data, fk_q_gguf_bytes(c->fmt, V, H)),
            "%s: tied: lm_head_q (format %d) is not token_embd's blocks", cs, gd.lm.lm_head_q.format);
    }
  } else {
    cr_assert_not_null(to, "%s: untied, no output.weight", path);
    cr_assert_not_null(sd.lm.lm_head);
    if (c->fmt == FK_QNONE) {
      check(t, gd.lm.lm_head_q.format == FK_QNONE && gd.lm.lm_head && !memcmp(gd.lm.lm_head, sd.lm.lm_head, (size_t)(V * H) * 2),
            "%s: output.weight: not the directory's lm_head", cs);
    } else {
      const size_t bytes = fk_q_gguf_bytes(c->fmt, V, H);
      void *want = qbuf[nq++] = quantize(c->fmt, sd.lm.lm_head, V, H);
      rhead = (fk_qmatrix){ c->fmt, want };
      check(t, gd.lm.lm_head_q.format == c->fmt && gd.lm.lm_head_q.blocks && !memcmp(gd.lm.lm_head_q.blocks, want, bytes),
            "%s: output.weight: lm_head_q (format %d) is not fk_q_quantize_bf16 of the directory's lm_head", cs,
            gd.lm.lm_head_q.format);
      check(t, to->type == (uint32_t)c->type && gd.lm.lm_head_q.blocks && !memcmp(gd.lm.lm_head_q.blocks, img + to->data, bytes),
            "%s: lm_head_q is not the file's output.weight", cs);
      uint64_t dig;
      int64_t type;
      check(t, qt_digest(c, "output.weight", &dig, &type) && type == c->type && XXH3_64bits(img + to->data, bytes) == dig,
            "%s: output.weight: the blocks' xxh3-64 is not the manifest's", cs);
      qseen++;
    }
  }
  check(t, qseen == qt_rows_of(c), "%s: %lld quantized tensors compared, the manifest lists %lld", cs, (long long)qseen,
        (long long)qt_rows_of(c));

  /* the plans: the file's, and the reference */
  fk_plan_desc rd = sd;
  if (c->fmt != FK_QNONE) {
    rd.lm.stack.layer = rl;
    rd.lm.embed = emb;
    rd.lm.lm_head_q = rhead;
  }
  fk_plan *gp = NULL, *rp = NULL;
  fk_status s = fk_plan_create(&gd, &gp, &e);
  cr_assert_eq(s, FK_OK, "fk_plan_create(%s): %s", path, e.message);
  s = fk_plan_create(&rd, &rp, &e);
  cr_assert_eq(s, FK_OK, "fk_plan_create(the reference of %s): %s", path, e.message);
  fk_model_close(gm);
  fk_model_close(sm);
  for (int i = 0; i < nq; i++) free(qbuf[i]);
  free(rl);
  free(emb);

  int32_t ids[64];
  const int64_t rows = prompt_of(c, ids, 64);
  float *gl = malloc((size_t)V * 4), *rlg = malloc((size_t)V * 4);
  size_t at = 0;
  for (int k = 0; k <= DECODES; k++) {
    fk_io gio = { .rows = k ? 1 : rows, .tokens = ids, .logits = gl }, rio = { .rows = k ? 1 : rows, .tokens = ids, .logits = rlg };
    const int prog = k ? FK_PROG_LM_DECODE : FK_PROG_LM_PREFILL;
    cr_assert_eq(fk_run(gp, prog, &gio, &e), FK_OK, "%s call %d: %s", path, k, e.message);
    cr_assert_eq(fk_run(rp, prog, &rio, &e), FK_OK, "the reference of %s, call %d: %s", path, k, e.message);
    int64_t diff = -1;
    for (int64_t v = 0; v < V && diff < 0; v++)
      if (memcmp(&gl[v], &rlg[v], 4)) diff = v;
    check(&o->run, diff < 0, "%s call %d (%s): logit %lld is %a, the reference plan's %a", cs, k, k ? "decode" : "prefill",
          (long long)diff, diff < 0 ? 0.0 : (double)gl[diff], diff < 0 ? 0.0 : (double)rlg[diff]);
    check(&o->run, gio.next == rio.next, "%s call %d: greedy %d, the reference plan's %d", cs, k, (int)gio.next,
          (int)rio.next);
    at += (size_t)snprintf(o->ids + at, sizeof o->ids - at, "%s%d", k ? " " : "", (int)gio.next);
    ids[0] = gio.next;
  }
  fk_plan_destroy(gp);
  fk_plan_destroy(rp);
  free(gl);
  free(rlg);
  free(g);
  free(img);
}

ParameterizedTestParameters(gguf_fixtures, same_as_safetensors) { return file_params(); }

ParameterizedTest(gparam *p, gguf_fixtures, same_as_safetensors, .timeout = 300) {
  gcase c;
  load_case(&c, p->manifest, p->file);
  check_files(&c);
  outcome o;
  compare(&c, c.path, &o);
  cr_assert_eq(o.desc.bad, 0, "%s: %d of %d descriptor checks fail; first: %s", c.name, o.desc.bad, o.desc.checked,
               o.desc.first);
  cr_assert_eq(o.run.bad, 0, "%s: %d of %d run checks fail; first: %s", c.name, o.run.bad, o.run.checked, o.run.first);
  cr_log_info("%s: %d descriptor checks, the same as fk_model_open(%s)'s; prefill + %d decodes bit for bit the "
              "reference plan's (greedy %s)", c.name, o.desc.checked, c.src, DECODES, o.ids);
  fkfix_free(&c.fx);
}

/* ---- perturbations: a copy whose tensors' names are swapped opens, and the comparison sees it --------- */

static void swap_names(const gcase *c, const char *a, const char *b, char *tmp, char *path, size_t size) {
  size_t n;
  unsigned char *img = read_all(c->path, &n);
  ggr *g = calloc(1, sizeof *g);
  char err[256];
  cr_assert_eq(ggr_parse(img, n, g, err, sizeof err), 0, "%s", err);
  const ggr_tensor *ta = ggr_tensor_named(g, a), *tb = ggr_tensor_named(g, b);
  cr_assert(ta && tb && strlen(a) == strlen(b), "%s: %s and %s", c->name, a, b);
  memcpy(img + ta->name_at, b, strlen(b));
  memcpy(img + tb->name_at, a, strlen(a));
  cr_assert_not_null(mkdtemp(tmp));
  snprintf(path, size, "%s/%s", tmp, c->name);
  write_all(path, img, n);
  free(g);
  free(img);
}

static void perturbed(const char *casename, const char *file, const char *a, const char *b) {
  char manifest[512];
  snprintf(manifest, sizeof manifest, "%s/gguf/%s.manifest", FKT_FIXTURE_DIR, casename);
  gcase c;
  int f = -1;
  load_case(&c, manifest, 0);
  const fkfix_tensor *names = need(&c.fx, "file_names", FKFIX_U16);
  for (int64_t i = 0; i < names->shape[0]; i++) {
    char nm[NAME_W];
    name_at(names, i, nm);
    if (!strcmp(nm, file)) f = (int)i;
  }
  cr_assert_geq(f, 0, "%s: no file %s", casename, file);
  fkfix_free(&c.fx);
  load_case(&c, manifest, f);
  char tmp[] = "/tmp/fk_gguf_fixtures.XXXXXX", path[700];
  swap_names(&c, a, b, tmp, path, sizeof path);
  outcome o;
  compare(&c, path, &o);
  char cmd[800];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  cr_assert_eq(system(cmd), 0);
  cr_assert_gt(o.desc.bad, 0, "%s with %s and %s swapped: the descriptor passed", file, a, b);
  cr_assert_gt(o.run.bad, 0, "%s with %s and %s swapped: the logits are the reference plan's", file, a, b);
  cr_log_info("%s with %s and %s swapped: %d descriptor checks fail (%s); %d run checks fail (%s)", file, a, b,
              o.desc.bad, o.desc.first, o.run.bad, o.run.first);
  fkfix_free(&c.fx);
}

Test(gguf_fixtures, perturb_swapped_matrices, .timeout = 120) {
  perturbed("lfm2_released", "lfm2_released-q8_0.gguf", "blk.0.ffn_gate.weight", "blk.1.ffn_gate.weight");
}

Test(gguf_fixtures, perturb_swapped_norms, .timeout = 120) {
  perturbed("lfm2_released", "lfm2_released-bf16.gguf", "blk.2.attn_q_norm.weight", "blk.2.attn_k_norm.weight");
}

/* ---- flashkern-run on the files ------------------------------------------------------------------------ */

/* the greedy ids of a plan made from the file (2 members, exact tier): the prompt, then n - 1 decodes */
static void greedy_ids(const char *path, const int32_t *prompt, int64_t rows, int n, char *out, size_t len) {
  fk_model *m = open_model(path, FK_MODEL_AUTO);
  fk_plan_desc d = describe(m, path);
  fk_plan *p = NULL;
  fk_error e;
  cr_assert_eq(fk_plan_create(&d, &p, &e), FK_OK, "fk_plan_create(%s): %s", path, e.message);
  fk_model_close(m);
  int32_t tok[64];
  memcpy(tok, prompt, (size_t)rows * sizeof *tok);
  size_t at = 0;
  for (int k = 0; k < n; k++) {
    fk_io io = { .rows = k ? 1 : rows, .tokens = tok };
    cr_assert_eq(fk_run(p, k ? FK_PROG_LM_DECODE : FK_PROG_LM_PREFILL, &io, &e), FK_OK, "%s", e.message);
    at += (size_t)snprintf(out + at, len - at, "%s%d", k ? " " : "", (int)io.next);
    tok[0] = io.next;
  }
  fk_plan_destroy(p);
}

ParameterizedTestParameters(gguf_fixtures, flashkern_run) { return file_params(); }

ParameterizedTest(gparam *p, gguf_fixtures, flashkern_run, .timeout = 120) {
  gcase c;
  load_case(&c, p->manifest, p->file);
  int32_t prompt[64];
  const int64_t rows = prompt_of(&c, prompt, 64);
  char want[512], cmd[8192];
  greedy_ids(c.path, prompt, rows, RUN_NEW, want, sizeof want);
  int at = snprintf(cmd, sizeof cmd, "%s --model '%s' --max-new %d --threads 2 --tokens ", FKT_FLASHKERN_RUN, c.path,
                    RUN_NEW);
  for (int64_t r = 0; r < rows; r++) at += snprintf(cmd + at, sizeof cmd - (size_t)at, "%s%d", r ? "," : "", (int)prompt[r]);
  snprintf(cmd + at, sizeof cmd - (size_t)at, " 2>/dev/null");
  char *out = fkt_run_cmd(cmd);
  size_t l = strlen(out);
  while (l && (out[l - 1] == '\n' || out[l - 1] == ' ')) out[--l] = 0;
  cr_assert_str_eq(out, want, "flashkern-run --model %s: '%s', the plan's: '%s'", c.name, out, want);
  cr_log_info("flashkern-run --model %s --max-new %d: %s, the plan's", c.name, RUN_NEW, out);
  free(out);
  fkfix_free(&c.fx);
}
