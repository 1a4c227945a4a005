/* tests/test_runtime.c: CPU feature detection and stamp resolution (runtime/fk_leaf.c).
 * The feature mask reaches every variant and every refusal on this machine. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture/fkfix.h"
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
 * to the bf16 stamp and the exact tier to the bfcvt stamp; absent (-cpu neoverse-n1) refuses the
 * fast tier, naming bf16, and still resolves the exact tier, to neon. */
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
  cr_assert_eq(run_resolve("max", "gemv_f32", "exact", out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "fk_gemv_f32__aarch64_bfcvt_exact") != NULL, "%s", out);
  cr_assert_eq(run_resolve("max", "rmsnorm_f32", "exact", out, sizeof out), 0, "%s", out);  /* no bfcvt stamp */
  cr_assert(strstr(out, "fk_rmsnorm_f32__aarch64_neon_exact") != NULL, "%s", out);
}

/* ---------------------------------------------------------------- RoPE tables ----------- */

/* fk_rope_table against libm: the f32 rounding of the double cos/sin of the same f32 angle,
 * with inv_freq from libm's pow. The tables may differ only where the exact value lies within
 * 2^-44 (relative) of an f32 rounding boundary, where a double evaluation cannot decide. */
static long near_boundary(double v) {
  float f = (float)v;
  double lo = nextafterf(f, -INFINITY), hi = nextafterf(f, INFINITY);
  double m1 = ((double)f + lo) / 2, m2 = ((double)f + hi) / 2, tol = fabs(v) * 0x1p-44 + 0x1p-200;
  return fabs(v - m1) < tol || fabs(v - m2) < tol;
}

Test(runtime, rope_table_is_correctly_rounded) {
  static const struct { float theta; int64_t hd, pos, npos; } cfg[] = {
    { 1e6f, 64, 0, 70000 }, { 1e6f, 32, 0, 70000 }, { 1e4f, 128, 0, 9000 }, { 1e6f, 64, 16700000, 2000 },
  };
  for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
    int64_t half = cfg[k].hd / 2;
    size_t n = (size_t)(cfg[k].npos * half);
    float *c = malloc(n * sizeof *c), *s = malloc(n * sizeof *s);
    cr_assert(c && s);
    fk_error err;
    cr_assert_eq(fk_rope_table(cfg[k].theta, cfg[k].hd, cfg[k].pos, cfg[k].npos, c, s, &err), FK_OK, "%s", err.message);
    long differ = 0, undecidable = 0;
    for (int64_t i = 0; i < half; i++) {
      float e = (float)(2 * i) / (float)cfg[k].hd;
      double r = pow((double)cfg[k].theta, (double)e);
      undecidable += near_boundary(r);
      float inv = 1.0f / (float)r;
      for (int64_t p = 0; p < cfg[k].npos; p++) {
        float a = (float)(cfg[k].pos + p) * inv;
        double cd = cos((double)a), sd = sin((double)a);
        int bad = c[p * half + i] != (float)cd || s[p * half + i] != (float)sd;
        int nb = near_boundary(cd) || near_boundary(sd);
        undecidable += nb;
        if (bad && !nb)
          cr_assert_fail("theta %g hd %lld p %lld i %lld: cos %a sin %a, libm %a %a", (double)cfg[k].theta,
                         (long long)cfg[k].hd, (long long)(cfg[k].pos + p), (long long)i, (double)c[p * half + i],
                         (double)s[p * half + i], (double)(float)cd, (double)(float)sd);
        differ += bad;
      }
    }
    cr_log_info("rope theta %g hd %lld positions [%lld, +%lld): %zu entries, %ld differ from libm's rounding, "
                "%ld too close to a rounding boundary to decide", (double)cfg[k].theta, (long long)cfg[k].hd,
                (long long)cfg[k].pos, (long long)cfg[k].npos, 2 * n, differ, undecidable);
    free(c);
    free(s);
  }
}

/* The tables are the same bytes on AArch64 (the runner under qemu) as here. */
Test(runtime, rope_table_is_the_same_on_aarch64, .timeout = 120) {
  static const struct { const char *theta; int64_t hd, pos, npos; } cfg[] = {
    { "1e6", 64, 0, 4096 }, { "1e6", 32, 99000, 3000 }, { "1e4", 128, 5, 700 },
  };
  for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
    char path[] = "/tmp/fk_rope_XXXXXX", cmd[1024];
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s -cpu max %s --rope %s %lld %lld %lld %s", FKH_QEMU, FKH_RUNNER, cfg[k].theta,
             (long long)cfg[k].hd, (long long)cfg[k].pos, (long long)cfg[k].npos, path);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    size_t n = (size_t)(cfg[k].npos * (cfg[k].hd / 2));
    float *host = malloc(2 * n * sizeof *host), *arm = malloc(2 * n * sizeof *arm + 1);
    cr_assert(host && arm);
    fk_error err;
    cr_assert_eq(fk_rope_table(strtof(cfg[k].theta, NULL), cfg[k].hd, cfg[k].pos, cfg[k].npos, host, host + n, &err), FK_OK);
    FILE *f = fopen(path, "rb");
    cr_assert(f);
    size_t got = fread(arm, sizeof *arm, 2 * n + 1, f);
    fclose(f);
    unlink(path);
    cr_assert_eq(got, 2 * n, "the runner wrote %zu floats, want %zu", got, 2 * n);
    cr_assert(memcmp(host, arm, 2 * n * sizeof *host) == 0, "theta %s hd %lld: AArch64 tables differ from x86_64's",
              cfg[k].theta, (long long)cfg[k].hd);
    cr_log_info("rope theta %s hd %lld: %zu bytes, AArch64 == x86_64", cfg[k].theta, (long long)cfg[k].hd,
                2 * n * sizeof *host);
    free(host);
    free(arm);
  }
}

/* Bad arguments: FK_EINVAL naming the argument, and nothing written. */
Test(runtime, rope_table_refuses_bad_arguments) {
  float c[64], s[64];
  fk_error err;
  static const struct { float theta; int64_t hd, pos, npos; const char *names; } bad[] = {
    { 1.0f, 64, 0, 1, "theta" }, { -5.0f, 64, 0, 1, "theta" }, { NAN, 64, 0, 1, "theta" },
    { INFINITY, 64, 0, 1, "theta" }, { 1e6f, 63, 0, 1, "head_dim" }, { 1e6f, 0, 0, 1, "head_dim" },
    { 1e6f, 2048, 0, 1, "head_dim" }, { 1e6f, 64, -1, 1, "positions" }, { 1e6f, 64, 0, -2, "positions" },
    { 1e6f, 64, (1 << 24) - 1, 2, "positions" },
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    memset(c, 0x5a, sizeof c);
    memset(s, 0x5a, sizeof s);
    cr_assert_eq(fk_rope_table(bad[k].theta, bad[k].hd, bad[k].pos, bad[k].npos, c, s, &err), FK_EINVAL, "case %zu", k);
    cr_assert(strstr(err.message, bad[k].names) != NULL, "case %zu: '%s' does not name %s", k, err.message, bad[k].names);
    for (size_t i = 0; i < sizeof c; i++) cr_assert(((uint8_t *)c)[i] == 0x5a && ((uint8_t *)s)[i] == 0x5a);
  }
  cr_assert_eq(fk_rope_table(1e6f, 64, 0, 1, NULL, s, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "cos") != NULL, "%s", err.message);
  cr_assert_eq(fk_rope_table(1e6f, 64, 0, 1, c, NULL, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "sin") != NULL, "%s", err.message);
}

/* fk_rope_table against torch's own tables (fixtures/rope/, written by transformers'
 * Lfm2RotaryEmbedding): inv_freq bit for bit, cos/sin within rope_f64 of the correctly rounded
 * float64 values and within rope_torch of torch's (fixtures/README.md). */

static int rope_within(double y, double ref, double c, int torch) {
  double b = (0x1p-24 + 0x1p-51 + (torch ? 0x1p-23 : 0)) * fabs(c) + 0x1p-150 + (torch ? 0x1p-149 : 0);
  return fabs(y - ref) <= b;
}

Test(runtime, rope_table_against_torch_fixtures) {
  char dir[512], err[512];
  snprintf(dir, sizeof dir, "%s/rope", FKT_FIXTURE_DIR);
  char **paths;
  int n = fkfix_list(dir, &paths, err, sizeof err);
  cr_assert(n > 0, "no fixtures in %s (%s)", dir, n < 0 ? err : "empty");
  long entries = 0, equal_torch = 0;
  for (int f = 0; f < n; f++) {
    fkfix fx;
    cr_assert(fkfix_load(paths[f], &fx, err, sizeof err) == 0, "%s", err);
    float theta;
    int64_t hd, pos, npos;
    cr_assert(fkfix_scalar_f32(&fx, "theta", &theta) == 0 && fkfix_scalar_i64(&fx, "hd", &hd) == 0 &&
              fkfix_scalar_i64(&fx, "pos_begin", &pos) == 0 && fkfix_scalar_i64(&fx, "npos", &npos) == 0, "%s", fx.path);
    const fkfix_tensor *inv_t = fkfix_tensor_get(&fx, "inv_torch"), *ct = fkfix_tensor_get(&fx, "cos_torch"),
                       *st = fkfix_tensor_get(&fx, "sin_torch"), *c64 = fkfix_tensor_get(&fx, "cos_f64"),
                       *s64 = fkfix_tensor_get(&fx, "sin_f64");
    cr_assert(inv_t && ct && st && c64 && s64, "%s: missing tensors", fx.path);
    int64_t half = hd / 2;
    float *inv = malloc((size_t)half * 4), *c = malloc((size_t)(npos * half) * 4), *s = malloc((size_t)(npos * half) * 4);
    cr_assert(inv && c && s);
    fk_error e;
    cr_assert_eq(fk_rope_inv_freq(theta, hd, inv, &e), FK_OK);
    cr_assert_eq(fk_rope_table(theta, hd, pos, npos, c, s, &e), FK_OK);
    cr_assert(memcmp(inv, inv_t->data, (size_t)half * 4) == 0, "%s: inv_freq (bitexact) differs from torch's", fx.path);
    for (int64_t p = 0; p < npos; p++)
      for (int64_t i = 0; i < half; i++) {
        int64_t k = p * half + i;
        double cf = ((const double *)c64->data)[p * c64->strides[0] + i * c64->strides[1]];
        double sf = ((const double *)s64->data)[p * s64->strides[0] + i * s64->strides[1]];
        float tc = ((const float *)ct->data)[p * ct->strides[0] + i * ct->strides[1]];
        float ts = ((const float *)st->data)[p * st->strides[0] + i * st->strides[1]];
        cr_assert(rope_within(c[k], cf, cf, 0) && rope_within(s[k], sf, sf, 0), "%s: p %lld i %lld: %a %a, f64 %a %a "
                  "(rope_f64)", fx.path, (long long)(pos + p), (long long)i, (double)c[k], (double)s[k], cf, sf);
        cr_assert(rope_within(c[k], tc, cf, 1) && rope_within(s[k], ts, sf, 1), "%s: p %lld i %lld: %a %a, torch %a %a "
                  "(rope_torch)", fx.path, (long long)(pos + p), (long long)i, (double)c[k], (double)s[k], (double)tc, (double)ts);
        entries += 2;
        equal_torch += (c[k] == tc) + (s[k] == ts);
      }
    free(inv), free(c), free(s);
    fkfix_free(&fx);
  }
  cr_log_info("rope fixtures: %d manifests, %ld entries within rope_f64 and rope_torch, %ld equal to torch's bits",
              n, entries, equal_torch);
  fkfix_list_free(paths, n);
}
