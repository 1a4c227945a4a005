/* tests/install/host.c: a host of the *installed* library (tests/install_host.sh builds it through
 * find_package and through pkg-config). One plan of both families: a 3-row prefill, a decode, a
 * 3-frame tail and its flush; prints the library's version, the stamp of every phase and a checksum
 * of the outputs. Weights and rows are rounded to bf16 by fk_bf16_from_f32 (exact values here).
 * Exit 0 only when every call returns FK_OK and the tail wrote 0 + 160 + 320 and the flush 480. */
#include <math.h>
#include <stdio.h>

#include <flashkern.h>

enum { H = 64, ROWS = 4, TAIL_IN = 16, FRAMES = 3 };

static uint16_t norm[H], in_proj[3 * H * H], conv[3 * H], out_proj[H * H], lin[FK_TAIL_SPEC * TAIL_IN];
static float bias[FK_TAIL_SPEC], feat[FRAMES * TAIL_IN], pcm[640 + 480];
static uint16_t x[ROWS * H];

static void fill(uint16_t *w, int n) { /* 2^-7 * (1 + m / 128): bf16 0.0078 .. 0.0155, deterministic */
  for (int i = 0; i < n; i++) w[i] = fk_bf16_from_f32(0x1p-7f * (1.0f + (float)(i * 7 % 64) / 128.0f));
}

static int ok(fk_status s, const fk_error *err, const char *what) {
  if (s == FK_OK) return 1;
  fprintf(stderr, "host: %s: %s: %s\n", what, fk_strerror(s), err->message);
  return 0;
}

static uint64_t fnv(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

int main(void) {
  fill(norm, H), fill(in_proj, 3 * H * H), fill(conv, 3 * H), fill(out_proj, H * H), fill(lin, FK_TAIL_SPEC * TAIL_IN);
  for (int i = 0; i < ROWS * H; i++) x[i] = fk_bf16_from_f32(1.0f + (float)(i * 13 % 128) / 128.0f); /* 1 .. 2 */
  printf("flashkern %s (header %s)\n", fk_version(), FK_VERSION_STRING);
  for (int i = 0; i < FK_TAIL_SPEC; i++) bias[i] = (float)(i % 17 - 8) * 0.01f;
  for (int i = 0; i < FRAMES * TAIL_IN; i++) feat[i] = (float)(i % 11 - 5) * 0.1f;

  fk_plan_desc d = { .programs = FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, .threads = 2, .tier = FK_TIER_EXACT,
                     .hidden = H, .max_rows = ROWS, .norm_eps = 1e-5f,
                     .block = { norm, in_proj, conv, NULL, out_proj },
                     .tail_in = TAIL_IN, .max_frames = FRAMES, .clip = INFINITY, .tail = { lin, bias } };
  fk_plan *p;
  fk_error err;
  if (!ok(fk_plan_create(&d, &p, &err), &err, "fk_plan_create")) return 1;

  fk_io prefill = { .rows = 3, .x = x, .ldx = H };
  fk_io decode = { .rows = 1, .x = x + 3 * H, .ldx = H };
  fk_io tail = { .rows = FRAMES, .feat = feat, .ldfeat = TAIL_IN, .pcm = pcm, .pcm_cap = 640 };
  int good = ok(fk_run(p, FK_PROG_BLOCK_PREFILL, &prefill, &err), &err, "block_prefill") &&
             ok(fk_run(p, FK_PROG_BLOCK_DECODE, &decode, &err), &err, "block_decode") &&
             ok(fk_run(p, FK_PROG_TAIL, &tail, &err), &err, "tail");
  fk_io flush = { .pcm = pcm + tail.pcm_count, .pcm_cap = 480 };
  good = good && ok(fk_run(p, FK_PROG_TAIL_FLUSH, &flush, &err), &err, "tail_flush");

  for (int prog = 0; good && prog < FK_PROG_COUNT; prog++) {
    for (int i = 0; i < fk_program_phases(p, (fk_program)prog); i++) {
      fk_phase_info ph;
      if (!ok(fk_phase_query(p, (fk_program)prog, i, &ph, &err), &err, "fk_phase_query")) good = 0;
      else printf("%-13s %-9s %s\n", fk_program_name((fk_program)prog), ph.name, ph.symbol);
    }
  }
  fk_plan_destroy(p);
  if (!good) return 1;

  uint64_t h = fnv(x, sizeof x, 0xcbf29ce484222325ull);
  h = fnv(pcm, (size_t)(tail.pcm_count + flush.pcm_count) * sizeof pcm[0], h);
  printf("pcm samples: tail %lld, flush %lld; checksum %016llx\n", (long long)tail.pcm_count,
         (long long)flush.pcm_count, (unsigned long long)h);
  if (tail.pcm_count != 480 || flush.pcm_count != 480) {
    fprintf(stderr, "host: expected 480 tail and 480 flush samples\n");
    return 1;
  }
  return 0;
}
