/* runtime/fk_cpu.c: CPU feature detection, once.
 * CHECK: keep the feature list in sync with gen/header.lua (FEATURES). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fk_internal.h"

#if defined(__x86_64__)
#include <cpuid.h>

static uint64_t xgetbv0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static uint64_t detect(void) {
  uint32_t a, b, c, d, max = __get_cpuid_max(0, NULL);
  uint64_t f = 0;
  if (max < 7) return 0;
  __cpuid_count(1, 0, a, b, c, d);
  int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1;
  if (!osxsave) return 0;
  uint64_t xcr0 = xgetbv0();
  int ymm_ok = (xcr0 & 0x6) == 0x6;          /* SSE and AVX state enabled by the OS */
  int zmm_ok = ymm_ok && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
  __cpuid_count(7, 0, a, b, c, d);
  uint32_t leaf7_eax = a;
  if (ymm_ok && ((b >> 5) & 1)) f |= FK_CPU_AVX2;
  if (ymm_ok && fma) f |= FK_CPU_FMA;
  if (zmm_ok && ((b >> 16) & 1)) f |= FK_CPU_AVX512F;
  if (zmm_ok && ((b >> 30) & 1)) f |= FK_CPU_AVX512BW;
  if (zmm_ok && ((b >> 31) & 1)) f |= FK_CPU_AVX512VL;
  if (leaf7_eax >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    if (zmm_ok && ((a >> 5) & 1)) f |= FK_CPU_AVX512BF16;
  }
  return f;
}
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>

static uint64_t detect(void) {
  uint64_t f = 0;
  unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  if (hw & (1ul << 1)) f |= FK_CPU_ASIMD;   /* HWCAP_ASIMD */
  if (hw2 & (1ul << 14)) f |= FK_CPU_BF16;  /* HWCAP2_BF16 */
  return f;
}
#else
#error "flashkern: no CPU feature detection for this platform"
#endif

static const struct { uint64_t bit; const char *name; } feature_names[] = {
  { FK_CPU_AVX2, "avx2" }, { FK_CPU_FMA, "fma" }, { FK_CPU_AVX512F, "avx512f" },
  { FK_CPU_AVX512BW, "avx512bw" }, { FK_CPU_AVX512VL, "avx512vl" },
  { FK_CPU_AVX512BF16, "avx512bf16" }, { FK_CPU_ASIMD, "asimd" }, { FK_CPU_BF16, "bf16" },
};

const char *fk_cpu_feature_names(uint64_t f, char *buf, size_t len) {
  size_t used = 0;
  if (!buf || !len) return buf; /* nothing to write into */
  buf[0] = 0;
  for (size_t i = 0; i < sizeof feature_names / sizeof feature_names[0] && used < len; i++) {
    if (!(f & feature_names[i].bit)) continue;
    int n = snprintf(buf + used, len - used, "%s%s", used ? " " : "", feature_names[i].name);
    if (n > 0) used += (size_t)n;
  }
  return buf;
}

uint64_t fk_cpu_features(void) {
  /* A benign race: every thread computes the same value. */
  static volatile int done;
  static volatile uint64_t cached;
  if (!done) {
    uint64_t f = detect();
    const char *mask = getenv("FK_CPU_MASK");
    if (mask && *mask) f &= strtoull(mask, NULL, 16);
    cached = f;
    done = 1;
  }
  return cached;
}
