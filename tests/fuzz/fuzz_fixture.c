/* fuzz_fixture.c: libFuzzer target for the fixture payload reader (tests/fixture/fkfix.c:
 * fkfix_parse_manifest, then fkfix_load_payload per tensor: the zstd frame rules, the size
 * checks against the manifest's span and dtype, the XXH3-128 digest), cross-checked against
 * fkfix_load on the same bytes written as files.
 *
 * Input framing (all lengths u32 little-endian, each clipped to the bytes that remain):
 *   u32 mlen, mlen bytes of manifest text,
 *   then for tensor i = 0, 1, ... of the manifest, in manifest order: u32 plen, plen bytes of
 *   payload (the bytes of fixtures/<leaf>/<case>.<tensor>.zst); a payload the input no longer
 *   holds is empty.
 * Every part is copied into a buffer of exactly its size (no terminator). The manifest is parsed
 * under "<dir>/<case>.manifest" as in fuzz_manifest.c, <dir> a private temporary directory.
 * tests/fuzz/gen_seeds.c writes real fixtures in this framing.
 *
 * Size cap (the harness's, not the reader's): the reader accepts spans up to FKFIX_PAYLOAD_MAX
 * (1 GiB) and refuses larger or overflowing shapes at parse time; it allocates a tensor's buffer
 * only once a frame's recorded content size equals the span. A frame header can claim 1 GiB in a
 * few bytes, so the harness skips tensors above FUZZ_TENSOR_CAP (and stops at FUZZ_TOTAL_CAP) to
 * keep one execution within libFuzzer's memory limit. Such a tensor is still parsed and checked
 * by the manifest rules.
 *
 * Checked for every input: no crash, leak or undefined behaviour; each payload either loads (its
 * data then has the manifest's size and digest, recomputed here) or fails with a non-empty message
 * naming the tensor, and leaves the tensor without data. Then (no tensor skipped) the manifest and
 * payloads are written as <dir>/<case>.manifest and <dir>/<case>.<tensor>.zst and fkfix_load must
 * agree: success with the same bytes, or the same message as the first refusal in memory. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "fixture/fkfix.h"
#include "fuzz_common.h"

#define FUZZ_TENSOR_CAP ((size_t)16 << 20)
#define FUZZ_TOTAL_CAP ((size_t)64 << 20)

static char g_dir[64];

static void remove_dir(void) {
  if (g_dir[0]) rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(g_dir, sizeof g_dir, "%s/fkfuzz_fixture_XXXXXX", base);
  FUZZ_REQUIRE(mkdtemp(g_dir), "cannot make a temporary directory in %s", base);
  atexit(remove_dir);
  return 0;
}

/* Takes the next part: u32 length, then that many bytes (fewer when the input ends). */
static const uint8_t *take(const uint8_t **p, size_t *left, size_t *len) {
  uint32_t n = 0;
  for (int i = 0; i < 4; i++) {
    if (*left) {
      n |= (uint32_t)**p << (8 * i);
      (*p)++;
      (*left)--;
    }
  }
  *len = n < *left ? n : *left;
  const uint8_t *at = *p;
  *p += *len;
  *left -= *len;
  return at;
}

static void put_file(const char *path, const void *d, size_t n) {
  FILE *fp = fopen(path, "wb");
  FUZZ_REQUIRE(fp, "cannot write %s", path);
  FUZZ_REQUIRE((n == 0 || fwrite(d, 1, n, fp) == n) && fclose(fp) == 0, "cannot write %s", path);
}

typedef struct {
  const uint8_t *at;
  size_t n;
} part;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *p = data;
  size_t left = size, mlen;
  const uint8_t *m = take(&p, &left, &mlen);
  char *text = fuzz_exact_copy(m, mlen);
  char path[256];
  fuzz_manifest_path(g_dir, text, mlen, path, sizeof path);

  fkfix f;
  char err[1024], first[1024] = "";
  int rc = fkfix_parse_manifest(path, text, mlen, &f, err, sizeof err);
  FUZZ_SAY("manifest %s: %s", path, rc ? err : "ok");
  if (rc) {
    FUZZ_REQUIRE(rc == -1 && err[0], "manifest refused without a message");
    memcpy(first, err, sizeof first);
  }

  part *parts = f.ntensors ? calloc((size_t)f.ntensors, sizeof *parts) : NULL;
  FUZZ_REQUIRE(!f.ntensors || parts, "out of memory");
  size_t total = 0;
  int skipped = 0, failed = rc != 0;
  for (int i = 0; i < f.ntensors; i++) {
    fkfix_tensor *t = &f.tensors[i];
    parts[i].at = take(&p, &left, &parts[i].n);
    if (t->nbytes > FUZZ_TENSOR_CAP || total + t->nbytes > FUZZ_TOTAL_CAP) {
      FUZZ_SAY("  tensor '%s': %zu bytes, above the harness's cap: skipped", t->name, t->nbytes);
      skipped = 1;
      continue;
    }
    char *zst = fuzz_exact_copy(parts[i].at, parts[i].n);
    memset(err, 0x5a, sizeof err);
    int r = fkfix_load_payload(&f, i, zst, parts[i].n, err, sizeof err);
    free(zst);
    FUZZ_SAY("  tensor '%s' (%zu payload bytes): %s", t->name, parts[i].n, r ? err : "ok");
    if (r) {
      FUZZ_REQUIRE(r == -1, "rc %d", r);
      FUZZ_REQUIRE(memchr(err, '\0', sizeof err) && err[0], "payload refused without a message");
      char tag[64];
      snprintf(tag, sizeof tag, "tensor '%s'", t->name);
      FUZZ_REQUIRE(strstr(err, tag), "message does not name %s: %s", tag, err);
      FUZZ_REQUIRE(t->data == NULL, "tensor '%s' kept data after a refusal", t->name);
      if (!failed) memcpy(first, err, sizeof first);
      failed = 1;
      continue;
    }
    FUZZ_REQUIRE(t->data != NULL, "tensor '%s' loaded without data", t->name);
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits(t->data, t->nbytes));
    char hex[33];
    for (int k = 0; k < 16; k++) snprintf(hex + 2 * k, 3, "%02x", (unsigned)canon.digest[k]);
    FUZZ_REQUIRE(!strcmp(hex, t->xxh3), "tensor '%s' loaded with digest %s, manifest %s", t->name, hex, t->xxh3);
    total += t->nbytes;
    /* a second payload for a loaded tensor is refused and changes nothing */
    void *before = t->data;
    FUZZ_REQUIRE(fkfix_load_payload(&f, i, parts[i].at, 0, err, sizeof err) == -1 && strstr(err, "already loaded") &&
                     t->data == before,
                 "tensor '%s' reloaded: %s", t->name, err);
  }
  if (!rc) {
    FUZZ_REQUIRE(fkfix_load_payload(&f, f.ntensors, "", 0, err, sizeof err) == -1 && err[0], "index past the end");
    FUZZ_REQUIRE(fkfix_load_payload(&f, -1, "", 0, NULL, 0) == -1, "negative index");
  }

  /* the same bytes as files: fkfix_load must give the same verdict and message */
  if (!skipped) {
    char fp[512];
    put_file(path, text, mlen);
    for (int i = 0; i < f.ntensors; i++) {
      size_t plen = strlen(path) - strlen(".manifest");
      snprintf(fp, sizeof fp, "%.*s.%s.zst", (int)plen, path, f.tensors[i].name);
      put_file(fp, parts[i].at, parts[i].n);
    }
    fkfix g;
    char gerr[1024];
    int grc = fkfix_load(path, &g, gerr, sizeof gerr);
    FUZZ_SAY("fkfix_load %s: %s", path, grc ? gerr : "ok");
    FUZZ_REQUIRE(grc == (failed ? -1 : 0), "fkfix_load %s, in memory %s", grc ? gerr : "ok", failed ? first : "ok");
    if (grc) {
      FUZZ_REQUIRE(!strcmp(gerr, first), "fkfix_load says\n  %s\nin memory\n  %s", gerr, first);
    } else {
      FUZZ_REQUIRE(g.ntensors == f.ntensors, "tensor counts");
      for (int i = 0; i < g.ntensors; i++)
        FUZZ_REQUIRE(g.tensors[i].nbytes == f.tensors[i].nbytes &&
                         !memcmp(g.tensors[i].data, f.tensors[i].data, g.tensors[i].nbytes),
                     "tensor '%s' differs between fkfix_load and memory", g.tensors[i].name);
    }
    fkfix_free(&g);
    for (int i = 0; i < f.ntensors; i++) {
      size_t plen = strlen(path) - strlen(".manifest");
      snprintf(fp, sizeof fp, "%.*s.%s.zst", (int)plen, path, f.tensors[i].name);
      unlink(fp);
    }
    unlink(path);
  }
  free(parts);
  free(text);
  fkfix_free(&f);
  return 0;
}
