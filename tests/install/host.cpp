// tests/install/host.cpp: a C++ host of the *installed* library (tests/install_host.sh builds it
// with the README's recipe under g++ and clang++): the same plan as host.c (a ShortConv block and
// the spectral tail), then one stamp called directly: rmsnorm_f32 resolved for this CPU, its
// arguments checked by fk_leaf_check, and, in a static link (FK_HOST_STATIC), the same stamp
// called again by its symbol through fk_leaves.h's extern "C" prototype. Exit 0 only when every
// call returns FK_OK, the PCM counts are right and both stamp calls give the expected bf16 rows.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include <flashkern.h>

namespace {

const int H = 64, ROWS = 4, TAIL_IN = 16, FRAMES = 3;

bool ok(fk_status s, const fk_error &err, const char *what) {
  if (s == FK_OK) return true;
  std::fprintf(stderr, "host.cpp: %s: %s: %s\n", what, fk_strerror(s), err.message);
  return false;
}

void fill(std::vector<uint16_t> &w) {  // bf16 0.0078 .. 0.0155, deterministic
  for (size_t i = 0; i < w.size(); i++) w[i] = static_cast<uint16_t>(0x3c00 + i * 7 % 64);
}

// The plan API: a 3-row prefill, a decode, 3 tail frames and the flush (as host.c).
bool run_plan() {
  std::vector<uint16_t> norm(H), in_proj(3 * H * H), conv(3 * H), out_proj(H * H),
      lin(static_cast<size_t>(FK_TAIL_SPEC) * TAIL_IN), x(ROWS * H);
  std::vector<float> bias(FK_TAIL_SPEC), feat(FRAMES * TAIL_IN), pcm(640 + 480);
  fill(norm), fill(in_proj), fill(conv), fill(out_proj), fill(lin);
  for (int i = 0; i < ROWS * H; i++) x[i] = static_cast<uint16_t>(0x3f80 + i * 13 % 128);
  for (int i = 0; i < FK_TAIL_SPEC; i++) bias[i] = static_cast<float>(i % 17 - 8) * 0.01f;
  for (int i = 0; i < FRAMES * TAIL_IN; i++) feat[i] = static_cast<float>(i % 11 - 5) * 0.1f;

  fk_plan_desc d;
  std::memset(&d, 0, sizeof d);
  d.programs = FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL;
  d.threads = 2;
  d.tier = FK_TIER_EXACT;
  d.hidden = H;
  d.max_rows = ROWS;
  d.norm_eps = 1e-5f;
  d.block.norm = norm.data();
  d.block.in_proj = in_proj.data();
  d.block.conv = conv.data();
  d.block.out_proj = out_proj.data();
  d.tail_in = TAIL_IN;
  d.max_frames = FRAMES;
  d.clip = INFINITY;
  d.tail.lin = lin.data();
  d.tail.bias = bias.data();
  fk_plan *p = nullptr;
  fk_error err;
  if (!ok(fk_plan_create(&d, &p, &err), err, "fk_plan_create")) return false;
  fk_io prefill, decode, tail, flush;
  std::memset(&prefill, 0, sizeof prefill);
  prefill.rows = 3, prefill.x = x.data(), prefill.ldx = H;
  decode = prefill;
  decode.rows = 1, decode.x = x.data() + 3 * H;
  std::memset(&tail, 0, sizeof tail);
  tail.rows = FRAMES, tail.feat = feat.data(), tail.ldfeat = TAIL_IN, tail.pcm = pcm.data(), tail.pcm_cap = 640;
  bool good = ok(fk_run(p, FK_PROG_BLOCK_PREFILL, &prefill, &err), err, "block_prefill") &&
              ok(fk_run(p, FK_PROG_BLOCK_DECODE, &decode, &err), err, "block_decode") &&
              ok(fk_run(p, FK_PROG_TAIL, &tail, &err), err, "tail");
  std::memset(&flush, 0, sizeof flush);
  flush.pcm = pcm.data() + tail.pcm_count, flush.pcm_cap = 480;
  good = good && ok(fk_run(p, FK_PROG_TAIL_FLUSH, &flush, &err), err, "tail_flush");
  fk_plan_destroy(p);
  if (good && (tail.pcm_count != 480 || flush.pcm_count != 480)) {
    std::fprintf(stderr, "host.cpp: expected 480 tail and 480 flush samples\n");
    good = false;
  }
  if (good) std::printf("plan: block and tail ran, pcm %lld + %lld samples\n", static_cast<long long>(tail.pcm_count),
                        static_cast<long long>(flush.pcm_count));
  return good;
}

// rmsnorm_f32 of two rows of 8 equal values v: every output is RNE(w * RNE(v / sqrt(v^2 + eps)))
// = 1.0 for w = 1.0 and v = 3 (eps 1e-5 moves nothing at bf16 precision).
bool rows_are_one(const uint16_t *y, int n) {
  for (int i = 0; i < n; i++)
    if (y[i] != 0x3f80) {
      std::fprintf(stderr, "host.cpp: y[%d] = 0x%04x, want 0x3f80\n", i, y[i]);
      return false;
    }
  return true;
}

bool run_stamp() {
  float x[16];
  uint16_t w[8], y[16];
  for (float &v : x) v = 3.0f;
  for (uint16_t &v : w) v = 0x3f80;
  fk_rmsnorm_f32_args a;
  a.x = x, a.w = w, a.y = y, a.n = 8, a.rows = 2, a.x_stride = 8, a.y_stride = 8, a.eps = 1e-5f;
  fk_error err;
  fk_leaf leaf;
  if (!ok(fk_leaf_resolve("rmsnorm_f32", FK_TIER_EXACT, fk_cpu_features(), &leaf, &err), err, "fk_leaf_resolve") ||
      !ok(fk_leaf_check("rmsnorm_f32", &a, &err), err, "fk_leaf_check"))
    return false;
  std::memset(y, 0, sizeof y);
  leaf.fn(&a);
  if (!rows_are_one(y, 16)) return false;
  std::printf("stamp: %s through fk_leaf_resolve\n", leaf.symbol);
#if defined(FK_HOST_STATIC)
  // by its symbol: the static library keeps the stamps' (hidden) symbols linkable
  std::memset(y, 0, sizeof y);
#if defined(__x86_64__)
  if (!(fk_cpu_features() & FK_CPU_AVX2) || !(fk_cpu_features() & FK_CPU_FMA)) return true;
  fk_rmsnorm_f32__x86_64_avx2_exact(&a);
  const char *name = "fk_rmsnorm_f32__x86_64_avx2_exact";
#else
  fk_rmsnorm_f32__aarch64_neon_exact(&a);
  const char *name = "fk_rmsnorm_f32__aarch64_neon_exact";
#endif
  if (!rows_are_one(y, 16)) return false;
  std::printf("stamp: %s by its symbol\n", name);
#endif
  return true;
}

}  // namespace

int main() {
  std::printf("flashkern %s (C++ %ld)\n", fk_version(), static_cast<long>(__cplusplus));
  return run_plan() && run_stamp() ? 0 : 1;
}
