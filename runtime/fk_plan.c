/* runtime/fk_plan.c: readiness (fk_plan_check, fk_plan_create, fk_plan_destroy) and the
 * introspection of a ready plan.
 *
 * Readiness checks what every plan shares (programs, team, tier, flags), then asks each ready
 * family (fk_families.c) to check its part of the descriptor; resolves, once, the stamp of every
 * role a ready family lists (fk_roles.h); and lays out one arena: the plan itself, each ready
 * family's record with its packed weights, transient planes, state and steps, and each member's
 * scratch. After readiness nothing is allocated. The engine knows no program: whatever is
 * specific to one lives behind its fk_family. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "fk_plan_internal.h"

enum { ALIGN = 64 };

/* ---- the descriptor: what every plan shares --------------------------------------------------- */

#define DESC_CHECK(cond, ...) FK_RETURN_ERROR_IF(cond, err, FK_EINVAL, "fk_plan_create: " __VA_ARGS__)

static fk_status check_desc(const fk_plan_desc *d, fk_error *err) {
  DESC_CHECK(!d, "desc is NULL");
  uint32_t all = 0;
  for (int i = 0; i < fk_nfamilies; i++) all |= fk_families[i]->bit;
  if (d->programs == 0 || (d->programs & ~all)) {
    char names[256] = "";
    for (int i = 0; i < fk_nfamilies; i++) {
      if (i) strncat(names, ", ", sizeof names - strlen(names) - 1);
      strncat(names, fk_families[i]->bit_name, sizeof names - strlen(names) - 1);
    }
    return fk_error_set(err, FK_EINVAL, __FILE__, __LINE__,
                        "fk_plan_create: desc.programs = 0x%x: must be a non-empty set of %s", d->programs, names);
  }
  DESC_CHECK(d->team_of && d->team_of->threads != d->threads,
             "desc.threads = %d: must equal the team's size, %d (desc.team_of)", d->threads,
             d->team_of ? d->team_of->threads : 0);
  DESC_CHECK(d->threads < 1 || d->threads > FK_MAX_THREADS, "desc.threads = %d: must be in 1..%d", d->threads,
             FK_MAX_THREADS);
  DESC_CHECK((unsigned)d->tier > FK_TIER_FAST, "desc.tier = %d: not a tier", (int)d->tier);
  DESC_CHECK((unsigned)d->quantize > FK_Q4K, "desc.quantize = %d: must be FK_QNONE, FK_Q8, FK_Q4 or FK_Q4K",
             (int)d->quantize);
  DESC_CHECK(d->flags & ~(FK_PLAN_TIMING | FK_PLAN_PCM_I16 | FK_PLAN_NO_PIN), "desc.flags = 0x%x: unknown bits 0x%x",
             d->flags, d->flags & ~(FK_PLAN_TIMING | FK_PLAN_PCM_I16 | FK_PLAN_NO_PIN));
  for (int i = 0; i < fk_nfamilies; i++) {
    if (!(d->programs & fk_families[i]->bit)) continue;
    fk_status s = fk_families[i]->check_desc(d, err);
    if (s != FK_OK) return s;
  }
  return FK_OK;
}

/* ---- the stamps: every role a ready family lists, once, in the order of fk_roles.h ----------- */

enum { ROLE_EXACT, ROLE_PLAN }; /* the tier column: exact, or the plan's (desc.tier) */

static const struct {
  const char *name, *form;
  int tier;
} roles[R_COUNT] = {
#define ROLE_ROW(id, name, form, tier) [id] = { name, form, ROLE_##tier },
  FK_ROLES(ROLE_ROW)
#undef ROLE_ROW
};

static fk_status resolve(fk_plan *p, const fk_plan_desc *d, uint64_t features, fk_error *err) {
  uint64_t want = 0;
  for (int i = 0; i < fk_nfamilies; i++)
    if (d->programs & fk_families[i]->bit) want |= fk_families[i]->roles(d);
  for (int r = 0; r < R_COUNT; r++) {
    if (!(want & FK_ROLE_BIT(r))) continue;
    fk_error e;
    fk_tier tier = roles[r].tier == ROLE_PLAN ? d->tier : FK_TIER_EXACT;
    fk_status s = fk_leaf_pick(roles[r].form, tier, features, "forbidden by desc.forbid_features", &p->leaf[r], &e);
    if (s != FK_OK)
      return fk_error_set(err, s, e.file, e.line, "fk_plan_create: phase %s: %s", roles[r].name, e.message);
  }
  return FK_OK;
}

/* ---- the arena ---------------------------------------------------------------------------------- */

void *fk_carve(fk_carver *c, size_t bytes) {
  size_t at = (c->used + ALIGN - 1) / ALIGN * ALIGN;
  c->used = at + bytes;
  return c->base ? c->base + at : NULL;
}

void *fk_carve_record(fk_carver *c, size_t bytes, void *local) {
  void *r = fk_carve(c, bytes);
  if (!r) r = local;
  memset(r, 0, bytes);
  return r;
}

fk_step *fk_carve_steps(fk_plan *p, fk_carver *c, fk_program prog, int n) {
  fk_prog_rt *r = &p->prog[prog];
  r->nsteps = n;
  r->steps = n ? fk_carve(c, (size_t)n * sizeof(fk_step)) : NULL;
  r->timing = n ? fk_carve(c, (size_t)n * sizeof(fk_phase_time)) : NULL;
  return r->steps;
}

void fk_carve_member(fk_carver *c, size_t bytes) {
  if (bytes > c->member) c->member = bytes;
}

/* Lays out the arena (sizing it when c->base is NULL): the plan, each ready family in table
 * order, each member's scratch. */
static void layout(fk_plan *p, const fk_plan_desc *d, fk_carver *c) {
  fk_carve(c, sizeof *p);
  p->nfam = 0;
  for (int i = 0; i < fk_nfamilies; i++) {
    const fk_family *f = fk_families[i];
    if (!(p->programs & f->bit)) continue;
    void *rec = f->layout(p, d, c);
    if (!c->base) rec = NULL; /* the family's local copy, gone once layout returns */
    p->fam[p->nfam].fam = f;
    p->fam[p->nfam++].rec = rec;
    for (int k = 0; k < FK_FAMILY_PROGRAMS && f->programs[k].name; k++) {
      p->prog[f->programs[k].id].fam = f;
      p->prog[f->programs[k].id].rec = rec;
    }
  }
  for (int m = 0; m < p->threads; m++) p->scratch[m] = fk_carve(c, c->member);
}

static void *arena_alloc(size_t bytes) {
  /* 2 MiB alignment lets the kernel back the packed weights with huge pages */
  size_t huge = (size_t)2 << 20;
  void *m = NULL;
  if (posix_memalign(&m, bytes >= huge ? huge : ALIGN, (bytes + ALIGN - 1) / ALIGN * ALIGN) != 0) return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= huge) madvise(m, bytes / huge * huge, MADV_HUGEPAGE);
#endif
  memset(m, 0, bytes); /* every page touched now, not in a pass */
  return m;
}

/* ---- readiness ---------------------------------------------------------------------------------- */

/* Readiness without side effects: the descriptor checked, the stamps resolved, the arena sized. */
static fk_status prepare(const fk_plan_desc *d, fk_plan *tmp, size_t *bytes, fk_error *err) {
  fk_status s = check_desc(d, err);
  if (s != FK_OK) return s;
  memset(tmp, 0, sizeof *tmp);
  tmp->programs = d->programs;
  tmp->flags = d->flags;
  tmp->threads = d->threads;
  tmp->tier = d->tier;
  s = fk_cpu_mask_check("fk_plan_create", err);
  if (s != FK_OK) return s;
  s = fk_fpenv_check("fk_plan_create", err);
  if (s != FK_OK) return s;
  s = resolve(tmp, d, fk_cpu_features() & ~d->forbid_features, err);
  if (s != FK_OK) return s;
  fk_carver c = { 0, NULL, 0 };
  layout(tmp, d, &c);
  *bytes = c.used;
  return FK_OK;
}

fk_status fk_plan_check(const fk_plan_desc *d, size_t *arena_bytes, fk_error *err) {
  fk_plan tmp;
  size_t bytes = 0;
  fk_status s = prepare(d, &tmp, &bytes, err);
  if (s == FK_OK && arena_bytes) *arena_bytes = bytes;
  return s;
}

fk_status fk_plan_create(const fk_plan_desc *d, fk_plan **out, fk_error *err) {
  FK_RETURN_ERROR_IF(!out, err, FK_EINVAL, "fk_plan_create: out is NULL");
  *out = NULL;
  fk_plan tmp;
  size_t bytes = 0;
  fk_status s = prepare(d, &tmp, &bytes, err);
  if (s != FK_OK) return s;

  char *base = arena_alloc(bytes);
  FK_RETURN_ERROR_IF(!base, err, FK_ENOMEM, "fk_plan_create: the arena (%zu bytes) could not be allocated", bytes);
  fk_plan *p = (fk_plan *)(void *)base;
  memcpy(p, &tmp, sizeof *p);
  fk_carver c = { 0, base, 0 };
  layout(p, d, &c);
  p->arena = base;
  p->arena_bytes = c.used;

  /* the shapes were checked; packing still refuses a weight desc.quantize cannot quantize (not
   * finite, or a scale beyond binary16), naming the matrix */
  s = FK_OK;
  for (int i = 0; i < p->nfam && s == FK_OK; i++) s = p->fam[i].fam->pack(p->fam[i].rec, d, err);
  atomic_init(&p->busy, 0);
  fk_state_reset(p);
  if (s == FK_OK && d->team_of) {
    p->team = d->team_of->team;
    atomic_fetch_add(&p->team->refs, 1);
  } else if (s == FK_OK) {
    s = fk_team_create(p->threads, p->flags, &p->team, err);
  }
  if (s != FK_OK) {
    free(base);
    return s;
  }
  *out = p;
  return FK_OK;
}

void fk_plan_destroy(fk_plan *p) {
  if (!p) return;
  fk_team_release(p->team);
  free(p->arena);
}

/* ---- introspection ---------------------------------------------------------------------------- */

int fk_plan_threads(const fk_plan *p) { return p ? p->threads : 0; }

size_t fk_plan_arena_bytes(const fk_plan *p) { return p ? p->arena_bytes : 0; }

const char *fk_program_name(fk_program prog) {
  for (int i = 0; i < fk_nfamilies; i++)
    for (int k = 0; k < FK_FAMILY_PROGRAMS && fk_families[i]->programs[k].name; k++)
      if (fk_families[i]->programs[k].id == prog) return fk_families[i]->programs[k].name;
  return "?";
}

int fk_program_phases(const fk_plan *p, fk_program prog) {
  if (!p || (unsigned)prog >= FK_PROG_COUNT || !p->prog[prog].fam) return 0;
  return p->prog[prog].nsteps;
}

fk_status fk_phase_query(const fk_plan *p, fk_program prog, int i, fk_phase_info *out, fk_error *err) {
  FK_RETURN_ERROR_IF(!p || !out, err, FK_EINVAL, "fk_phase_query: %s is NULL", p ? "out" : "plan");
  FK_RETURN_ERROR_IF(i < 0 || i >= fk_program_phases(p, prog), err, FK_EINVAL,
                     "fk_phase_query: %s has no phase %d in this plan", fk_program_name(prog), i);
  const fk_prog_rt *r = &p->prog[prog];
  const fk_step *st = &r->steps[i];
  *out = (fk_phase_info){ st->name, p->leaf[st->role].symbol, st->split, r->timing[i].runs, r->timing[i].ns,
                          st->layer };
  return FK_OK;
}

void fk_plan_timing_reset(fk_plan *p) {
  if (!p) return;
  for (int prog = 0; prog < FK_PROG_COUNT; prog++)
    if (p->prog[prog].nsteps) memset(p->prog[prog].timing, 0, (size_t)p->prog[prog].nsteps * sizeof(fk_phase_time));
}

int fk_plan_member_cpu(const fk_plan *p, int member) {
  return p && member >= 0 && member < p->threads ? p->team->cpu[member] : -1;
}
