/* tests/leaves/cases.h: the contract cases of each leaf form, built deterministically (the
 * same bytes on every run and every ISA): >= 200 seeded random shapes plus named edge cases
 * (tails, row groups, strides, NaN payloads, infinities, signed zeros, subnormals, RNE ties). */
#ifndef FKT_CASES_H
#define FKT_CASES_H

#include "../harness/fkh.h"

/* Builds every case of `form_id` into a new array; returns the count. */
typedef int (*fkt_builder)(const char *form_id, fkh_call **calls);

int fkt_gemv_cases(const char *form_id, fkh_call **calls);
int fkt_rmsnorm_cases(const char *form_id, fkh_call **calls);
int fkt_shortconv_cases(const char *form_id, fkh_call **calls);
int fkt_qkprep_cases(const char *form_id, fkh_call **calls);
int fkt_vmath_cases(const char *form_id, fkh_call **calls);
int fkt_irfft_cases(const char *form_id, fkh_call **calls);
int fkt_istft_cases(const char *form_id, fkh_call **calls);
int fkt_swiglu_cases(const char *form_id, fkh_call **calls);
int fkt_embed_cases(const char *form_id, fkh_call **calls);
int fkt_attn_cases(const char *form_id, fkh_call **calls);
/* attn: scratch floats the leaf uses (round_up(n, 16), n the window); the cases give 16 more */
int64_t fkt_attn_scratch_used(const fkh_call *c);
int fkt_sample_cases(const char *form_id, fkh_call **calls);

void fkt_free_cases(fkh_call *calls, int n);

/* GEMV: elements of the xs scratch for m rows of k; the float64 reference of output (j, n)
 * with its bound for the tier (fixtures/README.md: gemv_f64, gemv_fast_f64); the output as
 * a double; whether a value is within (NaN and infinities by class). */
int64_t fkt_gemv_xs_elems(int64_t m, int64_t k);
void fkt_gemv_pack_call(const fkh_call *rm, const char *packed_form, fkh_call *out);
double fkt_gemv_reference(fkh_call *c, int64_t j, int64_t n, int fast, double *err);
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
