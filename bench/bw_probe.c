/* bench/bw_probe.c: the read-bandwidth probe, measured in the same run as the contenders.
 *
 * A streaming read of a > 1 GiB buffer (written once at creation so every page is backed):
 * AVX-512 loads into eight independent accumulators when the CPU has AVX-512F, portable
 * 64-bit loads otherwise. With two team members each reads its contiguous half. The loads
 * are combined by XOR and stored per member, so the compiler cannot drop them. What a
 * memory-bound GEMV can reach is this number; the tables report each contender's GB/s as a
 * fraction of it. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "fkb.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FKB_PROBE_AVX512 1
#endif

struct fkb_probe {
  unsigned char *buf;
  size_t bytes;
  int avx512;
  uint64_t sink[FKB_THREADS_MAX * 8]; /* one cache line per member */
};

#ifdef FKB_PROBE_AVX512
__attribute__((target("avx512f"))) static uint64_t read_avx512(const unsigned char *p, size_t bytes) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (size_t i = 0; i + 512 <= bytes; i += 512) {
    const __m512i *q = (const __m512i *)(const void *)(p + i);
    a0 = _mm512_xor_si512(a0, _mm512_load_si512(q + 0));
    a1 = _mm512_xor_si512(a1, _mm512_load_si512(q + 1));
    a2 = _mm512_xor_si512(a2, _mm512_load_si512(q + 2));
    a3 = _mm512_xor_si512(a3, _mm512_load_si512(q + 3));
    a4 = _mm512_xor_si512(a4, _mm512_load_si512(q + 4));
    a5 = _mm512_xor_si512(a5, _mm512_load_si512(q + 5));
    a6 = _mm512_xor_si512(a6, _mm512_load_si512(q + 6));
    a7 = _mm512_xor_si512(a7, _mm512_load_si512(q + 7));
  }
  a0 = _mm512_xor_si512(_mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3)),
                        _mm512_xor_si512(_mm512_xor_si512(a4, a5), _mm512_xor_si512(a6, a7)));
  return (uint64_t)_mm512_reduce_add_epi64(a0);
}
#endif

static uint64_t read_portable(const unsigned char *p, size_t bytes) {
  uint64_t a[8] = { 0 };
  for (size_t i = 0; i + 64 <= bytes; i += 64)
    for (int j = 0; j < 8; j++) {
      uint64_t v;
      memcpy(&v, p + i + 8 * (size_t)j, sizeof v);
      a[j] ^= v;
    }
  return a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5] ^ a[6] ^ a[7];
}

fkb_probe *fkb_probe_create(size_t bytes) {
  fkb_probe *p = fkb_alloc(sizeof *p);
  if (!p) return NULL;
  p->bytes = bytes & ~(size_t)4095;
  p->buf = fkb_region_alloc(p->bytes);
  if (!p->buf) {
    fkb_free(p);
    return NULL;
  }
  for (size_t i = 0; i < p->bytes; i += 8) {
    uint64_t v = i * 0x9e3779b97f4a7c15u;
    memcpy(p->buf + i, &v, sizeof v);
  }
#ifdef FKB_PROBE_AVX512
  __builtin_cpu_init();
  p->avx512 = __builtin_cpu_supports("avx512f");
#endif
  return p;
}

size_t fkb_probe_bytes(const fkb_probe *p) { return p->bytes; }

const char *fkb_probe_kind(const fkb_probe *p) {
  return p->avx512 ? "AVX-512 loads, 8 accumulators" : "portable 64-bit loads";
}

void fkb_probe_run(void *probe, size_t unused, int tid, int nthreads) {
  (void)unused;
  fkb_probe *p = probe;
  size_t chunks = p->bytes / 4096; /* shares are whole pages */
  size_t b = chunks * (size_t)tid / (size_t)nthreads * 4096, e = chunks * (size_t)(tid + 1) / (size_t)nthreads * 4096;
#ifdef FKB_PROBE_AVX512
  if (p->avx512) {
    p->sink[tid * 8] ^= read_avx512(p->buf + b, e - b);
    return;
  }
#endif
  p->sink[tid * 8] ^= read_portable(p->buf + b, e - b);
}

void fkb_probe_destroy(fkb_probe *p) {
  if (!p) return;
  fkb_region_free(p->buf, p->bytes);
  fkb_free(p);
}

/* One timed pass on 1 or 2 threads (the caller is member 0, a second thread member 1). */
typedef struct { fkb_probe *p; int tid, n; } probe_arg;
static void *probe_member(void *a) {
  probe_arg *x = a;
  fkb_probe_run(x->p, 0, x->tid, x->n);
  return NULL;
}

double fkb_probe_gbs(fkb_probe *p, int threads) {
  pthread_t t;
  probe_arg a[2] = { { p, 0, threads }, { p, 1, threads } };
  double t0 = fkb_now();
  if (threads == 2 && pthread_create(&t, NULL, probe_member, &a[1])) fkb_die("fkb_probe_gbs", "pthread_create");
  probe_member(&a[0]);
  if (threads == 2) pthread_join(t, NULL);
  return (double)fkb_probe_bytes(p) / (fkb_now() - t0) / 1e9;
}
