/* bench/fkb_state.h: what the state-committing leaves' benchmark (fk_bench_state.c) shares with
 * its peers and its probe.
 *
 * Every contender is called the way flashkern's stamps are: fn(&args), with the form's argument
 * struct from fk_leaves.h. The peers implement the same contracts (templates/shortconv.lua,
 * templates/qkprep.lua) and must match flashkern's exact tier bit for bit, outputs and state. */
#ifndef FKB_STATE_H
#define FKB_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "fk_leaves.h"

/* ---- the contract models as plain scalar C (state_scalar.c) --------------------------------- *
 * The logic of tests/contract/shortconv.c and tests/contract/qkprep.c, copied (not linked): the
 * baseline of an engine that wrote the math as loops. Built -O2 with the loop vectorizer off. */
void fkb_scalar_shortconv_bf16(const void *args);      /* const fk_shortconv_bf16_args * */
void fkb_scalar_shortconv_bf16_bias(const void *args); /* const fk_shortconv_bf16_bias_args * */
void fkb_scalar_qkprep_neox64(const void *args);       /* const fk_qkprep_neox64_args * */
void fkb_scalar_qkprep_cis32(const void *args);        /* const fk_qkprep_cis32_args * */
const char *fkb_scalar_compiler(void);

/* ---- the compiler's vectorization of the same math (state_autovec.c) ------------------------- *
 * The same order, loops arranged so the compiler vectorizes them; built -O3 -march=native
 * -ffp-contract=off. */
void fkb_vec_shortconv_bf16(const void *args);
void fkb_vec_shortconv_bf16_bias(const void *args);
void fkb_vec_qkprep_neox64(const void *args);
void fkb_vec_qkprep_cis32(const void *args);
const char *fkb_vec_compiler(void);

/* ---- the L2 read+write bandwidth probe (l2_probe.c) ------------------------------------------ */

typedef struct fkb_l2_probe fkb_l2_probe;
/* Two buffers of `bytes` each (a multiple of 512; both together must fit the L2), written once.
 * NULL when out of memory. */
fkb_l2_probe *fkb_l2_probe_create(size_t bytes);
/* `passes` copies of buffer A into buffer B. */
void fkb_l2_probe_run(fkb_l2_probe *p, int passes);
/* Bytes one pass moves: read A + write B. */
double fkb_l2_probe_pass_bytes(const fkb_l2_probe *p);
size_t fkb_l2_probe_buffer_bytes(const fkb_l2_probe *p);
const char *fkb_l2_probe_kind(const fkb_l2_probe *p);
void fkb_l2_probe_destroy(fkb_l2_probe *p);

#endif /* FKB_STATE_H */
