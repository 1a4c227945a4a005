/* bench/fft_peer_frame.c: one frame of the LFM2.5 detokenizer's ISTFT written the way a user
 * would without flashkern (bench/fkb_fft.h): libm expf/cosf/sinf for the polar step, FFTW's
 * single-precision c2r (planned once, FFTW_MEASURE), then window, overlap-add and the envelope
 * divide in plain C loops. Built -O2 (no -march): what a C project's default release flags give.
 *
 * Conventions a careful user would pick, all in the peer's favour: the irfft's 1/N is folded into
 * the window table (no separate pass), the envelope of every output position is a table computed
 * once in double (it depends only on how many frames cover the position), the c2r plan destroys
 * its input (FFTW's default for c2r: the spectrum is rewritten by the next frame anyway). The
 * overlap-add buffer is the straightforward one: 1280 samples, position 0 the oldest, shifted by
 * 320 (memmove) after each frame. */
#include <fftw3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fkb_fft.h"

enum { N = 1280, HOP = 320, BINS = N / 2 + 1 };

struct fkb_peer_frame {
  fftwf_plan plan;
  fftwf_complex *spec; /* BINS: the c2r input (destroyed by each execution) */
  float *frame;        /* N: the c2r output */
  float *ola;          /* N: overlap-add sums; ola[0] is the oldest position not yet written out */
  float *win;          /* N: periodic Hann / N */
  float *env;          /* 4 x HOP: envelope of the output segment of frame t, row min(t, 3) */
  int64_t t;
};

static const double PI = 3.14159265358979323846;

fkb_peer_frame *fkb_peer_frame_create(unsigned fftw_flags, char *plan_desc, size_t len) {
  fkb_peer_frame *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->spec = fftwf_malloc(sizeof(fftwf_complex) * BINS);
  p->frame = fftwf_malloc(sizeof(float) * N);
  p->ola = fftwf_malloc(sizeof(float) * N);
  p->win = fftwf_malloc(sizeof(float) * N);
  p->env = fftwf_malloc(sizeof(float) * 4 * HOP);
  if (!p->spec || !p->frame || !p->ola || !p->win || !p->env) {
    fkb_peer_frame_destroy(p);
    return NULL;
  }
  p->plan = fftwf_plan_dft_c2r_1d(N, p->spec, p->frame, fftw_flags);
  if (!p->plan) {
    fkb_peer_frame_destroy(p);
    return NULL;
  }
  if (plan_desc && len) {
    char *s = fftwf_sprint_plan(p->plan);
    size_t at = 0;
    for (const char *c = s; c && *c && at + 1 < len; c++) /* one line: runs of whitespace -> one space */
      if (!(*c == ' ' || *c == '\n') || (at && plan_desc[at - 1] != ' ')) plan_desc[at++] = *c == '\n' ? ' ' : *c;
    plan_desc[at] = 0;
    free(s);
  }
  double hann2[N];
  for (int n = 0; n < N; n++) {
    double h = 0.5 - 0.5 * cos(2.0 * PI * (double)n / (double)N);
    p->win[n] = (float)(h / (double)N);
    hann2[n] = h * h;
  }
  /* the output segment of frame t is covered by frames max(0, t - 3) .. t, at window offsets
   * 0 (frame t), 320, 640, 960 (frame t - 3) */
  for (int c = 0; c < 4; c++)
    for (int i = 0; i < HOP; i++) {
      double e = 0;
      for (int f = 0; f <= c; f++) e += hann2[HOP * f + i];
      p->env[c * HOP + i] = (float)e;
    }
  fkb_peer_frame_reset(p);
  return p;
}

void fkb_peer_frame_reset(fkb_peer_frame *p) {
  memset(p->ola, 0, sizeof(float) * N);
  p->t = 0;
}

int fkb_peer_frame_run(fkb_peer_frame *p, const float *x, float *y, float clip) {
  for (int k = 0; k < BINS; k++) {
    float mag = expf(x[k]);
    if (mag > clip) mag = clip;
    float ph = x[BINS + k];
    p->spec[k][0] = mag * cosf(ph);
    p->spec[k][1] = mag * sinf(ph);
  }
  fftwf_execute(p->plan);
  for (int n = 0; n < N; n++) p->ola[n] += p->frame[n] * p->win[n];
  int from = p->t == 0 ? HOP : (p->t == 1 ? HOP / 2 : 0);
  const float *e = p->env + (p->t < 3 ? p->t : 3) * HOP;
  for (int i = from; i < HOP; i++) y[i - from] = p->ola[i] / e[i];
  memmove(p->ola, p->ola + HOP, sizeof(float) * (N - HOP));
  memset(p->ola + N - HOP, 0, sizeof(float) * HOP);
  p->t++;
  return HOP - from;
}

void fkb_peer_frame_destroy(fkb_peer_frame *p) {
  if (!p) return;
  if (p->plan) fftwf_destroy_plan(p->plan);
  fftwf_free(p->spec);
  fftwf_free(p->frame);
  fftwf_free(p->ola);
  fftwf_free(p->win);
  fftwf_free(p->env);
  free(p);
}

const char *fkb_peer_frame_flags(void) {
  return "gcc " __VERSION__ ", -O2";
}
