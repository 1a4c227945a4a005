/* runtime/fk_plan_internal.h: the engine (not installed): the plan and its arena, the family
 * interface every program family implements, steps, the job of one fk_run, the snapshot header.
 *
 * The engine (fk_plan.c: readiness and introspection, fk_run.c: dispatch, fk_state.c: the state's
 * framing) knows no program: it visits the table of families (fk_families.c) and calls each
 * ready family through its fk_family. A family's data (shapes, packed weights, planes, state)
 * lives in its record, carved from the arena; its steps carry the record to the phases. Program
 * files include this header (and fk_program.h); this header includes no program's. */
#ifndef FK_PLAN_INTERNAL_H
#define FK_PLAN_INTERNAL_H

#include "fk_roles.h"
#include "fk_team.h"

typedef struct fk_plan fk_plan;
typedef struct fk_step fk_step;
typedef struct fk_job fk_job;

/* One phase of a program: run by every member on its share, a barrier after it. Steps are built
 * at readiness into the arena (a model program has a few per layer). */
struct fk_step {
  void (*run)(fk_plan *, const fk_step *, int member);
  const char *name, *split; /* fk_phase_info.name, .split */
  fk_role role;             /* the stamp it calls: plan->leaf[role] (fk_phase_info.symbol) */
  void *ctx;                /* what it works on: its family's record (a model's begins with its stack) */
  int layer;                /* the model layer it works on, -1 for none (fk_phase_info.layer) */
  int gate;                 /* -1, or the step runs (with its barrier) only when bit `gate` of the job's
                               gates is set (fk_family.gates, fixed for the whole run) */
};

/* ---- the arena ------------------------------------------------------------------------------
 * Readiness lays the arena out twice with the same calls: once to size it (base NULL: nothing is
 * written, fk_plan_check), once to carve it (fk_plan_create). Order: the plan, then each ready
 * family in table order (its record, its buffers, its programs' steps), then each member's scratch. */
typedef struct fk_carver {
  size_t used;
  char *base;    /* NULL while sizing */
  size_t member; /* the scratch each member needs (the largest any family noted) */
} fk_carver;

/* Carves `bytes` aligned to 64; NULL while sizing. */
void *fk_carve(fk_carver *c, size_t bytes);
/* Carves a family's record, zeroed; while sizing, `local` (the family's stack copy) is zeroed and
 * returned instead, so layout reads the same shapes in both passes. */
void *fk_carve_record(fk_carver *c, size_t bytes, void *local);
/* Carves program prog's n steps and their timings; returns the steps to write, NULL while sizing. */
fk_step *fk_carve_steps(fk_plan *p, fk_carver *c, fk_program prog, int n);
/* Each member's scratch (plan->scratch[m]) holds at least `bytes`. */
void fk_carve_member(fk_carver *c, size_t bytes);

/* ---- the snapshot header (flashkern.h documents the image) --------------------------------- */

/* The words after magic, version and programs: the families fill the ones they own and leave the
 * others 0; each folds its shapes into the digest (fk_fnv1a, from FK_FNV_BASIS), in table order. */
typedef struct fk_state_head {
  int64_t hidden, tail_in; /* shapes a load compares: the block's width, the spectral head's input */
  int64_t tokens, frames;  /* cursors: the block's rows, the tail's frames (0..2^62) */
  uint64_t digest;         /* every family's shapes */
} fk_state_head;

#define FK_FNV_BASIS 0xcbf29ce484222325u
/* FNV-1a 64 of n bytes, chained from h. */
uint64_t fk_fnv1a(uint64_t h, const void *b, size_t n);

/* ---- the family interface ------------------------------------------------------------------ */

enum { FK_FAMILY_PROGRAMS = 4 };

/* One family of programs (the block, the tail, the LM, the detokenizer), behind these hooks.
 * `rec` is the family's record (from its layout); messages name the field, as flashkern.h says. */
typedef struct fk_family {
  uint32_t bit;         /* its FK_PROGRAMS_* bit: desc.programs readies the family */
  const char *bit_name; /* "FK_PROGRAMS_BLOCK" (the refusal of unknown bits names every family's) */
  struct {
    fk_program id;
    const char *name;   /* fk_program_name(); NULL ends the list */
  } programs[FK_FAMILY_PROGRAMS];

  /* readiness, in this order; check_desc after the engine's own checks, the rest only on FK_OK */
  fk_status (*check_desc)(const fk_plan_desc *d, fk_error *err);
  uint64_t (*roles)(const fk_plan_desc *d); /* FK_ROLE_BIT of every role its steps may call */
  /* Fills the record's shapes from d, carves its buffers and its programs' steps (fk_program.h:
   * fk_program_steps); returns the record (while sizing: the local copy, which the engine drops). */
  void *(*layout)(fk_plan *p, const fk_plan_desc *d, fk_carver *c);
  /* Copies and packs d's weights into the record's buffers (d was checked: cannot fail, checked). */
  fk_status (*pack)(void *rec, const fk_plan_desc *d, fk_error *err);

  /* fk_run, in this order. check_io: every field of io the program reads, before anything is
   * written; *due is what the run owes the caller (PCM samples), handed to commit. idle (optional):
   * the program has nothing to run (commit without a dispatch). commit: the state the program
   * advances and io's outputs, after its last barrier (job: the posted copy of io). */
  fk_status (*check_io)(const void *rec, fk_program prog, const fk_io *io, int64_t *due, fk_error *err);
  int (*idle)(const void *rec, fk_program prog);
  void (*commit)(void *rec, const fk_job *job, fk_io *io, int64_t due);

  /* state (fk_state.c frames the snapshot: header, each family's bytes in table order, checksum) */
  void (*reset)(void *rec);                              /* zeros the state (a new sequence) */
  void (*query)(const void *rec, fk_state_info *info);   /* its fields of fk_state_query */
  void (*state_head)(const void *rec, fk_state_head *h); /* its header words, its digest */
  size_t (*state_bytes)(const void *rec);                /* its bytes after the header */
  void (*state_save)(const void *rec, unsigned char *img);
  /* NULL when its bytes of an image are consistent with the record, else what is wrong */
  const char *(*state_check)(const void *rec, const unsigned char *img);
  void (*state_load)(void *rec, const unsigned char *img, const fk_state_head *h);
  /* optional: the job's gates (fk_step.gate) from the state, before the team starts; without it,
   * no gated step runs */
  uint32_t (*gates)(const void *rec, fk_program prog);
  /* optional: sets the family's sampler seed and restarts its counter (fk_sampler_seed) */
  void (*seed)(void *rec, uint64_t seed);
} fk_family;

/* The table (fk_families.c): every family, in the order readiness, fk_run and snapshots visit them. */
extern const fk_family *const fk_families[];
extern const int fk_nfamilies;

/* ---- the plan ------------------------------------------------------------------------------ */

/* One fk_run, posted by member 0 before the start barrier: a copy of the caller's fk_io (the
 * program's outputs may alias the caller's io), which a program reads and writes its results to. */
struct fk_job {
  fk_program program;
  fk_io io;
  uint32_t gates; /* the gated steps that run (fk_step.gate; fk_family.gates) */
};

typedef struct fk_phase_time {
  uint64_t runs, ns;
} fk_phase_time;

/* A program of the plan: its family and the family's record, its steps and their timings. */
typedef struct fk_prog_rt {
  const fk_family *fam; /* NULL: the plan is not ready for it */
  void *rec;
  fk_step *steps;
  int nsteps;
  fk_phase_time *timing;
} fk_prog_rt;

struct fk_plan {
  /* options, from the descriptor */
  uint32_t programs, flags;
  int threads;
  fk_tier tier;
  fk_leaf leaf[R_COUNT];        /* the stamp of every role a ready family lists */
  /* the arena: this struct, then every family's record and buffers, one allocation */
  void *arena;
  size_t arena_bytes;
  void *scratch[FK_MAX_THREADS]; /* per member: a phase's scratch (the GEMV's x arrangement) */
  /* the ready families in table order (at most one per program), and the programs */
  int nfam;
  struct {
    const fk_family *fam;
    void *rec;
  } fam[FK_PROG_COUNT];
  fk_prog_rt prog[FK_PROG_COUNT];
  /* the team (maybe shared) and this plan's run */
  fk_team *team;
  _Atomic int busy;
  fk_job job;
  /* tests only (fk_plan_set_trace): called by member 0 after each step's barrier */
  void (*trace)(void *ctx, const fk_plan *p, const fk_step *st);
  void *trace_ctx;
};

/* For the model tests: observe the planes after every step (NULL: off). Not for hosts. */
static inline void fk_plan_set_trace(fk_plan *p, void (*fn)(void *, const fk_plan *, const fk_step *), void *ctx) {
  p->trace = fn;
  p->trace_ctx = ctx;
}

/* The record of the family that runs prog; NULL when the plan is not ready for prog. */
static inline void *fk_plan_record(const fk_plan *p, fk_program prog) {
  return (unsigned)prog < FK_PROG_COUNT ? p->prog[prog].rec : NULL;
}

/* Claims the plan for a call that touches its state (as fk_run does): 0 when a run or a snapshot
 * is in flight. fk_plan_release() ends the claim. */
static inline int fk_plan_claim(fk_plan *p) {
  int idle = 0;
  return atomic_compare_exchange_strong(&p->busy, &idle, 1);
}
static inline void fk_plan_release(fk_plan *p) { atomic_store(&p->busy, 0); }

/* For fk_bench_runtime only: runs `phases` empty phases on the team (dispatch and barriers,
 * no leaf), as fk_run would. */
void fk_plan_run_empty(fk_plan *plan, int phases);

#endif
