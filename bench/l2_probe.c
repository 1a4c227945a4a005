/* bench/l2_probe.c: the L2 read+write bandwidth probe of fk_bench_state, measured in the same run
 * as the contenders.
 *
 * Two buffers A and B of the same size (256 KiB each in the bench: together half of this
 * machine's 1 MiB L2, five times its 48 KiB L1d), written once at creation. A pass copies A into
 * B with AVX-512 loads and stores (eight 64-byte registers per step, ordinary write-allocating
 * stores, so B stays in the cache) when the CPU has AVX-512F, with 64-bit loads and stores
 * otherwise. A pass moves 2 x bytes: every byte of A read, every byte of B written; that
 * read + write rate is the denominator of the bench's "of L2 bound" column: what a leaf whose
 * data sit in L2 can reach when it only moves its bytes. */
#include <string.h>

#include "fkb.h"
#include "fkb_state.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define FKB_L2_AVX512 1
#endif

struct fkb_l2_probe {
  unsigned char *a, *b;
  size_t bytes;
  int avx512;
};

#ifdef FKB_L2_AVX512
__attribute__((target("avx512f"))) static void copy_avx512(unsigned char *dst, const unsigned char *src,
                                                             size_t bytes) {
  for (size_t i = 0; i + 512 <= bytes; i += 512) {
    const __m512i *s = (const __m512i *)(const void *)(src + i);
    __m512i *d = (__m512i *)(void *)(dst + i);
    __m512i v0 = _mm512_load_si512(s + 0), v1 = _mm512_load_si512(s + 1), v2 = _mm512_load_si512(s + 2),
            v3 = _mm512_load_si512(s + 3), v4 = _mm512_load_si512(s + 4), v5 = _mm512_load_si512(s + 5),
            v6 = _mm512_load_si512(s + 6), v7 = _mm512_load_si512(s + 7);
    _mm512_store_si512(d + 0, v0);
    _mm512_store_si512(d + 1, v1);
    _mm512_store_si512(d + 2, v2);
    _mm512_store_si512(d + 3, v3);
    _mm512_store_si512(d + 4, v4);
    _mm512_store_si512(d + 5, v5);
    _mm512_store_si512(d + 6, v6);
    _mm512_store_si512(d + 7, v7);
  }
}
#endif

static void copy_portable(unsigned char *dst, const unsigned char *src, size_t bytes) {
  for (size_t i = 0; i + 64 <= bytes; i += 64)
    for (int j = 0; j < 8; j++) {
      uint64_t v;
      memcpy(&v, src + i + 8 * (size_t)j, sizeof v);
      memcpy(dst + i + 8 * (size_t)j, &v, sizeof v);
    }
}

fkb_l2_probe *fkb_l2_probe_create(size_t bytes) {
  fkb_l2_probe *p = fkb_alloc(sizeof *p);
  if (!p) return NULL;
  p->bytes = bytes & ~(size_t)511;
  p->a = fkb_alloc(p->bytes);
  p->b = fkb_alloc(p->bytes);
  if (!p->a || !p->b) {
    fkb_l2_probe_destroy(p);
    return NULL;
  }
  for (size_t i = 0; i < p->bytes; i += 8) {
    uint64_t v = i * 0x9e3779b97f4a7c15u;
    memcpy(p->a + i, &v, sizeof v);
  }
  memset(p->b, 0, p->bytes);
#ifdef FKB_L2_AVX512
  __builtin_cpu_init();
  p->avx512 = __builtin_cpu_supports("avx512f");
#endif
  return p;
}

void fkb_l2_probe_run(fkb_l2_probe *p, int passes) {
  for (int i = 0; i < passes; i++) {
#ifdef FKB_L2_AVX512
    if (p->avx512) copy_avx512(p->b, p->a, p->bytes);
    else
#endif
      copy_portable(p->b, p->a, p->bytes);
    __asm__ __volatile__("" ::: "memory"); /* every pass is a real pass */
  }
}

double fkb_l2_probe_pass_bytes(const fkb_l2_probe *p) { return 2.0 * (double)p->bytes; }

size_t fkb_l2_probe_buffer_bytes(const fkb_l2_probe *p) { return p->bytes; }

const char *fkb_l2_probe_kind(const fkb_l2_probe *p) {
  return p->avx512 ? "AVX-512 copy, 8 zmm loads then 8 zmm stores per 512 bytes"
                   : "portable copy, 64-bit loads and stores";
}

void fkb_l2_probe_destroy(fkb_l2_probe *p) {
  if (!p) return;
  fkb_free(p->a);
  fkb_free(p->b);
  fkb_free(p);
}
