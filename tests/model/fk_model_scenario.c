/* tests/model/fk_model_scenario.c: one fixed session of the model programs, printed as digests;
 * test_model runs it natively at several team sizes and under qemu-aarch64 (-cpu max,
 * neoverse-n1) and compares the lines: the exact tier is the same bits on both ISAs and for
 * every team size.
 *   lm: a 12-token prompt, then 8 greedy decode steps; per call the next token, a digest of the
 *       logits and a digest of every step's residual stream (each layer boundary); then 8 sampled
 *       steps (temperature 40, top-k 50, seed 0x5eed); at the end the state snapshot's digest (KV
 *       caches, carries, position, the sampler's counter).
 *   the same LM with a sliding window of 8 (a ring cache; the window truncates from position 8);
 *   detok: 12 code frames, one per call, then the flush: the PCM's digest and the state's.
 * Usage: fk_model_scenario THREADS [lm|detok|both] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fk_lfm2.h"
#include "model_desc.h"

static void check(fk_status s, const fk_error *err) {
  if (s == FK_OK) return;
  fprintf(stderr, "fk_model_scenario: %s: %s\n", fk_strerror(s), err->message);
  exit(1);
}

/* the residual stream after every step that writes it, chained */
static void observe(void *ctx, const fk_plan *p, const fk_step *st) {
  uint64_t *h = ctx;
  const fk_stack_rt *t = st->ctx; /* a model family's record begins with its stack */
  int64_t rows = fk_lfm2_rows(p, t);
  *h = fkt_fnv(t->res, (size_t)(rows * t->h) * 2, *h);
}

static uint64_t snapshot(fk_plan *p) {
  fk_error err;
  size_t len = fk_state_bytes(p);
  unsigned char *snap = malloc(len);
  check(fk_state_save(p, snap, len, &err), &err);
  uint64_t h = fkt_fnv(snap, len, 0);
  free(snap);
  return h;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  const char *which = argc > 2 ? argv[2] : "both";
  fkt_models m;
  if (fkt_models_make(&m) != 0) return 1;
  fk_error err;
  for (int win = 0; win <= 8 && strcmp(which, "detok") != 0; win += 8) {
    /* window 8: the ring cache of W + max_rows - 1 slots, decode through the prefill ring form */
    fk_plan_desc d = fkt_models_desc(&m, FK_PROGRAMS_LM, threads);
    d.lm.stack.window = win;
    if (win) printf("lm window %d\n", win);
    fk_plan *p;
    check(fk_plan_create(&d, &p, &err), &err);
    uint64_t steps = 0;
    fk_plan_set_trace(p, observe, &steps);
    int32_t prompt[12];
    for (int i = 0; i < 12; i++) prompt[i] = (int32_t)((i * 389 + 17) % d.lm.vocab);
    static float logits[1 << 12];
    fk_io io = { .rows = 12, .tokens = prompt, .logits = logits };
    for (int c = 0; c <= 8; c++) {
      check(fk_run(p, c == 0 ? FK_PROG_LM_PREFILL : FK_PROG_LM_DECODE, &io, &err), &err);
      printf("lm c%d next %d logits %016llx steps %016llx\n", c, (int)io.next,
             (unsigned long long)fkt_fnv(logits, (size_t)d.lm.vocab * 4, 0), (unsigned long long)steps);
      prompt[0] = io.next;
      io = (fk_io){ .rows = 1, .tokens = prompt, .logits = logits };
    }
    /* sampled continuation: temperature 40, top-k 50, a fixed seed; the counter commits per draw */
    fk_sampler_seed(p, 0x5eed);
    static const fk_sampling smp = { 40.0f, 50 };
    printf("lm sampled");
    for (int c = 0; c < 8; c++) {
      io = (fk_io){ .rows = 1, .tokens = prompt, .sampling = &smp };
      check(fk_run(p, FK_PROG_LM_DECODE, &io, &err), &err);
      printf(" %d", (int)io.next);
      prompt[0] = io.next;
    }
    printf(" draws %llu\n", (unsigned long long)fk_state_query(p).draws);
    printf("lm state %zu %016llx\n", fk_state_bytes(p), (unsigned long long)snapshot(p));
    fk_plan_destroy(p);
  }
  if (strcmp(which, "lm") != 0) {
    fk_plan_desc d = fkt_models_desc(&m, FK_PROGRAMS_DETOK, threads);
    fk_plan *p;
    check(fk_plan_create(&d, &p, &err), &err);
    uint64_t steps = 0;
    fk_plan_set_trace(p, observe, &steps);
    static float pcm[12 * 1920 + 480];
    int64_t n = 0;
    for (int f = 0; f < 12; f++) {
      int32_t codes[8];
      for (int c = 0; c < 8; c++) codes[c] = (int32_t)((f * 8 + c) * 613 % d.detok.codebook_vocab);
      fk_io io = { .rows = 1, .codes = codes, .pcm = pcm + n, .pcm_cap = 12 * 1920 + 480 - n };
      check(fk_run(p, FK_PROG_DETOK, &io, &err), &err);
      n += io.pcm_count;
    }
    uint64_t state = snapshot(p);
    fk_io io = { .pcm = pcm + n, .pcm_cap = 480 };
    check(fk_run(p, FK_PROG_DETOK_FLUSH, &io, &err), &err);
    n += io.pcm_count;
    printf("detok steps %016llx\n", (unsigned long long)steps);
    printf("detok pcm %lld %016llx\n", (long long)n, (unsigned long long)fkt_fnv(pcm, (size_t)n * 4, 0));
    printf("detok state %016llx\n", (unsigned long long)state);
    fk_plan_destroy(p);
  }
  fkt_models_free(&m);
  return 0;
}
