/* tests/contract/sample.c: the sampler leaf (templates/sample.lua).
 *
 * argmax: the lowest index of a NaN if x[0..n-1] holds one (NaN counts as the maximum, the
 * rule of numpy.argmax); else the lowest index i with x[i] == max (as floats: -0 == +0, so a
 * tie between +0 and -0 goes to the lower index). The template's two passes (the max by the
 * vmax rule and a NaN flag, then the minimum of i + 2^20 * (x[i] is not the wanted element))
 * give exactly this for 1 <= n <= 2^20, so the model states the rule itself.
 * Perturbation FKC_SAMPLE_TIE_LAST: ties (and NaNs) go to the highest index. */
#include <math.h>
#include <stdint.h>

#include "contract.h"

void fkc_sample_argmax(const fk_sample_argmax_args *a, fkc_perturb p) {
  const int64_t n = a->n;
  const int last = p == FKC_SAMPLE_TIE_LAST;
  int64_t best = -1;
  for (int64_t i = 0; i < n; i++)
    if (isnan(a->x[i]) && (best < 0 || last)) best = i;
  if (best < 0) {
    best = 0;
    for (int64_t i = 1; i < n; i++)
      if (a->x[i] > a->x[best] || (last && a->x[i] == a->x[best])) best = i;
  }
  a->tok[0] = (int32_t)best;
}
