/* bench/contender_flashkern.c: flashkern's GEMV leaves as bench contenders.
 *
 * Built only with FK_BENCH_WITH_FLASHKERN (the driver lists these rows under the same macro).
 * Rows: forms gemv_bf16_rne (bf16 RNE out, what the engine runs) and gemv_f32 (f32 out, the same
 * output type as the peers), each in the exact and the fast tier, on the shared row-major bf16
 * copies; and gemv_bf16_rne_packed in both tiers on copies of its own, packed once before timing
 * by fk_gemv_pack (as oneDNN's prepacked row is reordered once), and the fast tier's
 * gemv_bf16_rne_blocked (the outer-product form) on copies blocked by fk_gemv_pack_blocked. The
 * leaf is resolved once per
 * shape for this CPU; each team member calls it on its share of rows (whole packing groups:
 * fkb_rows splits at multiples of 64) with its own x scratch. M > 4 (the GEMM) runs on the packed
 * forms only, the way the runtime's GEMV phases call them (runtime/fk_program.c): calls of at most
 * FK_GEMV_CALL_ROWS activation rows, over blocks of fk_gemv_block_rows(k) weight rows. Rows "exact q8 packed"
 * and "exact q4 packed": gemv_q8_bf16_rne / gemv_q4_bf16_rne on the shared weights quantized and packed once
 * (their argument structs are the packed form's but for w's type: the same run). */
#include <stdio.h>
#include <string.h>

#include "fkb.h"
#include "flashkern.h"

#ifndef FKB_FLASHKERN_VERSION
#define FKB_FLASHKERN_VERSION "this tree"
#endif

typedef struct fk_state {
  fk_leaf leaf;
  int f32_out, packed, blocked;
  fk_qformat quant;          /* 0, or the quantized packed forms' format */
  float *wdeq;               /* quantized: the weights as the stamps compute with them (the gate's reference) */
  uint16_t *region;          /* packed: its own copies, `ncopies` of `stride` bytes */
  size_t ncopies, stride, region_bytes;
  const fkb_copies *copies;
  const float *x;
  float *xs[FKB_THREADS_MAX];
  void *y; /* m_max x n, bf16 bits or f32 */
  int64_t n, k, m;
} fk_state;


const char *fkb_flashkern_version(void) { return "flashkern " FKB_FLASHKERN_VERSION; }

/* features: the CPU's, or (the ymm contenders) those of the avxvnni variant alone, so that its stamps
 * run beside the AVX-512 ones on a CPU with both */
static int prepare_on(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen,
                      const char *form, fk_tier tier, uint64_t features) {
  fk_state *st = fkb_alloc(sizeof *st);
  if (!st) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  fk_error e;
  memset(&e, 0, sizeof e);
  if (fk_leaf_resolve(form, tier, features, &st->leaf, &e) != FK_OK) {
    snprintf(err, errlen, "fk_leaf_resolve(%s, %s): %s: %s", form, tier == FK_TIER_EXACT ? "exact" : "fast",
             fk_strerror(e.status), e.message);
    fkb_free(st);
    return -1;
  }
  st->f32_out = strcmp(form, "gemv_f32") == 0;
  st->blocked = strstr(form, "_blocked") != NULL;
  st->quant = !strncmp(form, "gemv_q8_", 8) ? FK_Q8 : !strncmp(form, "gemv_q4_", 8) ? FK_Q4 : (fk_qformat)0;
  st->packed = strstr(form, "_packed") != NULL || st->blocked || st->quant;
  st->copies = c;
  st->x = p->x;
  st->n = p->n;
  st->k = p->k;
  st->m = 1;
  /* the packed forms' xs for M > 4, as the runtime gives each member: fk_gemv_call_scratch */
  size_t xs_floats = fk_gemv_call_scratch(p->k);
  int ok = 1;
  for (int t = 0; t < p->nthreads_max; t++) ok &= (st->xs[t] = fkb_alloc(xs_floats * sizeof(float))) != NULL;
  ok &= (st->y = fkb_alloc((size_t)(p->m_max * p->n) * (st->f32_out ? sizeof(float) : sizeof(uint16_t)))) != NULL;
  if (!ok) {
    snprintf(err, errlen, "out of memory");
    fkb_flashkern_finish(st);
    return -1;
  }
  out->state = st;
  out->ncopies = c->count;
  out->own_copies = 0;
  out->weight_bytes = 2.0 * (double)p->n * (double)p->k;
  if (st->packed) {
    /* its own copies, made once from the shared row-major weights (packed by fk_gemv_pack or
     * fk_gemv_pack_blocked; quantized by fk_q_quantize_bf16 and packed by fk_q_pack, the gate's
     * reference then running over their exact dequantization), rotated > 1 GiB */
    size_t elems = st->blocked ? fk_gemv_blocked_elems(p->n, p->k) : fk_gemv_packed_elems(p->n, p->k);
    size_t gb = st->quant ? fk_q_gguf_bytes(st->quant, p->n, p->k) : 0;
    size_t bytes = st->quant ? fk_q_packed_bytes(st->quant, p->n, p->k) : elems * sizeof(uint16_t);
    unsigned char *blocks = gb ? fkb_alloc(gb) : NULL;
    if (st->quant) st->wdeq = fkb_alloc((size_t)(p->n * p->k) * sizeof(float));
    st->ncopies = fkb_copy_count(bytes);
    st->stride = fkb_copy_stride(bytes);
    st->region_bytes = st->ncopies * st->stride;
    st->region = bytes && (!st->quant || (blocks && st->wdeq)) ? fkb_region_alloc(st->region_bytes) : NULL;
    fk_status ps = FK_EINVAL;
    if (st->region && st->quant) {
      ps = fk_q_quantize_bf16(st->quant, c->w[0], p->k, p->n, p->k, blocks, gb, &e);
      if (ps == FK_OK) ps = fk_q_pack(st->quant, blocks, gb, p->n, p->k, st->region, bytes, &e);
      if (ps == FK_OK) ps = fk_q_dequantize(st->quant, blocks, gb, p->n, p->k, st->wdeq, p->k, &e);
    } else if (st->region) {
      ps = st->blocked ? fk_gemv_pack_blocked(c->w[0], p->k, p->n, p->k, st->region, elems, &e)
                       : fk_gemv_pack(c->w[0], p->k, p->n, p->k, st->region, elems, &e);
    }
    fkb_free(blocks);
    if (ps != FK_OK) {
      snprintf(err, errlen, "packing: %s", st->region ? e.message : "k not a multiple of 32, or out of memory");
      fkb_flashkern_finish(st);
      return -1;
    }
    for (size_t i = 1; i < st->ncopies; i++) memcpy((char *)st->region + i * st->stride, st->region, bytes);
    out->ncopies = st->ncopies;
    out->own_copies = 1;
    out->weight_bytes = (double)bytes;
    out->wdeq = st->wdeq;
    snprintf(out->detail, sizeof out->detail, "%s (variant %s, tier %s) on %zu %s copies (%s)", st->leaf.symbol,
             st->leaf.variant, st->leaf.tier, st->ncopies,
             st->quant == FK_Q8 ? "q8" : st->quant == FK_Q4 ? "q4" : st->blocked ? "blocked" : "packed",
             st->quant ? "fk_q_quantize_bf16, fk_q_pack" : st->blocked ? "fk_gemv_pack_blocked" : "fk_gemv_pack");
    return 0;
  }
  snprintf(out->detail, sizeof out->detail, "%s (variant %s, tier %s) on the shared row-major bf16 copies",
           st->leaf.symbol, st->leaf.variant, st->leaf.tier);
  return 0;
}

static int prepare(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen,
                   const char *form, fk_tier tier) {
  return prepare_on(p, c, out, err, errlen, form, tier, fk_cpu_features());
}

/* the ymm variants' features (avxvnni where the CPU has AVX-VNNI); avx2: without either VNNI
 * (the avx2madd stamps: VPMADDUBSW) */
#if defined(__x86_64__)
static const uint64_t avx2_features = FK_CPU_AVX2 | FK_CPU_FMA | FK_CPU_F16C;
static const uint64_t ymm_features = FK_CPU_AVX2 | FK_CPU_FMA | FK_CPU_F16C | FK_CPU_AVXVNNI;
#else
static const uint64_t avx2_features = 0, ymm_features = 0;
#endif

int fkb_flashkern_prepare_exact(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                size_t errlen) {
  return prepare(p, c, out, err, errlen, "gemv_bf16_rne", FK_TIER_EXACT);
}

int fkb_flashkern_prepare_fast(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                               size_t errlen) {
  return prepare(p, c, out, err, errlen, "gemv_bf16_rne", FK_TIER_FAST);
}

int fkb_flashkern_prepare_exact_f32(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                    size_t errlen) {
  return prepare(p, c, out, err, errlen, "gemv_f32", FK_TIER_EXACT);
}

int fkb_flashkern_prepare_fast_f32(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                   size_t errlen) {
  return prepare(p, c, out, err, errlen, "gemv_f32", FK_TIER_FAST);
}

int fkb_flashkern_prepare_exact_packed(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                       size_t errlen) {
  return prepare(p, c, out, err, errlen, "gemv_bf16_rne_packed", FK_TIER_EXACT);
}

int fkb_flashkern_prepare_fast_packed(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                      size_t errlen) {
  return prepare(p, c, out, err, errlen, "gemv_bf16_rne_packed", FK_TIER_FAST);
}

int fkb_flashkern_prepare_q8(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen) {
  return prepare(p, c, out, err, errlen, "gemv_q8_bf16_rne", FK_TIER_EXACT);
}

int fkb_flashkern_prepare_q4(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen) {
  return prepare(p, c, out, err, errlen, "gemv_q4_bf16_rne", FK_TIER_EXACT);
}

int fkb_flashkern_prepare_q8_fast(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                  size_t errlen) {
  return prepare(p, c, out, err, errlen, "gemv_q8_bf16_rne", FK_TIER_FAST);
}

int fkb_flashkern_prepare_q4_fast(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                  size_t errlen) {
  return prepare(p, c, out, err, errlen, "gemv_q4_bf16_rne", FK_TIER_FAST);
}

int fkb_flashkern_prepare_q8_ymm(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                 size_t errlen) {
  return prepare_on(p, c, out, err, errlen, "gemv_q8_bf16_rne", FK_TIER_FAST, fk_cpu_features() & ymm_features);
}

int fkb_flashkern_prepare_q4_ymm(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                 size_t errlen) {
  return prepare_on(p, c, out, err, errlen, "gemv_q4_bf16_rne", FK_TIER_FAST, fk_cpu_features() & ymm_features);
}

int fkb_flashkern_prepare_q8_avx2(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                  size_t errlen) {
  return prepare_on(p, c, out, err, errlen, "gemv_q8_bf16_rne", FK_TIER_FAST,
                    fk_cpu_features() & avx2_features);
}

int fkb_flashkern_prepare_q4_avx2(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                  size_t errlen) {
  return prepare_on(p, c, out, err, errlen, "gemv_q4_bf16_rne", FK_TIER_FAST,
                    fk_cpu_features() & avx2_features);
}

int fkb_flashkern_prepare_fast_blocked(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                       size_t errlen) {
  return prepare(p, c, out, err, errlen, "gemv_bf16_rne_blocked", FK_TIER_FAST);
}

int fkb_flashkern_select(void *state, int64_t m, int nthreads, char *err, size_t errlen) {
  fk_state *st = state;
  (void)nthreads;
  if (m > FKB_M_MAX && (!st->packed || st->blocked)) {
    snprintf(err, errlen, "M = %lld: %s takes M <= %d (the GEMM runs on the packed forms)", (long long)m,
             st->leaf.symbol, FKB_M_MAX);
    return -1;
  }
  st->m = m;
  return 0;
}

void fkb_flashkern_run(void *state, size_t copy, int tid, int nthreads) {
  const fk_state *st = state;
  int64_t b, e;
  fkb_rows(st->n, tid, nthreads, &b, &e);
  if (b >= e) return;
  const uint16_t *own = st->packed ? (const uint16_t *)((const char *)st->region + copy % st->ncopies * st->stride) : NULL;
  if (st->blocked) {
    fk_gemv_bf16_rne_blocked_args a = { .w = own, .x = st->x, .ldx = st->k, .xs = st->xs[tid], .y = st->y,
                                        .y_off = 0, .ldy = st->n, .m = st->m, .k = st->k, .row_begin = b,
                                        .row_end = e };
    st->leaf.fn(&a);
  } else if (st->packed) {
    /* M > 4: weight rows in blocks, activation rows in calls of <= FK_GEMV_CALL_ROWS (the runtime's
     * way) */
    int64_t blk = st->m > FKB_M_MAX ? fk_gemv_block_rows(st->k) : e - b;
    for (int64_t b0 = b; b0 < e; b0 += blk)
      for (int64_t r = 0; r < st->m; r += FK_GEMV_CALL_ROWS) {
        fk_gemv_bf16_rne_packed_args a = { .w = own, .x = st->x + r * st->k, .ldx = st->k, .xs = st->xs[tid],
                                           .y = st->y, .y_off = r * st->n, .ldy = st->n,
                                           .m = st->m - r < FK_GEMV_CALL_ROWS ? st->m - r : FK_GEMV_CALL_ROWS,
                                           .k = st->k, .row_begin = b0, .row_end = b0 + blk < e ? b0 + blk : e };
        st->leaf.fn(&a);
      }
  } else if (st->f32_out) {
    fk_gemv_f32_args a = { .w = st->copies->w[copy], .ldw = st->k, .x = st->x, .ldx = st->k, .xs = st->xs[tid],
                           .y = st->y, .y_off = 0, .ldy = st->n, .m = st->m, .k = st->k,
                           .row_begin = b, .row_end = e };
    st->leaf.fn(&a);
  } else {
    fk_gemv_bf16_rne_args a = { .w = st->copies->w[copy], .ldw = st->k, .x = st->x, .ldx = st->k,
                                .xs = st->xs[tid], .y = st->y, .y_off = 0, .ldy = st->n, .m = st->m,
                                .k = st->k, .row_begin = b, .row_end = e };
    st->leaf.fn(&a);
  }
}

void fkb_flashkern_output(void *state, float *y) {
  const fk_state *st = state;
  for (int64_t i = 0; i < st->m * st->n; i++)
    y[i] = st->f32_out ? ((const float *)st->y)[i] : fkb_bf16_to_f32(((const uint16_t *)st->y)[i]);
}

void fkb_flashkern_finish(void *state) {
  fk_state *st = state;
  for (int t = 0; t < FKB_THREADS_MAX; t++) fkb_free(st->xs[t]);
  fkb_free(st->y);
  fkb_free(st->wdeq);
  if (st->region) fkb_region_free(st->region, st->region_bytes);
  fkb_free(st);
}
