/* tests/contract/embed.c: contract model of templates/embed.lua (params codebooks=8, upsample=6).
 *
 * gather_bf16(_wide): row j of y = row ids[j] of the table, bits as they are except a NaN, which
 * becomes the canonical 0x7fc0 (the wide form: each bf16 widened exactly, << 16; NaN 0x7fc00000).
 * codebook_mean(_x6): for frame j, with e_c the widened row
 * c * vocab + codes[j * ld_codes + c * cb_stride] of the table,
 *   s = +0.0f; s = s + e_c for c = 0 .. 7 in increasing c (f32 adds);  y = s / 8
 * (the template multiplies by 0.125f: the same real number, rounded once; a NaN mean: 0x7fc00000);
 * the _x6 form writes y to rows 6j .. 6j+5, the _x6_bf16 form RNE(y) (the integer rule) to bf16 rows
 * 6j .. 6j+5. codebook_sum_bf16: the same s, no divide, y = RNE(s) (the integer rule) in bf16 row j.
 * Ids are in range (the caller's guarantee). */
#include "contract.h"

enum { CODEBOOKS = 8, UPSAMPLE = 6 };

static void gather(const int32_t *ids, const uint16_t *table, uint16_t *y, float *yw, int64_t d, int64_t m,
                   int64_t ld_table, int64_t ldy, fkc_perturb p) {
  for (int64_t j = 0; j < m; j++) {
    /* FKC_CURSOR_OFF_BY_ONE: each id read one slot late (the last one repeated) */
    int64_t k = p == FKC_CURSOR_OFF_BY_ONE && j + 1 < m ? j + 1 : j;
    const uint16_t *src = table + (int64_t)ids[k] * ld_table;
    for (int64_t i = 0; i < d; i++) {
      if (yw) yw[j * ldy + i] = fkc_bf16_to_f32(fkc_canon_bf16(src[i], p));
      else y[j * ldy + i] = fkc_canon_bf16(src[i], p);
    }
  }
}

void fkc_embed_gather_bf16(const fk_embed_gather_bf16_args *a, fkc_perturb p) {
  gather(a->ids, a->table, a->y, 0, a->d, a->m, a->ld_table, a->ldy, p);
}

void fkc_embed_gather_bf16_wide(const fk_embed_gather_bf16_wide_args *a, fkc_perturb p) {
  gather(a->ids, a->table, 0, a->y, a->d, a->m, a->ld_table, a->ldy, p);
}

/* Perturbations (codebook_sum_bf16's as the mean forms'): FKC_TREE_PAIRWISE sums the 8 rows as a
 * pairwise tree ((e0+e1)+(e2+e3)) + ...;
 * FKC_LANES_PERMUTED sums the codebooks in reverse order; FKC_CURSOR_OFF_BY_ONE repeats one row
 * short in the x6 forms (rows 6j .. 6j+4 written, row 6j+5 left as it was); FKC_RNE_BIAS rounds the
 * bf16 form's mean half up. yb: the bf16 form's y (y unused). */
static void mean(const int32_t *codes, const uint16_t *table, float *y, uint16_t *yb, int64_t d, int64_t m,
                 int64_t vocab, int64_t ld_codes, int64_t cb_stride, int64_t ld_table, int64_t ldy, int rep,
                 int sum, fkc_perturb p) {
  for (int64_t j = 0; j < m; j++) {
    const uint16_t *row[CODEBOOKS];
    for (int c = 0; c < CODEBOOKS; c++)
      row[c] = table + ((int64_t)c * vocab + codes[j * ld_codes + c * cb_stride]) * ld_table;
    for (int64_t i = 0; i < d; i++) {
      float e[CODEBOOKS], s = 0.0f;
      for (int c = 0; c < CODEBOOKS; c++) e[c] = fkc_bf16_to_f32(row[c][i]);
      if (p == FKC_TREE_PAIRWISE) {
        s = ((e[0] + e[1]) + (e[2] + e[3])) + ((e[4] + e[5]) + (e[6] + e[7]));
      } else if (p == FKC_LANES_PERMUTED) {
        for (int c = CODEBOOKS - 1; c >= 0; c--) s = s + e[c];
      } else {
        for (int c = 0; c < CODEBOOKS; c++) s = s + e[c];
      }
      float v = sum ? s : s / 8.0f;   /* codebook_sum_bf16: the sum itself */
      int copies = p == FKC_CURSOR_OFF_BY_ONE && rep > 1 ? rep - 1 : rep;
      for (int k = 0; k < copies; k++) {
        if (yb) yb[((int64_t)rep * j + k) * ldy + i] = fkc_rne_bits(fkc_f32_bits(v), p);
        else y[((int64_t)rep * j + k) * ldy + i] = fkc_canon(v, p);
      }
    }
  }
}

void fkc_embed_codebook_mean(const fk_embed_codebook_mean_args *a, fkc_perturb p) {
  mean(a->codes, a->table, a->y, 0, a->d, a->m, a->vocab, a->ld_codes, a->cb_stride, a->ld_table, a->ldy, 1, 0, p);
}

void fkc_embed_codebook_mean_x6(const fk_embed_codebook_mean_x6_args *a, fkc_perturb p) {
  mean(a->codes, a->table, a->y, 0, a->d, a->m, a->vocab, a->ld_codes, a->cb_stride, a->ld_table, a->ldy, UPSAMPLE, 0, p);
}

void fkc_embed_codebook_mean_x6_bf16(const fk_embed_codebook_mean_x6_bf16_args *a, fkc_perturb p) {
  mean(a->codes, a->table, 0, a->y, a->d, a->m, a->vocab, a->ld_codes, a->cb_stride, a->ld_table, a->ldy, UPSAMPLE, 0, p);
}

void fkc_embed_codebook_sum_bf16(const fk_embed_codebook_sum_bf16_args *a, fkc_perturb p) {
  mean(a->codes, a->table, 0, a->y, a->d, a->m, a->vocab, a->ld_codes, a->cb_stride, a->ld_table, a->ldy, 1, 1, p);
}
