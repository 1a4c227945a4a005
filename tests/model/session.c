/* tests/model/session.c: see session.h. */
#include "session.h"

#include <stdlib.h>
#include <string.h>

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

/* ---- one call against row by row (the GEMM path) ------------------------------------------------ */

enum { GEMM_ROWS_MAX = 64 };

/* Per row of the residual stream, every step's bytes of that row chained, wherever the row sits
 * in its call: a call of many rows and calls of one row give the same table when the rows are
 * the same bits at every step. */
typedef struct row_digests {
  uint64_t h[GEMM_ROWS_MAX];
  int64_t first;   /* the call's first unit (token or frame) */
  int flip_row;    /* >= 0: flip a bit of that row at the third step (the gate's perturbation) */
  int step;
} row_digests;

static void observe_rows(void *ctx, const fk_plan *p, const fk_step *st) {
  row_digests *d = ctx;
  const fk_stack_rt *t = st->ctx;
  int64_t rows = fk_lfm2_rows(p, t), base = d->first * t->rep;
  if (d->flip_row >= 0 && d->step++ == 2 && d->flip_row < rows) t->res[d->flip_row * t->h + 5] ^= 1;
  for (int64_t r = 0; r < rows && base + r < GEMM_ROWS_MAX; r++)
    d->h[base + r] = fkt_fnv(t->res + r * t->h, (size_t)t->h * 2, d->h[base + r]);
}

/* Runs units [0, n) on p in calls of `per` units (prefill for the LM, frames for the detokenizer),
 * then (LM) 3 greedy decode steps; the row table, the last logits / the PCM, the state's digest. */
typedef struct gemm_out {
  row_digests rows;
  uint64_t tail, state;
  int32_t next[4];
} gemm_out;

static int gemm_run(fk_plan *p, int lm, int64_t n, int64_t per, int64_t vocab, int flip_row, gemm_out *o) {
  static float buf[1 << 15];
  fk_error err;
  memset(o, 0, sizeof *o);
  o->rows.flip_row = flip_row;
  fk_plan_set_trace(p, observe_rows, &o->rows);
  int32_t units[GEMM_ROWS_MAX * 8];
  for (int64_t i = 0; i < n * (lm ? 1 : 8); i++) units[i] = (int32_t)((i * 389 + 17) % vocab);
  int64_t pcm = 0;
  int bad = 0;
  fk_io io;
  for (int64_t u = 0; u < n && !bad; u += per) {
    int64_t cnt = n - u < per ? n - u : per;
    o->rows.first = u;
    if (lm) io = (fk_io){ .rows = cnt, .tokens = units + u, .logits = buf };
    else io = (fk_io){ .rows = cnt, .codes = units + 8 * u, .pcm = buf + pcm, .pcm_cap = (int64_t)(sizeof buf / 4) - pcm };
    bad = failed(fk_run(p, lm ? FK_PROG_LM_PREFILL : FK_PROG_DETOK, &io, &err), &err);
    pcm += lm ? 0 : io.pcm_count;
  }
  fk_plan_set_trace(p, NULL, NULL);
  if (lm) {
    o->next[0] = io.next;
    o->tail = fkt_fnv(buf, (size_t)vocab * 4, 0);
    for (int c = 1; c < 4 && !bad; c++) {
      int32_t tok = o->next[c - 1];
      io = (fk_io){ .rows = 1, .tokens = &tok, .logits = buf };
      bad = failed(fk_run(p, FK_PROG_LM_DECODE, &io, &err), &err);
      o->next[c] = io.next;
      o->tail = fkt_fnv(buf, (size_t)vocab * 4, o->tail);
    }
  } else {
    o->tail = fkt_fnv(buf, (size_t)pcm * 4, 0);
  }
  if (!bad) bad = snapshot(p, &o->state);
  return bad ? -1 : 0;
}

int fkt_session_gemm(const fk_plan_desc *d, int lm, int64_t n, int flip_row, FILE *out) {
  int64_t vocab = lm ? d->lm.vocab : d->detok.codebook_vocab, rep = lm ? 1 : 6;
  if (n < 1 || n * rep > GEMM_ROWS_MAX) return -1;
  fk_error err;
  fk_plan *p;
  if (failed(fk_plan_create(d, &p, &err), &err)) return -1;
  gemm_out *one = malloc(sizeof *one), *by = malloc(sizeof *by);
  int bad = !one || !by || gemm_run(p, lm, n, n, vocab, flip_row, one) != 0;
  if (!bad) {
    fk_plan_destroy(p);
    p = NULL;
    bad = failed(fk_plan_create(d, &p, &err), &err);
  }
  if (!bad) bad = gemm_run(p, lm, n, 1, vocab, -1, by) != 0;
  const char *what = lm ? "lm" : "detok";
  int differ = 0;
  int64_t first = -1, count = 0;
  for (int64_t r = 0; !bad && r < n * rep; r++) {
    if (one->rows.h[r] != by->rows.h[r]) {
      if (first < 0) first = r;
      count++;
    }
  }
  if (count) {
    fprintf(out, "gemm %s: the residual stream of %lld of %lld rows (the first: row %lld) differs between one call and "
            "one %s per call\n", what, (long long)count, (long long)(n * rep), (long long)first, lm ? "row" : "frame");
    differ = 1;
  }
  if (!bad && (one->tail != by->tail || memcmp(one->next, by->next, sizeof one->next) != 0)) {
    fprintf(out, "gemm %s: the %s differ between one call and one %s per call\n", what,
            lm ? "logits or tokens" : "PCM", lm ? "row" : "frame");
    differ = 1;
  }
  if (!bad && one->state != by->state) {
    fprintf(out, "gemm %s: the state (KV caches, carries) differs between one call and one %s per call\n", what,
            lm ? "row" : "frame");
    differ = 1;
  }
  if (!bad && !differ) {
    uint64_t h = fkt_fnv(one->rows.h, sizeof one->rows.h, one->tail);
    fprintf(out, "gemm %s %lld rows: one call == one %s per call (rows, %s, state) %016llx %016llx\n", what,
            (long long)(n * rep), lm ? "row" : "frame", lm ? "logits, 3 decodes" : "PCM", (unsigned long long)h,
            (unsigned long long)one->state);
  }
  fk_plan_destroy(p);
  free(one);
  free(by);
  return bad ? -1 : differ ? 1 : 0;
}
