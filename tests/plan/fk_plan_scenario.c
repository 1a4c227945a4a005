/* tests/plan/fk_plan_scenario.c: one fixed session of every program, printed as digests; the
 * plan suite runs it natively and under qemu-aarch64 and compares the lines (the exact tier is
 * the same bits on both ISAs). Usage: fk_plan_scenario THREADS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_model.h"

static void check(fk_status s, const fk_error *err) {
  if (s == FK_OK) return;
  fprintf(stderr, "fk_plan_scenario: %s: %s\n", fk_strerror(s), err->message);
  exit(1);
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  enum { H = 200, TAIL_IN = 72, ROWS = 11, FRAMES = 6 };
  fkp_model m;
  if (fkp_model_make(&m, H, TAIL_IN, 1, 2026) != 0) return 1;
  fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, threads, 8, 4);
  d.clip = 100.0f;
  fk_plan *p;
  fk_error err;
  check(fk_plan_create(&d, &p, &err), &err);
  static uint16_t x[ROWS * H];
  static float feat[FRAMES * TAIL_IN], pcm[FRAMES * 320 + 480];
  fkp_fill_bf16(x, ROWS * H, 2.0f, 1);
  fkp_fill_f32(feat, FRAMES * TAIL_IN, 1.0f, 2);
  static const int calls[] = { 8, 1, 1, 1 };
  int64_t at = 0;
  for (int i = 0; i < 4; i++) {
    fk_io io = { .rows = calls[i], .x = x + at * H, .ldx = H };
    check(fk_run(p, calls[i] == 1 ? FK_PROG_BLOCK_DECODE : FK_PROG_BLOCK_PREFILL, &io, &err), &err);
    at += calls[i];
  }
  int64_t n = 0;
  for (int f = 0; f < FRAMES; f += 3) {
    fk_io io = { .rows = 3, .feat = feat + f * TAIL_IN, .ldfeat = TAIL_IN, .pcm = pcm + n,
                 .pcm_cap = (int64_t)(sizeof pcm / sizeof pcm[0]) - n };
    check(fk_run(p, FK_PROG_TAIL, &io, &err), &err);
    n += io.pcm_count;
  }
  size_t len = fk_state_bytes(p);
  unsigned char *snap = malloc(len);
  check(fk_state_save(p, snap, len, &err), &err);
  fk_io io = { .pcm = pcm + n, .pcm_cap = 480 };
  check(fk_run(p, FK_PROG_TAIL_FLUSH, &io, &err), &err);
  n += io.pcm_count;
  printf("block %016llx\n", (unsigned long long)fkp_fnv(x, sizeof x, 0));
  printf("pcm %lld %016llx\n", (long long)n, (unsigned long long)fkp_fnv(pcm, (size_t)n * 4, 0));
  printf("state %zu %016llx\n", len, (unsigned long long)fkp_fnv(snap, len, 0));
  free(snap);
  fk_plan_destroy(p);
  fkp_model_free(&m);
  return 0;
}
