/* runtime/fk_team.c: the fixed team of threads and the barrier that ends each phase.
 *
 * The team runs posted work (a function and its context); it knows no plan. The barrier
 * counts arrivals; the last member to arrive resets the count and advances the generation,
 * which releases the others. A waiter spins on the generation for a while (a phase
 * is microseconds long, a futex round trip is several), then sleeps on it with a futex. The
 * team is created at readiness and parked on the start barrier between programs; member 0 is
 * the caller of fk_run and arrives last at the start barrier once the job is posted. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>

#include "fk_team.h"

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

/* A waiter polls SPINS times before it sleeps: the first YIELD_AFTER with pause/yield (a few
 * us: most phases end within that), then with sched_yield(), so that a member the scheduler
 * put on this waiter's CPU runs at once instead of after this one's time slice (measured on
 * 2 vCPUs, the caller moved onto its bound worker's CPU: a 2048-wide decode step 1200 us with
 * pause alone, 360 us with the yields); then futex. */
enum { SPINS = 1 << 12, YIELD_AFTER = 1 << 8 };

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
    if (i < YIELD_AFTER) cpu_relax();
    else sched_yield();
  }
  /* sleepers and gen are both seq_cst: either the advancer sees this sleeper, or this
   * sleeper sees the new generation (the futex re-checks the value atomically) */
  atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
  while (atomic_load_explicit(&b->gen, memory_order_seq_cst) == g) futex_wait(&b->gen, g);
  atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_relaxed);
}

/* ---- the team ------------------------------------------------------------------------------ */

static void *worker(void *p) {
  fk_team *team = ((fk_worker_arg *)p)->team;
  int member = ((fk_worker_arg *)p)->member;
  for (;;) {
    fk_barrier_wait(&team->start);
    if (atomic_load_explicit(&team->quit, memory_order_acquire)) return NULL;
    team->fn(team->ctx, member);
  }
}

/* Placement (flashkern.h, FK_PLAN_NO_PIN): members 1.. get the allowed CPUs after the caller's
 * current one, in order, wrapping; nothing is bound when they do not each get their own CPU. */
static void place(fk_team *team, uint32_t flags) {
  for (int m = 0; m < FK_MAX_THREADS; m++) team->cpu[m] = -1;
  team->caller_cpu = -1;
#if defined(__linux__)
  if (flags & FK_PLAN_NO_PIN || team->threads < 2) return;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < team->threads) return;
  int here = sched_getcpu();
  if (here < 0 || here >= CPU_SETSIZE || !CPU_ISSET((size_t)here, &allowed)) return;
  team->caller_cpu = here;
  int m = 1;
  for (int k = 1; k < CPU_SETSIZE && m < team->threads; k++) {
    int c = (here + k) % CPU_SETSIZE;
    if (CPU_ISSET((size_t)c, &allowed)) team->cpu[m++] = c;
  }
#else
  (void)flags;
#endif
}

/* When the caller now runs on a bound member's CPU, that member is rebound to the CPU the caller
 * left (no member shares the caller's CPU). */
static void dodge(fk_team *team) {
#if defined(__linux__)
  if (team->caller_cpu < 0) return; /* nobody bound */
  int here = sched_getcpu(), prev = team->caller_cpu;
  if (here == prev || here < 0 || here >= CPU_SETSIZE) return;
  team->caller_cpu = here;
  int hit = 0;
  for (int m = 1; m < team->threads; m++) {
    if (team->cpu[m] == prev) return; /* the CPU left is taken: keep things as they are */
    if (team->cpu[m] == here) hit = m;
  }
  if (!hit) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET((size_t)prev, &one);
  if (pthread_setaffinity_np(team->workers[hit], sizeof one, &one) == 0) team->cpu[hit] = prev;
#else
  (void)team;
#endif
}

void fk_team_dispatch(fk_team *team, fk_team_fn fn, void *ctx) {
  dodge(team);
  team->fn = fn;
  team->ctx = ctx;
  fk_barrier_wait(&team->start);
  fn(ctx, 0);
}

static void team_stop(fk_team *team) {
  /* every member counts at the start barrier: the ones never started arrive in their place */
  atomic_store_explicit(&team->quit, 1, memory_order_release);
  uint32_t g;
  for (int m = team->started + 1; m < team->threads; m++) arrive(&team->start, &g);
  fk_barrier_wait(&team->start);
  for (int m = 1; m <= team->started; m++) pthread_join(team->workers[m], NULL);
  team->started = 0;
}

fk_status fk_team_create(int threads, uint32_t flags, fk_team **out, fk_error *err) {
  *out = NULL;
  fk_team *team = calloc(1, sizeof *team);
  if (!team) return fk_error_set(err, FK_ENOMEM, __FILE__, __LINE__, "fk_plan_create: the team could not be allocated");
  team->threads = threads;
  fk_barrier_init(&team->start, (uint32_t)threads);
  fk_barrier_init(&team->phase, (uint32_t)threads);
  atomic_init(&team->quit, 0);
  atomic_init(&team->busy, 0);
  atomic_init(&team->refs, 1);
  place(team, flags);
  for (int m = 1; m < threads; m++) {
    team->worker_args[m].team = team;
    team->worker_args[m].member = m;
    pthread_attr_t attr, *pa = NULL;
#if defined(__linux__)
    if (team->cpu[m] >= 0 && pthread_attr_init(&attr) == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET((size_t)team->cpu[m], &one);
      pa = &attr;
      if (pthread_attr_setaffinity_np(&attr, sizeof one, &one) != 0) team->cpu[m] = -1;
    }
#endif
    int rc = pthread_create(&team->workers[m], pa, worker, &team->worker_args[m]);
    if (rc != 0 && pa) { /* binding refused (a cgroup, a container): the member runs unbound */
      team->cpu[m] = -1;
      rc = pthread_create(&team->workers[m], NULL, worker, &team->worker_args[m]);
    }
    if (pa) pthread_attr_destroy(pa);
    if (rc != 0) {
      team_stop(team);
      free(team);
      return fk_error_set(err, FK_ESYSTEM, __FILE__, __LINE__, "fk_plan_create: starting team member %d of %d: %s", m,
                          threads, strerror(rc));
    }
    team->started = m;
  }
  *out = team;
  return FK_OK;
}

void fk_team_release(fk_team *team) {
  if (!team || atomic_fetch_sub(&team->refs, 1) != 1) return;
  team_stop(team);
  free(team);
}
