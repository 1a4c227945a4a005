/* tests/leaves/cases_vmath.c: contract cases of the vmath forms (exp, sincos, polar): tails,
 * every exponent range, the overflow and underflow edges of exp, large phases, NaN payloads,
 * infinities, signed zeros, subnormals. */
#include <stdio.h>
#include <string.h>

#include "cases.h"

enum { CANARY = 0x7fa5a5a5u };

/* Inputs drawn as sign | exponent in [emin, emax] | random mantissa; outputs canary-filled. */
static fkh_call *vm_case(fkt_list *l, const char *form, const char *name, int64_t n, fkh_rng *rng, int emin, int emax) {
  fkh_call *c = fkt_push(l, form, name);
  fkh_set_i64(c, "n", n);
  const fkh_form *fm = &fkh_forms[c->form];
  for (int i = 0; i < fm->nfields; i++) {
    const fkh_field *fd = &fm->fields[i];
    if (fd->kind != FK_FIELD_PTR) continue;
    float *b = fkh_set_buf(c, fd->name, (size_t)(n ? n : 1));
    for (int64_t k = 0; k < (n ? n : 1); k++) b[k] = fd->dir == FK_DIR_IN ? fkh_f32(rng, emin, emax) : fkt_f32(CANARY);
  }
  return c;
}

/* the first input field of the form ("x", or "m" and "p" for polar) */
static float *in0(fkh_call *c) { return fkh_field_index(c, "x") >= 0 ? fkh_buf_of(c, "x") : fkh_buf_of(c, "p"); }

int fkt_vmath_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x766d6174u };
  char name[96];
  const int is_exp = !strcmp(form, "vmath_exp"), is_polar = !strcmp(form, "vmath_polar");
  for (int64_t n = 0; n <= 40; n++) {
    snprintf(name, sizeof name, "n%lld", (long long)n);
    vm_case(&l, form, name, n, &rng, -4, 4);
  }
  /* every exponent band: exp over its whole finite range (overflow above 88.72, subnormal
   * results below -87.34, zero below -103.97), sin/cos up to 2^24 and beyond (clamped) */
  for (int e = -149; e <= 127; e += 3) {
    snprintf(name, sizeof name, "band_e%d", e);
    vm_case(&l, form, name, 37, &rng, e, e);
  }
  /* the edges of exp: overflow, the last finite results, subnormal results, underflow */
  static const uint32_t exp_edges[] = {
    0x42b17217u, 0x42b17218u, 0x42b17219u, 0x42b20000u, 0x42b1ffffu, 0xc2aeac4fu, 0xc2aeac50u, 0xc2aeac51u,
    0xc2ce8ec0u, 0xc2ce8ed0u, 0xc2cff1b4u, 0xc2cff1b5u, 0xc2d00000u, 0xc2d00001u, 0x3f800000u, 0xbf800000u,
    0x00000001u, 0x80000001u, 0x007fffffu, 0x33800000u, 0xb3800000u, 0x3eb17218u, 0xbeb17218u, 0x3f317218u };
  fkh_call *c = vm_case(&l, form, "edges_exp", (int64_t)(sizeof exp_edges / sizeof exp_edges[0]), &rng, 0, 0);
  for (size_t i = 0; i < sizeof exp_edges / sizeof exp_edges[0]; i++) {
    in0(c)[i] = fkt_f32(exp_edges[i]);
    if (is_polar) ((float *)fkh_buf_of(c, "m"))[i] = fkt_f32(exp_edges[i]);
  }
  /* phases around multiples of pi/2 (the hardest reductions) and near the 2^24 clamp */
  static const uint32_t trig_edges[] = {
    0x3fc90fdbu, 0x40490fdbu, 0x4096cbe4u, 0x40c90fdbu, 0x4b7fffffu, 0x4b800000u, 0x4b800001u, 0xcb800000u,
    0x5a7ffffeu, 0x7f7fffffu, 0xff7fffffu, 0x46c90fdbu, 0x4a7d2c59u, 0x3f490fdbu, 0xbf490fdbu, 0x322bcc77u };
  c = vm_case(&l, form, "edges_trig", (int64_t)(sizeof trig_edges / sizeof trig_edges[0]), &rng, 0, 0);
  for (size_t i = 0; i < sizeof trig_edges / sizeof trig_edges[0]; i++) in0(c)[i] = fkt_f32(trig_edges[i]);
  /* NaN with payloads (quiet, signaling, negative): propagated */
  c = vm_case(&l, form, "nan", 20, &rng, -2, 2);
  in0(c)[3] = fkt_f32(0x7fc12345u);
  in0(c)[9] = fkt_f32(0xff812345u);
  in0(c)[17] = fkt_f32(0x7fa00001u);
  if (is_polar) ((float *)fkh_buf_of(c, "m"))[5] = fkt_f32(0x7fc00077u);
  /* infinities: exp(+-inf) = inf, 0; sin and cos of inf are invalid (the default NaN) */
  c = vm_case(&l, form, "inf", 18, &rng, -2, 2);
  in0(c)[2] = fkt_f32(0x7f800000u);
  in0(c)[11] = fkt_f32(0xff800000u);
  if (is_polar) ((float *)fkh_buf_of(c, "m"))[7] = fkt_f32(0x7f800000u), ((float *)fkh_buf_of(c, "m"))[8] = fkt_f32(0xff800000u);
  /* signed zeros and subnormals */
  c = vm_case(&l, form, "zeros_subnormals", 33, &rng, -149, -127);
  for (int i = 0; i < 33; i += 3) in0(c)[i] = fkt_f32(i % 2 ? 0x80000000u : 0u);
  for (int i = 0; i < 210; i++) {
    int64_t n = fkh_range(&rng, 1, 300);
    int emin = (int)fkh_range(&rng, is_exp ? -30 : -30, is_exp ? 6 : 24);
    snprintf(name, sizeof name, "random_%d_n%lld_e%d", i, (long long)n, emin);
    vm_case(&l, form, name, n, &rng, emin, emin + (int)fkh_range(&rng, 0, 4) > 127 ? 127 : emin + (int)fkh_range(&rng, 0, 4));
  }
  /* NaNs meeting NaNs (issue 18): every kind of NaN input (quiet, signalling, both signs, a payload
   * in every bit) in every lane position of a tile and its tail; polar: a NaN magnitude against a
   * NaN phase in one element (exp(m) * cos(p): two NaNs meet), a NaN against the invalid cos and
   * sin of an infinite phase, and 0 * inf (a zero magnitude exp(-inf) times an infinite phase's
   * NaN); every output NaN stored as the canonical 0x7fc00000. */
  {
    fkh_rng nrng = { 0x6e616e76u };
    static const uint32_t nans[] = { 0x7fc12345u, 0xff812345u, 0x7f800001u, 0xffc00000u, 0x7fffffffu, 0xffa00003u,
                                     0x7f800000u, 0xff800000u };
    c = vm_case(&l, form, "nan_meet", 45, &nrng, -2, 2);
    for (int i = 0; i < 45; i += 2) in0(c)[i] = fkt_f32(nans[(i / 2) % 8]);
    if (is_polar) {
      float *m = fkh_buf_of(c, "m");
      for (int i = 0; i < 45; i += 3) m[i] = fkt_f32(nans[(i / 3 + 3) % 8]);
      m[1] = fkt_f32(0xff800000u);
    }
  }
  *out = l.calls;
  return l.n;
}
