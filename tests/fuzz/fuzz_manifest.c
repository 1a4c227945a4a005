/* fuzz_manifest.c: libFuzzer target for the fixture manifest parser (tests/fixture/fkfix.c,
 * fkfix_parse_manifest: schema version 1, fixtures/README.md).
 *
 * Input: the manifest text, all of it, copied into a buffer of exactly its size without a
 * terminator (a read past the input is an AddressSanitizer report). It is parsed under the path
 * "fz/<case>.manifest", <case> taken from the text's first `case` line (fuzz_common.h), so that
 * valid manifests get past the stem check.
 *
 * Checked for every input: no crash, leak or undefined behaviour; either 0 and a manifest whose
 * every field satisfies the schema's rules (re-derived here: spans, sizes, names, cross-line rules),
 * or -1 with a non-empty, terminated message starting with the path and *out left zeroed. The
 * same input parsed with no error buffer, and with a tiny one, gives the same verdict. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fixture/fkfix.h"
#include "fuzz_common.h"

static int is_zero(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return 0;
  return 1;
}

static int is_lower_hex(const char *s, size_t n) {
  if (strlen(s) != n) return 0;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

#define TERMINATED(arr) (memchr((arr), '\0', sizeof(arr)) != NULL)

static const size_t esize[] = {[FKFIX_BF16] = 2, [FKFIX_F32] = 4, [FKFIX_F64] = 8, [FKFIX_U16] = 2, [FKFIX_I64] = 8};

static void check_manifest(const fkfix *f, const char *path) {
  FUZZ_REQUIRE(TERMINATED(f->path) && !strcmp(f->path, path), "path");
  FUZZ_REQUIRE(TERMINATED(f->leaf) && TERMINATED(f->form) && TERMINATED(f->casename) && TERMINATED(f->capture) &&
                   TERMINATED(f->checkpoint) && TERMINATED(f->script) && TERMINATED(f->script_blob) &&
                   TERMINATED(f->reference) && TERMINATED(f->sequence),
               "an unterminated string field");
  FUZZ_REQUIRE(f->leaf[0] && f->form[0] && f->casename[0] && f->checkpoint[0] && f->script[0] && f->reference[0],
               "a required key came back empty");
  size_t clen = strlen(f->casename);
  FUZZ_REQUIRE(!strncmp(path + 3, f->casename, clen) && !strcmp(path + 3 + clen, ".manifest"),
               "case '%s' is not the stem of %s", f->casename, path);
  FUZZ_REQUIRE(!strcmp(f->capture, "full-value") || !strcmp(f->capture, "truncated"), "capture '%s'", f->capture);
  FUZZ_REQUIRE(is_lower_hex(f->script_blob, 40), "script_blob '%s'", f->script_blob);
  if (f->sequence[0])
    FUZZ_REQUIRE(f->seq_count >= 1 && f->seq_index >= 0 && f->seq_index < f->seq_count, "sequence %lld/%lld",
                 (long long)f->seq_index, (long long)f->seq_count);
  FUZZ_REQUIRE(f->nscalars >= 0 && f->ntensors >= 0 && f->nboundaries >= 0 && f->nderivations >= 0, "counts");
  FUZZ_REQUIRE((f->nscalars == 0 || f->scalars) && (f->ntensors == 0 || f->tensors) &&
                   (f->nboundaries == 0 || f->boundaries) && (f->nderivations == 0 || f->derivations),
               "an array is NULL with entries");

  for (int i = 0; i < f->nscalars; i++) {
    const fkfix_scalar *s = &f->scalars[i];
    FUZZ_REQUIRE(TERMINATED(s->name) && s->name[0], "scalar %d name", i);
    int64_t iv;
    float fv;
    int ri = fkfix_scalar_i64(f, s->name, &iv), rf = fkfix_scalar_f32(f, s->name, &fv);
    FUZZ_REQUIRE(s->is_f32 ? (ri == -1 && rf == 0) : (ri == 0 && rf == -1 && iv == s->i64), "scalar '%s' getters",
                 s->name);
  }

  for (int i = 0; i < f->ntensors; i++) {
    const fkfix_tensor *t = &f->tensors[i];
    FUZZ_REQUIRE(TERMINATED(t->name) && t->name[0], "tensor %d name", i);
    FUZZ_REQUIRE(fkfix_tensor_get(f, t->name) == t, "tensor '%s' is not unique", t->name);
    FUZZ_REQUIRE((unsigned)t->dtype <= FKFIX_I64, "tensor '%s' dtype %d", t->name, (int)t->dtype);
    FUZZ_REQUIRE(t->ndim >= 1 && t->ndim <= 4, "tensor '%s' ndim %d", t->name, t->ndim);
    /* the span re-derived in 128 bits: no overflow may have slipped through */
    __int128 span = 1;
    int empty = 0;
    for (int k = 0; k < 4; k++) {
      if (k >= t->ndim) {
        FUZZ_REQUIRE(t->shape[k] == 0 && t->strides[k] == 0, "tensor '%s' unused dim %d", t->name, k);
        continue;
      }
      FUZZ_REQUIRE(t->shape[k] >= 0 && t->strides[k] >= 1, "tensor '%s' dim %d", t->name, k);
      if (t->shape[k] == 0) empty = 1;
      if (!empty) span += (__int128)(t->shape[k] - 1) * t->strides[k];
    }
    if (empty) span = 0;
    FUZZ_REQUIRE(span == t->span, "tensor '%s' span %lld, re-derived %lld", t->name, (long long)t->span,
                 (long long)span);
    FUZZ_REQUIRE((__int128)t->nbytes == span * (__int128)esize[t->dtype], "tensor '%s' nbytes %zu", t->name,
                 t->nbytes);
    FUZZ_REQUIRE(t->nbytes <= FKFIX_PAYLOAD_MAX, "tensor '%s' nbytes %zu above the limit", t->name, t->nbytes);
    FUZZ_REQUIRE(t->data == NULL, "tensor '%s' has data before any payload", t->name);
    FUZZ_REQUIRE(TERMINATED(t->xxh3) && is_lower_hex(t->xxh3, 32), "tensor '%s' xxh3", t->name);
    FUZZ_REQUIRE(t->is_input == 0 || t->is_input == 1, "tensor '%s' role", t->name);
    FUZZ_REQUIRE(t->line >= 1, "tensor '%s' line %d", t->name, t->line);
  }

  for (int i = 0; i < f->nboundaries; i++) {
    const fkfix_boundary *b = &f->boundaries[i];
    FUZZ_REQUIRE(TERMINATED(b->field) && TERMINATED(b->tensor) && TERMINATED(b->tolerance), "boundary %d", i);
    const fkfix_tensor *t = fkfix_tensor_get(f, b->tensor);
    FUZZ_REQUIRE(t && !t->is_input, "boundary '%s' on tensor '%s'", b->field, b->tensor);
    FUZZ_REQUIRE(b->bitexact == !strcmp(b->tolerance, "bitexact"), "boundary '%s' contract", b->field);
    FUZZ_REQUIRE(b->bitexact || fkfix_derivation_get(f, b->tolerance), "boundary '%s' derivation", b->field);
  }

  for (int i = 0; i < f->nderivations; i++) {
    const fkfix_derivation *d = &f->derivations[i];
    FUZZ_REQUIRE(TERMINATED(d->id) && d->text && d->text[0], "derivation %d", i);
    FUZZ_REQUIRE(fkfix_derivation_get(f, d->id) == d->text, "derivation '%s' is not unique", d->id);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_exact_copy(data, size);
  char path[128];
  fuzz_manifest_path("fz", text, size, path, sizeof path);

  fkfix f;
  char err[1024];
  memset(&f, 0xa5, sizeof f);
  memset(err, 0x5a, sizeof err);
  int rc = fkfix_parse_manifest(path, text, size, &f, err, sizeof err);
  FUZZ_REQUIRE(rc == 0 || rc == -1, "rc %d", rc);
  FUZZ_SAY("manifest %s: %s", path, rc ? err : "ok");
  if (rc) {
    FUZZ_REQUIRE(memchr(err, '\0', sizeof err), "unterminated message");
    FUZZ_REQUIRE(err[0], "empty message");
    FUZZ_REQUIRE(!strncmp(err, path, strlen(path)), "message does not start with the path: %s", err);
    FUZZ_REQUIRE(is_zero(&f, sizeof f), "*out not zeroed after a failure: %s", err);
  } else {
    check_manifest(&f, path);
  }
  fkfix_free(&f);
  FUZZ_REQUIRE(is_zero(&f, sizeof f), "fkfix_free left *f non-zero");
  fkfix_free(&f);

  /* no error buffer, then a tiny one (the message is cut, still terminated): same verdict */
  fkfix g;
  FUZZ_REQUIRE(fkfix_parse_manifest(path, text, size, &g, NULL, 0) == rc, "verdict changed without a buffer");
  fkfix_free(&g);
  char small[8];
  size_t slen = 1 + size % sizeof small;
  memset(small, 0x5a, sizeof small);
  FUZZ_REQUIRE(fkfix_parse_manifest(path, text, size, &g, small, slen) == rc, "verdict changed with a small buffer");
  if (rc) FUZZ_REQUIRE(memchr(small, '\0', slen), "small message unterminated");
  fkfix_free(&g);
  free(text);
  return 0;
}
