/* tests/model/session.c: see session.h. */
#include "session.h"

#include <stdlib.h>

#include "fk_lfm2.h"
#include "model_desc.h"

static int failed(fk_status s, const fk_error *err) {
  if (s == FK_OK) return 0;
  fprintf(stderr, "fkt_session: %s: %s\n", fk_strerror(s), err->message);
  return 1;
}

/* the residual stream after every step that writes it, chained */
static void observe(void *ctx, const fk_plan *p, const fk_step *st) {
  uint64_t *h = ctx;
  const fk_stack_rt *t = st->ctx; /* a model family's record begins with its stack */
  int64_t rows = fk_lfm2_rows(p, t);
  *h = fkt_fnv(t->res, (size_t)(rows * t->h) * 2, *h);
}

static int snapshot(fk_plan *p, uint64_t *h) {
  fk_error err;
  size_t len = fk_state_bytes(p);
  unsigned char *snap = malloc(len);
  if (!snap || failed(fk_state_save(p, snap, len, &err), &err)) {
    free(snap);
    return 1;
  }
  *h = fkt_fnv(snap, len, 0);
  free(snap);
  return 0;
}

int fkt_session_lm_run(fk_plan *p, int64_t vocab, FILE *out) {
  static float logits[1 << 12];
  if (vocab > (int64_t)(sizeof logits / sizeof logits[0])) return -1;
  fk_error err;
  uint64_t steps = 0, state = 0;
  fk_plan_set_trace(p, observe, &steps);
  int32_t prompt[12];
  for (int i = 0; i < 12; i++) prompt[i] = (int32_t)((i * 389 + 17) % vocab);
  fk_io io = { .rows = 12, .tokens = prompt, .logits = logits };
  int bad = 0;
  for (int c = 0; c <= 8 && !bad; c++) {
    bad = failed(fk_run(p, c == 0 ? FK_PROG_LM_PREFILL : FK_PROG_LM_DECODE, &io, &err), &err);
    fprintf(out, "lm c%d next %d logits %016llx steps %016llx\n", c, (int)io.next,
            (unsigned long long)fkt_fnv(logits, (size_t)vocab * 4, 0), (unsigned long long)steps);
    prompt[0] = io.next;
    io = (fk_io){ .rows = 1, .tokens = prompt, .logits = logits };
  }
  /* sampled continuation: temperature 40, top-k 50, a fixed seed; the counter commits per draw */
  fk_sampler_seed(p, 0x5eed);
  static const fk_sampling smp = { 40.0f, 50 };
  fprintf(out, "lm sampled");
  for (int c = 0; c < 8 && !bad; c++) {
    io = (fk_io){ .rows = 1, .tokens = prompt, .sampling = &smp };
    bad = failed(fk_run(p, FK_PROG_LM_DECODE, &io, &err), &err);
    fprintf(out, " %d", (int)io.next);
    prompt[0] = io.next;
  }
  fprintf(out, " draws %llu\n", (unsigned long long)fk_state_query(p).draws);
  if (!bad) bad = snapshot(p, &state);
  fprintf(out, "lm state %zu %016llx\n", fk_state_bytes(p), (unsigned long long)state);
  fk_plan_set_trace(p, NULL, NULL);
  return bad ? -1 : 0;
}

int fkt_session_detok_run(fk_plan *p, int64_t codebook_vocab, FILE *out) {
  static float pcm[12 * 1920 + 480];
  fk_error err;
  uint64_t steps = 0, state = 0;
  fk_plan_set_trace(p, observe, &steps);
  int64_t n = 0;
  int bad = 0;
  for (int f = 0; f < 12 && !bad; f++) {
    int32_t codes[8];
    for (int c = 0; c < 8; c++) codes[c] = (int32_t)((f * 8 + c) * 613 % codebook_vocab);
    fk_io io = { .rows = 1, .codes = codes, .pcm = pcm + n, .pcm_cap = 12 * 1920 + 480 - n };
    bad = failed(fk_run(p, FK_PROG_DETOK, &io, &err), &err);
    n += io.pcm_count;
  }
  if (!bad) bad = snapshot(p, &state);
  fk_io io = { .pcm = pcm + n, .pcm_cap = 480 };
  if (!bad) bad = failed(fk_run(p, FK_PROG_DETOK_FLUSH, &io, &err), &err);
  n += io.pcm_count;
  fprintf(out, "detok steps %016llx\n", (unsigned long long)steps);
  fprintf(out, "detok pcm %lld %016llx\n", (long long)n, (unsigned long long)fkt_fnv(pcm, (size_t)n * 4, 0));
  fprintf(out, "detok state %016llx\n", (unsigned long long)state);
  fk_plan_set_trace(p, NULL, NULL);
  return bad ? -1 : 0;
}

int fkt_session_lm(const fk_plan_desc *d, FILE *out) {
  fk_error err;
  fk_plan *p;
  if (failed(fk_plan_create(d, &p, &err), &err)) return -1;
  int r = fkt_session_lm_run(p, d->lm.vocab, out);
  fk_plan_destroy(p);
  return r;
}

int fkt_session_detok(const fk_plan_desc *d, FILE *out) {
  fk_error err;
  fk_plan *p;
  if (failed(fk_plan_create(d, &p, &err), &err)) return -1;
  int r = fkt_session_detok_run(p, d->detok.codebook_vocab, out);
  fk_plan_destroy(p);
  return r;
}
