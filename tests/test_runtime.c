/* tests/test_runtime.c: CPU feature detection and stamp resolution (runtime/fk_leaf.c).
 * The feature mask reaches every variant and every refusal on this machine. */
#include <criterion/criterion.h>
#include <string.h>

#include "flashkern.h"

Test(runtime, resolves_every_form_to_the_widest_fitting_stamp) {
  uint64_t all = fk_cpu_features();
  fk_leaf leaf;
  fk_error err;
  cr_assert_eq(fk_leaf_resolve("gemv_bf16_rne", all, &leaf, &err), FK_OK, "%s", err.message);
  if ((all & (FK_CPU_AVX512F | FK_CPU_AVX512BW | FK_CPU_AVX512VL)) == (FK_CPU_AVX512F | FK_CPU_AVX512BW | FK_CPU_AVX512VL))
    cr_assert_str_eq(leaf.variant, "avx512");
  cr_assert_eq(fk_leaf_resolve("rmsnorm_add_bf16", FK_CPU_AVX2 | FK_CPU_FMA, &leaf, &err), FK_OK, "%s", err.message);
  cr_assert_str_eq(leaf.variant, "avx2");
  cr_assert_str_eq(leaf.symbol, "fk_rmsnorm_add_bf16__x86_64_avx2_exact");
  cr_assert_str_eq(leaf.tier, "exact");
}

Test(runtime, refuses_with_the_missing_feature_named) {
  fk_leaf leaf;
  fk_error err;
  cr_assert_eq(fk_leaf_resolve("gemv_bf16_rne", FK_CPU_AVX2, &leaf, &err), FK_EUNSUPPORTED);
  cr_assert(strstr(err.message, "fma") != NULL, "message does not name fma: %s", err.message);
  cr_assert(strstr(err.message, "gemv_bf16_rne") != NULL, "%s", err.message);
  cr_assert_eq(fk_leaf_resolve("rmsnorm_f32", 0, &leaf, &err), FK_EUNSUPPORTED);
  cr_assert(strstr(err.message, "avx2") != NULL, "%s", err.message);
  cr_assert(strstr(fk_strerror(FK_EUNSUPPORTED), "FK_EUNSUPPORTED") != NULL);
}

Test(runtime, unknown_form_and_null_arguments) {
  fk_leaf leaf;
  fk_error err;
  cr_assert_eq(fk_leaf_resolve("gemv_fp8", fk_cpu_features(), &leaf, &err), FK_ENOTFOUND);
  cr_assert(strstr(err.message, "gemv_fp8") != NULL, "%s", err.message);
  cr_assert_eq(fk_leaf_resolve(NULL, 0, &leaf, &err), FK_EINVAL);
  cr_assert_eq(fk_leaf_resolve("gemv_bf16_rne", 0, NULL, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "out") != NULL, "%s", err.message);
  cr_assert_str_eq(fk_strerror((fk_status)99), "FK_?: unknown status");
}

Test(runtime, feature_mask_from_the_environment, .init = NULL) {
  /* a fresh process: FK_CPU_MASK is read on first use */
  setenv("FK_CPU_MASK", "3", 1); /* avx2 | fma */
  uint64_t f = fk_cpu_features();
  cr_assert_eq(f & ~(uint64_t)3, 0, "mask not applied: 0x%llx", (unsigned long long)f);
  fk_leaf leaf;
  fk_error err;
  if (f == 3) {
    cr_assert_eq(fk_leaf_resolve("gemv_bf16_rne", f, &leaf, &err), FK_OK);
    cr_assert_str_eq(leaf.variant, "avx2");
  }
}
