/* runtime/fk_cpu.c: CPU feature detection and FK_CPU_MASK, read once; why a feature is missing.
 * CHECK: keep the feature list in sync with gen/header.lua (FEATURES). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fk_internal.h"

/* The hwstream trait (gen/header.lua): AMD family 19h, whose hardware prefetcher alone streams a
 * lone activation row's q8 pass at the bound where a software prefetch of every line holds it near
 * 0.75 of it; on Intel cores the software prefetch is the faster (bench/results/quant-fast-analysis.md:
 * measured on Zen 4 and on an Intel Xeon). Family: CPUID leaf 1 EAX, base family plus the extended
 * one when the base is 0xf. */
int fk_cpu_hwstream(const char vendor[12], uint32_t leaf1_eax) {
  uint32_t base = (leaf1_eax >> 8) & 0xf, family = base == 0xf ? base + ((leaf1_eax >> 20) & 0xff) : base;
  return memcmp(vendor, "AuthenticAMD", 12) == 0 && family == 0x19;
}

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
  char vendor[12];
  __cpuid(0, a, b, c, d);
  memcpy(vendor, &b, 4), memcpy(vendor + 4, &d, 4), memcpy(vendor + 8, &c, 4);
  __cpuid_count(1, 0, a, b, c, d);
  if (fk_cpu_hwstream(vendor, a)) f |= FK_CPU_HWSTREAM;
  int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
  if (!osxsave) return 0;
  uint64_t xcr0 = xgetbv0();
  int ymm_ok = (xcr0 & 0x6) == 0x6;          /* SSE and AVX state enabled by the OS */
  int zmm_ok = ymm_ok && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
  __cpuid_count(7, 0, a, b, c, d);
  uint32_t leaf7_eax = a;
  if (ymm_ok && ((b >> 5) & 1)) f |= FK_CPU_AVX2;
  if (ymm_ok && fma) f |= FK_CPU_FMA;
  if (ymm_ok && f16c) f |= FK_CPU_F16C;
  if (zmm_ok && ((b >> 16) & 1)) f |= FK_CPU_AVX512F;
  if (zmm_ok && ((b >> 30) & 1)) f |= FK_CPU_AVX512BW;
  if (zmm_ok && ((b >> 31) & 1)) f |= FK_CPU_AVX512VL;
  if (zmm_ok && ((c >> 11) & 1)) f |= FK_CPU_AVX512VNNI;
  if (leaf7_eax >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    if (zmm_ok && ((a >> 5) & 1)) f |= FK_CPU_AVX512BF16;
    if (ymm_ok && ((a >> 4) & 1)) f |= FK_CPU_AVXVNNI; /* AVX-VNNI: the VEX VPDPBUSD */
  }
  return f;
}
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>

static uint64_t detect(void) {
  uint64_t f = 0;
  unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  if (hw & (1ul << 1)) f |= FK_CPU_ASIMD;   /* HWCAP_ASIMD */
  if (hw & (1ul << 20)) f |= FK_CPU_DOTPROD; /* HWCAP_ASIMDDP */
  if (hw2 & (1ul << 14)) f |= FK_CPU_BF16;  /* HWCAP2_BF16 */
  if (hw2 & (1ul << 13)) f |= FK_CPU_I8MM;  /* HWCAP2_I8MM */
  return f;
}
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>

/* macOS on arm64: every core has ASIMD; FEAT_DotProd (every Apple core macOS runs on), FEAT_BF16 and FEAT_I8MM (M2 and
 * later) are reported by sysctl. Written to Apple's documented names, not compiled here (no macOS SDK on the build
 * machine: README). */
static int sysctl_on(const char *name) {
  int v = 0;
  size_t n = sizeof v;
  return sysctlbyname(name, &v, &n, NULL, 0) == 0 && v != 0;
}

static uint64_t detect(void) {
  uint64_t f = FK_CPU_ASIMD;
  if (sysctl_on("hw.optional.arm.FEAT_DotProd")) f |= FK_CPU_DOTPROD;
  if (sysctl_on("hw.optional.arm.FEAT_BF16")) f |= FK_CPU_BF16;
  if (sysctl_on("hw.optional.arm.FEAT_I8MM")) f |= FK_CPU_I8MM;
  return f;
}
#else
#error "flashkern: no CPU feature detection for this platform"
#endif

static const struct { uint64_t bit; const char *name; } feature_names[] = {
  { FK_CPU_AVX2, "avx2" }, { FK_CPU_FMA, "fma" }, { FK_CPU_AVX512F, "avx512f" },
  { FK_CPU_AVX512BW, "avx512bw" }, { FK_CPU_AVX512VL, "avx512vl" },
  { FK_CPU_AVX512BF16, "avx512bf16" }, { FK_CPU_AVX512VNNI, "avx512vnni" }, { FK_CPU_HWSTREAM, "hwstream" },
  { FK_CPU_AVXVNNI, "avxvnni" }, { FK_CPU_F16C, "f16c" }, { FK_CPU_ASIMD, "asimd" },
  { FK_CPU_BF16, "bf16" }, { FK_CPU_I8MM, "i8mm" }, { FK_CPU_DOTPROD, "dotprod" },
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

/* ---- FK_CPU_MASK, read once with the features ------------------------------------------------ */

static struct {
  uint64_t detected;  /* what the CPU and the OS offer */
  uint64_t mask;      /* FK_CPU_MASK's bits; all ones when unset */
  uint64_t features;  /* detected & mask; 0 when the mask is bad */
  const char *bad;    /* why FK_CPU_MASK cannot be read, or NULL */
  int set;            /* FK_CPU_MASK is in the environment */
  char text[40];      /* its value as given (cut to fit, unprintable bytes as '?'), for messages */
} cpu;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static int hex_digit(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

/* 1 to 16 significant hex digits (leading zeros free), optionally after 0x, nothing else: no sign,
 * no space (strtoull took "-1" as every bit, "zz" as 0 and "3 " as 3). NULL, or why not. */
static const char *parse_mask(const char *s, uint64_t *out) {
  if (!*s) return "empty";
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s += 2;
    if (!*s) return "no hex digit after 0x";
  }
  if (hex_digit(*s) < 0) return "not a hex number";
  uint64_t v = 0;
  for (; *s; s++) {
    int d = hex_digit(*s);
    if (d < 0) return "trailing characters after the number";
    if (v >> 60) return "more than 64 bits";
    v = v << 4 | (uint64_t)d;
  }
  *out = v;
  return NULL;
}

static void read_cpu(void) {
  cpu.detected = detect();
  cpu.mask = ~(uint64_t)0;
  const char *env = getenv("FK_CPU_MASK");
  if (env) {
    size_t i = 0, len = strlen(env);
    for (; env[i] && i < sizeof cpu.text - 4; i++) cpu.text[i] = env[i] >= 0x20 && env[i] < 0x7f ? env[i] : '?';
    if (i < len) memcpy(cpu.text + i, "...", 3), i += 3;
    cpu.text[i] = 0;
    cpu.set = 1;
    cpu.bad = parse_mask(env, &cpu.mask);
  }
  cpu.features = cpu.bad ? 0 : cpu.detected & cpu.mask;
}

uint64_t fk_cpu_features(void) {
  pthread_once(&cpu_once, read_cpu);
  return cpu.features;
}

/* ---- the floating-point environment (docs/design.md, "Floating-point environment") ------------- */

/* A control bit the leaves need in one state, and what the other state does to them. */
typedef struct fp_bit {
  uint64_t mask, want;
  const char *what;
} fp_bit;

#if defined(__x86_64__)
#define FP_REG "MXCSR"
#define FP_DEFAULT "0x1f80"
static uint64_t fp_read(void) { return __builtin_ia32_stmxcsr(); }
static const fp_bit fp_bits[] = {
  { 1u << 15, 0, "FTZ is set (results that would be subnormal become zero)" },
  { 1u << 6, 0, "DAZ is set (subnormal inputs read as zero)" },
  { 3u << 13, 0, "RC is not round-to-nearest-even" },
  { 1u << 7, 1u << 7, "the invalid-operation exception is unmasked (IM clear)" },
  { 1u << 8, 1u << 8, "the denormal-operand exception is unmasked (DM clear)" },
  { 1u << 9, 1u << 9, "the divide-by-zero exception is unmasked (ZM clear)" },
  { 1u << 10, 1u << 10, "the overflow exception is unmasked (OM clear)" },
  { 1u << 11, 1u << 11, "the underflow exception is unmasked (UM clear)" },
  { 1u << 12, 1u << 12, "the precision exception is unmasked (PM clear)" },
};
#elif defined(__aarch64__)
#define FP_REG "FPCR"
#define FP_DEFAULT "0"
static uint64_t fp_read(void) {
  uint64_t v;
  __asm__ volatile("mrs %0, fpcr" : "=r"(v));
  return v;
}
static const fp_bit fp_bits[] = {
  { 1u << 24, 0, "FZ is set (subnormals flushed to zero)" },
  { 1u << 25, 0, "DN is set (every NaN becomes the default NaN)" },
  { 3u << 22, 0, "RMode is not round-to-nearest-even" },
  { 1u << 1, 0, "AH is set (the alternate floating-point behaviour)" },
  { 1u << 0, 0, "FIZ is set (subnormal inputs flushed to zero)" },
  { 1u << 2, 0, "NEP is set" },
  { 1u << 8, 0, "IOE is set (the invalid-operation exception traps)" },
  { 1u << 9, 0, "DZE is set (the divide-by-zero exception traps)" },
  { 1u << 10, 0, "OFE is set (the overflow exception traps)" },
  { 1u << 11, 0, "UFE is set (the underflow exception traps)" },
  { 1u << 12, 0, "IXE is set (the inexact exception traps)" },
  { 1u << 15, 0, "IDE is set (the input-denormal exception traps)" },
};
#endif

fk_status fk_fpenv_check(const char *who, fk_error *err) {
#if defined(FP_REG)
  uint64_t v = fp_read();
  char why[192];
  size_t used = 0;
  why[0] = 0;
  for (size_t i = 0; i < sizeof fp_bits / sizeof fp_bits[0]; i++) {
    if ((v & fp_bits[i].mask) == fp_bits[i].want) continue;
    int n = snprintf(why + used, sizeof why - used, "%s%s", used ? "; " : "", fp_bits[i].what);
    if (n < 0 || (size_t)n >= sizeof why - used) break;
    used += (size_t)n;
  }
  FK_RETURN_ERROR_IF(used, err, FK_EUNSUPPORTED,
                     "%s: this thread's %s = 0x%llx: %s; the leaves need the Linux default %s = %s (the team inherits "
                     "it from this thread)", who, FP_REG, (unsigned long long)v, why, FP_REG, FP_DEFAULT);
#else
  (void)who, (void)err;
#endif
  return FK_OK;
}

fk_status fk_cpu_mask_check(const char *who, fk_error *err) {
  pthread_once(&cpu_once, read_cpu);
  FK_RETURN_ERROR_IF(cpu.bad, err, FK_EINVAL,
                     "%s: FK_CPU_MASK=\"%s\": %s (the FK_CPU_* bits to keep, in hex: e.g. FK_CPU_MASK=3; unset it to "
                     "hide nothing)", who, cpu.text, cpu.bad);
  return FK_OK;
}

/* Appends to buf (used bytes in *used) the names of the features in f, then the reason. */
static void append_group(char *buf, size_t len, size_t *used, uint64_t f, const char *reason) {
  if (!f || *used >= len) return;
  char names[128];
  fk_cpu_feature_names(f, names, sizeof names);
  int n = snprintf(buf + *used, len - *used, "%s%s %s", *used ? "; " : "", names, reason);
  if (n > 0) *used += (size_t)n;
}

const char *fk_cpu_missing(uint64_t need, uint64_t features, uint64_t detected, int mask_set, uint64_t mask,
                           const char *mask_text, const char *excluded_by, char *buf, size_t len) {
  uint64_t miss = need & ~features, lacks = miss & ~detected;
  uint64_t hidden = mask_set ? miss & detected & ~mask : 0, excluded = miss & ~lacks & ~hidden;
  char hid[64];
  snprintf(hid, sizeof hid, "hidden by FK_CPU_MASK=%s", mask_text ? mask_text : "?");
  size_t used = 0;
  if (!buf || !len) return buf;
  buf[0] = 0;
  if (lacks) {
    char names[128];
    fk_cpu_feature_names(lacks, names, sizeof names);
    int n = snprintf(buf, len, "this CPU lacks %s", names);
    if (n > 0) used = (size_t)n;
  }
  append_group(buf, len, &used, hidden, hid);
  append_group(buf, len, &used, excluded, excluded_by);
  return buf;
}

const char *fk_cpu_explain(uint64_t need, uint64_t features, const char *excluded_by, char *buf, size_t len) {
  pthread_once(&cpu_once, read_cpu);
  return fk_cpu_missing(need, features, cpu.detected, cpu.set, cpu.mask, cpu.text, excluded_by, buf, len);
}
