/* tests/test_vmath.c: exp, sin/cos and polar stamps (gen/vmath.lua, templates/vmath.lua).
 *   exact:  every stamp == contract model bit for bit (tails, every exponent band, the edges of
 *           exp, phases at multiples of pi/2 and at the 2^24 clamp, NaN payloads, infinities,
 *           signed zeros, subnormals, >= 200 random cases), x86_64 and AArch64.
 *   bounds: the accuracy templates/vmath.lua states, against float64 libm, over every f32 input
 *           taken with a stride (FK_VMATH_STRIDE, default 251: 17 million inputs per function;
 *           stride 1 is the exhaustive run, 2^32 inputs, whose result the header of
 *           templates/vmath.lua records). The stamps equal the contract model bit for bit
 *           (above), so the bound shown for the best host stamp holds for every stamp.
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flashkern.h"
#include "suite.h"


/* The bounds of templates/vmath.lua. ulp(v): the f32 spacing at the exact value v (2^-149 below
 * the normal range). */
#define EXP_ULP 1.5
#define TRIG_ULP 2.5
#define TRIG_ABS 0x1p-23
#define TRIG_RANGE 16777216.0   /* 2^24: beyond it the result is that of +-2^24 */

static double ulp(double v) {
  double a = fabs(v);
  if (a < 0x1p-126) return 0x1p-149;
  int e;
  frexp(a, &e);
  return ldexp(1.0, e - 24);
}

static float f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

typedef void (*vm_fn)(const void *);

static vm_fn best(const char *form) {
  fk_leaf leaf;
  fk_error err;
  cr_assert(fk_leaf_resolve(form, FK_TIER_EXACT, fk_cpu_features(), &leaf, &err) == FK_OK, "%s", err.message);
  cr_log_info("%s: %s", form, leaf.symbol);
  return (vm_fn)leaf.fn;
}

static uint64_t stride(void) {
  const char *s = getenv("FK_VMATH_STRIDE");
  return s ? strtoull(s, NULL, 10) : 251;
}

Test(vmath, exp_within_bound, .timeout = 300) {
  vm_fn fn = best("vmath_exp");
  enum { N = 1 << 14 };
  static float x[N], y[N];
  double worst = 0;
  float at = 0;
  long checked = 0;
  for (uint64_t b = 0; b < 0x100000000ull;) {
    int n = 0;
    for (; n < N && b < 0x100000000ull; b += stride()) x[n++] = f((uint32_t)b);
    fk_vmath_exp_args a = { x, y, n };
    fn(&a);
    for (int i = 0; i < n; i++) {
      if (isnan(x[i])) {
        cr_assert(isnan(y[i]), "exp(%a) = %a, want NaN", (double)x[i], (double)y[i]);
        continue;
      }
      double e = exp((double)x[i]);
      if (e >= 0x1.fffffe8p+127) {   /* beyond FLT_MAX + half an ulp: the rounded result is inf */
        cr_assert(isinf(y[i]) && y[i] > 0, "exp(%a) = %a, want inf", (double)x[i], (double)y[i]);
        continue;
      }
      double err = fabs((double)y[i] - e) / ulp(e);
      cr_assert(err <= EXP_ULP, "exp(%a) = %a, exact %a: %.3f ulp > %.1f", (double)x[i], (double)y[i], e, err, EXP_ULP);
      if (err > worst) worst = err, at = x[i];
      checked++;
    }
  }
  cr_log_info("exp: %ld inputs (stride %llu), max %.4f ulp at %a", checked, (unsigned long long)stride(), worst, (double)at);
}

Test(vmath, sincos_within_bound, .timeout = 300) {
  vm_fn fn = best("vmath_sincos");
  enum { N = 1 << 14 };
  static float x[N], s[N], c[N];
  double worst = 0;
  float at = 0;
  long checked = 0, beyond = 0;
  for (uint64_t b = 0; b < 0x100000000ull;) {
    int n = 0;
    for (; n < N && b < 0x100000000ull; b += stride()) x[n++] = f((uint32_t)b);
    fk_vmath_sincos_args a = { x, s, c, n };
    fn(&a);
    for (int i = 0; i < n; i++) {
      if (!isfinite(x[i])) {
        cr_assert(isnan(s[i]) && isnan(c[i]), "sincos(%a) = %a, %a: want NaN", (double)x[i], (double)s[i], (double)c[i]);
        continue;
      }
      double xd = fabs(x[i]) > TRIG_RANGE ? copysign(TRIG_RANGE, x[i]) : x[i];
      beyond += fabs(x[i]) > TRIG_RANGE;
      double sd = sin(xd), cd = cos(xd);
      double es = fabs(s[i] - sd) / fmax(TRIG_ULP * ulp(sd), TRIG_ABS), ec = fabs(c[i] - cd) / fmax(TRIG_ULP * ulp(cd), TRIG_ABS);
      cr_assert(es <= 1 && ec <= 1, "sincos(%a) = %a, %a; exact %a, %a: beyond max(%.1f ulp, 2^-23)", (double)x[i],
                (double)s[i], (double)c[i], sd, cd, TRIG_ULP);
      if (es > worst) worst = es, at = x[i];
      if (ec > worst) worst = ec, at = x[i];
      checked++;
    }
  }
  cr_log_info("sincos: %ld inputs (stride %llu, %ld beyond 2^24: as +-2^24), max %.4f of the bound at %a", checked,
              (unsigned long long)stride(), beyond, worst, (double)at);
}
