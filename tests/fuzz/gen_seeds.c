/* gen_seeds.c: writes the seed corpora of the fuzz targets (tests/fuzz/README.md):
 *   gen_seeds <repo root> <out dir>   ->  <out dir>/manifest/, fixture/, plan_desc/, ckpt/
 * Deterministic: the same sources give the same bytes. The committed corpora under
 * tests/fuzz/corpus/ were written by `cmake --build build --target fuzz-seeds`; never by a
 * fuzzing run. Real fixtures are the smallest of fixtures/ (a few KB each); the hand-made cases
 * are the edges each reader rule guards. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>
#include <zstd.h>

static const char *g_root, *g_out;

#define DIE(...) \
  do { \
    fprintf(stderr, "gen_seeds: " __VA_ARGS__); \
    fputc('\n', stderr); \
    exit(1); \
  } while (0)

/* ---- a growable byte buffer ---- */
typedef struct {
  unsigned char *p;
  size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap * 2 : 4096;
    while (c < b->n + n) c *= 2;
    b->p = realloc(b->p, c);
    if (!b->p) DIE("out of memory");
    b->cap = c;
  }
  if (n) memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void putf(buf *b, const char *fmt, ...) {
  char line[8192];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof line) DIE("line too long");
  put(b, line, (size_t)n);
}

static void put_u8(buf *b, unsigned v) {
  unsigned char c = (unsigned char)v;
  put(b, &c, 1);
}

static void put_le(buf *b, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++) put_u8(b, (unsigned)(v >> (8 * i)) & 0xffu);
}

static void read_file(const char *path, buf *b) {
  FILE *fp = fopen(path, "rb");
  if (!fp) DIE("%s: %s", path, strerror(errno));
  unsigned char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) put(b, chunk, n);
  if (ferror(fp)) DIE("%s: read error", path);
  fclose(fp);
}

static void write_seed(const char *target, const char *name, const buf *b) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", g_out, target);
  mkdir(g_out, 0777);
  mkdir(path, 0777);
  snprintf(path, sizeof path, "%s/%s/%s", g_out, target, name);
  FILE *fp = fopen(path, "wb");
  if (!fp || fwrite(b->p, 1, b->n, fp) != b->n || fclose(fp)) DIE("%s: cannot write", path);
}

static void digest(const void *raw, size_t n, char hex[33]) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(raw, n));
  for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned)c.digest[i]);
}

/* one zstd frame of raw[0..n) with its content size (and a checksum when asked) */
static void zframe(buf *out, const void *raw, size_t n, int checksum, int content_size) {
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  if (!cc) DIE("zstd context");
  ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 19);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, checksum);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, content_size);
  size_t cap = ZSTD_compressBound(n) + 64;
  unsigned char *z = malloc(cap);
  if (!z) DIE("out of memory");
  size_t zn;
  if (content_size) {
    zn = ZSTD_compress2(cc, z, cap, raw, n);
  } else { /* a streamed frame: the size is not known up front */
    ZSTD_outBuffer o = { z, cap, 0 };
    ZSTD_inBuffer i = { raw, n, 0 };
    size_t r = ZSTD_compressStream2(cc, &o, &i, ZSTD_e_end);
    if (r != 0) DIE("zstd stream");
    zn = o.pos;
  }
  if (ZSTD_isError(zn)) DIE("zstd: %s", ZSTD_getErrorName(zn));
  put(out, z, zn);
  free(z);
  ZSTD_freeCCtx(cc);
}

/* ---- real fixtures ---- */

/* The tensor names of a manifest, in order (the second field of each "tensor " line). */
static int tensor_names(const buf *m, char names[][32], int max) {
  int n = 0;
  size_t i = 0;
  while (i < m->n) {
    size_t e = i;
    while (e < m->n && m->p[e] != '\n') e++;
    if (e - i > 7 && !memcmp(m->p + i, "tensor ", 7)) {
      size_t b = i + 7, k = b;
      while (k < e && m->p[k] != ' ') k++;
      if (n == max || k - b >= 32) DIE("tensor line");
      memcpy(names[n], m->p + b, k - b);
      names[n][k - b] = '\0';
      n++;
    }
    i = e + 1;
  }
  return n;
}

/* fixture framing (fuzz_fixture.c): u32 mlen, manifest, then per tensor u32 plen, payload */
static void real_fixture(const char *leaf, const char *cs) {
  char path[1024], name[256];
  buf m = { 0 }, fr = { 0 };
  snprintf(path, sizeof path, "%s/fixtures/%s/%s.manifest", g_root, leaf, cs);
  read_file(path, &m);
  snprintf(name, sizeof name, "real_%s_%s", leaf, cs);
  write_seed("manifest", name, &m);
  char names[64][32];
  int nt = tensor_names(&m, names, 64);
  put_le(&fr, m.n, 4);
  put(&fr, m.p, m.n);
  for (int i = 0; i < nt; i++) {
    buf z = { 0 };
    snprintf(path, sizeof path, "%s/fixtures/%s/%s.%s.zst", g_root, leaf, cs, names[i]);
    read_file(path, &z);
    put_le(&fr, z.n, 4);
    put(&fr, z.p, z.n);
    free(z.p);
  }
  write_seed("fixture", name, &fr);
  free(m.p);
  free(fr.p);
}

/* ---- hand-made manifests ---- */

static const char *HEAD =
  "# hand-made seed (tests/fuzz/gen_seeds.c)\n"
  "fkfix 1\n"
  "leaf gemv\n"
  "form bf16_rne\n"
  "case %s\n"
  "capture full-value\n"
  "checkpoint synthetic:7\n"
  "seed 18446744073709551615\n"
  "script fixtures/ref/gen_gemv.py\n"
  "script_blob 0123456789abcdef0123456789abcdef01234567\n"
  "reference torch=2.5.1 numpy=2.1.3 transformers.y_clamped=4.57.6\n";

/* the small tensors of the hand-made fixture: every dtype, a strided span, an empty tensor */
static const uint16_t W[7] = { 0x3f80, 0x4000, 0xbf80, 0x7fa5, 0x0001, 0x8000, 0x7f80 };
static const float X[4] = { 1.0f, -2.0f, 0.5f, 3.0f };
static const double Y64[2] = { -2.5, 1.0e-40 };
static const int64_t I[3] = { INT64_MIN, 0, INT64_MAX };
static uint16_t BIG[4096]; /* compresses into a real compressed block, not a raw or RLE one */

typedef struct {
  const char *name, *dtype, *shape, *strides, *role;
  const void *raw;
  size_t n;
} hand_tensor;

static hand_tensor hand[] = {
  { "x", "f32", "4", "1", "input", X, sizeof X },
  { "w", "bf16", "2,3", "4,1", "input", W, sizeof W },
  { "y64", "f64", "2", "1", "ref", Y64, sizeof Y64 },
  { "idx", "i64", "3,1,1,1", "1,1,1,1", "ref", I, sizeof I },
  { "e", "u16", "2,0,3", "6,3,1", "input", NULL, 0 },
  { "big", "u16", "64,64", "64,1", "ref", BIG, sizeof BIG },
};
enum { NHAND = sizeof hand / sizeof hand[0] };

/* The hand-made manifest; tensor `bad` (or -1) gets a wrong digest, tensor `shape_of` (or -1) the
 * shape and strides `shape` ("<shape> <strides>"). */
static void hand_manifest(buf *m, const char *cs, int bad, int shape_of, const char *shape) {
  putf(m, HEAD, cs);
  putf(m, "sequence hand_seq 1 3\n");
  putf(m, "scalar n i64 -9223372036854775808\n");
  putf(m, "scalar eps f32 0x3727c5ac\n");
  putf(m, "\n#   a blank line and a comment, then trailing blanks   \n");
  for (int i = 0; i < NHAND; i++) {
    char hx[33];
    digest(hand[i].raw, hand[i].n, hx);
    if (i == bad) hx[0] = hx[0] == '0' ? '1' : '0';
    if (i == shape_of) /* `shape` replaces both fields: "<shape> <strides>" */
      putf(m, "tensor %s %s %s %s %s\n", hand[i].name, hand[i].dtype, shape, hx, hand[i].role);
    else
      putf(m, "tensor %s %s %s %s %s %s \t\n", hand[i].name, hand[i].dtype, hand[i].shape, hand[i].strides, hx,
           hand[i].role);
  }
  putf(m, "boundary y y64 faithful gemv_f64\n");
  putf(m, "boundary y y64 faithful gemv_fast_f64\n");
  putf(m, "boundary y big bitexact bitexact\n");
  putf(m, "derivation gemv_f64 |y - s| <= 2^-8*(|s| + E) + E + 2^-134;  d = K + 1\n");
  putf(m, "derivation gemv_fast_f64 E = gamma(2*d)*B + d*2^-126");   /* no final newline */
}

typedef enum { P_OK, P_TRUNC, P_FLIP, P_NOSIZE, P_TWO, P_SKIP, P_CHECKSUM, P_FCS_HUGE, P_FCS_OVER, P_EMPTY } pmode;

static void hand_payload(buf *fr, int i, pmode mode) {
  buf z = { 0 };
  const hand_tensor *t = &hand[i];
  switch (mode) {
  case P_OK: zframe(&z, t->raw, t->n, 0, 1); break;
  case P_TRUNC: zframe(&z, t->raw, t->n, 0, 1); z.n -= 3; break;
  case P_FLIP: zframe(&z, t->raw, t->n, 0, 1); z.p[z.n / 2 + 4] ^= 0x5a; break;
  case P_NOSIZE: zframe(&z, t->raw, t->n, 0, 0); break;
  case P_TWO: zframe(&z, t->raw, t->n, 0, 1); zframe(&z, t->raw, t->n, 0, 1); break;
  case P_SKIP: /* a skippable frame of 4 bytes: it would decode as nothing */
    put_le(&z, 0x184D2A50u, 4);
    put_le(&z, 4, 4);
    put_le(&z, 0, 4);
    break;
  case P_CHECKSUM: zframe(&z, t->raw, t->n, 1, 1); z.p[z.n - 1] ^= 0xff; break;
  case P_FCS_HUGE:  /* a frame header claiming 1 GiB, then one empty last raw block */
  case P_FCS_OVER:  /* ... claiming 1 GiB + 1 */
    put_le(&z, 0xFD2FB528u, 4);
    put_u8(&z, 0xE0);   /* FCS field 8 bytes, single segment */
    put_le(&z, mode == P_FCS_HUGE ? (uint64_t)1 << 30 : ((uint64_t)1 << 30) + 1, 8);
    put_le(&z, 1, 3);   /* last block, raw, size 0 */
    break;
  case P_EMPTY: break;
  }
  put_le(fr, z.n, 4);
  put(fr, z.p, z.n);
  free(z.p);
}

/* A framed hand-made fixture: every payload valid except tensor `which` written with `mode`. */
static void hand_fixture(const char *name, int bad_digest, int which, pmode mode, int shape_of, const char *shape) {
  buf m = { 0 }, fr = { 0 };
  hand_manifest(&m, name, bad_digest, shape_of, shape);
  put_le(&fr, m.n, 4);
  put(&fr, m.p, m.n);
  for (int i = 0; i < NHAND; i++) hand_payload(&fr, i, i == which ? mode : P_OK);
  write_seed("fixture", name, &fr);
  free(m.p);
  free(fr.p);
}

static void manifest_seed(const char *name, const char *text, size_t n) {
  buf b = { 0 };
  put(&b, text, n);
  write_seed("manifest", name, &b);
  free(b.p);
}

/* A manifest seed: HEAD for case `cs`, then `tail` (n bytes, NULs allowed). */
static void manifest_edit(const char *cs, const char *tail, size_t n) {
  buf o = { 0 };
  putf(&o, HEAD, cs);
  put(&o, tail, n);
  write_seed("manifest", cs, &o);
  free(o.p);
}

static void manifest_seeds(void) {
  buf m = { 0 };
  hand_manifest(&m, "hand_all_kinds", -1, -1, NULL);
  write_seed("manifest", "hand_all_kinds", &m);
  free(m.p);
  /* refusals, each one edit away from a valid manifest */
  static const char overflow[] = "tensor w bf16 3,3 9223372036854775807,1 00000000000000000000000000000000 input\n";
  manifest_edit("hand_span_overflow", overflow, sizeof overflow - 1);
  static const char gib[] = "tensor w bf16 536870912,2 1,536870912 00000000000000000000000000000000 input\n";
  manifest_edit("hand_span_over_1gib", gib, sizeof gib - 1);
  static const char crlf[] = "scalar n i64 1\r\n";
  manifest_edit("hand_crlf", crlf, sizeof crlf - 1);
  static const char nul[] = "scalar n i64 1\0junk\n";
  manifest_edit("hand_nul", nul, sizeof nul - 1);
  char longl[4099];
  memset(longl, 'c', sizeof longl);
  longl[0] = '#';
  longl[sizeof longl - 1] = '\n';   /* 4098 characters: over FKFIX_LINE_MAX */
  manifest_edit("hand_long_line", longl, sizeof longl);
  manifest_seed("hand_version2", "fkfix 2\n", 8);
  manifest_seed("hand_empty", "", 0);
}

static void fixture_seeds(void) {
  for (size_t i = 0; i < sizeof BIG / sizeof BIG[0]; i++) BIG[i] = (uint16_t)((i * 2654435761u) >> 20 & 0x3ff);
  hand_fixture("hand_valid", -1, -1, P_OK, -1, NULL);
  hand_fixture("hand_bad_digest", 1, -1, P_OK, -1, NULL);
  hand_fixture("hand_truncated", -1, 5, P_TRUNC, -1, NULL);
  hand_fixture("hand_corrupt", -1, 5, P_FLIP, -1, NULL);
  hand_fixture("hand_no_content_size", -1, 0, P_NOSIZE, -1, NULL);
  hand_fixture("hand_two_frames", -1, 0, P_TWO, -1, NULL);
  hand_fixture("hand_skippable", -1, 4, P_SKIP, -1, NULL);
  hand_fixture("hand_bad_checksum", -1, 5, P_CHECKSUM, -1, NULL);
  hand_fixture("hand_fcs_1gib", -1, 1, P_FCS_HUGE, -1, NULL);
  hand_fixture("hand_fcs_over_limit", -1, 1, P_FCS_OVER, -1, NULL);
  hand_fixture("hand_missing_payload", -1, 2, P_EMPTY, -1, NULL);
  hand_fixture("hand_size_mismatch", -1, -1, P_OK, 1, "2,2 3,1");
  /* a declared span of 2^29 bf16 (1 GiB, the reader's limit) whose frame claims exactly that:
   * above the harness's cap, so parsed but never decompressed */
  hand_fixture("hand_span_at_limit", -1, 1, P_FCS_HUGE, 1, "268435456,2 2,1");
}

/* ---- plan descriptors in fuzz_plan_desc.c's byte mapping ---- */
typedef struct {
  uint8_t programs, threads, tier, forbid, flags, ptrs;
  uint16_t hidden, max_rows, tail_in, max_frames;
  uint8_t eps, clip, rows, frames, pad;
} pd;

static void plan_seed(const char *name, pd d) {
  buf b = { 0 };
  put_u8(&b, d.programs);
  put_u8(&b, d.threads);
  put_u8(&b, d.tier);
  put_u8(&b, d.forbid);
  put_u8(&b, d.flags);
  put_u8(&b, d.ptrs);
  put_le(&b, d.hidden, 2);
  put_le(&b, d.max_rows, 2);
  put_le(&b, d.tail_in, 2);
  put_le(&b, d.max_frames, 2);
  put_u8(&b, d.eps);
  put_u8(&b, d.clip);
  put_u8(&b, d.rows);
  put_u8(&b, d.frames);
  put_u8(&b, d.pad);
  write_seed("plan_desc", name, &b);
  free(b.p);
}

static void plan_seeds(void) {
  /* dims: v < 0x8000 is v; 0x8000 | i picks special i (9: 65536, 11: -1, 12: INT64_MIN) */
  plan_seed("valid_block", (pd){ 1, 1, 0, 0, 0, 0x17, 64, 4, 0, 0, 0, 0, 2, 0, 0x03 });
  plan_seed("valid_block_bias_fast_2t", (pd){ 1, 2, 1, 0, 1 | 4, 0x1f, 40, 8, 0, 0, 11, 0, 6, 0, 0x05 });
  plan_seed("valid_tail_i16_2t", (pd){ 2, 2, 0, 0, 2, 0x60, 0, 0, 96, 4, 0, 5, 0, 2, 0x30 });
  plan_seed("valid_both", (pd){ 3, 2, 0, 0, 0, 0x7f, 37, 3, 17, 3, 0, 12, 1, 0, 0x71 });
  plan_seed("valid_tail_one_frame", (pd){ 2, 1, 0, 0, 0, 0x60, 0, 0, 1, 1, 0, 5, 0, 0, 0 });
  plan_seed("valid_large_check_only", (pd){ 3, 64, 1, 0, 0, 0x7f, 0x8009, 0x8009, 0x8009, 0x8009, 0, 5, 0, 0, 0 });
  plan_seed("bad_eps_nan", (pd){ 1, 1, 0, 0, 0, 0x1f, 64, 4, 0, 0, 3, 0, 0, 0, 0 });
  plan_seed("bad_clip_zero", (pd){ 2, 1, 0, 0, 0, 0x60, 0, 0, 16, 2, 0, 1, 0, 0, 0 });
  plan_seed("bad_threads", (pd){ 3, 0xff, 0, 0, 0, 0x7f, 8, 1, 8, 1, 0, 5, 0, 0, 0 });
  plan_seed("bad_tier", (pd){ 1, 1, 3, 0, 0, 0x1f, 8, 1, 0, 0, 0, 0, 0, 0, 0 });
  plan_seed("bad_flags", (pd){ 1, 1, 0, 0, 0x80 | (5 << 3), 0x1f, 8, 1, 0, 0, 0, 0, 0, 0, 0 });
  plan_seed("bad_programs", (pd){ 0x80 | (3 << 2) | 1, 1, 0, 0, 0, 0x1f, 8, 1, 0, 0, 0, 0, 0, 0, 0 });
  plan_seed("bad_null_in_proj", (pd){ 1, 1, 0, 0, 0, 0x1d, 8, 1, 0, 0, 0, 0, 0, 0, 0 });
  plan_seed("bad_hidden_min", (pd){ 1, 1, 0, 0, 0, 0x1f, 0x800c, 1, 0, 0, 0, 0, 0, 0, 0 });
  plan_seed("bad_max_frames_over", (pd){ 2, 1, 0, 0, 0, 0x60, 0, 0, 16, 0x800a, 0, 5, 0, 0, 0 });
  plan_seed("unsupported_no_avx", (pd){ 3, 1, 0, 0x01 | 0x04, 0, 0x7f, 8, 1, 8, 1, 0, 5, 0, 0, 0 });
  plan_seed("unsupported_fast_no_bf16", (pd){ 1, 1, 1, 0x20 | 0x01, 0, 0x1f, 8, 1, 0, 0, 0, 0, 0, 0, 0 });
}

/* ---- the checkpoint loader (fuzz_ckpt.c): a selector byte, then a safetensors file, an index, a
 * config.json or a GGUF file ---- */

enum { CK_ST = 0, CK_INDEX = 1, CK_CONFIG = 2, CK_GGUF = 3 };

static void ckpt_seed(const char *name, int sel, const void *body, size_t n) {
  buf b = { 0 };
  put_u8(&b, (unsigned)sel);
  put(&b, body, n);
  write_seed("ckpt", name, &b);
  free(b.p);
}

/* a safetensors file: header text padded with spaces to 8 bytes (unless raw), data of n bytes */
static void st_seed(const char *name, const char *header, size_t n, int pad) {
  buf b = { 0 };
  size_t hl = strlen(header), padded = pad ? (hl + 7) / 8 * 8 : hl;
  put_le(&b, padded, 8);
  put(&b, header, hl);
  for (size_t i = hl; i < padded; i++) put_u8(&b, ' ');
  for (size_t i = 0; i < n; i++) put_u8(&b, (unsigned)(i * 37 + 11) & 0xffu);
  ckpt_seed(name, CK_ST, b.p, b.n);
  free(b.p);
}

#define CK_T(dt, shape, b, e) "{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static const char *const lm_released =
  "{\"architectures\": [\"Lfm2ForCausalLM\"], \"model_type\": \"lfm2\", \"vocab_size\": 65536,\n"
  " \"hidden_size\": 1024, \"block_ff_dim\": 6656, \"block_auto_adjust_ff_dim\": true,\n"
  " \"block_ffn_dim_multiplier\": 1.0, \"block_multiple_of\": 256, \"num_hidden_layers\": 16,\n"
  " \"num_attention_heads\": 16, \"num_key_value_heads\": 8, \"max_position_embeddings\": 128000,\n"
  " \"norm_eps\": 1e-05, \"rope_theta\": 1000000.0, \"conv_L_cache\": 3, \"conv_bias\": false,\n"
  " \"tie_embedding\": true, \"full_attn_idxs\": [2, 5, 8, 10, 12, 14], \"torch_dtype\": \"bfloat16\"}\n";

static const char *const lm_transformers5 =
  "{\"architectures\": [\"Lfm2ForCausalLM\"], \"model_type\": \"lfm2\", \"vocab_size\": 1024,\n"
  " \"hidden_size\": 256, \"intermediate_size\": 768, \"block_auto_adjust_ff_dim\": false,\n"
  " \"num_hidden_layers\": 6, \"num_attention_heads\": 4, \"num_key_value_heads\": 2,\n"
  " \"rope_parameters\": {\"rope_theta\": 1000000.0, \"rope_type\": \"default\"},\n"
  " \"tie_word_embeddings\": false, \"full_attn_idxs\": null,\n"
  " \"layer_types\": [\"conv\", \"conv\", \"full_attention\", \"conv\", \"full_attention\", \"conv\"]}\n";

static const char *const detok =
  "{\"model_type\": \"lfm2\", \"vocab_size\": 65536, \"hidden_size\": 512, \"intermediate_size\": 2304,\n"
  " \"num_hidden_layers\": 8, \"num_attention_heads\": 8, \"num_key_value_heads\": 8, \"sliding_window\": 30,\n"
  " \"layer_types\": [\"conv\", \"conv\", \"sliding_attention\", \"conv\", \"sliding_attention\", \"conv\",\n"
  " \"sliding_attention\", \"conv\"]}\n";

static void ckpt_seeds(void) {
  /* safetensors: valid (three dtypes, metadata, a zero-size and a 0-dim tensor; no tensor) */
  st_seed("st_valid", "{\"__metadata__\":{\"format\":\"pt\"},\"a\":" CK_T("BF16", "[2,3]", 0, 12) ",\"b\":"
          CK_T("F32", "[2]", 12, 20) ",\"c\":" CK_T("F16", "[1,1,2]", 20, 24) ",\"d\":" CK_T("F32", "[0,4]", 24, 24)
          ",\"e\":" CK_T("I64", "[]", 24, 32) "}", 32, 1);
  st_seed("st_empty", "{}", 0, 1);
  st_seed("st_metadata_only", "{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\"}}", 0, 1);
  st_seed("st_unpadded", "{\"a\":" CK_T("BF16", "[4]", 0, 8) "}", 8, 0);
  /* refusals: one rule each */
  st_seed("st_overlap", "{\"a\":" CK_T("BF16", "[4]", 0, 8) ",\"b\":" CK_T("BF16", "[4]", 4, 12) "}", 12, 1);
  st_seed("st_gap", "{\"a\":" CK_T("BF16", "[4]", 0, 8) ",\"b\":" CK_T("BF16", "[4]", 10, 18) "}", 18, 1);
  st_seed("st_not_covering", "{\"a\":" CK_T("F32", "[4]", 0, 8) "}", 8, 1);
  st_seed("st_out_of_range", "{\"a\":" CK_T("BF16", "[4]", 0, 8) "}", 6, 1);
  st_seed("st_trailing", "{\"a\":" CK_T("BF16", "[4]", 0, 8) "}", 11, 1);
  st_seed("st_reversed", "{\"a\":" CK_T("BF16", "[4]", 8, 0) "}", 8, 1);
  st_seed("st_dtype_unknown", "{\"a\":" CK_T("Q4", "[4]", 0, 8) "}", 8, 1);
  st_seed("st_duplicate", "{\"a\":" CK_T("BF16", "[4]", 0, 8) ",\"a\":" CK_T("BF16", "[4]", 8, 16) "}", 16, 1);
  st_seed("st_shape_overflow", "{\"a\":" CK_T("BF16", "[4611686018427387904,16]", 0, 8) "}", 8, 1);
  st_seed("st_key_unknown", "{\"a\":{\"dtype\":\"BF16\",\"shape\":[4],\"strides\":[1],\"data_offsets\":[0,8]}}", 8, 1);
  st_seed("st_metadata_number", "{\"__metadata__\":{\"format\":1}}", 0, 1);
  {
    buf b = { 0 }; /* a header length past the end of the file */
    put_le(&b, 1000, 8);
    putf(&b, "{\"a\":" CK_T("BF16", "[4]", 0, 8) "}");
    ckpt_seed("st_length_past_file", CK_ST, b.p, b.n);
    free(b.p);
  }
  ckpt_seed("st_short", CK_ST, "abcde", 5);
  /* the index */
  static const char ix[] =
    "{\"metadata\": {\"total_size\": 24}, \"weight_map\": {\"lm_head.weight\": \"model-00002-of-00002.safetensors\",\n"
    " \"model.embed_tokens.weight\": \"model-00001-of-00002.safetensors\",\n"
    " \"model.embedding_norm.weight\": \"model-00001-of-00002.safetensors\"}}\n";
  ckpt_seed("index_valid", CK_INDEX, ix, strlen(ix));
  static const char ix_path[] = "{\"weight_map\": {\"a\": \"../model.safetensors\"}}";
  ckpt_seed("index_shard_path", CK_INDEX, ix_path, strlen(ix_path));
  static const char ix_key[] = "{\"weight_map\": {\"a\": \"m.safetensors\"}, \"extra\": 1}";
  ckpt_seed("index_unknown_key", CK_INDEX, ix_key, strlen(ix_key));
  static const char ix_empty[] = "{\"weight_map\": {}}";
  ckpt_seed("index_empty", CK_INDEX, ix_empty, strlen(ix_empty));
  /* config.json: the released LFM2-350M style, transformers 5's, the detokenizer's, LFM2.5-Audio's */
  ckpt_seed("config_lm_released", CK_CONFIG, lm_released, strlen(lm_released));
  ckpt_seed("config_lm_transformers5", CK_CONFIG, lm_transformers5, strlen(lm_transformers5));
  ckpt_seed("config_detok", CK_CONFIG, detok, strlen(detok));
  buf a = { 0 };
  putf(&a, "{\"architectures\": [\"LFM2AudioModel\"], \"codebooks\": 8, \"tie_audio_embeddings\": false,\n"
           " \"semantic_codebook_factor\": 100, \"codebook_weight\": \"log\", \"interleaved_n_text\": 6,\n"
           " \"interleaved_n_audio\": 12, \"preprocessor\": {}, \"encoder\": {},\n"
           " \"depthformer\": {\"layers\": 6, \"dim\": 1024, \"tie\": true}, \"lfm\": %s}\n", lm_released);
  ckpt_seed("config_audio", CK_CONFIG, a.p, a.n);
  free(a.p);
  static const char dup[] = "{\"architectures\": [\"Lfm2ForCausalLM\"], \"hidden_size\": 1, \"hidden_size\": 2}";
  ckpt_seed("config_duplicate", CK_CONFIG, dup, strlen(dup));
}

/* GGUF (runtime/ckpt/gguf.c): a two-layer LFM2 (a ShortConv layer, an attention layer of 1 KV head),
 * hidden 64, vocabulary 32; the tensors' types F32, F16, BF16, Q8_0, Q4_0 (ggml numbering) */
static void gg_str(buf *b, const char *s) {
  put_le(b, strlen(s), 8);
  put(b, s, strlen(s));
}
static void gg_u32(buf *b, const char *k, uint32_t v) {
  gg_str(b, k);
  put_le(b, 4, 4); /* UINT32 */
  put_le(b, v, 4);
}
static void gg_f32(buf *b, const char *k, float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  gg_str(b, k);
  put_le(b, 6, 4); /* FLOAT32 */
  put_le(b, u, 4);
}

typedef struct gg_tensor {
  const char *name;
  uint32_t type, nd;
  uint64_t ne[2];
} gg_tensor;

/* version, the architecture, the type of tensor `bad` (-1: none) replaced by `bad_type`, and an offset
 * moved off the alignment (misalign) */
static void gguf_seed(const char *name, uint32_t version, const char *arch, int bad, uint32_t bad_type, int misalign) {
  static const gg_tensor ts[] = {
    { "token_embd.weight", 8, 2, { 64, 32 } }, { "token_embd_norm.weight", 0, 1, { 64, 1 } },
    { "blk.0.attn_norm.weight", 0, 1, { 64, 1 } }, { "blk.0.shortconv.in_proj.weight", 8, 2, { 64, 192 } },
    { "blk.0.shortconv.conv.weight", 0, 2, { 3, 64 } }, { "blk.0.shortconv.out_proj.weight", 2, 2, { 64, 64 } },
    { "blk.1.attn_q.weight", 30, 2, { 64, 64 } }, { "blk.1.attn_k.weight", 1, 2, { 64, 64 } },
    { "blk.1.attn_q_norm.weight", 0, 1, { 64, 1 } },
  };
  enum { NT = sizeof ts / sizeof ts[0] };
  buf b = { 0 };
  put(&b, "GGUF", 4);
  put_le(&b, version, 4);
  put_le(&b, NT, 8);
  put_le(&b, 13, 8);
  gg_str(&b, "general.architecture");
  put_le(&b, 8, 4); /* STRING */
  gg_str(&b, arch);
  gg_u32(&b, "lfm2.block_count", 2);
  gg_u32(&b, "lfm2.context_length", 128);
  gg_u32(&b, "lfm2.embedding_length", 64);
  gg_u32(&b, "lfm2.feed_forward_length", 64);
  gg_u32(&b, "lfm2.attention.head_count", 1);
  gg_str(&b, "lfm2.attention.head_count_kv");
  put_le(&b, 9, 4); /* ARRAY of INT32 */
  put_le(&b, 5, 4);
  put_le(&b, 2, 8);
  put_le(&b, 0, 4);
  put_le(&b, 1, 4);
  gg_f32(&b, "lfm2.rope.freq_base", 1e6f);
  gg_f32(&b, "lfm2.attention.layer_norm_rms_epsilon", 1e-5f);
  gg_u32(&b, "lfm2.shortconv.l_cache", 3);
  gg_u32(&b, "lfm2.vocab_size", 32);
  gg_u32(&b, "general.alignment", 32);
  gg_str(&b, "tokenizer.ggml.tokens"); /* an array of strings, read past */
  put_le(&b, 9, 4);
  put_le(&b, 8, 4);
  put_le(&b, 2, 8);
  gg_str(&b, "<s>");
  gg_str(&b, "a");
  uint64_t off = 0, bytes[NT];
  for (int i = 0; i < NT; i++) {
    const gg_tensor *t = &ts[i];
    uint32_t type = i == bad ? bad_type : t->type;
    uint64_t el = t->ne[0] * (t->nd == 2 ? t->ne[1] : 1);
    bytes[i] = t->type == 0 ? 4 * el : t->type == 8 ? el / 32 * 34 : t->type == 2 ? el / 32 * 18 : 2 * el;
    gg_str(&b, t->name);
    put_le(&b, t->nd, 4);
    for (uint32_t d = 0; d < t->nd; d++) put_le(&b, t->ne[d], 8);
    put_le(&b, type, 4);
    put_le(&b, off + (i == NT - 1 && misalign ? 4 : 0), 8);
    off += (bytes[i] + 31) / 32 * 32;
  }
  while (b.n % 32) put_u8(&b, 0);
  for (uint64_t i = 0; i < off; i++) put_u8(&b, (unsigned)(i * 29 + 3) & 0x3bu); /* scales stay finite */
  ckpt_seed(name, CK_GGUF, b.p, b.n);
  free(b.p);
}

static void gguf_seeds(void) {
  gguf_seed("gguf_valid", 3, "lfm2", -1, 0, 0);
  gguf_seed("gguf_version1", 1, "lfm2", -1, 0, 0);
  gguf_seed("gguf_arch_llama", 3, "llama", -1, 0, 0);
  gguf_seed("gguf_type_q4_k", 3, "lfm2", 3, 12, 0);
  gguf_seed("gguf_misaligned", 3, "lfm2", -1, 0, 1);
}

int main(int argc, char **argv) {
  if (argc != 3) DIE("usage: gen_seeds <repo root> <out dir>");
  g_root = argv[1];
  g_out = argv[2];
  real_fixture("rmsnorm", "bf16_n1");
  real_fixture("rmsnorm", "f32_zero");
  real_fixture("shortconv", "bf16_h37_p1_c0");
  real_fixture("qkprep", "neox32_k_c5");
  manifest_seeds();
  fixture_seeds();
  plan_seeds();
  ckpt_seeds();
  gguf_seeds();
  return 0;
}
