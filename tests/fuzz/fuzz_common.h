/* fuzz_common.h: helpers shared by the libFuzzer targets of tests/fuzz/ (README.md there). */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An invariant of the code under test: a violation is a finding, reported like a crash. */
#define FUZZ_REQUIRE(cond, ...) \
  do { \
    if (!(cond)) { \
      fprintf(stderr, "%s:%d: FUZZ_REQUIRE(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__); \
      fputc('\n', stderr); \
      abort(); \
    } \
  } while (0)

/* FK_FUZZ_VERBOSE=1 in the environment: each target prints its verdict per input to stderr
 * (replaying one input: `FK_FUZZ_VERBOSE=1 build/fuzz/fuzz_fixture tests/fuzz/corpus/fixture/x`). */
static inline int fuzz_verbose(void) {
  static int v = -1;
  if (v < 0) {
    const char *e = getenv("FK_FUZZ_VERBOSE");
    v = e && *e && strcmp(e, "0") != 0;
  }
  return v;
}

#define FUZZ_SAY(...) \
  do { \
    if (fuzz_verbose()) { \
      fprintf(stderr, __VA_ARGS__); \
      fputc('\n', stderr); \
    } \
  } while (0)

/* A copy of d[0..n) in a buffer of exactly n bytes (1 when n is 0), with no terminator, so that
 * AddressSanitizer reports any read past the input. */
static inline char *fuzz_exact_copy(const uint8_t *d, size_t n) {
  char *p = malloc(n ? n : 1);
  FUZZ_REQUIRE(p, "out of memory copying %zu bytes", n);
  if (n) memcpy(p, d, n);
  return p;
}

/* The manifest path a manifest text is parsed under: "<dir>/<case>.manifest" with <case> the
 * value of the text's first line starting "case " (so real fixtures pass the stem check), else
 * "<dir>/fz.manifest". The value is taken up to the end of its line, and only when it is 1..95
 * bytes holding no '/' and no NUL; the stem check itself stays the reader's. */
static inline void fuzz_manifest_path(const char *dir, const char *t, size_t n, char *path, size_t size) {
  const char *stem = "fz";
  size_t slen = 2;
  for (size_t i = 0; i + 5 <= n; i++) {
    if ((i == 0 || t[i - 1] == '\n') && !memcmp(t + i, "case ", 5)) {
      size_t b = i + 5, e = b;
      while (e < n && t[e] != '\n') e++;
      if (e > b && e - b < 96 && !memchr(t + b, '/', e - b) && !memchr(t + b, '\0', e - b)) {
        stem = t + b;
        slen = e - b;
      }
      break;
    }
  }
  snprintf(path, size, "%s/%.*s.manifest", dir, (int)slen, stem);
}

#endif
