/* tests/leaves/cases_swiglu.c: contract cases of the SwiGLU forms (templates/swiglu.lua):
 * every tail length, row counts and strides, LFM2 widths, NaN payloads (quiet and signaling, in
 * g, in u, in both), infinities, signed zeros, subnormal g, u, silu(g) and h, g where exp(-g)
 * overflows (g < -88.72) or underflows (g > 103.97) and the edges between, RNE ties of the
 * product, and >= 200 seeded random shapes. */
#include <stdio.h>
#include <string.h>

#include "cases.h"

enum { CANARY16 = 0x7fa5 };
static const uint32_t CANARY32 = 0x7fa5a5a5u;

typedef struct shape { int64_t n, rows, pad_g, pad_u, pad_h; } shape;

static int is_f32(fkh_call *c, const char *field) {
  return fkh_forms[c->form].fields[fkh_field_index(c, field)].elem == FK_ELEM_F32;
}

/* Element i of field (g or u) set from an f32 bit pattern (bf16 fields: its high half; the
 * edge values below are exact in bf16). */
static void put(fkh_call *c, const char *field, int64_t row, int64_t i, uint32_t bits) {
  int64_t at = row * fkh_i64_of(c, !strcmp(field, "g") ? "g_stride" : "u_stride") + i;
  if (is_f32(c, field)) ((uint32_t *)fkh_buf_of(c, field))[at] = bits;
  else ((uint16_t *)fkh_buf_of(c, field))[at] = (uint16_t)(bits >> 16);
}

/* g and u: rows x n values (sign, exponent in [emin, emax], random mantissa), row padding the
 * sentinel NaN; h canary-filled, row stride n + pad_h. */
static fkh_call *sw_case(fkt_list *l, const char *form, const char *name, shape s, fkh_rng *rng, int emin, int emax) {
  fkh_call *c = fkt_push(l, form, name);
  int64_t rows = s.rows ? s.rows : 1;
  int64_t strides[3] = { s.n + s.pad_g, s.n + s.pad_u, s.n + s.pad_h };
  static const char *const fields[3] = { "g", "u", "h" };
  static const char *const sfields[3] = { "g_stride", "u_stride", "h_stride" };
  fkh_set_i64(c, "n", s.n);
  fkh_set_i64(c, "rows", s.rows);
  for (int f = 0; f < 3; f++) {
    fkh_set_i64(c, sfields[f], strides[f]);
    size_t len = (size_t)(rows * strides[f]);
    void *b = fkh_set_buf(c, fields[f], len);
    int f32 = is_f32(c, fields[f]);
    for (size_t k = 0; k < len; k++) {
      int live = f < 2 && (int64_t)k % strides[f] < s.n;
      if (f32) ((float *)b)[k] = live ? fkh_f32(rng, emin, emax) : fkt_f32(CANARY32);
      else ((uint16_t *)b)[k] = live ? fkh_bf16(rng, emin, emax) : (uint16_t)CANARY16;
    }
  }
  return c;
}

/* One row of n = count values of g (and u = 1 or the given u) from a list of f32 patterns. */
static fkh_call *list_case(fkt_list *l, const char *form, const char *name, const uint32_t *gs, const uint32_t *us,
                           int count, fkh_rng *rng) {
  fkh_call *c = sw_case(l, form, name, (shape){ count, 1, 1, 2, 3 }, rng, -2, 2);
  for (int i = 0; i < count; i++) {
    put(c, "g", 0, i, gs[i]);
    if (us) put(c, "u", 0, i, us[i]);
  }
  return c;
}

int fkt_swiglu_cases(const char *form, fkh_call **out) {
  fkt_list l = { 0 };
  fkh_rng rng = { 0x7377676cu };
  char name[96];
  /* every tail length of the 16-lane tile, one to three tiles, one to three rows */
  for (int64_t n = 1; n <= 48; n++) {
    snprintf(name, sizeof name, "n%lld_rows%lld", (long long)n, (long long)(1 + n % 3));
    sw_case(&l, form, name, (shape){ n, 1 + n % 3, n % 2, n % 3, n % 4 }, &rng, -4, 4);
  }
  sw_case(&l, form, "rows0", (shape){ 20, 0, 0, 0, 0 }, &rng, -4, 4);
  /* LFM2 feed-forward widths (350M: 4608; 1.2B: 8192; 2.6B: 10752), decode and prefill */
  sw_case(&l, form, "lfm2_4608_decode", (shape){ 4608, 1, 0, 0, 0 }, &rng, -4, 3);
  sw_case(&l, form, "lfm2_8192_prefill3", (shape){ 8192, 3, 0, 5, 2 }, &rng, -4, 3);
  sw_case(&l, form, "lfm2_10752_decode", (shape){ 10752, 1, 0, 0, 0 }, &rng, -4, 3);
  sw_case(&l, form, "prefill17", (shape){ 256, 17, 3, 0, 1 }, &rng, -4, 3);
  /* every exponent band of g: exp(-g) from subnormal-argument 1 to overflow and to 0 */
  for (int e = -133; e <= 127; e += 4) {
    snprintf(name, sizeof name, "band_g_e%d", e);
    sw_case(&l, form, name, (shape){ 37, 2, 1, 0, 2 }, &rng, e, e);
  }
  /* exp's edges: -g around 88.72 (overflow: silu = -0 below -88.72) and 103.97 / 104 (0) */
  {
    fkh_call *c = sw_case(&l, form, "exp_edges", (shape){ 64, 1, 0, 0, 0 }, &rng, -2, 2);
    static const uint32_t g[] = {
      0xc2b10000, 0xc2b18000, 0xc2b17000, 0xc2b20000, 0xc2b30000, 0xc2b00000, 0xc2af0000, 0xc2ae0000,  /* -88.5 .. */
      0xc2d00000, 0xc2cf0000, 0xc2d10000, 0xc2e00000, 0xc3000000, 0xc47a0000, 0xdf000000, 0xff7f0000,  /* -104 .. -max */
      0x42b10000, 0x42b18000, 0x42b20000, 0x42cf0000, 0x42d00000, 0x42d10000, 0x43000000, 0x7f7f0000,  /* +88.5 .. +max */
      0x42c80000, 0xc2c80000, 0x41a00000, 0xc1a00000, 0x41200000, 0xc1200000, 0x3f800000, 0xbf800000,
    };
    for (int i = 0; i < 32; i++) put(c, "g", 0, i, g[i]);
    for (int i = 32; i < 64; i++) put(c, "g", 0, i, g[i - 32] ^ 0x00010000u);   /* the next bf16 outward */
    for (int i = 0; i < 64; i++) put(c, "u", 0, i, i % 2 ? 0x3f800000u : 0xc0400000u);
  }
  /* NaN payloads: quiet and signaling, both signs, in g (silu keeps g's), in u (h keeps u's),
   * in both (h keeps u's: the product is u * s) */
  {
    static const uint32_t nans[] = { 0x7fc10000, 0xffc30000, 0x7f810000, 0xff850000, 0x7fff0000, 0xffff0000 };
    uint32_t g[18], u[18];
    for (int i = 0; i < 6; i++) {
      g[i] = nans[i]; u[i] = 0x3fc00000;                    /* NaN g */
      g[6 + i] = 0x3f800000u + (uint32_t)i * 0x10000u; u[6 + i] = nans[i];   /* NaN u */
      g[12 + i] = nans[i]; u[12 + i] = nans[5 - i];         /* both */
    }
    list_case(&l, form, "nan_payloads", g, u, 18, &rng);
    /* NaN with finite neighbours in every tile position (tail too) */
    fkh_call *c = sw_case(&l, form, "nan_scattered", (shape){ 45, 3, 2, 1, 0 }, &rng, -4, 4);
    for (int r = 0; r < 3; r++) {
      put(c, "g", r, 3 + 15 * r, nans[r]);
      put(c, "u", r, 44 - 7 * r, nans[3 + r]);
    }
  }
  /* infinities: silu(+inf) = +inf, silu(-inf) = -inf / inf = the default NaN; u = +-inf times
   * finite, zero (0 * inf: the default NaN) and infinite silu; products that overflow */
  {
    static const uint32_t g[] = { 0x7f800000, 0xff800000, 0x7f800000, 0x7f800000, 0x00000000, 0x80000000, 0x40000000,
                                  0xc0000000, 0x7f800000, 0x7f000000, 0x7f7f0000, 0xff7f0000, 0xc2c80000, 0x42c80000 };
    static const uint32_t u[] = { 0x3f800000, 0x3f800000, 0x00000000, 0xbf800000, 0x7f800000, 0xff800000, 0x7f800000,
                                  0xff800000, 0xff800000, 0x7f000000, 0x40000000, 0x7f000000, 0x7f800000, 0xff800000 };
    list_case(&l, form, "inf", g, u, 14, &rng);
  }
  /* signed zeros: silu(+-0) = +-0; u = +-0 times positive and negative silu (signs of zero) */
  {
    uint32_t g[16], u[16];
    for (int i = 0; i < 16; i++) {
      g[i] = i < 4 ? (i % 2 ? 0x80000000u : 0u) : (i % 2 ? 0xc0000000u : 0x40000000u) + (uint32_t)i * 0x10000u;
      u[i] = (i / 2) % 2 ? 0x80000000u : (i < 4 ? 0x3f800000u : 0u);
    }
    list_case(&l, form, "signed_zero", g, u, 16, &rng);
  }
  /* subnormals: g subnormal (silu = g / 2, rounded once), u subnormal, silu(g) subnormal for
   * g from -87 to -110.5 (tiny normal silu, then -0 where exp(-g) overflows: silu is never
   * subnormal for negative g), h subnormal from normal factors */
  sw_case(&l, form, "subnormal_g", (shape){ 40, 2, 0, 0, 0 }, &rng, -149, -127);
  {
    fkh_call *c = sw_case(&l, form, "subnormal_u", (shape){ 40, 2, 0, 0, 0 }, &rng, -2, 2);
    for (int64_t r = 0; r < 2; r++)
      for (int64_t i = 0; i < 40; i++) {
        uint32_t bits;
        float v = fkh_f32(&rng, -149, -127);
        memcpy(&bits, &v, 4);
        put(c, "u", r, i, bits | (is_f32(c, "u") ? 0u : 0x00010000u));   /* nonzero in bf16 too */
      }
  }
  {
    fkh_call *c = sw_case(&l, form, "subnormal_silu", (shape){ 48, 1, 0, 0, 0 }, &rng, -2, 2);
    for (int i = 0; i < 48; i++) {
      put(c, "g", 0, i, 0xc2ae0000u + (uint32_t)i * 0x10000u);   /* -87 .. -110.5 by 0.5 */
      put(c, "u", 0, i, i % 3 ? 0x3f800000u : 0x42000000u);
    }
  }
  sw_case(&l, form, "subnormal_product", (shape){ 40, 2, 0, 0, 0 }, &rng, -70, -60);
  sw_case(&l, form, "large", (shape){ 40, 2, 0, 0, 0 }, &rng, 20, 60);
  /* RNE ties of the product: silu(48) = 48 = 1.5 * 2^5 exactly, so u * 48 is a tie for
   * u = 1 + 2^-7 (1.10000011b: up to even) and u = 1 + 3 * 2^-7 (1.10001001b: stays), both signs;
   * and g = 32 (silu exact) times 1.5 * (1 + 2^-7) style u: no tie, exact */
  {
    static const uint32_t g[] = { 0x42400000, 0x42400000, 0x42400000, 0x42400000, 0x42000000, 0x42400000 };
    static const uint32_t u[] = { 0x3f810000, 0x3f830000, 0xbf810000, 0xbf830000, 0x3fc10000, 0x3f850000 };
    list_case(&l, form, "tie_product", g, u, 6, &rng);
  }
  /* random shapes: mostly short rows, some long; values in the range where silu bends */
  for (int i = 0; i < 210; i++) {
    int64_t n = fkh_range(&rng, 0, 9) < 8 ? fkh_range(&rng, 1, 200) : fkh_range(&rng, 200, 3000);
    shape s = { n, fkh_range(&rng, 1, 4), fkh_range(&rng, 0, 5), fkh_range(&rng, 0, 5), fkh_range(&rng, 0, 5) };
    int wide = i % 5 == 4;
    snprintf(name, sizeof name, "random_%d_n%lld_rows%lld", i, (long long)n, (long long)s.rows);
    sw_case(&l, form, name, s, &rng, wide ? -12 : -4, wide ? 7 : 4);
  }
  /* NaNs meeting NaNs (issue 18; nan_payloads above has g and u NaN in one element): f32-only
   * payloads (a signalling NaN whose payload is in the low half), silu(-inf)'s invalid NaN and
   * 0 * inf beside a NaN u, across the lanes of a tile and its tail; every NaN h canonical */
  {
    fkh_rng nrng = { 0x6e616e77u };
    static const uint32_t g[] = { 0x7f800001u, 0xff800000u, 0x7fc12345u, 0xff812345u, 0x7f800000u, 0x00000000u,
                                  0xffc00000u, 0x7fa00003u, 0x3f800000u, 0xffe54321u };
    static const uint32_t u[] = { 0x7fc00001u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0x00000000u, 0x7f800000u,
                                  0x7fc00000u, 0xffe54321u, 0x7f812345u, 0x3f800000u };
    uint32_t gg[40], uu[40];
    for (int i = 0; i < 40; i++) gg[i] = g[(i * 3) % 10], uu[i] = u[i % 10];
    list_case(&l, form, "nan_meet", gg, uu, 40, &nrng);
  }
  *out = l.calls;
  return l.n;
}
