/* runtime/fk_team.h: the fixed team of threads and the barrier that ends each phase (not
 * installed). The team runs whatever member 0 posts to it (fk_team_dispatch); it knows no plan
 * and no program. */
#ifndef FK_TEAM_H
#define FK_TEAM_H

#include <pthread.h>
#include <stdatomic.h>

#include "fk_internal.h"

enum { FK_MAX_THREADS = 64 };

typedef struct fk_barrier {
  _Atomic uint32_t count, gen, sleepers;
  uint32_t n;
} fk_barrier;

void fk_barrier_init(fk_barrier *b, uint32_t n);
/* Returns once all n members have arrived; the last to arrive releases the others. */
void fk_barrier_wait(fk_barrier *b);

typedef struct fk_team fk_team;

/* The work of one dispatch, run by every member: fn(ctx, member). */
typedef void (*fk_team_fn)(void *ctx, int member);

typedef struct fk_worker_arg {
  fk_team *team;
  int member;
} fk_worker_arg;

/* The fixed team: created by the first plan, shared by plans made with desc.team_of, stopped
 * and freed by the last one destroyed. */
struct fk_team {
  fk_barrier start, phase;  /* start: releases a dispatch; phase: for the work's own steps */
  _Atomic int quit, busy, refs;
  int threads, started;
  fk_team_fn fn;            /* the posted work (written before the start barrier) */
  void *ctx;
  pthread_t workers[FK_MAX_THREADS];
  int cpu[FK_MAX_THREADS];  /* the CPU each member is bound to, -1: unbound */
  int caller_cpu;           /* where member 0 ran at its last dispatch */
  fk_worker_arg worker_args[FK_MAX_THREADS];
};

/* Allocates and starts a team of `threads` (placement per flags: FK_PLAN_NO_PIN); FK_ENOMEM,
 * FK_ESYSTEM. */
fk_status fk_team_create(int threads, uint32_t flags, fk_team **out, fk_error *err);
/* Member 0's side of a dispatch: when the caller now runs on a bound member's CPU, that member
 * is rebound to the CPU the caller left; then fn and ctx are posted, the team released, and
 * member 0 runs fn(ctx, 0). Returns when member 0's share returns (fn ends with a barrier when
 * the others' work must be done by then). */
void fk_team_dispatch(fk_team *team, fk_team_fn fn, void *ctx);
/* Drops one reference; the last stops the members and frees the team. */
void fk_team_release(fk_team *team);

#endif
