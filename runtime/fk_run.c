/* runtime/fk_run.c: fk_run: the checks every program shares, the program's family's own
 * (fk_family.check_io), the dispatch of its steps on the team, the commit; per-phase timing.
 *
 * A phase is a function that issues the leaf calls of one member's share; the share is a pure
 * function of (rows, member, team size) and every output element is computed by exactly one leaf
 * call whose arithmetic does not depend on the share, so results are the same for every team
 * size. After the checks: no allocation, no system call but the barrier's futex, no file. */
#define _GNU_SOURCE /* clock_gettime, CLOCK_MONOTONIC */
#include <time.h>

#include "fk_plan_internal.h"

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Runs every phase of p->job's program as `member`, a barrier after each (the team's work). */
static void member_run(void *ctx, int member) {
  fk_plan *p = ctx;
  if (p->job.program == FK_PROG_COUNT) { /* fk_plan_run_empty */
    for (int64_t i = 0; i < p->job.io.rows; i++) fk_barrier_wait(&p->team->phase);
    return;
  }
  const fk_prog_rt *r = &p->prog[p->job.program];
  const fk_step *steps = r->steps;
  int n = r->nsteps;
  fk_phase_time *tm = r->timing;
  int timed = member == 0 && (p->flags & FK_PLAN_TIMING);
  /* read before the first barrier: once the last one passes, member 0 may return and the host
   * destroy the plan, so no member touches p after it */
  void (*trace)(void *, const fk_plan *, const fk_step *) = p->trace;
  /* the gates, and the last step that runs: every member skips the same steps (no barrier
   * either) and touches no step after the last barrier */
  uint32_t gates = p->job.gates;
  while (n > 0 && steps[n - 1].gate >= 0 && !(gates >> steps[n - 1].gate & 1u)) n--;
  uint64_t t0 = timed ? now_ns() : 0;
  for (int i = 0; i < n; i++) {
    if (steps[i].gate >= 0 && !(gates >> steps[i].gate & 1u)) continue;
    steps[i].run(p, &steps[i], member);
    fk_barrier_wait(&p->team->phase);
    if (trace) { /* tests only: every member waits while member 0 observes */
      if (member == 0) trace(p->trace_ctx, p, &steps[i]);
      fk_barrier_wait(&p->team->phase);
    }
    if (timed) {
      uint64_t t1 = now_ns();
      tm[i].runs++;
      tm[i].ns += t1 - t0;
      t0 = t1;
    }
  }
}

/* Member 0's side of a program: post the job, release the team, run its own share. */
static void dispatch(fk_plan *p) { fk_team_dispatch(p->team, member_run, p); }

void fk_plan_run_empty(fk_plan *p, int phases) {
  p->job = (fk_job){ .program = FK_PROG_COUNT, .io = { .rows = phases } };
  dispatch(p);
}

fk_status fk_run(fk_plan *p, fk_program prog, fk_io *io, fk_error *err) {
  FK_RETURN_ERROR_IF(!p, err, FK_EINVAL, "fk_run: plan is NULL");
  FK_RETURN_ERROR_IF((unsigned)prog >= FK_PROG_COUNT, err, FK_EINVAL, "fk_run: program = %d: not a program", (int)prog);
  const char *name = fk_program_name(prog);
  const fk_prog_rt *r = &p->prog[prog];
  FK_RETURN_ERROR_IF(!r->fam, err, FK_EINVAL, "fk_run(%s): the plan was not made ready for it (desc.programs = 0x%x)",
                     name, p->programs);
  FK_RETURN_ERROR_IF(!io, err, FK_EINVAL, "fk_run(%s): io is NULL", name);
  int64_t due = 0;
  fk_status s = r->fam->check_io(r->rec, prog, io, &due, err);
  if (s != FK_OK) return s;
  FK_RETURN_ERROR_IF(!fk_plan_claim(p), err, FK_EBUSY, "fk_run(%s): another fk_run is in flight on this plan", name);
  p->job = (fk_job){ .program = prog, .io = *io, .gates = r->fam->gates ? r->fam->gates(r->rec, prog) : 0 };
  if (r->fam->idle && r->fam->idle(r->rec, prog)) { /* nothing to run: the team is not needed */
    r->fam->commit(r->rec, &p->job, io, due);
    fk_plan_release(p);
    return FK_OK;
  }
  int idle = 0;
  if (!atomic_compare_exchange_strong(&p->team->busy, &idle, 1)) {
    fk_plan_release(p);
    return fk_error_set(err, FK_EBUSY, __FILE__, __LINE__,
                        "fk_run(%s): another plan on this plan's team (desc.team_of) is running", name);
  }
  dispatch(p);
  /* state commits, in causal order, after the program's last barrier; then io's outputs */
  r->fam->commit(r->rec, &p->job, io, due);
  atomic_store(&p->team->busy, 0);
  fk_plan_release(p);
  return FK_OK;
}
