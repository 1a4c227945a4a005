/* bench/fkb_runtime.h: the runtime benchmark's peers (runtime_peers.c): the LFM2 ShortConv block
 * decode step made of the same four stamps a plan resolves, called by the bench itself, either
 * back to back on one thread (no runtime at all) or inside an OpenMP parallel region with the
 * plan's row shares and an OpenMP barrier between phases (what a host would write instead). */
#ifndef FKB_RUNTIME_H
#define FKB_RUNTIME_H

#include "flashkern.h"

typedef struct fkb_block {
  int64_t h;
  fk_leaf norm, in, conv, out;         /* rmsnorm_bf16_wide, gemv_bf16_rne_packed, shortconv_bf16_wide,
                                          gemv_bf16_rne_add_packed */
  const uint16_t *norm_w, *conv_w;     /* conv taps tap-major */
  const uint16_t *in_w, *out_w;        /* fk_gemv_pack layouts */
  uint16_t *carry, *bcx;
  float *xn, *cy, *xs[2];
} fkb_block;

/* One decode row of x through the block: the four stamps in order, on the calling thread. */
void fkb_block_direct(const fkb_block *b, uint16_t *x);
/* The same in one OpenMP parallel region of nthreads: each phase split as fk_run splits it
 * (weight rows in whole pack groups, the conv on thread 0), an omp barrier after each. */
void fkb_block_omp(const fkb_block *b, uint16_t *x, int nthreads);
/* An OpenMP region of nthreads with `phases` barriers and no work (the peer of empty phases). */
void fkb_omp_empty(int phases, int nthreads);
const char *fkb_omp_version(void);
/* The read-bandwidth probe (bw_probe.c) on nthreads OpenMP threads, each reading its share. */
void fkb_omp_probe(void *probe, int nthreads);

#endif
