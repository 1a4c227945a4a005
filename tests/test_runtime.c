/* tests/test_runtime.c: CPU feature detection and stamp resolution (runtime/fk_leaf.c).
 * The feature mask reaches every variant and every refusal on this machine. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "flashkern.h"

static const uint64_t AVX512 = FK_CPU_AVX512F | FK_CPU_AVX512BW | FK_CPU_AVX512VL;

Test(runtime, resolves_every_form_to_the_widest_fitting_stamp) {
  uint64_t all = fk_cpu_features();
  fk_leaf leaf;
  fk_error err;
  cr_assert_eq(fk_leaf_resolve("gemv_bf16_rne", FK_TIER_EXACT, all, &leaf, &err), FK_OK, "%s", err.message);
  if ((all & AVX512) == AVX512) cr_assert_str_eq(leaf.variant, "avx512");
  cr_assert_eq(fk_leaf_resolve("rmsnorm_add_bf16", FK_TIER_EXACT, FK_CPU_AVX2 | FK_CPU_FMA, &leaf, &err), FK_OK,
               "%s", err.message);
  cr_assert_str_eq(leaf.variant, "avx2");
  cr_assert_str_eq(leaf.symbol, "fk_rmsnorm_add_bf16__x86_64_avx2_exact");
  cr_assert_str_eq(leaf.tier, "exact");
  cr_assert_eq(fk_leaf_resolve("gemv_f32_bias", FK_TIER_FAST, AVX512 | FK_CPU_AVX512BF16, &leaf, &err), FK_OK,
               "%s", err.message);
  cr_assert_str_eq(leaf.symbol, "fk_gemv_f32_bias__x86_64_avx512bf16_fast");
  cr_assert_str_eq(leaf.tier, "fast");
}

Test(runtime, refuses_with_the_missing_feature_named) {
  fk_leaf leaf;
  fk_error err;
  cr_assert_eq(fk_leaf_resolve("gemv_bf16_rne", FK_TIER_EXACT, FK_CPU_AVX2, &leaf, &err), FK_EUNSUPPORTED);
  cr_assert(strstr(err.message, "fma") != NULL, "message does not name fma: %s", err.message);
  cr_assert(strstr(err.message, "gemv_bf16_rne") != NULL, "%s", err.message);
  cr_assert_eq(fk_leaf_resolve("rmsnorm_f32", FK_TIER_EXACT, 0, &leaf, &err), FK_EUNSUPPORTED);
  cr_assert(strstr(err.message, "avx2") != NULL, "%s", err.message);
  cr_assert(strstr(fk_strerror(FK_EUNSUPPORTED), "FK_EUNSUPPORTED") != NULL);
  /* no fallback from the fast tier to the exact one */
  cr_assert_eq(fk_leaf_resolve("gemv_f32", FK_TIER_FAST, AVX512 | FK_CPU_AVX2 | FK_CPU_FMA, &leaf, &err),
               FK_EUNSUPPORTED);
  cr_assert(strstr(err.message, "avx512bf16") != NULL, "%s", err.message);
  cr_assert(strstr(err.message, "fast") != NULL, "%s", err.message);
}

Test(runtime, unknown_form_tier_and_null_arguments) {
  fk_leaf leaf;
  fk_error err;
  cr_assert_eq(fk_leaf_resolve("gemv_fp8", FK_TIER_EXACT, fk_cpu_features(), &leaf, &err), FK_ENOTFOUND);
  cr_assert(strstr(err.message, "gemv_fp8") != NULL, "%s", err.message);
  cr_assert_eq(fk_leaf_resolve("rmsnorm_f32", FK_TIER_FAST, fk_cpu_features(), &leaf, &err), FK_ENOTFOUND);
  cr_assert(strstr(err.message, "no fast-tier stamp") != NULL, "%s", err.message);
  cr_assert_eq(fk_leaf_resolve(NULL, FK_TIER_EXACT, 0, &leaf, &err), FK_EINVAL);
  cr_assert_eq(fk_leaf_resolve("gemv_bf16_rne", FK_TIER_EXACT, 0, NULL, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "out") != NULL, "%s", err.message);
  cr_assert_eq(fk_leaf_resolve("gemv_bf16_rne", (fk_tier)7, 0, &leaf, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "tier") != NULL, "%s", err.message);
  cr_assert_str_eq(fk_strerror((fk_status)99), "FK_?: unknown status");
}

Test(runtime, feature_mask_from_the_environment) {
  /* a fresh process: FK_CPU_MASK is read on first use */
  setenv("FK_CPU_MASK", "3", 1); /* avx2 | fma */
  uint64_t f = fk_cpu_features();
  cr_assert_eq(f & ~(uint64_t)3, 0, "mask not applied: 0x%llx", (unsigned long long)f);
  fk_leaf leaf;
  fk_error err;
  if (f == 3) {
    cr_assert_eq(fk_leaf_resolve("gemv_bf16_rne", FK_TIER_EXACT, f, &leaf, &err), FK_OK);
    cr_assert_str_eq(leaf.variant, "avx2");
    cr_assert_eq(fk_leaf_resolve("gemv_bf16_rne", FK_TIER_FAST, f, &leaf, &err), FK_EUNSUPPORTED);
  }
}

/* On AArch64 (the stamp runner under qemu): FEAT_BF16 present (-cpu max) resolves the fast tier
 * to the bf16 stamp; absent (-cpu neoverse-n1) refuses it, naming bf16, and still resolves the
 * exact tier to neon. */
#include <stdio.h>
#include <sys/wait.h>

static int run_resolve(const char *cpu, const char *form, const char *tier, char *out, size_t len) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s -cpu %s %s --resolve %s %s", FKH_QEMU, cpu, FKH_RUNNER, form, tier);
  FILE *p = popen(cmd, "r");
  cr_assert(p, "cannot run %s", cmd);
  size_t n = fread(out, 1, len - 1, p);
  out[n] = 0;
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Test(runtime, aarch64_fast_tier_needs_bf16) {
  char out[512];
  cr_assert_eq(run_resolve("max", "gemv_f32", "fast", out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "fk_gemv_f32__aarch64_bf16_fast") != NULL, "%s", out);
  cr_assert_eq(run_resolve("neoverse-n1", "gemv_f32", "fast", out, sizeof out), 3, "%s", out);
  cr_assert(strstr(out, "FK_EUNSUPPORTED") != NULL && strstr(out, "bf16") != NULL, "%s", out);
  cr_assert_eq(run_resolve("neoverse-n1", "gemv_f32", "exact", out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "fk_gemv_f32__aarch64_neon_exact") != NULL, "%s", out);
}
