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
#include <stdlib.h>
#include <string.h>

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

/* topk: templates/sample.lua's header states the contract; this is it, step by step, in plain C
 * (the k-th largest by sorting a copy: the template's radix-2 select must find the same value).
 * Perturbations: FKC_SAMPLE_NO_COMMIT (state not written), FKC_SAMPLE_TIE_LE (s <= kth removed),
 * FKC_SAMPLE_RECIP_T (x * (1 / T)), FKC_SAMPLE_CDF_REVERSED (cumulative sums from the top index
 * down: the token is the highest i with u * S < C'_i, C'_i the sum of e_j for j >= i). */
float fkc_sample_u(uint64_t seed, uint64_t counter) {
  uint64_t z = seed + (counter + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (float)(z >> 40) * 0x1p-24f;
}

static int desc(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x > y ? -1 : x < y ? 1 : 0;
}

void fkc_sample_topk(const fk_sample_topk_args *a, fkc_perturb p) {
  const int64_t n = a->n;
  float *s = a->scratch;   /* the scratch holds s, then e, then C (the leaf's is unspecified) */
  const float t = a->temperature, rt = 1.0f / t;
  float m = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    float v = p == FKC_SAMPLE_RECIP_T ? a->x[i] * rt : a->x[i] / t;
    if (isnan(v)) v = -INFINITY;
    s[i] = v + 0.0f;   /* -0 -> +0 */
    if (s[i] > m) m = s[i];
  }
  int64_t k = a->top_k <= 0 || a->top_k >= n ? n : a->top_k;
  float *sorted = malloc((size_t)n * sizeof *sorted);
  memcpy(sorted, s, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, desc);
  const float kth = sorted[k - 1];
  free(sorted);
  for (int64_t i = 0; i < n; i++) {
    int kept = p == FKC_SAMPLE_TIE_LE && k < n ? s[i] > kth : s[i] >= kth;
    float d = s[i] - m;
    if (isnan(d)) d = 0.0f;
    s[i] = kept ? fkc_exp(d) : 0.0f;   /* fkc_exp(-inf) == +0 */
  }
  int64_t last = 0;
  for (int64_t i = 0; i < n; i++)
    if (s[i] > 0) last = i;
  const float u = fkc_sample_u(a->state[0], a->state[1]);
  int64_t tok = -1;
  if (p == FKC_SAMPLE_CDF_REVERSED) {
    float c = 0.0f;
    for (int64_t i = n - 1; i >= 0; i--) c += s[i], s[i] = c;
    const float thr = u * s[0];
    for (int64_t i = n - 1; i >= 0 && tok < 0; i--)
      if (thr < s[i]) tok = i;
    if (tok < 0) tok = 0;
  } else {
    float c = 0.0f;
    for (int64_t i = 0; i < n; i++) c += s[i], s[i] = c;
    const float thr = u * s[n - 1];
    for (int64_t i = 0; i < n && tok < 0; i++)
      if (thr < s[i]) tok = i;
    if (tok < 0) tok = last;
  }
  a->tok[0] = (int32_t)tok;
  if (p != FKC_SAMPLE_NO_COMMIT) a->state[1] = a->state[1] + 1;
}
