/* tests/rne_exhaustive/driver.c: every f32 bit pattern (2^32) through each rnecheck stamp of this
 * ISA, bf16 out (y) and widened f32 out (z), against the contract's RNE (tests/contract/rne.c:
 * fkc_rne_bits). Built and run by tests/rne_exhaustive.sh, natively and under qemu-aarch64.
 *
 *   driver [--variant NAME] [--threads T] [--stride S]
 *
 * --stride S checks every S-th chunk of 64 Ki patterns, and every chunk whose exponent is 0
 * (zeros, subnormals), 0xfe (rounding up into infinity) or 0xff (infinities, NaNs); every chunk
 * holds ties of both parities. S = 1 (the default) is every pattern.
 * Before the sweep, a self-check: the comparison run against the contract perturbed
 * (FKC_RNE_BIAS: ties away from zero; FKC_NAN_PAYLOAD: the NaN's payload kept) over the chunks
 * holding ties and NaNs must find mismatches in every stamp, so the sweep can fail.
 * Exit 0 when every stamp agrees on every pattern. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/contract.h"
#include "fk_leaves.h"

typedef void (*fn_t)(const fk_rnecheck_all_args *);
#define ROW(id, variant, tier, symbol, features) { #id, #variant, #symbol, (void (*)(void))symbol },
static const struct { const char *id, *variant, *name; void (*fn)(void); } all[] = { FK_STAMPS_HOST(ROW) };

enum { CHUNK = 1 << 16, NCHUNK = 1 << 16, MAXSTAMP = 8 };

typedef struct {
  int nfn;
  fn_t fn[MAXSTAMP];
  fkc_perturb p;
  uint32_t first, step; /* chunks first, first + step, ... */
  uint32_t stride;      /* of those, the multiples of stride and the special exponents */
  uint64_t bad[MAXSTAMP], checked;
  uint32_t bad_x[MAXSTAMP], bad_y[MAXSTAMP], bad_z[MAXSTAMP]; /* each stamp's first mismatch */
  int has_bad[MAXSTAMP];
} job;

typedef struct { float x[CHUNK], z[CHUNK]; uint32_t want32[CHUNK]; uint16_t y[CHUNK], want[CHUNK]; } buffers;

/* chunk c (the patterns c << 16 | i) through every stamp of the job: the contract's result once,
 * each stamp's compared by memcmp, element by element only where they differ */
static void check_chunk(job *j, uint32_t c, buffers *b) {
  for (uint32_t i = 0; i < CHUNK; i++) {
    uint32_t u = (c << 16) | i;
    memcpy(&b->x[i], &u, 4);
    b->want[i] = fkc_rne_bits(u, j->p);
    b->want32[i] = (uint32_t)b->want[i] << 16;
  }
  for (int s = 0; s < j->nfn; s++) {
    memset(b->y, 0xa5, sizeof b->y);
    memset(b->z, 0xa5, sizeof b->z);
    fk_rnecheck_all_args a = { b->x, b->y, b->z, CHUNK };
    j->fn[s](&a);
    if (!memcmp(b->y, b->want, sizeof b->y) && !memcmp(b->z, b->want32, sizeof b->z)) continue;
    for (uint32_t i = 0; i < CHUNK; i++) {
      uint32_t zb;
      memcpy(&zb, &b->z[i], 4);
      if (b->y[i] == b->want[i] && zb == b->want32[i]) continue;
      if (!j->has_bad[s]) { j->has_bad[s] = 1; j->bad_x[s] = (c << 16) | i; j->bad_y[s] = b->y[i]; j->bad_z[s] = zb; }
      j->bad[s]++;
    }
  }
  j->checked += CHUNK;
}

static void *run(void *arg) {
  job *j = arg;
  buffers *b = malloc(sizeof *b);
  if (!b) { fprintf(stderr, "rne_exhaustive: out of memory\n"); exit(2); }
  for (uint64_t c = j->first; c < NCHUNK; c += j->step) {
    uint32_t e = (uint32_t)(c >> 7) & 0xff; /* chunk c: sign, exponent, the mantissa's top 7 bits */
    if (c % j->stride == 0 || e == 0 || e >= 0xfe) check_chunk(j, (uint32_t)c, b);
  }
  free(b);
  return NULL;
}

/* the chunks the self-check uses: ties and odd/even neighbours of 1.0 and of a denormal, NaNs */
static const uint32_t probe_chunks[] = { 0x3f80, 0x0000, 0x7fc0, 0xffa0, 0x7f80 };

int main(int argc, char **argv) {
  const char *only = NULL;
  int threads = 2;
  uint32_t stride = 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--variant") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--stride") && i + 1 < argc) stride = (uint32_t)strtoul(argv[++i], NULL, 0);
    else { fprintf(stderr, "rne_exhaustive: unknown argument '%s' (--variant NAME, --threads T, --stride S)\n", argv[i]); return 2; }
  }
  if (threads < 1 || threads > 64 || stride < 1) { fprintf(stderr, "rne_exhaustive: bad --threads or --stride\n"); return 2; }
  int failed = 0, nfn = 0;
  fn_t fns[MAXSTAMP];
  const char *names[MAXSTAMP];
  for (size_t s = 0; s < sizeof all / sizeof all[0]; s++) {
    if (strcmp(all[s].id, "rnecheck_all") != 0 || (only && strcmp(all[s].variant, only) != 0)) continue;
    if (nfn == MAXSTAMP) { fprintf(stderr, "rne_exhaustive: more than %d stamps\n", MAXSTAMP); return 2; }
    fns[nfn] = (fn_t)all[s].fn;
    names[nfn++] = all[s].name;
  }
  int stamps = nfn;
  buffers *b = malloc(sizeof *b);
  if (!b) return 2;
  /* self-check: the perturbed contracts must be told apart by every stamp's comparison */
  static const struct { fkc_perturb p; const char *what; } perturb[] = {
    { FKC_RNE_BIAS, "round half up (FKC_RNE_BIAS)" }, { FKC_NAN_PAYLOAD, "NaN payload kept (FKC_NAN_PAYLOAD)" } };
  for (int k = 0; k < 2; k++) {
    job j = { .nfn = nfn, .p = perturb[k].p, .first = 0, .step = 1, .stride = 1 };
    memcpy(j.fn, fns, sizeof fns);
    for (size_t c = 0; c < sizeof probe_chunks / sizeof probe_chunks[0]; c++) check_chunk(&j, probe_chunks[c], b);
    for (int s = 0; s < nfn; s++) {
      if (j.bad[s] == 0) {
        printf("FAIL %s: the check does not tell it from a contract with %s\n", names[s], perturb[k].what);
        failed = 1;
      } else {
        printf("%s: perturbed contract (%s) caught: %llu mismatches\n", names[s], perturb[k].what,
               (unsigned long long)j.bad[s]);
      }
    }
  }
  free(b);
  /* the sweep: every stamp on every chunk the threads take in turn */
  job jobs[64];
  pthread_t tid[64];
  for (int t = 0; t < threads && nfn; t++) {
    jobs[t] = (job){ .nfn = nfn, .p = FKC_EXACT, .first = (uint32_t)t, .step = (uint32_t)threads, .stride = stride };
    memcpy(jobs[t].fn, fns, sizeof fns);
    if (pthread_create(&tid[t], NULL, run, &jobs[t]) != 0) { fprintf(stderr, "rne_exhaustive: pthread_create\n"); return 2; }
  }
  for (int t = 0; t < threads && nfn; t++) pthread_join(tid[t], NULL);
  for (int s = 0; s < nfn; s++) {
    uint64_t bad = 0, checked = 0;
    for (int t = 0; t < threads; t++) {
      bad += jobs[t].bad[s];
      checked += jobs[t].checked;
      if (jobs[t].has_bad[s])
        printf("FAIL %s: x = 0x%08x gives y = 0x%04x, z = 0x%08x; the contract: 0x%04x\n", names[s], jobs[t].bad_x[s],
               jobs[t].bad_y[s], jobs[t].bad_z[s], fkc_rne_bits(jobs[t].bad_x[s], FKC_EXACT));
    }
    printf("%s: %llu f32 patterns%s, %llu mismatching\n", names[s], (unsigned long long)checked,
           checked == (uint64_t)1 << 32 ? " (all of them)" : " (1 chunk in --stride, every special exponent)",
           (unsigned long long)bad);
    if (bad) failed = 1;
  }
  if (stamps == 0) { printf("FAIL no rnecheck stamp%s%s in this build\n", only ? " of variant " : "", only ? only : ""); return 1; }
  return failed;
}
