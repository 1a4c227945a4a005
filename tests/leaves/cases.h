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

void fkt_free_cases(fkh_call *calls, int n);

/* Case list under construction. */
typedef struct fkt_list { fkh_call *calls; int n, cap; } fkt_list;
fkh_call *fkt_push(fkt_list *l, const char *form_id, const char *name);

/* Bit-pattern helpers for building values. */
float fkt_f32(uint32_t bits);
uint16_t fkt_bf16_of(float f);   /* truncating: only for values already exact in bf16 */

#endif
