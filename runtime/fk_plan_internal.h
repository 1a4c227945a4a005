/* runtime/fk_plan_internal.h: the plan, its team and its programs (not installed). */
#ifndef FK_PLAN_INTERNAL_H
#define FK_PLAN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "fk_internal.h"

enum { FK_MAX_THREADS = 64, FK_MAX_PHASES = 4 };

typedef struct fk_barrier {
  _Atomic uint32_t count, gen, sleepers;
  uint32_t n;
} fk_barrier;

void fk_barrier_init(fk_barrier *b, uint32_t n);
/* Returns once all n members have arrived; the last to arrive releases the others. */
void fk_barrier_wait(fk_barrier *b);

/* The leaf each phase calls, resolved at readiness. ORDER ROLE: role_forms in fk_plan.c. */
typedef enum fk_role { R_NORM, R_IN, R_CONV, R_OUT, R_HEAD, R_FRAME, R_FLUSH, R_COUNT } fk_role;

/* One fk_run's parameters, posted by member 0 before the start barrier. */
typedef struct fk_job {
  fk_program program;
  int64_t rows;
  uint16_t *x;
  int64_t ldx;
  const float *feat;
  int64_t ldfeat;
  void *pcm;
  int64_t frame0; /* the stream's frame index of the job's first frame */
} fk_job;

typedef struct fk_plan fk_plan;
typedef struct fk_team fk_team;
typedef struct fk_worker_arg {
  fk_team *team;
  int member;
} fk_worker_arg;

/* The fixed team: created by the first plan, shared by plans made with desc.team_of, stopped
 * and freed by the last one destroyed. */
struct fk_team {
  fk_barrier start, phase;
  _Atomic int quit, busy, refs;
  int threads, started;
  fk_plan *current;        /* the plan whose job is posted (written before the start barrier) */
  pthread_t workers[FK_MAX_THREADS];
  int cpu[FK_MAX_THREADS]; /* the CPU each member is bound to, -1: unbound */
  int caller_cpu;          /* where member 0 ran at its last dispatch */
  fk_worker_arg worker_args[FK_MAX_THREADS];
};

typedef struct fk_phase_time {
  uint64_t runs, ns;
} fk_phase_time;

struct fk_plan {
  /* shapes and options, from the descriptor */
  uint32_t programs, flags;
  int threads;
  fk_tier tier;
  int64_t h, max_rows, tail_in, max_frames;
  float eps, clip;
  fk_leaf leaf[R_COUNT];
  /* the arena: this struct, then every buffer below, one allocation */
  void *arena;
  size_t arena_bytes;
  /* weights, packed or rearranged at readiness */
  uint16_t *norm_w, *in_w, *conv_w, *conv_b, *out_w, *head_w;
  float *head_b;
  /* transient planes (live within one program) */
  float *xn;         /* max_rows x h: RMSNorm out, in_proj's x */
  uint16_t *bcx;     /* max_rows x 3h: in_proj out, [B | C | x] */
  float *cy;         /* max_rows x h: the conv's gated output, out_proj's x */
  float *spec;       /* max_frames x SPEC_LD: the head's output, the frames' x */
  float *work;       /* the ISTFT frame's scratch */
  float *xs[FK_MAX_THREADS]; /* per member: the GEMV's x arrangement, 4 x round_up(k, 64) */
  /* state */
  uint16_t *carry;   /* 2 x h */
  float *ring;       /* FK_ISTFT_RING */
  int64_t tokens, frames;
  /* the team (maybe shared) and this plan's run */
  fk_team *team;
  _Atomic int busy;
  fk_job job;
  fk_phase_time timing[FK_PROG_COUNT][FK_MAX_PHASES];
};

/* Runs every phase of plan->job's program as `member`, a barrier after each. */
void fk_plan_member_run(fk_plan *plan, int member);

/* Allocates and starts a team of `threads` (placement per flags); FK_ENOMEM, FK_ESYSTEM. */
fk_status fk_team_create(int threads, uint32_t flags, fk_team **out, fk_error *err);
/* Called by member 0 before each dispatch: when the caller now runs on a bound member's CPU,
 * that member is rebound to the CPU the caller left (no member shares the caller's CPU). */
void fk_team_dodge(fk_team *team);
/* Drops one reference; the last stops the members and frees the team. */
void fk_team_release(fk_team *team);

/* For fk_bench_runtime only: runs `phases` empty phases on the team (dispatch and barriers,
 * no leaf), as fk_run would. */
void fk_plan_run_empty(fk_plan *plan, int phases);

#endif
