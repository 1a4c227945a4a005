/* tests/api/test_api.c: the host helpers of flashkern.h that are not leaves or plans.
 *
 *   bf16::*     fk_bf16_from_f32 against the contract model's integer RNE (tests/contract/rne.c,
 *               fkc_rne_bits: the oracle) on all 2^32 f32 patterns, scalar and bulk, in four
 *               quarters; fk_f32_from_bf16 on all 2^16 patterns; the bulk forms in place and out
 *               of place over lengths around their block (64), bytes past n untouched; and a
 *               negative control: the same comparison against the round-half-up perturbation
 *               (FKC_RNE_BIAS) must find the ties it rounds the other way.
 *   cpu::*      why a feature is missing (fk_cpu_missing, the rule fk_leaf_resolve and
 *               fk_plan_create word their refusals with) on given CPUs and masks, "this CPU
 *               lacks" included, which a machine that has every feature cannot show end to end;
 *               the hwstream trait from CPUID's vendor and family, and the variant it picks.
 *   version::*  fk_version() and fk_version_number() against the header's FK_VERSION_* lines.
 * Refusals of the bulk forms (NULL, overlap, overflow) are rows of tests/badinput. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "contract/contract.h"
#include "fk_internal.h"

/* ---- bf16 ------------------------------------------------------------------------------------- */

enum { CHUNK = 1 << 16 };

static float f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* Patterns [q << 30, (q + 1) << 30): bulk and scalar against the contract, chunk by chunk. */
static void rne_quarter(uint32_t q) {
  float *src = malloc(CHUNK * sizeof *src);
  uint16_t *dst = malloc(CHUNK * sizeof *dst);
  cr_assert(src && dst);
  uint64_t bad_bulk = 0, bad_scalar = 0, checked = 0;
  for (uint32_t hi = q << 14; hi < (q + 1) << 14; hi++) {
    for (uint32_t lo = 0; lo < CHUNK; lo++) src[lo] = f32_of(hi << 16 | lo);
    fk_error e;
    cr_assert_eq(fk_bf16_from_f32_n(src, dst, CHUNK, &e), FK_OK, "%s", e.message);
    for (uint32_t lo = 0; lo < CHUNK; lo++) {
      uint32_t u = hi << 16 | lo;
      uint16_t want = fkc_rne_bits(u, FKC_EXACT), scalar = fk_bf16_from_f32(src[lo]);
      if (dst[lo] != want && bad_bulk++ == 0)
        cr_log_error("fk_bf16_from_f32_n: 0x%08x -> 0x%04x, contract 0x%04x", u, dst[lo], want);
      if (scalar != want && bad_scalar++ == 0)
        cr_log_error("fk_bf16_from_f32: 0x%08x -> 0x%04x, contract 0x%04x", u, scalar, want);
    }
    checked += CHUNK;
  }
  free(src);
  free(dst);
  cr_assert_eq(checked, (uint64_t)1 << 30);
  cr_assert_eq(bad_bulk + bad_scalar, 0, "quarter %u: %llu bulk, %llu scalar patterns differ from the contract", q,
               (unsigned long long)bad_bulk, (unsigned long long)bad_scalar);
  cr_log_info("quarter %u: all 2^30 patterns equal the contract's RNE, scalar and bulk", q);
}

Test(bf16, rne_exhaustive_q0, .timeout = 300) { rne_quarter(0); }
Test(bf16, rne_exhaustive_q1, .timeout = 300) { rne_quarter(1); }
Test(bf16, rne_exhaustive_q2, .timeout = 300) { rne_quarter(2); }
Test(bf16, rne_exhaustive_q3, .timeout = 300) { rne_quarter(3); }

/* The comparison above can fail: against round-half-up it finds exactly the even ties (low half
 * 0x8000, bit 16 clear, not NaN), and nothing else. */
Test(bf16, negative_control_half_up) {
  uint64_t differ = 0, ties = 0;
  for (uint32_t hi = 0; hi < CHUNK; hi += 257) {
    for (uint32_t lo = 0; lo < CHUNK; lo++) {
      uint32_t u = hi << 16 | lo;
      int tie = lo == 0x8000 && !(hi & 1) && (u & 0x7fffffffu) <= 0x7f800000u;
      ties += (uint64_t)tie;
      if (fk_bf16_from_f32(f32_of(u)) != fkc_rne_bits(u, FKC_RNE_BIAS)) {
        differ++;
        cr_assert(tie, "0x%08x: half-up differs, but it is no even tie", u);
      }
    }
  }
  cr_assert_gt(ties, 0);
  cr_assert_eq(differ, ties, "half-up differs on %llu patterns, %llu even ties", (unsigned long long)differ,
               (unsigned long long)ties);
}

Test(bf16, spot_values) {
  static const struct {
    uint32_t f;
    uint16_t h;
  } v[] = {
    { 0x3f800000, 0x3f80 }, /* 1 */
    { 0x3f808000, 0x3f80 }, /* 1 + 2^-8: a tie, to even (down) */
    { 0x3f818000, 0x3f82 }, /* a tie, to even (up) */
    { 0x3f808001, 0x3f81 }, /* just above the tie */
    { 0x00000001, 0x0000 }, /* the smallest subnormal: rounded, not flushed (it is below half) */
    { 0x00008000, 0x0000 }, /* a subnormal tie, to even */
    { 0x00018000, 0x0002 }, /* a subnormal tie, up to even: x86's VCVTNEPS2BF16 gives 0 */
    { 0x7f7f8000, 0x7f80 }, /* rounds to infinity */
    { 0xff800000, 0xff80 }, /* -inf */
    { 0x7f800001, 0x7fc0 }, /* a signalling NaN: the canonical quiet NaN */
    { 0xffa5a5a5, 0x7fc0 }, /* a negative NaN with payload: the canonical NaN, sign and payload dropped */
    { 0xffc00000, 0x7fc0 }, /* x86's default NaN: the canonical one */
    { 0x80000000, 0x8000 }, /* -0 */
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    cr_assert_eq(fk_bf16_from_f32(f32_of(v[i].f)), v[i].h, "0x%08x", v[i].f);
    cr_assert_eq(fkc_rne_bits(v[i].f, FKC_EXACT), v[i].h, "contract: 0x%08x", v[i].f);
  }
}

Test(bf16, widen_exhaustive) {
  uint16_t *src = malloc(CHUNK * sizeof *src);
  float *dst = malloc(CHUNK * sizeof *dst);
  cr_assert(src && dst);
  for (uint32_t h = 0; h < CHUNK; h++) src[h] = (uint16_t)h;
  fk_error e;
  cr_assert_eq(fk_f32_from_bf16_n(src, dst, CHUNK, &e), FK_OK, "%s", e.message);
  for (uint32_t h = 0; h < CHUNK; h++) {
    uint32_t want = bits_of(fkc_bf16_to_f32((uint16_t)h));
    cr_assert_eq(want, h << 16);
    cr_assert_eq(bits_of(fk_f32_from_bf16((uint16_t)h)), want, "fk_f32_from_bf16(0x%04x)", h);
    cr_assert_eq(bits_of(dst[h]), want, "fk_f32_from_bf16_n: [0x%04x]", h);
  }
  free(src);
  free(dst);
}

/* n values with every class: ties, subnormals, NaNs with payloads, infinities, random bits. */
static void fill_patterns(uint32_t *u, size_t n, uint32_t seed) {
  static const uint32_t special[] = { 0x3f808000, 0x3f818000, 0x00018000, 0x7f7f8000, 0x7f800001, 0xffa5a5a5,
                                      0xff800000, 0x80000000, 0x00000001, 0x7fffffff };
  uint32_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    u[i] = i % 3 == 0 ? special[(s >> 8) % (sizeof special / sizeof special[0])] : s;
  }
}

static const size_t lengths[] = { 1, 2, 3, 31, 63, 64, 65, 127, 128, 129, 1000, 4097 };
enum { NLEN = sizeof lengths / sizeof lengths[0], PAD = 16 };

/* Out of place and in place (dst at src's first byte), the bytes past n untouched. */
Test(bf16, bulk_narrow_in_place) {
  for (int li = 0; li < NLEN; li++) {
    size_t n = lengths[li];
    uint32_t *u = malloc((n + PAD) * 4), *buf = malloc((n + PAD) * 4);
    uint16_t *out = malloc((n + PAD) * 2);
    cr_assert(u && buf && out);
    fill_patterns(u, n + PAD, (uint32_t)n);
    memcpy(buf, u, (n + PAD) * 4);
    memset(out, 0x5a, (n + PAD) * 2);
    fk_error e;
    cr_assert_eq(fk_bf16_from_f32_n((const float *)(void *)u, out, n, &e), FK_OK, "%s", e.message);
    cr_assert_eq(fk_bf16_from_f32_n((const float *)(void *)buf, (uint16_t *)(void *)buf, n, &e), FK_OK, "%s",
                 e.message);
    const unsigned char *inplace = (const unsigned char *)buf;
    for (size_t i = 0; i < n; i++) {
      uint16_t want = fk_bf16_from_f32(f32_of(u[i])), got;
      cr_assert_eq(out[i], want, "n %zu: out[%zu] 0x%04x, scalar 0x%04x", n, i, out[i], want);
      memcpy(&got, inplace + 2 * i, 2);
      cr_assert_eq(got, want, "n %zu in place: [%zu] 0x%04x, scalar 0x%04x", n, i, got, want);
    }
    for (size_t i = n; i < n + PAD; i++) cr_assert_eq(out[i], 0x5a5a, "n %zu: out[%zu] written", n, i);
    /* in place: the bytes from 2n on are the floats' own, untouched */
    cr_assert(memcmp(inplace + 2 * n, (const unsigned char *)u + 2 * n, (n + PAD) * 4 - 2 * n) == 0,
              "n %zu in place: bytes past the bf16 written", n);
    free(u);
    free(buf);
    free(out);
  }
}

Test(bf16, bulk_widen_in_place) {
  for (int li = 0; li < NLEN; li++) {
    size_t n = lengths[li];
    uint32_t *seed = malloc((n + PAD) * 4);
    uint16_t *h = malloc((n + PAD) * 2);
    float *out = malloc((n + PAD) * 4), *buf = malloc((n + PAD) * 4);
    cr_assert(seed && h && out && buf);
    fill_patterns(seed, n + PAD, (uint32_t)n + 7);
    for (size_t i = 0; i < n + PAD; i++) h[i] = (uint16_t)(seed[i] >> 16 ^ seed[i]);
    memset(buf, 0xa5, (n + PAD) * 4);
    memcpy(buf, h, n * 2); /* the n bf16 at the start of a buffer of n floats */
    memset(out, 0x5a, (n + PAD) * 4);
    fk_error e;
    cr_assert_eq(fk_f32_from_bf16_n(h, out, n, &e), FK_OK, "%s", e.message);
    cr_assert_eq(fk_f32_from_bf16_n((const uint16_t *)(void *)buf, buf, n, &e), FK_OK, "%s", e.message);
    for (size_t i = 0; i < n; i++) {
      uint32_t want = (uint32_t)h[i] << 16;
      cr_assert_eq(bits_of(out[i]), want, "n %zu: out[%zu] 0x%08x, want 0x%08x", n, i, bits_of(out[i]), want);
      cr_assert_eq(bits_of(buf[i]), want, "n %zu in place: [%zu] 0x%08x, want 0x%08x", n, i, bits_of(buf[i]), want);
    }
    for (size_t i = n; i < n + PAD; i++) {
      cr_assert_eq(bits_of(out[i]), 0x5a5a5a5au, "n %zu: out[%zu] written", n, i);
      cr_assert_eq(bits_of(buf[i]), 0xa5a5a5a5u, "n %zu in place: [%zu] written", n, i);
    }
    free(seed);
    free(h);
    free(out);
    free(buf);
  }
}

/* ---- why a feature is missing ------------------------------------------------------------------ */

static const char *missing(uint64_t need, uint64_t features, uint64_t detected, int mask_set, uint64_t mask,
                           const char *text) {
  static char buf[256];
  return fk_cpu_missing(need, features, detected, mask_set, mask, text, "forbidden by desc.forbid_features", buf,
                        sizeof buf);
}

Test(cpu, each_reason) {
  const uint64_t A = FK_CPU_AVX2, F = FK_CPU_FMA, X = FK_CPU_AVX512F;
  cr_assert_str_eq(missing(A | F, A, A, 0, 0, NULL), "this CPU lacks fma");
  cr_assert_str_eq(missing(A | F, A, A | F | X, 1, A, "1"), "fma hidden by FK_CPU_MASK=1");
  cr_assert_str_eq(missing(A | F, A, A | F | X, 0, 0, NULL), "fma forbidden by desc.forbid_features");
  /* all three at once, each feature under its own reason, in that order */
  cr_assert_str_eq(missing(A | F | X, 0, A | F, 1, A, "0x1"),
                   "this CPU lacks avx512f; fma hidden by FK_CPU_MASK=0x1; avx2 forbidden by desc.forbid_features");
  /* a mask that hides what the CPU lacks anyway: the CPU is the reason */
  cr_assert_str_eq(missing(A | X, A, A, 1, A, "1"), "this CPU lacks avx512f");
  /* nothing missing: empty */
  cr_assert_str_eq(missing(A | F, A | F | X, A | F | X, 0, 0, NULL), "");
}

Test(cpu, short_buffer) {
  char buf[12];
  memset(buf, 'x', sizeof buf);
  fk_cpu_missing(FK_CPU_AVX2 | FK_CPU_FMA, 0, FK_CPU_AVX2, 1, 0, "0", "forbidden", buf, 8);
  cr_assert_eq(strlen(buf), 7, "'%s'", buf);
  cr_assert_eq(buf[8], 'x', "written past len");
  cr_assert_null(fk_cpu_missing(FK_CPU_AVX2, 0, 0, 0, 0, NULL, "x", NULL, 8));
}

/* The hwstream trait from CPUID: vendor and family 19h (the extended family counted only when the
 * base one is 0xf); leaf 1 EAX of real parts. */
Test(cpu, hwstream_trait) {
  cr_assert(fk_cpu_hwstream("AuthenticAMD", 0x00a10f11u), "Zen 4 (Genoa, family 19h)");
  cr_assert(fk_cpu_hwstream("AuthenticAMD", 0x00a60f12u), "Zen 4 (Raphael, family 19h)");
  cr_assert(!fk_cpu_hwstream("AuthenticAMD", 0x00830f10u), "Zen 2 (family 17h)");
  cr_assert(!fk_cpu_hwstream("AuthenticAMD", 0x00b00f21u), "Zen 5 (family 1ah): not measured");
  cr_assert(!fk_cpu_hwstream("GenuineIntel", 0x000806f8u), "Sapphire Rapids (family 6)");
  cr_assert(!fk_cpu_hwstream("GenuineIntel", 0x00a10f11u), "the family of a Zen 4 under another vendor");
  cr_assert(!fk_cpu_hwstream("AuthenticAMD", 0x00a00911u), "base family 9: the extended one does not count");
}

/* A trait picks among stamps of the same bits: the quantized fast forms' avx512vnnihw where the
 * features passed have hwstream, avx512vnni where not. Without AVX-512,
 * AVX-VNNI (and F16C) picks avxvnni, AVX2 with F16C and no VNNI avx2madd; a CPU with both runs the
 * AVX-512 stamps. */
Test(cpu, trait_picks_variant) {
#if defined(__x86_64__)
  const uint64_t vnni = FK_CPU_AVX2 | FK_CPU_FMA | FK_CPU_AVX512F | FK_CPU_AVX512BW | FK_CPU_AVX512VL |
                        FK_CPU_AVX512VNNI;
  const uint64_t avxvnni = FK_CPU_AVX2 | FK_CPU_FMA | FK_CPU_F16C | FK_CPU_AVXVNNI;
  const struct { const char *form; uint64_t features; const char *variant; } rows[] = {
    { "gemv_q8_f32", vnni | FK_CPU_HWSTREAM, "avx512vnnihw" }, { "gemv_q8_f32", vnni, "avx512vnni" },
    { "gemv_q8_bf16_rne_add", vnni | FK_CPU_HWSTREAM, "avx512vnnihw" },
    { "gemv_q8_bf16_rne_add", vnni, "avx512vnni" }, { "gemv_q4_f32", vnni | FK_CPU_HWSTREAM, "avx512vnnihw" },
    { "gemv_q4_bf16_rne", vnni, "avx512vnni" },
    { "gemv_q8_f32", avxvnni, "avxvnni" }, { "gemv_q4_bf16_rne", avxvnni | FK_CPU_HWSTREAM, "avxvnni" },
    { "gemv_q8_f32", vnni | avxvnni, "avx512vnni" }, { "gemv_q4_f32", vnni | avxvnni, "avx512vnni" },
    { "gemv_q8_f32", avxvnni & ~FK_CPU_AVXVNNI, "avx2madd" },
    { "gemv_q4_bf16_rne_add", (avxvnni & ~FK_CPU_AVXVNNI) | FK_CPU_HWSTREAM, "avx2madd" },
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    fk_leaf leaf;
    fk_error err = { 0 };
    cr_assert_eq(fk_leaf_resolve(rows[i].form, FK_TIER_FAST, rows[i].features, &leaf, &err), FK_OK, "%s: %s",
                 rows[i].form, err.message);
    cr_assert_str_eq(leaf.variant, rows[i].variant, "%s", rows[i].form);
  }
  /* the trait alone runs nothing: without either VNNI and without F16C the q8 fast forms are refused,
   * the narrowest stamp (avx2madd) and its missing feature (F16C) named */
  fk_leaf leaf;
  fk_error err = { 0 };
  cr_assert_eq(fk_leaf_resolve("gemv_q8_f32", FK_TIER_FAST, (vnni & ~FK_CPU_AVX512VNNI) | FK_CPU_HWSTREAM, &leaf,
                               &err), FK_EUNSUPPORTED);
  cr_assert(strstr(err.message, "f16c not in the features passed") && strstr(err.message, "avx2madd"), "%s",
            err.message);
  /* AVX-VNNI without F16C: refused, F16C named */
  cr_assert_eq(fk_leaf_resolve("gemv_q4_f32", FK_TIER_FAST, avxvnni & ~FK_CPU_F16C, &leaf, &err), FK_EUNSUPPORTED);
  cr_assert(strstr(err.message, "f16c not in the features passed"), "%s", err.message);
#else
  cr_skip_test("the hwstream variant is x86_64's");
#endif
}

/* ---- version ---------------------------------------------------------------------------------- */

Test(version, library_matches_header) {
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", FK_VERSION_MAJOR, FK_VERSION_MINOR, FK_VERSION_PATCH);
  cr_assert_str_eq(FK_VERSION_STRING, want, "FK_VERSION_STRING disagrees with MAJOR.MINOR.PATCH");
  cr_assert_not_null(fk_version());
  cr_assert_str_eq(fk_version(), FK_VERSION_STRING);
  cr_assert_eq(fk_version_number(), (unsigned)FK_VERSION_NUMBER);
  cr_assert_eq(fk_version_number(), (unsigned)(FK_VERSION_MAJOR * 10000 + FK_VERSION_MINOR * 100 + FK_VERSION_PATCH));
  cr_assert(FK_VERSION_MINOR < 100 && FK_VERSION_PATCH < 100, "the version number needs MINOR, PATCH < 100");
}
