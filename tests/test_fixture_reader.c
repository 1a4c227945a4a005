/* test_fixture_reader.c - Criterion suite for the fixture manifest reader (tests/fixture/fkfix.c).
 * Every test writes its own fixture into a fresh mkdtemp directory, so the suite depends on no
 * checked-in evidence and each failure mode is produced by exactly one edit of a valid fixture. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "fixture/fkfix.h"

static char g_dir[64];
static char g_err[2048];

static void setup(void) {
  snprintf(g_dir, sizeof g_dir, "/tmp/fkfix_test_XXXXXX");
  cr_assert_not_null(mkdtemp(g_dir));
}

/* Removes g_dir, one level of subdirectories deep (the listing test makes one). */
static void rm_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char p[512];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat st;
    if (!lstat(p, &st) && S_ISDIR(st.st_mode)) rm_tree(p);
    else unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

static void teardown(void) { rm_tree(g_dir); }

TestSuite(fkfix, .init = setup, .fini = teardown);

/* ---- fixture writers ---- */

static const char *path_of(const char *name) {
  static char p[2][512];
  static int k;
  k ^= 1;
  snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
  return p[k];
}

static void put_file(const char *name, const void *data, size_t n) {
  FILE *fp = fopen(path_of(name), "wb");
  cr_assert_not_null(fp);
  cr_assert_eq(fwrite(data, 1, n, fp), n);
  cr_assert_eq(fclose(fp), 0);
}

static void digest(const void *raw, size_t n, char hex[33]) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(raw, n));
  for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned)c.digest[i]);
}

/* Writes <case>.<tensor>.zst holding raw as one zstd frame with its content size. */
static void put_payload(const char *cs, const char *tensor, const void *raw, size_t n) {
  size_t cap = ZSTD_compressBound(n);
  void *z = malloc(cap);
  cr_assert_not_null(z);
  size_t zn = ZSTD_compress(z, cap, raw, n, 3);
  cr_assert(!ZSTD_isError(zn));
  char name[256];
  snprintf(name, sizeof name, "%s.%s.zst", cs, tensor);
  put_file(name, z, zn);
  free(z);
}

typedef struct { char line[48][4200]; int n; } manifest;

static void m_add(manifest *m, const char *fmt, ...) {
  cr_assert_lt(m->n, 48);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->line[m->n++], sizeof m->line[0], fmt, ap);
  va_end(ap);
}

/* Index of the first line starting with prefix; the test fails if there is none. */
static int m_find(const manifest *m, const char *prefix) {
  for (int i = 0; i < m->n; i++)
    if (!strncmp(m->line[i], prefix, strlen(prefix))) return i;
  cr_assert_fail("no manifest line starts with '%s'", prefix);
  return -1;
}

/* 1-based line number in the written file: lines are written in order, one per entry. */
static int m_lineno(const manifest *m, const char *prefix) { return m_find(m, prefix) + 1; }

static void m_set(manifest *m, const char *prefix, const char *fmt, ...) {
  int i = m_find(m, prefix);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->line[i], sizeof m->line[0], fmt, ap);
  va_end(ap);
}

static void m_del(manifest *m, const char *prefix) {
  int i = m_find(m, prefix);
  memmove(&m->line[i], &m->line[i + 1], (size_t)(m->n - i - 1) * sizeof m->line[0]);
  m->n--;
}

static const char *m_write_eol(const manifest *m, const char *cs, const char *eol) {
  char name[128];
  snprintf(name, sizeof name, "%s.manifest", cs);
  FILE *fp = fopen(path_of(name), "wb");
  cr_assert_not_null(fp);
  for (int i = 0; i < m->n; i++) fprintf(fp, "%s%s", m->line[i], eol);
  cr_assert_eq(fclose(fp), 0);
  static char path[512];   /* own buffer: path_of's slots get reused by later writes */
  snprintf(path, sizeof path, "%s", path_of(name));
  return path;
}

static const char *m_write(const manifest *m, const char *cs) { return m_write_eol(m, cs, "\n"); }

/* The valid base fixture. w is a strided bf16 2x3 matrix with row stride 4: its span is 7
 * elements and element 3 is sentinel padding. */
static const float X[4] = {1.0f, -2.0f, 0.5f, 3.0f};
static const uint16_t W[7] = {0x3f80, 0x4000, 0xbf80, 0x7fa5, 0x0001, 0x8000, 0x7f80};
static const float Y[2] = {-2.5f, 1.0e-40f};
static const double Y64[2] = {-2.5, 1.0e-40};
static const char *BLOB = "0123456789abcdef0123456789abcdef01234567";
static const char *DERIV = "|y - s| <= 2^-8*(|s| + E) + E + 2^-134;  d = K + 1 \xe2\x89\xa4 8193";

static manifest *base(const char *cs) {
  static manifest m;
  char hx[33], hw[33], hy[33], hy64[33];
  memset(&m, 0, sizeof m);
  put_payload(cs, "x", X, sizeof X);
  put_payload(cs, "w", W, sizeof W);
  put_payload(cs, "y", Y, sizeof Y);
  put_payload(cs, "y64", Y64, sizeof Y64);
  digest(X, sizeof X, hx);
  digest(W, sizeof W, hw);
  digest(Y, sizeof Y, hy);
  digest(Y64, sizeof Y64, hy64);
  m_add(&m, "# written by test_fixture_reader");
  m_add(&m, "fkfix 1");
  m_add(&m, "leaf gemv");
  m_add(&m, "form bf16_rne");
  m_add(&m, "case %s", cs);
  m_add(&m, "capture full-value");
  m_add(&m, "checkpoint synthetic:7");
  m_add(&m, "seed 18446744073709551615");
  m_add(&m, "script fixtures/ref/gemv.py");
  m_add(&m, "script_blob %s", BLOB);
  m_add(&m, "reference torch=2.5.1 numpy=2.1.3 transformers=4.47.0");
  m_add(&m, "scalar n i64 -9223372036854775808");
  m_add(&m, "scalar eps f32 0x3727c5ac");
  m_add(&m, "tensor x f32 4 1 %s input", hx);
  m_add(&m, "tensor w bf16 2,3 4,1 %s input", hw);
  m_add(&m, "tensor y f32 2 1 %s ref", hy);
  m_add(&m, "tensor y64 f64 2 1 %s ref", hy64);
  m_add(&m, "boundary y y bitexact bitexact");
  m_add(&m, "boundary y y64 faithful gemv_f64");
  m_add(&m, "");
  m_add(&m, "derivation gemv_f64 %s", DERIV);
  return &m;
}

/* Loads path expecting failure; the message must name the file, the line (when > 0) and
 * every given fragment (the field and the reason). The struct must come back zeroed. */
static void expect_fail(const char *path, int line, const char *frag1, const char *frag2) {
  fkfix f;
  memset(&f, 0xab, sizeof f);
  int rc = fkfix_load(path, &f, g_err, sizeof g_err);
  cr_assert_eq(rc, -1, "load of %s unexpectedly succeeded", path);
  cr_log_info("%s", g_err);   /* --verbose shows every message the suite provokes */
  cr_assert_not_null(strstr(g_err, path), "error does not name %s: %s", path, g_err);
  if (line > 0) {
    char tag[600];
    snprintf(tag, sizeof tag, "%s:%d: ", path, line);
    cr_assert_not_null(strstr(g_err, tag), "error does not name line %d: %s", line, g_err);
  }
  cr_assert_not_null(strstr(g_err, frag1), "error lacks '%s': %s", frag1, g_err);
  if (frag2) cr_assert_not_null(strstr(g_err, frag2), "error lacks '%s': %s", frag2, g_err);
  cr_assert_eq(f.tensors, NULL);
  cr_assert_eq(f.derivations, NULL);
  cr_assert_eq(f.ntensors, 0);
  fkfix_free(&f);
}

static void load_ok(const char *path, fkfix *f) {
  int rc = fkfix_load(path, f, g_err, sizeof g_err);
  cr_assert_eq(rc, 0, "load failed: %s", g_err);
}

/* ---- tests ---- */

Test(fkfix, valid_manifest_loads) {
  const char *p = m_write(base("k1"), "k1");
  fkfix f;
  load_ok(p, &f);
  cr_assert_str_eq(f.path, p);
  cr_assert_str_eq(f.leaf, "gemv");
  cr_assert_str_eq(f.form, "bf16_rne");
  cr_assert_str_eq(f.casename, "k1");
  cr_assert_str_eq(f.capture, "full-value");
  cr_assert_str_eq(f.checkpoint, "synthetic:7");
  cr_assert_eq(f.seed, UINT64_MAX);
  cr_assert_str_eq(f.script, "fixtures/ref/gemv.py");
  cr_assert_str_eq(f.script_blob, BLOB);
  cr_assert_str_eq(f.reference, "torch=2.5.1 numpy=2.1.3 transformers=4.47.0");

  int64_t iv;
  float fv;
  uint32_t bits;
  cr_assert_eq(f.nscalars, 2);
  cr_assert_eq(fkfix_scalar_i64(&f, "n", &iv), 0);
  cr_assert_eq(iv, INT64_MIN);
  cr_assert_eq(fkfix_scalar_f32(&f, "eps", &fv), 0);
  memcpy(&bits, &fv, sizeof bits);
  cr_assert_eq(bits, 0x3727c5acu);
  cr_assert_eq(f.scalars[1].f32_bits, 0x3727c5acu);
  cr_assert_eq(fkfix_scalar_i64(&f, "eps", &iv), -1);
  cr_assert_eq(fkfix_scalar_f32(&f, "n", &fv), -1);
  cr_assert_eq(fkfix_scalar_i64(&f, "nope", &iv), -1);

  cr_assert_eq(f.ntensors, 4);
  const fkfix_tensor *x = fkfix_tensor_get(&f, "x"), *w = fkfix_tensor_get(&f, "w");
  const fkfix_tensor *y = fkfix_tensor_get(&f, "y"), *y64 = fkfix_tensor_get(&f, "y64");
  cr_assert(x && w && y && y64);
  cr_assert_null(fkfix_tensor_get(&f, "z"));
  cr_assert_eq(x->dtype, FKFIX_F32);
  cr_assert_eq(x->ndim, 1);
  cr_assert_eq(x->shape[0], 4);
  cr_assert_eq(x->strides[0], 1);
  cr_assert_eq(x->span, 4);
  cr_assert_eq(x->nbytes, sizeof X);
  cr_assert_eq(x->is_input, 1);
  cr_assert_eq(memcmp(x->data, X, sizeof X), 0);
  cr_assert_eq(w->dtype, FKFIX_BF16);
  cr_assert_eq(w->ndim, 2);
  cr_assert(w->shape[0] == 2 && w->shape[1] == 3 && w->strides[0] == 4 && w->strides[1] == 1);
  cr_assert_eq(w->span, 7);
  cr_assert_eq(w->nbytes, sizeof W);
  cr_assert_eq(memcmp(w->data, W, sizeof W), 0);
  char hw[33];
  digest(W, sizeof W, hw);
  cr_assert_str_eq(w->xxh3, hw);
  cr_assert_eq(y->is_input, 0);
  cr_assert_eq(memcmp(y->data, Y, sizeof Y), 0);
  cr_assert_eq(y64->dtype, FKFIX_F64);
  cr_assert_eq(memcmp(y64->data, Y64, sizeof Y64), 0);

  cr_assert_eq(f.nboundaries, 2);
  cr_assert_str_eq(f.boundaries[0].field, "y");
  cr_assert_str_eq(f.boundaries[0].tensor, "y");
  cr_assert_eq(f.boundaries[0].bitexact, 1);
  cr_assert_str_eq(f.boundaries[0].tolerance, "bitexact");
  cr_assert_str_eq(f.boundaries[1].tensor, "y64");
  cr_assert_eq(f.boundaries[1].bitexact, 0);
  cr_assert_str_eq(f.boundaries[1].tolerance, "gemv_f64");
  cr_assert_eq(f.nderivations, 1);
  cr_assert_str_eq(fkfix_derivation_get(&f, "gemv_f64"), DERIV);   /* verbatim, double space kept */
  cr_assert_null(fkfix_derivation_get(&f, "gemv_torch"));
  fkfix_free(&f);
  cr_assert_eq(f.ntensors, 0);
  fkfix_free(&f);   /* twice is harmless */
}

Test(fkfix, flipped_payload_byte_is_digest_mismatch) {
  manifest *m = base("k1");
  uint16_t w2[7];
  memcpy(w2, W, sizeof W);
  w2[4] ^= 0x0100;
  put_payload("k1", "w", w2, sizeof w2);
  expect_fail(m_write(m, "k1"), m_lineno(m, "tensor w "), "tensor 'w'", "digest mismatch");
  cr_assert_not_null(strstr(g_err, "k1.w.zst"), "%s", g_err);
}

Test(fkfix, truncated_payload_is_size_mismatch) {
  manifest *m = base("k1");
  put_payload("k1", "x", X, sizeof X - sizeof X[0]);
  const char *p = m_write(m, "k1");
  expect_fail(p, m_lineno(m, "tensor x "), "tensor 'x'", "size mismatch");
  cr_assert_not_null(strstr(g_err, "k1.x.zst"), "%s", g_err);

  /* A cut .zst file: the frame header still claims the full size, the frame is incomplete. */
  char z[256];
  size_t zn = ZSTD_compress(z, sizeof z, X, sizeof X, 3);
  cr_assert(!ZSTD_isError(zn) && zn > 8);
  put_file("k1.x.zst", z, zn - 3);
  expect_fail(p, m_lineno(m, "tensor x "), "tensor 'x'", "k1.x.zst");
}

Test(fkfix, missing_payload_names_path) {
  manifest *m = base("k1");
  cr_assert_eq(unlink(path_of("k1.y.zst")), 0);
  expect_fail(m_write(m, "k1"), m_lineno(m, "tensor y "), "tensor 'y'", path_of("k1.y.zst"));
}

Test(fkfix, unsupported_schema_version) {
  manifest *m = base("k1");
  m_set(m, "fkfix 1", "fkfix 2");
  expect_fail(m_write(m, "k1"), 2, "unsupported schema version 2", NULL);
  m_set(m, "fkfix 2", "leaf gemv");
  expect_fail(m_write(m, "k1"), 2, "fkfix 1", NULL);
}

Test(fkfix, missing_required_key) {
  manifest *m = base("k1");
  m_del(m, "seed ");
  expect_fail(m_write(m, "k1"), 0, "seed", "missing required key");
}

Test(fkfix, duplicate_key) {
  manifest *m = base("k1");
  m_add(m, "leaf rmsnorm");
  expect_fail(m_write(m, "k1"), m->n, "leaf", "duplicate key");
}

Test(fkfix, unknown_key) {
  manifest *m = base("k1");
  m_add(m, "colour blue");
  expect_fail(m_write(m, "k1"), m->n, "unknown key 'colour'", NULL);
}

Test(fkfix, sequence_key) {
  manifest *m = base("k1");
  fkfix f;
  load_ok(m_write(m, "k1"), &f);
  cr_assert_str_eq(f.sequence, "");   /* optional: absent is no sequence */
  fkfix_free(&f);
  m_add(m, "sequence p3_d8 2 9");
  load_ok(m_write(m, "k1"), &f);
  cr_assert_str_eq(f.sequence, "p3_d8");
  cr_assert_eq(f.seq_index, 2);
  cr_assert_eq(f.seq_count, 9);
  fkfix_free(&f);
  m_add(m, "sequence p3_d8 3 9");
  expect_fail(m_write(m, "k1"), m->n, "sequence", "duplicate");
  m_del(m, "sequence p3_d8 3");
  m_set(m, "sequence ", "sequence p3_d8 9 9");
  expect_fail(m_write(m, "k1"), m_lineno(m, "sequence "), "sequence 'p3_d8'", "outside [0, count = 9)");
  m_set(m, "sequence ", "sequence p3_d8 -1 9");
  expect_fail(m_write(m, "k1"), m_lineno(m, "sequence "), "sequence 'p3_d8'", "outside");
  m_set(m, "sequence ", "sequence p3_d8 1");
  expect_fail(m_write(m, "k1"), m_lineno(m, "sequence "), "sequence", "<name> <index> <count>");
  m_set(m, "sequence ", "sequence p3_d8 x 9");
  expect_fail(m_write(m, "k1"), m_lineno(m, "sequence "), "sequence 'p3_d8'", "integers");
  m_set(m, "sequence ", "sequence Bad! 0 9");
  expect_fail(m_write(m, "k1"), m_lineno(m, "sequence "), "sequence", "bad name");
}

Test(fkfix, case_must_equal_file_stem) {
  manifest *m = base("k1");
  m_set(m, "case ", "case k2");
  expect_fail(m_write(m, "k1"), m_lineno(m, "case "), "case", "file stem 'k1'");
}

Test(fkfix, bad_dtype) {
  manifest *m = base("k1");
  char hx[33];
  digest(X, sizeof X, hx);
  m_set(m, "tensor x ", "tensor x f16 4 1 %s input", hx);
  expect_fail(m_write(m, "k1"), m_lineno(m, "tensor x "), "tensor 'x'", "dtype 'f16'");
}

Test(fkfix, bad_shape_or_strides) {
  static const char *const cases[][3] = {
    {"4,-1", "1,1", "shape"}, {"4,,1", "1,1", "shape"}, {"1,1,1,1,4", "1,1,1,1,1", "shape"},
    {"", "1", "single spaces"},       {"4", "0", "strides"},   {"4", "x", "strides"},
    {"4", "1,1", "dims"},       {"+4", "1", "shape"},   {"4 ", "1", "single spaces"}};
  char hx[33];
  digest(X, sizeof X, hx);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    manifest *m = base("k1");
    m_set(m, "tensor x ", "tensor x f32 %s %s %s input", cases[i][0], cases[i][1], hx);
    const char *p = m_write(m, "k1");
    /* empty and doubled fields are caught by the tokenizer, which names the key only */
    expect_fail(p, m_lineno(m, "tensor x "), cases[i][2], strcmp(cases[i][2], "single spaces") ? "tensor 'x'" : "tensor:");
  }
}

Test(fkfix, span_vs_payload_size) {
  manifest *m = base("k1");
  char hw[33];
  digest(W, sizeof W, hw);
  m_set(m, "tensor w ", "tensor w bf16 2,3 5,1 %s input", hw);   /* span 8, payload holds 7 */
  expect_fail(m_write(m, "k1"), m_lineno(m, "tensor w "), "tensor 'w'", "span 8");
  cr_assert_not_null(strstr(g_err, "size mismatch"), "%s", g_err);
  m_set(m, "tensor w ", "tensor w bf16 1073741824 1 %s input", hw);
  expect_fail(m_write(m, "k1"), m_lineno(m, "tensor w "), "tensor 'w'", "1 GiB");
  m_set(m, "tensor w ", "tensor w bf16 3,3 9223372036854775807,1 %s input", hw);
  expect_fail(m_write(m, "k1"), m_lineno(m, "tensor w "), "tensor 'w'", "overflow");
}

Test(fkfix, strided_padding_and_empty_span) {
  manifest *m = base("k1");
  /* column-major 3x2 with column stride 5: span 1 + 2*1 + 1*5 = 8, elements 3 and 4 are padding */
  static const uint16_t C[8] = {1, 2, 3, 0x7fa5, 0x7fa5, 4, 5, 6};
  char hc[33], he[33];
  put_payload("k1", "c", C, sizeof C);
  put_payload("k1", "e", NULL, 0);
  digest(C, sizeof C, hc);
  digest(NULL, 0, he);
  m_add(m, "tensor c u16 3,2 1,5 %s ref", hc);
  m_add(m, "tensor e i64 2,0,3 6,3,1 %s input", he);
  fkfix f;
  load_ok(m_write(m, "k1"), &f);
  const fkfix_tensor *c = fkfix_tensor_get(&f, "c"), *e = fkfix_tensor_get(&f, "e");
  cr_assert(c && e);
  cr_assert_eq(c->span, 8);
  cr_assert_eq(c->nbytes, 16);
  cr_assert_eq(((const uint16_t *)c->data)[3], 0x7fa5);
  cr_assert_eq(memcmp(c->data, C, sizeof C), 0);
  cr_assert_eq(fkfix_tensor_get(&f, "w")->span, 7);
  cr_assert_eq(((const uint16_t *)fkfix_tensor_get(&f, "w")->data)[3], 0x7fa5);
  cr_assert_eq(e->ndim, 3);
  cr_assert_eq(e->span, 0);
  cr_assert_eq(e->nbytes, 0);
  cr_assert_not_null(e->data);
  fkfix_free(&f);
}

Test(fkfix, bad_digest_hex) {
  manifest *m = base("k1");
  char hx[33];
  digest(X, sizeof X, hx);
  m_set(m, "tensor x ", "tensor x f32 4 1 %.31s input", hx);
  expect_fail(m_write(m, "k1"), m_lineno(m, "tensor x "), "tensor 'x'", "xxh3");
  m_set(m, "tensor x ", "tensor x f32 4 1 %sa input", hx);
  expect_fail(m_write(m, "k1"), m_lineno(m, "tensor x "), "tensor 'x'", "xxh3");
  m_set(m, "tensor x ", "tensor x f32 4 1 ABCDEF%.26s input", hx);
  expect_fail(m_write(m, "k1"), m_lineno(m, "tensor x "), "tensor 'x'", "lowercase hex");
  m_set(m, "tensor x ", "tensor x f32 4 1 %s input", hx);
  m_set(m, "script_blob ", "script_blob %.39s", BLOB);
  expect_fail(m_write(m, "k1"), m_lineno(m, "script_blob "), "script_blob", "40 lowercase hex");
}

Test(fkfix, boundary_unknown_tensor) {
  manifest *m = base("k1");
  m_add(m, "boundary y nope bitexact bitexact");
  expect_fail(m_write(m, "k1"), m->n, "boundary 'y'", "unknown tensor 'nope'");
}

Test(fkfix, boundary_on_input_tensor) {
  manifest *m = base("k1");
  m_add(m, "boundary x x bitexact bitexact");
  expect_fail(m_write(m, "k1"), m->n, "boundary 'x'", "role input");
}

Test(fkfix, faithful_boundary_needs_derivation) {
  manifest *m = base("k1");
  m_del(m, "derivation ");
  expect_fail(m_write(m, "k1"), m_lineno(m, "boundary y y64 "), "boundary 'y'", "tolerance 'gemv_f64' has no derivation");
  m_set(m, "boundary y y64 ", "boundary y y64 bitexact gemv_f64");
  expect_fail(m_write(m, "k1"), m_lineno(m, "boundary y y64 "), "boundary 'y'", "tolerance 'gemv_f64'");
  m_set(m, "boundary y y64 ", "boundary y y64 close gemv_f64");
  expect_fail(m_write(m, "k1"), m_lineno(m, "boundary y y64 "), "boundary 'y'", "contract 'close'");
}

Test(fkfix, bad_scalar_syntax) {
  manifest *m = base("k1");
  int ln = m_lineno(m, "scalar n ");
  m_set(m, "scalar n ", "scalar n i64 99999999999999999999");
  expect_fail(m_write(m, "k1"), ln, "scalar 'n'", "int64 range");
  m_set(m, "scalar n ", "scalar n i64 9223372036854775808");
  expect_fail(m_write(m, "k1"), ln, "scalar 'n'", "int64 range");
  m_set(m, "scalar n ", "scalar n i64 12a");
  expect_fail(m_write(m, "k1"), ln, "scalar 'n'", "i64 value '12a'");
  m_set(m, "scalar n ", "scalar n i64 9223372036854775807");
  ln = m_lineno(m, "scalar eps ");
  m_set(m, "scalar eps ", "scalar eps f32 3727c5ac");
  expect_fail(m_write(m, "k1"), ln, "scalar 'eps'", "0x followed by 8 hex");
  m_set(m, "scalar eps ", "scalar eps f32 0x3727c5a");
  expect_fail(m_write(m, "k1"), ln, "scalar 'eps'", "0x followed by 8 hex");
  m_set(m, "scalar eps ", "scalar eps f16 0x3727c5ac");
  expect_fail(m_write(m, "k1"), ln, "scalar 'eps'", "type 'f16'");
  m_set(m, "scalar eps ", "scalar n f32 0x3727c5ac");
  expect_fail(m_write(m, "k1"), ln, "scalar 'n'", "duplicate");
}

Test(fkfix, crlf_rejected) {
  manifest *m = base("k1");
  expect_fail(m_write_eol(m, "k1", "\r\n"), 1, "CRLF", NULL);
  /* one CRLF line in an otherwise LF file is caught at that line */
  m_set(m, "leaf ", "leaf gemv\r");
  expect_fail(m_write(m, "k1"), m_lineno(m, "leaf "), "CRLF", NULL);
}

Test(fkfix, whitespace_rules) {
  manifest *m = base("k1");
  m_set(m, "leaf ", "leaf gemv \t ");             /* trailing whitespace is tolerated */
  fkfix f;
  load_ok(m_write(m, "k1"), &f);
  cr_assert_str_eq(f.leaf, "gemv");
  fkfix_free(&f);
  m_set(m, "leaf ", "leaf  gemv");
  expect_fail(m_write(m, "k1"), m_lineno(m, "leaf "), "leaf: fields must be separated by single spaces", NULL);
  m_set(m, "leaf ", " leaf gemv");
  expect_fail(m_write(m, "k1"), m_lineno(m, " leaf "), "starts with a space", NULL);
  m_set(m, " leaf ", "leaf gemv");
  m_set(m, "derivation ", "derivation gemv_f64");
  expect_fail(m_write(m, "k1"), m_lineno(m, "derivation "), "derivation:", "<text>");
  m_set(m, "derivation ", "derivation %s", DERIV);
  m_set(m, "leaf ", "leaf\tgemv");
  expect_fail(m_write(m, "k1"), m_lineno(m, "leaf"), "control character", NULL);
}

Test(fkfix, line_length_limit) {
  manifest *m = base("k1");
  char longc[FKFIX_LINE_MAX + 2];
  memset(longc, 'c', sizeof longc);
  longc[0] = '#';
  longc[FKFIX_LINE_MAX] = '\0';                    /* exactly the limit: accepted */
  m_add(m, "%s", longc);
  fkfix f;
  load_ok(m_write(m, "k1"), &f);
  fkfix_free(&f);
  longc[FKFIX_LINE_MAX] = 'c';
  longc[FKFIX_LINE_MAX + 1] = '\0';
  m_set(m, "#cc", "%s", longc);
  expect_fail(m_write(m, "k1"), m->n, "longer than 4096", NULL);
}

Test(fkfix, payload_frame_rules) {
  manifest *m = base("k1");
  const char *p = m_write(m, "k1");
  /* a streamed frame that does not record its content size */
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  cr_assert_not_null(cc);
  cr_assert(!ZSTD_isError(ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0)));
  char z[512];
  ZSTD_outBuffer out = {z, sizeof z, 0};
  ZSTD_inBuffer in = {X, sizeof X, 0};
  cr_assert_eq(ZSTD_compressStream2(cc, &out, &in, ZSTD_e_end), 0);
  ZSTD_freeCCtx(cc);
  put_file("k1.x.zst", z, out.pos);
  expect_fail(p, m_lineno(m, "tensor x "), "tensor 'x'", "content size");
  /* two frames */
  size_t n1 = ZSTD_compress(z, 256, X, sizeof X, 3);
  size_t n2 = ZSTD_compress(z + n1, 256, X, sizeof X, 3);
  cr_assert(!ZSTD_isError(n1) && !ZSTD_isError(n2));
  put_file("k1.x.zst", z, n1 + n2);
  expect_fail(p, m_lineno(m, "tensor x "), "tensor 'x'", "exactly one frame");
  /* raw bytes, no frame at all */
  put_file("k1.x.zst", X, sizeof X);
  expect_fail(p, m_lineno(m, "tensor x "), "tensor 'x'", "not a zstd frame");
}

Test(fkfix, free_after_failed_load_is_safe) {
  fkfix f;
  memset(&f, 0x5a, sizeof f);
  cr_assert_eq(fkfix_load(path_of("absent.manifest"), &f, g_err, sizeof g_err), -1);
  cr_assert_not_null(strstr(g_err, "absent.manifest"), "%s", g_err);
  fkfix z;
  memset(&z, 0, sizeof z);
  cr_assert_eq(memcmp(&f, &z, sizeof f), 0, "failed load must leave *out zeroed");
  fkfix_free(&f);
  fkfix_free(&f);
  fkfix_free(NULL);
  /* a failure after payloads were already attached must release them too (valgrind checks) */
  manifest *m = base("k1");
  m_add(m, "tensor late f32 1 1 00000000000000000000000000000000 ref");
  put_payload("k1", "late", X, sizeof X[0]);
  expect_fail(m_write(m, "k1"), m->n, "tensor 'late'", "digest mismatch");
  cr_assert_eq(fkfix_load(path_of("k1.txt"), &f, g_err, sizeof g_err), -1);
  cr_assert_not_null(strstr(g_err, ".manifest"), "%s", g_err);
  cr_assert_eq(fkfix_load(NULL, &f, g_err, sizeof g_err), -1);
  cr_assert_eq(fkfix_load(path_of("k1.manifest"), &f, NULL, 0), -1);   /* no err buffer: still safe */
}

Test(fkfix, list_sorted_by_name) {
  static const char *const names[] = {"b.manifest", "a_2.manifest", "B.manifest", "a.manifest",
                                      "a.manifest.bak", "notes.txt", ".manifest"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) put_file(names[i], "", 0);
  cr_assert_eq(mkdir(path_of("d.manifest"), 0700), 0);
  char **paths = NULL;
  int n = fkfix_list(g_dir, &paths, g_err, sizeof g_err);
  cr_assert_eq(n, 4, "%d: %s", n, g_err);
  static const char *const want[] = {"B.manifest", "a.manifest", "a_2.manifest", "b.manifest"};
  for (int i = 0; i < n; i++) cr_assert_str_eq(paths[i], path_of(want[i]));
  fkfix_list_free(paths, n);

  char nodir[128];
  snprintf(nodir, sizeof nodir, "%s/missing", g_dir);
  cr_assert_eq(fkfix_list(nodir, &paths, g_err, sizeof g_err), -1);
  cr_assert_not_null(strstr(g_err, nodir), "%s", g_err);
  cr_assert_null(paths);
  cr_assert_eq(fkfix_list(path_of("d.manifest"), &paths, g_err, sizeof g_err), 0);
  cr_assert_null(paths);
  fkfix_list_free(NULL, 0);
}
