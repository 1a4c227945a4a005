/* fuzz_plan_desc.c: libFuzzer target for plan readiness's validation (fk_plan_check, and
 * fk_plan_create + fk_run + fk_plan_destroy when the dimensions are small).
 *
 * Byte mapping. The input is read front to back; a byte past its end reads as 0. "raw N" means
 * the next N bytes, little-endian.
 *   [1] programs   bits 0-1: FK_PROGRAMS_BLOCK, FK_PROGRAMS_TAIL; bit 7: also the unknown bit
 *                  1 << (2 + ((b >> 2) & 15)); b == 0x7f: raw 4 (any u32)
 *   [1] threads    (int8_t)b; b == 0x80: raw 4 (any int)
 *   [1] tier       b & 3: FK_TIER_EXACT, FK_TIER_FAST, 2, -1; bit 7: raw 4 (any int)
 *   [1] forbid     bit 7 clear: bits 0-5 forbid FK_CPU_AVX2, _FMA, _AVX512F, _AVX512BW, _AVX512VL,
 *                  _AVX512BF16, bit 6 forbids FK_CPU_ASIMD | FK_CPU_BF16; bit 7 set: raw 8
 *   [1] flags      bits 0-2: FK_PLAN_TIMING, FK_PLAN_PCM_I16, FK_PLAN_NO_PIN; bit 7: also the unknown
 *                  bit 1 << (3 + ((b >> 3) & 15))
 *   [1] pointers   bit i set: pointer i is a valid buffer, clear: NULL; i = 0 block.norm,
 *                  1 block.in_proj, 2 block.conv, 3 block.conv_bias, 4 block.out_proj, 5 tail.lin,
 *                  6 tail.bias. team_of is always NULL.
 *   [2] hidden     each dimension is a u16 v: v < 0x8000: v itself (0..32767); else
 *   [2] max_rows   dim_special[v & 15]: 0, 1, 2, 3, 4, 255, 256, 257, 65535, 65536, 65537, -1,
 *   [2] tail_in    INT64_MIN, INT64_MAX, 2^32, and 15: raw 8 (any int64)
 *   [2] max_frames
 *   [1] norm_eps   each float is a selector s: s < 16: f32_special[s] (1e-5, +0, -0, NaN, -NaN,
 *   [1] clip       +inf, -inf, FLT_MIN, the smallest subnormal, FLT_MAX, -1e-5, 1, 100, 1e30,
 *                  a signalling NaN, 1e-38); s >= 16: raw 4 (the f32 bits)
 *   [1] rows       run parameters, used only when a plan is created: prefill rows 1 + b % max_rows
 *   [1] frames     tail frames 1 + b % max_frames
 *   [1] pad        ldx = hidden + (b & 7), ldfeat = tail_in + ((b >> 4) & 7)
 * An all-zero input is: no programs (refused). tests/fuzz/gen_seeds.c writes valid and invalid
 * descriptors in this mapping.
 *
 * Checked for every input: fk_plan_check(&desc, &bytes, &err) returns FK_OK (bytes > 0) or an
 * error status of the enum with err.status equal to it and err.message non-empty, terminated and
 * naming a `desc.` field or a phase; it allocates nothing (malloc hooks); with no err and no bytes
 * it returns the same status; on a refusal fk_plan_create refuses with the same status and
 * message and leaves *out NULL. When it returned FK_OK and
 * the plan is small (hidden, tail_in <= 256, max_rows, max_frames <= 8, threads <= 2):
 * fk_plan_create returns FK_OK with fk_plan_arena_bytes == bytes, then one fk_run of each program
 * the plan is ready for, with valid io, returns FK_OK (a flush after one frame: FK_ESTATE), the
 * PCM counts are the documented ones, a state snapshot round-trips, and fk_plan_destroy. */
#include <sanitizer/allocator_interface.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flashkern.h"
#include "fuzz_common.h"

enum { CAP_DIM = 256, CAP_ROWS = 8, CAP_THREADS = 2 };

typedef struct {
  const uint8_t *p;
  size_t n, at;
} reader;

static uint8_t u8(reader *r) { return r->at < r->n ? r->p[r->at++] : 0; }

static uint64_t raw(reader *r, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v |= (uint64_t)u8(r) << (8 * i);
  return v;
}

static int32_t raw_i32(reader *r) {
  uint32_t u = (uint32_t)raw(r, 4);
  int32_t v;
  memcpy(&v, &u, sizeof v);
  return v;
}

static int64_t dim(reader *r) {
  static const int64_t special[15] = { 0, 1, 2, 3, 4, 255, 256, 257, 65535, 65536, 65537, -1, INT64_MIN, INT64_MAX,
                                       INT64_C(1) << 32 };
  uint16_t v = (uint16_t)raw(r, 2);
  if (v < 0x8000) return v;
  if ((v & 15) < 15) return special[v & 15];
  uint64_t u = raw(r, 8);
  int64_t s;
  memcpy(&s, &u, sizeof s);
  return s;
}

static float f32_of_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

static float real(reader *r) {
  static const uint32_t special[16] = { 0x3727c5ac /* 1e-5 */, 0x00000000, 0x80000000, 0x7fc00000, 0xffc00000,
                                        0x7f800000, 0xff800000, 0x00800000, 0x00000001, 0x7f7fffff,
                                        0xb727c5ac /* -1e-5 */, 0x3f800000, 0x42c80000 /* 100 */,
                                        0x7149f2ca /* 1e30 */, 0x7f800001, 0x006ce3ee /* 1e-38 */ };
  uint8_t s = u8(r);
  return f32_of_bits(s < 16 ? special[s] : (uint32_t)raw(r, 4));
}

/* weights for the caps: finite bf16 values in about [-1, 1], a fixed pattern */
static uint16_t w_norm[CAP_DIM], w_in[3 * CAP_DIM * CAP_DIM], w_conv[3 * CAP_DIM], w_bias[CAP_DIM],
    w_out[CAP_DIM * CAP_DIM], w_lin[FK_TAIL_SPEC * CAP_DIM];
static float w_tbias[FK_TAIL_SPEC];

static uint32_t lcg(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return *s >> 8;
}

static uint16_t bf16_small(uint32_t *s) {
  /* sign, exponent 0x78..0x7e (2^-7 .. 2^-1), 7 mantissa bits */
  uint32_t v = lcg(s);
  return (uint16_t)(((v & 1u) << 15) | ((0x78u + (v >> 1) % 7u) << 7) | ((v >> 4) & 0x7fu));
}

static void fill_weights(void) {
  static int done;
  if (done) return;
  uint32_t s = 12345;
  uint16_t *arrs[] = { w_norm, w_in, w_conv, w_bias, w_out, w_lin };
  size_t lens[] = { CAP_DIM, 3 * CAP_DIM * CAP_DIM, 3 * CAP_DIM, CAP_DIM, CAP_DIM * CAP_DIM, FK_TAIL_SPEC * CAP_DIM };
  for (size_t a = 0; a < 6; a++)
    for (size_t i = 0; i < lens[a]; i++) arrs[a][i] = bf16_small(&s);
  for (size_t i = 0; i < FK_TAIL_SPEC; i++) w_tbias[i] = (float)((int)(lcg(&s) % 2001u) - 1000) * 1e-3f;
  done = 1;
}

/* ---- allocation watch: fk_plan_check must allocate nothing ---- */
static _Thread_local int watching;
static _Thread_local long allocations;

static void on_malloc(const volatile void *ptr, size_t size) {
  (void)ptr;
  (void)size;
  if (watching) allocations++;
}

static void on_free(const volatile void *ptr) { (void)ptr; }

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fill_weights();
  (void)fk_cpu_features(); /* detected once, before any allocation is watched */
  __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
  return 0;
}

static void check_error(fk_status s, const fk_error *err) {
  FUZZ_REQUIRE(s > FK_OK && s < FK_STATUS_COUNT, "status %d", (int)s);
  FUZZ_REQUIRE(err->status == s, "err.status %d, returned %d", (int)err->status, (int)s);
  FUZZ_REQUIRE(memchr(err->message, '\0', sizeof err->message), "unterminated message");
  FUZZ_REQUIRE(err->message[0], "empty message for %s", fk_strerror(s));
  FUZZ_REQUIRE(strstr(err->message, "desc.") || strstr(err->message, "phase "),
               "message names neither a desc. field nor a phase: %s", err->message);
}

static int64_t frame_samples(int64_t t) { return t == 0 ? 0 : t == 1 ? 160 : 320; }

static void run_ok(fk_plan *plan, fk_program prog, fk_io *io, const char *what) {
  fk_error err;
  memset(&err, 0, sizeof err);
  fk_status s = fk_run(plan, prog, io, &err);
  FUZZ_REQUIRE(s == FK_OK, "%s: fk_run(%s) = %s: %s", what, fk_program_name(prog), fk_strerror(s), err.message);
}

static void create_and_run(const fk_plan_desc *d, size_t bytes, int rows_sel, int frames_sel, int pad) {
  fk_plan *plan = NULL;
  fk_error err;
  memset(&err, 0, sizeof err);
  fk_status s = fk_plan_create(d, &plan, &err);
  if (s == FK_ENOMEM || s == FK_ESYSTEM) return; /* the system's refusal, not the descriptor's */
  FUZZ_REQUIRE(s == FK_OK, "fk_plan_check said FK_OK, fk_plan_create %s: %s", fk_strerror(s), err.message);
  FUZZ_REQUIRE(plan != NULL, "no plan");
  FUZZ_REQUIRE(fk_plan_arena_bytes(plan) == bytes, "arena %zu bytes, fk_plan_check said %zu",
               fk_plan_arena_bytes(plan), bytes);
  FUZZ_REQUIRE(fk_plan_threads(plan) == d->threads, "threads");

  for (int prog = 0; prog < FK_PROG_COUNT; prog++) {
    int n = fk_program_phases(plan, (fk_program)prog);
    for (int i = 0; i < n; i++) {
      fk_phase_info info;
      FUZZ_REQUIRE(fk_phase_query(plan, (fk_program)prog, i, &info, &err) == FK_OK && info.name && info.symbol &&
                       info.split,
                   "phase %d of %s", i, fk_program_name((fk_program)prog));
    }
  }

  if (d->programs & FK_PROGRAMS_BLOCK) {
    int64_t h = d->hidden, ldx = h + (pad & 7), rows = 1 + rows_sel % d->max_rows;
    size_t elems = (size_t)((rows - 1) * ldx + h);
    uint16_t *x = malloc(elems * sizeof *x);
    FUZZ_REQUIRE(x, "oom");
    uint32_t seed = 99;
    for (size_t i = 0; i < elems; i++) x[i] = bf16_small(&seed);
    fk_io io = { .rows = rows, .x = x, .ldx = ldx };
    run_ok(plan, FK_PROG_BLOCK_PREFILL, &io, "prefill");
    io.rows = 1;
    run_ok(plan, FK_PROG_BLOCK_DECODE, &io, "decode");
    FUZZ_REQUIRE(fk_state_query(plan).tokens == rows + 1, "tokens %lld after %lld rows",
                 (long long)fk_state_query(plan).tokens, (long long)(rows + 1));
    free(x);
  }
  if (d->programs & FK_PROGRAMS_TAIL) {
    int64_t k = d->tail_in, ldf = k + ((pad >> 4) & 7), frames = 1 + frames_sel % d->max_frames;
    size_t elems = (size_t)((frames - 1) * ldf + k);
    float *feat = malloc(elems * sizeof *feat);
    FUZZ_REQUIRE(feat, "oom");
    uint32_t seed = 7;
    for (size_t i = 0; i < elems; i++) feat[i] = (float)((int)(lcg(&seed) % 2001u) - 1000) * 1e-3f;
    int64_t need = 0;
    for (int64_t f = 0; f < frames; f++) need += frame_samples(f);
    size_t es = d->flags & FK_PLAN_PCM_I16 ? 2 : 4;
    void *pcm = malloc((size_t)(need > 480 ? need : 480) * es);
    FUZZ_REQUIRE(pcm, "oom");
    fk_io io = { .rows = frames, .feat = feat, .ldfeat = ldf, .pcm = pcm, .pcm_cap = need };
    run_ok(plan, FK_PROG_TAIL, &io, "tail");
    FUZZ_REQUIRE(io.pcm_count == need, "tail wrote %lld samples, expected %lld", (long long)io.pcm_count,
                 (long long)need);
    fk_io fl = { .pcm = pcm, .pcm_cap = 480 };
    s = fk_run(plan, FK_PROG_TAIL_FLUSH, &fl, &err);
    if (frames == 1) {
      FUZZ_REQUIRE(s == FK_ESTATE && err.message[0], "flush after 1 frame: %s", fk_strerror(s));
    } else {
      FUZZ_REQUIRE(s == FK_OK && fl.pcm_count == 480, "flush: %s (%lld samples): %s", fk_strerror(s),
                   (long long)fl.pcm_count, err.message);
      FUZZ_REQUIRE(fk_state_query(plan).frames == 0, "frames after a flush");
    }
    free(pcm);
    free(feat);
  }

  /* a snapshot of this state loads back */
  size_t sb = fk_state_bytes(plan);
  void *snap = malloc(sb);
  FUZZ_REQUIRE(snap, "oom");
  FUZZ_REQUIRE(fk_state_save(plan, snap, sb, &err) == FK_OK, "state save: %s", err.message);
  FUZZ_REQUIRE(fk_state_load(plan, snap, sb, &err) == FK_OK, "state load: %s", err.message);
  free(snap);
  fk_plan_destroy(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader r = { data, size, 0 };
  fk_plan_desc d;
  memset(&d, 0, sizeof d);

  uint8_t b = u8(&r);
  if (b == 0x7f) d.programs = (uint32_t)raw(&r, 4);
  else d.programs = (b & 3u) | (b & 0x80 ? 1u << (2 + ((b >> 2) & 15)) : 0u);
  b = u8(&r);
  d.threads = b == 0x80 ? raw_i32(&r) : (int)(int8_t)b;
  b = u8(&r);
  {
    static const int tiers[4] = { FK_TIER_EXACT, FK_TIER_FAST, 2, -1 };
    d.tier = (fk_tier)(b & 0x80 ? raw_i32(&r) : tiers[b & 3]);
  }
  b = u8(&r);
  if (b & 0x80) {
    d.forbid_features = raw(&r, 8);
  } else {
    static const uint64_t bits[7] = { FK_CPU_AVX2,     FK_CPU_FMA,        FK_CPU_AVX512F,           FK_CPU_AVX512BW,
                                      FK_CPU_AVX512VL, FK_CPU_AVX512BF16, FK_CPU_ASIMD | FK_CPU_BF16 };
    for (int i = 0; i < 7; i++)
      if (b & (1u << i)) d.forbid_features |= bits[i];
  }
  b = u8(&r);
  d.flags = (b & 7u) | (b & 0x80 ? 1u << (3 + ((b >> 3) & 15)) : 0u);
  uint8_t ptrs = u8(&r);
  d.team_of = NULL;
  d.block.norm = ptrs & 1 ? w_norm : NULL;
  d.block.in_proj = ptrs & 2 ? w_in : NULL;
  d.block.conv = ptrs & 4 ? w_conv : NULL;
  d.block.conv_bias = ptrs & 8 ? w_bias : NULL;
  d.block.out_proj = ptrs & 16 ? w_out : NULL;
  d.tail.lin = ptrs & 32 ? w_lin : NULL;
  d.tail.bias = ptrs & 64 ? w_tbias : NULL;
  d.hidden = dim(&r);
  d.max_rows = dim(&r);
  d.tail_in = dim(&r);
  d.max_frames = dim(&r);
  d.norm_eps = real(&r);
  d.clip = real(&r);
  int rows_sel = u8(&r), frames_sel = u8(&r), pad = u8(&r);

  fk_error err;
  memset(&err, 0x5a, sizeof err);
  size_t bytes = 0;
  allocations = 0;
  watching = 1;
  fk_status s = fk_plan_check(&d, &bytes, &err);
  fk_status s2 = fk_plan_check(&d, NULL, NULL);
  watching = 0;
  FUZZ_REQUIRE(allocations == 0, "fk_plan_check allocated %ld times", allocations);
  FUZZ_REQUIRE(s2 == s, "status %d without err, %d with", (int)s2, (int)s);
  FUZZ_SAY("desc programs 0x%x threads %d tier %d forbid 0x%llx flags 0x%x hidden %lld max_rows %lld tail_in %lld "
           "max_frames %lld eps %g clip %g: %s%s%s",
           d.programs, d.threads, (int)d.tier, (unsigned long long)d.forbid_features, d.flags, (long long)d.hidden,
           (long long)d.max_rows, (long long)d.tail_in, (long long)d.max_frames, (double)d.norm_eps, (double)d.clip,
           fk_strerror(s), s ? " " : "", s ? err.message : "");
  if (s != FK_OK) {
    check_error(s, &err);
    /* fk_plan_create refuses the same way (it allocates nothing before its checks) */
    fk_plan *plan = (fk_plan *)(void *)&d;
    fk_error cerr;
    memset(&cerr, 0, sizeof cerr);
    fk_status c = fk_plan_create(&d, &plan, &cerr);
    FUZZ_REQUIRE(c == s && plan == NULL && !strcmp(cerr.message, err.message),
                 "fk_plan_check: %s: %s\nfk_plan_create: %s: %s (plan %p)", fk_strerror(s), err.message,
                 fk_strerror(c), cerr.message, (void *)plan);
    return 0;
  }
  FUZZ_REQUIRE(bytes > 0, "FK_OK with an arena of 0 bytes");

  int block = (d.programs & FK_PROGRAMS_BLOCK) != 0, tail = (d.programs & FK_PROGRAMS_TAIL) != 0;
  if (d.threads > CAP_THREADS) return 0;
  if (block && (d.hidden > CAP_DIM || d.max_rows > CAP_ROWS)) return 0;
  if (tail && (d.tail_in > CAP_DIM || d.max_frames > CAP_ROWS)) return 0;
  FUZZ_SAY("  created and run (arena %zu bytes)", bytes);
  create_and_run(&d, bytes, rows_sel, frames_sel, pad);
  return 0;
}
