/* bench/fkb_common.c: memory, row split and bf16 helpers shared by the driver and contenders. */
#define _DEFAULT_SOURCE /* madvise, MAP_ANONYMOUS */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fkb.h"

size_t fkb_copy_count(size_t bytes) {
  size_t n = FKB_ROTATE_BYTES / bytes + 1;
  return n < 2 ? 2 : n;
}

size_t fkb_copy_stride(size_t bytes) { return (bytes + 4095) & ~(size_t)4095; }

void *fkb_region_alloc(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without THP every contender sees 4 KiB pages */
#endif
  return p;
}

void fkb_region_free(void *p, size_t bytes) {
  if (p) munmap(p, bytes);
}

void *fkb_alloc(size_t bytes) {
  size_t rounded = (bytes + 63) & ~(size_t)63;
  void *p = aligned_alloc(64, rounded ? rounded : 64);
  if (p) memset(p, 0, rounded ? rounded : 64);
  return p;
}

void fkb_free(void *p) { free(p); }

void fkb_rows(int64_t n, int tid, int nthreads, int64_t *begin, int64_t *end) {
  /* multiples of 64 rows: whole groups of flashkern's packed (4) and blocked (64) layouts */
  int64_t groups = (n + 63) / 64;
  int64_t b = groups * tid / nthreads * 64, e = groups * (tid + 1) / nthreads * 64;
  *begin = b < n ? b : n;
  *end = e < n ? e : n;
}

float fkb_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t fkb_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
