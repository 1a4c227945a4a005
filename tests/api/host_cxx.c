/* tests/api/host_cxx.c: a host in the common subset of C99 and C++11, compiled as both by
 * tests/api/headers.sh and linked against libflashkern.a: the version, the bf16 helpers, one leaf
 * resolved (fk_leaf_resolve) and the same stamp called by its own prototype from fk_leaves.h (a
 * C++ build links only when that prototype has C linkage), fk_leaf_check, and a plan: a 2-row
 * block prefill and a decode, then fk_phase_query. Exit 0 when every call returns FK_OK and the
 * resolved and the direct call write the same bits; 1 otherwise. */
#include <stdio.h>
#include <string.h>

#include <flashkern.h>

enum { N = 80, H = 64, ROWS = 3 };

static int ok(fk_status s, const fk_error *err, const char *what) {
  if (s == FK_OK) return 1;
  fprintf(stderr, "host_cxx: %s: %s: %s\n", what, fk_strerror(s), err->message);
  return 0;
}

static float xs[2 * N];
static uint16_t w[N], y_resolved[2 * N], y_direct[2 * N];
static uint16_t norm[H], in_proj[3 * H * H], conv[3 * H], out_proj[H * H], x[ROWS * H];

static void fill(uint16_t *dst, int n, float scale, int seed) {
  float f[3 * H * H];
  for (int i = 0; i < n; i++) f[i] = scale * (float)((i * 37 + seed) % 101 - 50) / 50.0f;
  fk_error err;
  if (fk_bf16_from_f32_n(f, dst, (size_t)n, &err) != FK_OK) fprintf(stderr, "host_cxx: %s\n", err.message);
}

int main(void) {
  fk_error err;
  if (strcmp(fk_version(), FK_VERSION_STRING) != 0 || fk_version_number() != (unsigned)FK_VERSION_NUMBER) {
    fprintf(stderr, "host_cxx: library %s (%u), header %s\n", fk_version(), fk_version_number(), FK_VERSION_STRING);
    return 1;
  }
  for (int i = 0; i < 2 * N; i++) xs[i] = (float)(i % 13) * 0.25f - 1.5f;
  for (int i = 0; i < N; i++) w[i] = fk_bf16_from_f32(1.0f + (float)(i % 7) * 0.125f);

  /* one leaf: resolved, and called directly */
  fk_rmsnorm_f32_args a;
  memset(&a, 0, sizeof a);
  a.x = xs, a.w = w, a.y = y_resolved, a.n = N, a.rows = 2, a.x_stride = N, a.y_stride = N, a.eps = 1e-5f;
  fk_leaf leaf;
  if (!ok(fk_leaf_check("rmsnorm_f32", &a, &err), &err, "fk_leaf_check") ||
      !ok(fk_leaf_resolve("rmsnorm_f32", FK_TIER_EXACT, fk_cpu_features(), &leaf, &err), &err, "fk_leaf_resolve"))
    return 1;
  leaf.fn(&a);
  a.y = y_direct;
#if defined(__x86_64__)
  const uint64_t need = FK_CPU_AVX2 | FK_CPU_FMA;
  const char *direct = "fk_rmsnorm_f32__x86_64_avx2_exact";
  if ((fk_cpu_features() & need) == need) fk_rmsnorm_f32__x86_64_avx2_exact(&a);
#elif defined(__aarch64__)
  const uint64_t need = FK_CPU_ASIMD;
  const char *direct = "fk_rmsnorm_f32__aarch64_neon_exact";
  if ((fk_cpu_features() & need) == need) fk_rmsnorm_f32__aarch64_neon_exact(&a);
#endif
  if ((fk_cpu_features() & need) != need) {
    fprintf(stderr, "host_cxx: this CPU cannot run %s\n", direct);
    return 1;
  }
  if (memcmp(y_resolved, y_direct, sizeof y_resolved) != 0) {
    fprintf(stderr, "host_cxx: %s and %s wrote different bits\n", leaf.symbol, direct);
    return 1;
  }
  printf("flashkern %s: %s resolved, %s called directly: the same %d bf16\n", fk_version(), leaf.symbol, direct,
         2 * N);

  /* a plan */
  fill(norm, H, 0.1f, 1), fill(in_proj, 3 * H * H, 0.125f, 2), fill(conv, 3 * H, 0.5f, 3);
  fill(out_proj, H * H, 0.125f, 4), fill(x, ROWS * H, 1.0f, 5);
  for (int i = 0; i < H; i++) norm[i] = fk_bf16_from_f32(1.0f + fk_f32_from_bf16(norm[i]));
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.programs = FK_PROGRAMS_BLOCK, d.threads = 1, d.tier = FK_TIER_EXACT;
  d.hidden = H, d.max_rows = ROWS, d.norm_eps = 1e-5f;
  d.block.norm = norm, d.block.in_proj = in_proj, d.block.conv = conv, d.block.out_proj = out_proj;
  size_t bytes = 0;
  fk_plan *p = NULL;
  if (!ok(fk_plan_check(&d, &bytes, &err), &err, "fk_plan_check") ||
      !ok(fk_plan_create(&d, &p, &err), &err, "fk_plan_create"))
    return 1;
  fk_io io;
  memset(&io, 0, sizeof io);
  io.rows = 2, io.x = x, io.ldx = H;
  int good = ok(fk_run(p, FK_PROG_BLOCK_PREFILL, &io, &err), &err, "block_prefill");
  io.rows = 1, io.x = x + 2 * H;
  good = good && ok(fk_run(p, FK_PROG_BLOCK_DECODE, &io, &err), &err, "block_decode");
  for (int i = 0; good && i < fk_program_phases(p, FK_PROG_BLOCK_DECODE); i++) {
    fk_phase_info ph;
    good = ok(fk_phase_query(p, FK_PROG_BLOCK_DECODE, i, &ph, &err), &err, "fk_phase_query");
    if (good) printf("  %s %-9s %s\n", fk_program_name(FK_PROG_BLOCK_DECODE), ph.name, ph.symbol);
  }
  fk_state_info st = fk_state_query(p);
  fk_plan_destroy(p);
  if (!good || st.tokens != 3) return 1;
  printf("plan: %zu arena bytes, %lld tokens committed\n", bytes, (long long)st.tokens);
  return 0;
}
