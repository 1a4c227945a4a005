/* tests/leaves/cases_istft.c: contract cases of the istft forms: frames 0, 1, 2, 3 and later
 * (the trim and the ring segments), zero and random ring/env states, the clip on and off,
 * log-magnitudes across the exp range (overflow to inf, underflow), large phases, NaN payloads,
 * infinities; flush after T frames (T = 2, 3 and later: the envelope tables). */
#include <stdio.h>
#include <string.h>

#include "cases.h"

enum { CANARY = 0x7fa5a5a5u };

static fkh_call *st_case(fkt_list *l, const char *form, const char *name, int64_t t, int zero_state, fkh_rng *rng) {
  fkh_call *c = fkt_push(l, form, name);
  const int frame_form = strstr(form, "frame") != NULL, i16 = strstr(form, "i16") != NULL;
  fkh_set_i64(c, "frame", t);
  if (frame_form) {
    float *x = fkh_set_buf(c, "x", 1282);
    for (int k = 0; k < 641; k++) x[k] = (float)fkh_range(rng, -1200, 300) / 100.0f;       /* log-magnitudes */
    for (int k = 641; k < 1282; k++) x[k] = fkh_f32(rng, -6, 2);                             /* phases */
    fkh_set_f32(c, "clip", fkt_f32(0x7f800000u));                                            /* off */
    fkh_set_buf(c, "work", 3888);
  }
  float *ring = fkh_set_buf(c, "ring", 1280);
  for (int i = 0; i < 1280; i++) ring[i] = zero_state ? 0.0f : fkh_f32(rng, -3, 2);
  int ny = frame_form ? 320 : 480;
  if (i16) {
    uint16_t *y = fkh_set_buf(c, "y", (size_t)ny);
    for (int i = 0; i < ny; i++) y[i] = 0x7fa5;
  } else {
    float *y = fkh_set_buf(c, "y", (size_t)ny);
    for (int i = 0; i < ny; i++) y[i] = fkt_f32(CANARY);
  }
  return c;
}

int fkt_istft_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x69737466u };
  char name[96];
  const int frame_form = strstr(form, "frame") != NULL;
  for (int64_t t = 0; t <= 9; t++)
    for (int zs = 0; zs <= 1; zs++) {
      snprintf(name, sizeof name, "t%lld_%s", (long long)t, zs ? "zero_state" : "state");
      if (!frame_form && t < 2) continue;
      st_case(&l, form, name, t, zs, &rng);
    }
  st_case(&l, form, "t1000003", 1000003, 0, &rng);
  if (frame_form) {
    fkh_call *c = st_case(&l, form, "clip100", 5, 0, &rng);
    fkh_set_f32(c, "clip", 100.0f);
    float *x = fkh_buf_of(c, "x");
    for (int k = 0; k < 641; k += 3) x[k] = 6.0f;                 /* e^6 = 403 > 100 */
    c = st_case(&l, form, "exp_edges", 6, 0, &rng);
    x = fkh_buf_of(c, "x");
    x[3] = 88.0f, x[4] = 89.0f, x[5] = -104.0f, x[6] = -87.5f, x[7] = fkt_f32(0xff800000u), x[8] = 0.0f;
    c = st_case(&l, form, "big_phases", 7, 0, &rng);
    x = fkh_buf_of(c, "x");
    for (int k = 641; k < 1282; k++) x[k] = fkh_f32(&rng, 10, 26);
    c = st_case(&l, form, "nan_bin", 8, 0, &rng);
    ((float *)fkh_buf_of(c, "x"))[20] = fkt_f32(0x7fc12345u);
  }
  for (int i = 0; i < 200; i++) {
    int64_t t = fkh_range(&rng, frame_form ? 0 : 2, 400);
    snprintf(name, sizeof name, "random_%d_t%lld", i, (long long)t);
    st_case(&l, form, name, t, (int)fkh_range(&rng, 0, 1), &rng);
  }
  /* NaNs meeting NaNs (issue 18): NaN log-magnitudes and phases of every kind in several bins
   * (their NaNs meet in the spectrum's product and the FFT's butterflies), an infinite magnitude
   * against a zero twiddle (inf * 0) beside them; the ring (the state) holding NaNs of every kind
   * and infinities of both signs where the frame adds (inf - inf) and where the output divides
   * (the flush too). The ring and y store the canonical NaN whatever met. */
  {
    fkh_rng nrng = { 0x6e616e69u };
    static const uint32_t nans[] = { 0x7fc12345u, 0xff812345u, 0x7f800001u, 0xffc00000u, 0x7fa00003u, 0xffe54321u };
    for (int64_t t = frame_form ? 1 : 2; t <= 5; t += 2) {
      snprintf(name, sizeof name, "nan_meet_t%lld", (long long)t);
      fkh_call *c = st_case(&l, form, name, t, 0, &nrng);
      float *ring = fkh_buf_of(c, "ring");
      for (int i = 0; i < 1280; i += 97) ring[i] = fkt_f32(nans[(i / 97) % 6]);
      ring[(t & 3) * 320 + 200] = fkt_f32(0x7f800000u), ring[((t + 1) & 3) * 320 + 100] = fkt_f32(0xff800000u);
      if (frame_form) {
        float *x = fkh_buf_of(c, "x");
        x[12] = fkt_f32(0x7fc12345u), x[641 + 12] = fkt_f32(0x7f800001u);    /* one bin: both NaN */
        x[640 - 12] = fkt_f32(0xff812345u), x[641 + 33] = fkt_f32(0xffe54321u);
        x[100] = 89.0f, x[641 + 100] = 0.0f;                                 /* inf * sin 0 */
      }
    }
  }
  *out = l.calls;
  return l.n;
}
