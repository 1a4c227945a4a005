/* tests/plan/plan_model.c: synthetic weights and descriptors (plan_model.h). */
#include "plan_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545f4914f6cdd1dull;
}

static float uniform(uint64_t *s) { return (float)((double)(next(s) >> 11) * 0x1p-53 * 2.0 - 1.0); }

void fkp_fill_bf16(uint16_t *x, size_t n, float scale, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; i++) x[i] = fk_bf16_from_f32(scale * uniform(&s));
}

void fkp_fill_f32(float *x, size_t n, float scale, uint64_t seed) {
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 7;
  for (size_t i = 0; i < n; i++) x[i] = scale * uniform(&s);
}

uint64_t fkp_fnv(const void *p, size_t n, uint64_t h) {
  const unsigned char *b = p;
  if (h == 0) h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

int fkp_model_make(fkp_model *m, int64_t h, int64_t tail_in, int with_bias, uint64_t seed) {
  memset(m, 0, sizeof *m);
  m->h = h;
  m->tail_in = tail_in;
  if (h > 0) {
    m->norm = malloc((size_t)h * 2);
    m->in_proj = malloc((size_t)(3 * h * h) * 2);
    m->conv = malloc((size_t)(3 * h) * 2);
    m->conv_bias = with_bias ? malloc((size_t)h * 2) : NULL;
    m->out_proj = malloc((size_t)(h * h) * 2);
    if (!m->norm || !m->in_proj || !m->conv || (with_bias && !m->conv_bias) || !m->out_proj) return -1;
    float ws = 1.0f / sqrtf((float)h);
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 3;
    for (int64_t i = 0; i < h; i++) m->norm[i] = fk_bf16_from_f32(1.0f + 0.1f * uniform(&s));
    fkp_fill_bf16(m->in_proj, (size_t)(3 * h * h), ws, seed + 2);
    fkp_fill_bf16(m->conv, (size_t)(3 * h), 0.6f, seed + 3);
    if (with_bias) fkp_fill_bf16(m->conv_bias, (size_t)h, 0.1f, seed + 4);
    fkp_fill_bf16(m->out_proj, (size_t)(h * h), ws, seed + 5);
  }
  if (tail_in > 0) {
    m->lin = malloc((size_t)(FK_TAIL_SPEC * tail_in) * 2);
    m->lin_bias = malloc(FK_TAIL_SPEC * 4);
    if (!m->lin || !m->lin_bias) return -1;
    fkp_fill_bf16(m->lin, (size_t)(FK_TAIL_SPEC * tail_in), 1.0f / sqrtf((float)tail_in), seed + 6);
    fkp_fill_f32(m->lin_bias, FK_TAIL_SPEC, 0.5f, seed + 7);
    for (int i = 0; i < FK_TAIL_SPEC / 2; i++) m->lin_bias[i] -= 1.0f; /* log-magnitudes around -1 */
  }
  return 0;
}

void fkp_model_free(fkp_model *m) {
  free(m->norm);
  free(m->in_proj);
  free(m->conv);
  free(m->conv_bias);
  free(m->out_proj);
  free(m->lin);
  free(m->lin_bias);
  memset(m, 0, sizeof *m);
}

fk_plan_desc fkp_desc(const fkp_model *m, uint32_t programs, int threads, int64_t max_rows, int64_t max_frames) {
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.programs = programs;
  d.threads = threads;
  d.tier = FK_TIER_EXACT;
  d.hidden = m->h;
  d.max_rows = max_rows;
  d.norm_eps = 1e-5f;
  d.block = (fk_block_weights){ m->norm, m->in_proj, m->conv, m->conv_bias, m->out_proj };
  d.tail_in = m->tail_in;
  d.max_frames = max_frames;
  d.clip = INFINITY;
  d.tail = (fk_tail_weights){ m->lin, m->lin_bias };
  return d;
}
