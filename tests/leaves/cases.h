/* tests/leaves/cases.h: the contract cases of each leaf form, built deterministically (the
 * same bytes on every run and every ISA): >= 200 seeded random shapes plus named edge cases
 * (tails, row groups, strides, NaN payloads, infinities, signed zeros, subnormals, RNE ties). */
#ifndef FKT_CASES_H
#define FKT_CASES_H

#include "../harness/fkh.h"

/* Builds every case of `form_id` into a new array; returns the count. */
typedef int (*fkt_builder)(const char *form_id, fkh_call **calls);

/* The case builder of every leaf: fkt_<leaf>_cases in tests/leaves/cases_<leaf>.c, declared weak
 * from the registry (FK_LEAVES): a leaf without one links, and fkt_builder_of() gives NULL, which
 * the coverage test reports by name. */
#define FKT_DECLARE_CASES(leaf, path, gate, fast_tolerance) \
  int fkt_##leaf##_cases(const char *form_id, fkh_call **calls) __attribute__((weak));
FK_LEAVES(FKT_DECLARE_CASES)
#undef FKT_DECLARE_CASES
fkt_builder fkt_builder_of(const char *leaf);   /* NULL: unknown leaf, or no case builder */

/* attn: scratch floats the leaf uses (round_up(n, 16), n the window); the cases give 16 more */
int64_t fkt_attn_scratch_used(const fkh_call *c);

void fkt_free_cases(fkh_call *calls, int n);

/* GEMV: elements of the xs scratch for m rows of k; the float64 reference of output (j, n)
 * with its bound for the tier (fixtures/README.md: gemv_f64, gemv_fast_f64); the output as
 * a double; whether a value is within (NaN and infinities by class). */
int64_t fkt_gemv_xs_elems(int64_t m, int64_t k);
void fkt_gemv_pack_call(const fkh_call *rm, const char *packed_form, fkh_call *out);
double fkt_gemv_reference(fkh_call *c, int64_t j, int64_t n, int fast, double *err);
int fkt_gemv_is_quant(const fkh_call *c);   /* 1 for the quantized forms (gemv_q8_*, gemv_q4_*) */
double fkt_gemv_bound(fkh_call *c, double ref, double e, double refs);
double fkt_gemv_output(fkh_call *c, int64_t j, int64_t n);
int fkt_gemv_within(double y, double ref, double bound);

/* Case list under construction. */
typedef struct fkt_list { fkh_call *calls; int n, cap; } fkt_list;
fkh_call *fkt_push(fkt_list *l, const char *form_id, const char *name);

/* Bit-pattern helpers for building values. */
float fkt_f32(uint32_t bits);
uint16_t fkt_bf16_of(float f);   /* truncating: only for values already exact in bf16 */

#endif
