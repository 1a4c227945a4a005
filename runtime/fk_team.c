/* runtime/fk_team.c: the fixed team of threads and the barrier that ends each phase.
 *
 * The barrier counts arrivals; the last member to arrive resets the count and advances the
 * generation, which releases the others. A waiter spins on the generation for a while (a phase
 * is microseconds long, a futex round trip is several), then sleeps on it with a futex. The
 * team is created at readiness and parked on the start barrier between programs; member 0 is
 * the caller of fk_run and arrives last at the start barrier once the job is posted. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "fk_plan_internal.h"

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

static void futex_wait(_Atomic uint32_t *addr, uint32_t val) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}
static void futex_wake_all(_Atomic uint32_t *addr) {
  syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
#else
#include <sched.h>
static void futex_wait(_Atomic uint32_t *addr, uint32_t val) {
  (void)addr;
  (void)val;
  sched_yield();
}
static void futex_wake_all(_Atomic uint32_t *addr) { (void)addr; }
#endif

/* The spin-wait hint: compile-time, per target (not a branch in a pass). */
static inline void cpu_relax(void) {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

/* Spins before sleeping: about 10-50 us of pause/yield, longer than a phase's imbalance. */
enum { SPINS = 1 << 12 };

void fk_barrier_init(fk_barrier *b, uint32_t n) {
  atomic_init(&b->count, 0);
  atomic_init(&b->gen, 0);
  atomic_init(&b->sleepers, 0);
  b->n = n;
}

/* One arrival; returns 1 when it was the last (the generation has advanced), else the
 * generation to wait on in *g. */
static int arrive(fk_barrier *b, uint32_t *g) {
  *g = atomic_load_explicit(&b->gen, memory_order_acquire);
  if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 != b->n) return 0;
  /* the last to arrive advances: nobody can re-enter before the generation moves */
  atomic_store_explicit(&b->count, 0, memory_order_relaxed);
  atomic_store_explicit(&b->gen, *g + 1, memory_order_seq_cst);
  if (atomic_load_explicit(&b->sleepers, memory_order_seq_cst)) futex_wake_all(&b->gen);
  return 1;
}

void fk_barrier_wait(fk_barrier *b) {
  uint32_t g;
  if (arrive(b, &g)) return;
  for (int i = 0; i < SPINS; i++) {
    if (atomic_load_explicit(&b->gen, memory_order_acquire) != g) return;
    cpu_relax();
  }
  /* sleepers and gen are both seq_cst: either the advancer sees this sleeper, or this
   * sleeper sees the new generation (the futex re-checks the value atomically) */
  atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
  while (atomic_load_explicit(&b->gen, memory_order_seq_cst) == g) futex_wait(&b->gen, g);
  atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_relaxed);
}

/* ---- the team ------------------------------------------------------------------------------ */

static void *worker(void *p) {
  fk_plan *plan = ((fk_worker_arg *)p)->plan;
  int member = ((fk_worker_arg *)p)->member;
  for (;;) {
    fk_barrier_wait(&plan->start);
    if (atomic_load_explicit(&plan->quit, memory_order_acquire)) return NULL;
    fk_plan_member_run(plan, member);
  }
}

fk_status fk_team_start(fk_plan *plan, fk_error *err) {
  fk_barrier_init(&plan->start, (uint32_t)plan->threads);
  fk_barrier_init(&plan->phase, (uint32_t)plan->threads);
  atomic_init(&plan->quit, 0);
  plan->started = 0;
  for (int m = 1; m < plan->threads; m++) {
    plan->worker_args[m].plan = plan;
    plan->worker_args[m].member = m;
    int rc = pthread_create(&plan->workers[m], NULL, worker, &plan->worker_args[m]);
    if (rc != 0) {
      fk_team_stop(plan);
      return fk_error_set(err, FK_ESYSTEM, __FILE__, __LINE__, "fk_plan_create: starting team member %d of %d: %s", m,
                          plan->threads, strerror(rc));
    }
    plan->started = m;
  }
  return FK_OK;
}

void fk_team_stop(fk_plan *plan) {
  /* every member counts at the start barrier: the ones never started arrive in their place */
  atomic_store_explicit(&plan->quit, 1, memory_order_release);
  uint32_t g;
  for (int m = plan->started + 1; m < plan->threads; m++) arrive(&plan->start, &g);
  fk_barrier_wait(&plan->start);
  for (int m = 1; m <= plan->started; m++) pthread_join(plan->workers[m], NULL);
  plan->started = 0;
}
