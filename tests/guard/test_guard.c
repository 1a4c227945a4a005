/* tests/guard/test_guard.c: guard pages, "no load or store past the end" for every leaf form.
 *
 * Every buffer of every call is placed flush against a PROT_NONE page (tests/harness/fkh.c,
 * FKH_GUARD_PAGES): at its end (mode end), then at its start (mode start), so that any access
 * even one byte outside faults. For every form in the registry (fkh_forms), its cases
 * (tests/leaves) run on every stamp variant of the registry: x86_64 variants here, AArch64
 * variants through the stamp runner under qemu-aarch64 -cpu max, whose own buffers come from
 * the same allocator (the mode reaches it through the environment). Exact-tier outputs must
 * equal the contract model's (run on the same guarded buffers) bit for bit, and so must fast-tier
 * outputs where the fast tier has a model (the quantized GEMV forms: fkc_<id>_fast); other
 * fast-tier calls must not fault and keep their canaries. Before allocation each buffer is trimmed to the extent its
 * field's template declares (FK_FIELDS_<id> in generated/fk_leaves.h), so that "the end" is the
 * leaf's end, not the end of a case's padding (--no-trim: buffers as the cases build them).
 *
 * Negative controls run first, and the test fails unless each is caught: a synthetic one-byte
 * access just outside a buffer, and stamps given a buffer one element short (load and store past
 * the end) or an offset one element before the start, on the host and through the runner.
 *
 * A plain C program (Criterion's runner spins under qemu-user): host stamps run in child
 * processes whose SIGSEGV/SIGBUS handler names the target, mode, form, case and the address
 * relative to the call's buffers; the runner reports its faults the same way and exits 4.
 *
 *   test_guard [--random K] [--no-trim] [--only SUBSTRING] [--form SUBSTRING] [--jobs N]
 *     --random K: run every named case of a form plus K seeded random ones (-1, the default, or
 *                 FKG_RANDOM: all of them; all cases, every target, both modes take ~3 min on 2
 *                 cores, ctest's --random 16 ~1.5 min); --only: targets whose label contains
 *                 SUBSTRING; --form: forms whose id ("sample_topk") contains SUBSTRING; --jobs:
 *                 targets at once. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../harness/fkh.h"
#include "../leaves/cases.h"

#ifndef FKH_RUNNER
#define FKH_RUNNER ""
#endif
#ifndef FKH_QEMU
#define FKH_QEMU "qemu-aarch64"
#endif

extern char **environ;

enum { FAULT_EXIT = 86, RUNNER_FAULT = 4, MAX_TARGETS = 16, MAX_FORMS = 128 };
enum { CLEAN = 0, CANARY = 3, FAULT = FAULT_EXIT, ERROR = 9 };

static const char *outcome_name(int o) {
  return o == CLEAN ? "ran clean" : o == CANARY ? "canary broken" : o == FAULT ? "fault caught" : "error";
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  /* one write per line: workers share stdout */
  size_t n = strlen(line);
  ssize_t w = write(1, line, n);
  (void)w;
}

/* ---------------------------------------------------------------- registry -------------- */

typedef struct { const char *id, *variant, *tier; } stamp_ref;
#define GUARD_STAMP_REF(id, variant, tier, symbol, features) { #id, #variant, #tier },
static const stamp_ref x86_stamps[] = { FK_STAMPS_X86_64(GUARD_STAMP_REF) };
static const stamp_ref a64_stamps[] = { FK_STAMPS_AARCH64(GUARD_STAMP_REF) };
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static fkt_builder builder_of(int form) { return fkt_builder_of(fkh_forms[form].leaf); }

static const char *opt_form = NULL;   /* --form: forms whose id contains it (options below) */

typedef struct gtarget {
  fkh_target t;
  int remote, fast;
  int forms[MAX_FORMS], nforms;
} gtarget;

static int add_targets(gtarget *out, int n, const stamp_ref *tab, int cnt, int remote) {
  for (int i = 0; i < cnt; i++) {
    int dup = 0;
    for (int k = 0; k < n; k++) dup |= out[k].remote == remote && !strcmp(out[k].t.variant, tab[i].variant);
    if (dup || n >= MAX_TARGETS) continue;
    gtarget *g = &out[n++];
    memset(g, 0, sizeof *g);
    g->t = remote ? fkh_remote(tab[i].variant, "max") : fkh_host(tab[i].variant);
    g->remote = remote;
    g->fast = !strcmp(tab[i].tier, "fast");
    for (int f = 0; f < fkh_nforms; f++)
      for (int j = 0; j < cnt; j++)
        if (!strcmp(tab[j].id, fkh_forms[f].id) && !strcmp(tab[j].variant, tab[i].variant) && g->nforms < MAX_FORMS &&
            (!opt_form || strstr(fkh_forms[f].id, opt_form))) {
          g->forms[g->nforms++] = f;
          break;
        }
  }
  return n;
}

/* ---------------------------------------------------------------- options -------------- */

static int opt_random = -1, opt_trim = 1, opt_jobs = 2;
static const char *opt_only = NULL;

/* ---------------------------------------------------------------- extents --------------- */

static size_t elem_bytes(const fkh_call *c, int field) {
  return (size_t)FK_ELEM_BYTES(fkh_forms[c->form].fields[field].elem);
}

/* Case buffers shorter than their field's extent: a case the template's extent does not describe
 * (the case or the extent is wrong); each one fails the test. */
static int short_buffers;

/* Moves every buffer of c into a fresh buffer of the current mode, shrunk to its extent when
 * trimming (the prefix copied). Returns the number of buffers shrunk. */
static int rehome(fkh_call *c) {
  const fkh_form *fm = &fkh_forms[c->form];
  int shrunk = 0;
  for (int i = 0; i < fm->nfields; i++) {
    if (fm->fields[i].kind != FK_FIELD_PTR || !c->v[i].buf.alloc) continue;
    /* the template's extent (generated/fk_leaves.h); -1: the data decides (a gather's table) */
    int64_t e = opt_trim ? fkh_extent(c, i) : -1;
    size_t es = elem_bytes(c, i), nb = c->v[i].buf.nbytes;
    if (e >= 0 && (size_t)e * es < nb) {
      nb = (size_t)e * es;
      shrunk++;
    } else if (e >= 0 && (size_t)e * es > nb) {
      say("FAIL: %s case %s: field %s holds %zu elements, its extent says %lld\n", fm->id, c->name,
          fm->fields[i].name, nb / es, (long long)e);
      short_buffers++;
    }
    fkh_buf b;
    fkh_buf_alloc(&b, nb);
    memcpy(b.data, c->v[i].buf.data, nb);
    fkh_buf_free(&c->v[i].buf);
    c->v[i].buf = b;
  }
  return shrunk;
}

/* ---------------------------------------------------------------- case selection ------- */

typedef struct selection { int named, random, random_kept, trimmed; } selection;

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

/* Builds the cases of a form: every named case (the edge cases and every tail length) and
 * opt_random seeded random ones ("random_*"), built with canaries as the suites build them, then
 * each buffer moved into the current mode, trimmed. */
static int build_cases(int form, fkh_call **out, selection *sel) {
  fkh_call *calls;
  int mode = fkh_guard_mode();
  fkh_set_guard_mode(FKH_GUARD_CANARY);
  int n = builder_of(form)(fkh_forms[form].id, &calls), kept = 0;
  fkh_set_guard_mode(mode);
  memset(sel, 0, sizeof *sel);
  for (int i = 0; i < n; i++) sel->random += !strncmp(calls[i].name, "random_", 7);
  sel->named = n - sel->random;
  /* a seeded choice of opt_random of the random cases: a partial Fisher-Yates over their ranks */
  char *keep = calloc(n > 0 ? (size_t)n : 1, 1);
  int *rank = calloc(sel->random > 0 ? (size_t)sel->random : 1, sizeof *rank);
  if (!keep || !rank) exit(2);
  for (int i = 0, r = 0; i < n; i++) {
    if (strncmp(calls[i].name, "random_", 7)) keep[i] = 1;
    else rank[r++] = i;
  }
  int want = opt_random < 0 || opt_random > sel->random ? sel->random : opt_random;
  fkh_rng rng = { hash_str(fkh_forms[form].id) };
  for (int j = 0; j < want; j++) {
    int pick = j + (int)fkh_range(&rng, 0, sel->random - 1 - j), t = rank[j];
    rank[j] = rank[pick];
    rank[pick] = t;
    keep[rank[j]] = 1;
  }
  sel->random_kept = want;
  for (int i = 0; i < n; i++) {
    if (!keep[i]) {
      fkh_call_free(&calls[i]);
      continue;
    }
    if (kept != i) calls[kept] = calls[i];
    sel->trimmed += rehome(&calls[kept]);
    kept++;
  }
  free(keep);
  free(rank);
  *out = calls;
  return kept;
}

static int guards_intact(const fkh_call *c, char *why, size_t len) {
  const fkh_form *fm = &fkh_forms[c->form];
  for (int i = 0; i < fm->nfields; i++)
    if (fm->fields[i].kind == FK_FIELD_PTR && !fkh_buf_guards_ok(&c->v[i].buf)) {
      snprintf(why, len, "wrote outside buffer '%s'", fm->fields[i].name);
      return 0;
    }
  return 1;
}

/* ---------------------------------------------------------------- fault reports -------- */

static const char *cur_label = "", *cur_phase = "", *cur_prefix = "FAULT";
static int cur_mode;
static const fkh_call *cur_call;

static void on_fault(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  char where[256] = "", msg[1024];
  if (cur_call) fkh_locate(cur_call, si->si_addr, where, sizeof where);
  snprintf(msg, sizeof msg, "%s: %s at %p: %s, mode %s, form %s, case '%s' (%s): %s\n", cur_prefix,
           sig == SIGBUS ? "SIGBUS" : "SIGSEGV", si->si_addr, cur_label, fkh_guard_mode_name(cur_mode),
           cur_call ? fkh_forms[cur_call->form].id : "?", cur_call ? cur_call->name : "?", cur_phase, where);
  ssize_t w = write(1, msg, strlen(msg));
  (void)w;
  _exit(FAULT_EXIT);
}

static void catch_faults(void) {
  static char altstack[1 << 16];
  stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
  sigaltstack(&ss, NULL);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
}

/* ---------------------------------------------------------------- the stamp runner ----- */

static const char *runner_path(void) {
  const char *p = getenv("FKH_RUNNER");
  return p && *p ? p : FKH_RUNNER;
}

static const char *qemu_path(void) {
  const char *p = getenv("FKH_QEMU");
  return p && *p ? p : FKH_QEMU;
}

/* Runs calls on the AArch64 runner (qemu -cpu cpu) with the current buffer mode exported.
 * Returns CLEAN (results read into calls), RUNNER_FAULT with *fault_at = the faulting call and
 * the runner's report in report, or ERROR. */
static int run_runner(const char *variant, const char *cpu, fkh_call *calls, int n, int *fault_at, char *report,
                      size_t replen) {
  char req[] = "/tmp/fkg_callsXXXXXX", res[] = "/tmp/fkg_resultsXXXXXX", errf[] = "/tmp/fkg_stderrXXXXXX";
  int fd1 = mkstemp(req), fd2 = mkstemp(res), fd3 = mkstemp(errf), rc = ERROR;
  report[0] = 0;
  if (fd1 < 0 || fd2 < 0 || fd3 < 0) {
    snprintf(report, replen, "mkstemp: %s", strerror(errno));
    return ERROR;
  }
  close(fd1);
  close(fd2);
  if (fkh_write_calls(req, calls, n, variant) != 0) {
    snprintf(report, replen, "cannot write %s", req);
    goto out;
  }
  const char *argv[] = { qemu_path(), "-cpu", cpu, runner_path(), req, res, NULL };
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd3, 2);
  pid_t pid;
  int e = posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e != 0) {
    snprintf(report, replen, "cannot start %s: %s", argv[0], strerror(e));
    goto out;
  }
  int status;
  if (waitpid(pid, &status, 0) < 0) {
    snprintf(report, replen, "waitpid: %s", strerror(errno));
    goto out;
  }
  FILE *f = fopen(errf, "r");
  size_t got = f ? fread(report, 1, replen - 1, f) : 0;
  report[got] = 0;
  if (f) fclose(f);
  while (got && report[got - 1] == '\n') report[--got] = 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    char err[256];
    rc = fkh_read_results(res, calls, n, err, sizeof err) == 0 ? CLEAN : ERROR;
    if (rc != CLEAN) snprintf(report, replen, "%s", err);
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == RUNNER_FAULT) {
    const char *p = strstr(report, " in call ");
    *fault_at = p ? atoi(p + 9) : -1;
    rc = *fault_at >= 0 && *fault_at < n ? RUNNER_FAULT : ERROR;
  } else {
    size_t l = strlen(report);
    snprintf(report + l, replen - l, "%s%s -cpu %s %s: status 0x%x", l ? "; " : "", argv[0], cpu, argv[3], status);
  }
out:
  close(fd3);
  unlink(req);
  unlink(res);
  unlink(errf);
  return rc;
}

/* ---------------------------------------------------------------- runs ------------------ */

typedef struct stats {
  int forms;
  long cases, calls;
  int faults, canary, mismatches, errors, contract_bad;
  long compared;   /* calls compared with a contract model */
  char first[700];
} stats;

static void note(stats *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(stats *st, const char *fmt, ...) {
  char m[700];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  if (!st->first[0]) snprintf(st->first, sizeof st->first, "%s", m);
  say("  %s\n", m);
}

/* Checks one target call against its contract copy (exact tier) or alone (fast tier). */
static void check_call(const gtarget *g, int mode, fkh_call *c, fkh_call *ref, stats *st) {
  char msg[600];
  if (c->failed) {
    st->canary++;
    note(st, "%s, mode %s: %s %s: %s", g->t.label, fkh_guard_mode_name(mode), fkh_forms[c->form].id, c->name, c->why);
    return;
  }
  if (ref) st->compared++;
  if (ref && !fkh_same_outputs(c, ref, msg, sizeof msg)) {
    st->mismatches++;
    note(st, "%s, mode %s: %s: differs from the contract: %s", g->t.label, fkh_guard_mode_name(mode),
         fkh_forms[c->form].id, msg);
  }
}

/* The contract model on copies of the calls (same mode), its own guards checked. */
static fkh_call *contract_copies(const gtarget *g, int mode, fkh_call *calls, int n, int from, stats *st) {
  /* a fast tier is compared where it is deterministic (a fast model: the quantized GEMV forms) */
  if (g->fast && (n <= from || !fkh_has_fast_contract(calls[from].form))) return NULL;
  fkh_call *ref = calloc(n > 0 ? (size_t)n : 1, sizeof *ref);
  if (!ref) exit(2);
  cur_phase = "contract model";
  for (int k = from; k < n; k++) {
    fkh_call_copy(&ref[k], &calls[k]);
    cur_call = &ref[k];
    fkh_invoke_contract_tier(&ref[k], 0, g->fast);
    char why[160];
    if (!ref[k].failed && !guards_intact(&ref[k], why, sizeof why)) {
      ref[k].failed = 1;
      snprintf(ref[k].why, sizeof ref[k].why, "contract %s", why);
    }
    if (ref[k].failed) {
      st->contract_bad++;
      note(st, "%s, mode %s: %s %s: %s", g->t.label, fkh_guard_mode_name(mode), fkh_forms[ref[k].form].id,
           ref[k].name, ref[k].why);
    }
  }
  cur_call = NULL;
  return ref;
}

static void free_refs(fkh_call *ref, int n) {
  if (!ref) return;
  for (int k = 0; k < n; k++) fkh_call_free(&ref[k]);
  free(ref);
}

/* The planted-overrun control: every plant_every-th case gets its field "y" one element short
 * for the target (its contract copy keeps the full buffer). */
static int plant_every;

static int plant(fkh_call *calls, int n, int from) {
  int planted = 0;
  for (int k = from; plant_every > 0 && k < n; k++) {
    int yi = fkh_field_index(&calls[k], "y");
    if (k % plant_every != plant_every - 1 || yi < 0) continue;
    size_t es = elem_bytes(&calls[k], yi), nb = calls[k].v[yi].buf.nbytes;
    if (nb < es) continue;
    fkh_buf b;
    fkh_buf_alloc(&b, nb - es);
    memcpy(b.data, calls[k].v[yi].buf.data, nb - es);
    fkh_buf_free(&calls[k].v[yi].buf);
    calls[k].v[yi].buf = b;
    planted++;
  }
  return planted;
}

/* Host: one child per stretch of cases; a fault ends the child, the next one resumes after
 * the faulting case. Progress and counts live in shared memory. */
typedef struct shared {
  int form_pos, case_pos;
  stats st;
} shared;

static void host_child(const gtarget *g, int mode, int fp0, int k0, shared *sh) {
  fkh_set_guard_mode(mode);
  cur_label = g->t.label;
  cur_mode = mode;
  catch_faults();
  for (int fp = fp0; fp < g->nforms; fp++) {
    int form = g->forms[fp];
    fkh_call *calls;
    selection sel;
    int n = build_cases(form, &calls, &sel), from = fp == fp0 ? k0 : 0;
    fkh_fn fn = fkh_host_stamp(form, g->t.variant, NULL);
    if (!fn) {
      sh->st.errors++;
      note(&sh->st, "%s: no host stamp for %s", g->t.label, fkh_forms[form].id);
      fkt_free_cases(calls, n);
      continue;
    }
    fkh_call *ref = contract_copies(g, mode, calls, n, from, &sh->st);
    plant(calls, n, from);
    for (int k = from; k < n; k++) {
      sh->form_pos = fp;
      sh->case_pos = k;
      sh->st.cases++;
      cur_phase = "stamp";
      cur_call = &calls[k];
      fkh_invoke(&calls[k], fn);
      cur_call = NULL;
      sh->st.calls++;
      check_call(g, mode, &calls[k], ref ? &ref[k] : NULL, &sh->st);
    }
    sh->st.forms++;
    free_refs(ref, n);
    fkt_free_cases(calls, n);
  }
  _exit(0);
}

static void run_host(const gtarget *g, int mode, stats *out) {
  shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) exit(2);
  memset(sh, 0, sizeof *sh);
  int fp = 0, k = 0;
  for (;;) {
    pid_t pid = fork();
    if (pid == 0) host_child(g, mode, fp, k, sh);
    int status;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) break;
    if ((WIFEXITED(status) && WEXITSTATUS(status) == FAULT_EXIT) ||
        (WIFSIGNALED(status) && (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS))) {
      sh->st.faults++;
      if (!sh->st.first[0])
        snprintf(sh->st.first, sizeof sh->st.first, "fault in %s case %d (see FAULT above)",
                 fkh_forms[g->forms[sh->form_pos]].id, sh->case_pos);
      fp = sh->form_pos;
      k = sh->case_pos + 1;
      continue;
    }
    sh->st.errors++;
    snprintf(sh->st.first, sizeof sh->st.first, "child ended with status 0x%x", status);
    break;
  }
  *out = sh->st;
  munmap(sh, sizeof *sh);
}

/* Remote: one runner start per form; a fault splits the batch around the faulting call. */
static void remote_range(const gtarget *g, int mode, fkh_call *calls, int lo, int hi, char *faulted, stats *st) {
  if (lo >= hi) return;
  int at = -1;
  char report[2048];
  int rc = run_runner(g->t.variant, g->t.cpu, calls + lo, hi - lo, &at, report, sizeof report);
  if (rc == CLEAN) {
    st->calls += hi - lo;
    return;
  }
  if (rc == RUNNER_FAULT) {
    st->faults++;
    faulted[lo + at] = 1;
    say("%s: %s, mode %s: %s\n", cur_prefix, g->t.label, fkh_guard_mode_name(mode), report);
    if (!st->first[0])
      snprintf(st->first, sizeof st->first, "fault in %s case '%s'", fkh_forms[calls[lo + at].form].id,
               calls[lo + at].name);
    remote_range(g, mode, calls, lo, lo + at, faulted, st);
    remote_range(g, mode, calls, lo + at + 1, hi, faulted, st);
    return;
  }
  st->errors++;
  for (int k = lo; k < hi; k++) faulted[k] = 2;
  note(st, "%s, mode %s: %s: runner error: %s", g->t.label, fkh_guard_mode_name(mode), fkh_forms[calls[lo].form].id,
       report);
}

static void run_remote(const gtarget *g, int mode, stats *st) {
  fkh_set_guard_mode(mode);   /* exported: the runner allocates its buffers the same way */
  cur_label = g->t.label;
  cur_mode = mode;
  catch_faults();             /* the contract model runs here */
  memset(st, 0, sizeof *st);
  for (int fp = 0; fp < g->nforms; fp++) {
    int form = g->forms[fp];
    fkh_call *calls;
    selection sel;
    int n = build_cases(form, &calls, &sel);
    fkh_call *ref = contract_copies(g, mode, calls, n, 0, st);
    plant(calls, n, 0);
    char *faulted = calloc(n > 0 ? (size_t)n : 1, 1);
    if (!faulted) exit(2);
    remote_range(g, mode, calls, 0, n, faulted, st);
    st->cases += n;
    for (int k = 0; k < n; k++)
      if (!faulted[k]) check_call(g, mode, &calls[k], ref ? &ref[k] : NULL, st);
    st->forms++;
    free(faulted);
    free_refs(ref, n);
    fkt_free_cases(calls, n);
  }
}

/* ---------------------------------------------------------------- negative controls ---- */

/* Synthetic accesses on a 36-byte buffer (0 bytes for the last two kinds). */
enum { READ_AFTER, READ_BEFORE, WRITE_AFTER, WRITE_BEFORE, READ_EMPTY, READ_BEFORE_EMPTY };
static const char *const probe_names[] = {
  "read 1 byte past the end", "read 1 byte before the start", "write 1 byte past the end",
  "write 1 byte before the start", "read the byte a 0-byte buffer points at", "read 1 byte before a 0-byte buffer",
};

static void probe_child(int mode, int kind) {
  fkh_set_guard_mode(mode);
  cur_prefix = "    caught";
  static fkh_call dummy;
  fkh_call_init(&dummy, "vmath_exp", probe_names[kind]);
  cur_label = "host (synthetic)";
  cur_mode = mode;
  cur_phase = "probe";
  cur_call = &dummy;
  catch_faults();
  fkh_buf *b = &dummy.v[fkh_field_index(&dummy, "x")].buf;
  fkh_buf_alloc(b, kind >= READ_EMPTY ? 0 : 36);
  volatile uint8_t *after = b->data + b->nbytes, *before = b->data - 1;
  switch (kind) {
  case READ_AFTER: case READ_EMPTY: (void)*after; break;
  case READ_BEFORE: case READ_BEFORE_EMPTY: (void)*before; break;
  case WRITE_AFTER: *after = 0x11; break;
  default: *before = 0x11; break;
  }
  _exit(fkh_buf_guards_ok(b) ? CLEAN : CANARY);
}

/* Stamp controls: calls that reach one element outside a buffer. */
enum { LOAD_PAST_END, STORE_PAST_END, STORE_BEFORE_START, NSTAMP_CONTROLS };
static const char *const control_names[] = {
  "gemv_f32 with x one element short (a load past the end)",
  "vmath_exp with y one element short (a store past the end)",
  "gemv_f32 with y_off = -1 (a store before the start)",
};

/* Builds control `which` in the current mode; 0 if the variant lacks the form. */
static int control_call(int which, fkh_call *c) {
  if (which == STORE_PAST_END) {
    fkh_call_init(c, "vmath_exp", "control_store_past_end");
    fkh_set_i64(c, "n", 37);
    float *x = fkh_set_buf(c, "x", 37);
    for (int i = 0; i < 37; i++) x[i] = (float)i / 8;
    fkh_set_buf(c, "y", 36);
    return 1;
  }
  fkh_call_init(c, "gemv_f32", which == LOAD_PAST_END ? "control_load_past_end" : "control_store_before_start");
  const int64_t k = 20, rows = 4;
  fkh_set_i64(c, "k", k);
  fkh_set_i64(c, "ldw", k);
  fkh_set_i64(c, "ldx", k);
  fkh_set_i64(c, "m", 1);
  fkh_set_i64(c, "row_begin", 0);
  fkh_set_i64(c, "row_end", rows);
  fkh_set_i64(c, "ldy", rows);
  fkh_set_i64(c, "y_off", which == STORE_BEFORE_START ? -1 : 0);
  uint16_t *w = fkh_set_buf(c, "w", (size_t)(rows * k));
  for (int i = 0; i < rows * k; i++) w[i] = 0x3f80;
  float *x = fkh_set_buf(c, "x", (size_t)(which == LOAD_PAST_END ? k - 1 : k));
  for (int i = 0; i < (which == LOAD_PAST_END ? k - 1 : k); i++) x[i] = 1.0f;
  fkh_set_buf(c, "xs", (size_t)fkt_gemv_xs_elems(1, k));
  fkh_set_buf(c, "y", (size_t)(which == STORE_BEFORE_START ? rows - 1 : rows));
  return 1;
}

static int variant_has(const gtarget *g, const char *form) {
  for (int i = 0; i < g->nforms; i++)
    if (!strcmp(fkh_forms[g->forms[i]].id, form)) return 1;
  return 0;
}

static void host_control_child(const gtarget *g, int mode, int which) {
  fkh_set_guard_mode(mode);
  cur_prefix = "    caught";
  static fkh_call c;
  control_call(which, &c);
  cur_label = g->t.label;
  cur_mode = mode;
  cur_phase = "stamp";
  cur_call = &c;
  catch_faults();
  fkh_fn fn = fkh_host_stamp(c.form, g->t.variant, NULL);
  if (!fn) _exit(ERROR);
  fkh_invoke(&c, fn);
  _exit(c.failed ? CANARY : CLEAN);
}

static int wait_outcome(pid_t pid) {
  int status;
  if (waitpid(pid, &status, 0) < 0) return ERROR;
  if (WIFEXITED(status)) {
    int e = WEXITSTATUS(status);
    return e == CLEAN || e == CANARY || e == FAULT_EXIT ? e : ERROR;
  }
  if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGBUS)) return FAULT;
  return ERROR;
}

static int remote_control(const gtarget *g, int mode, const char *variant, fkh_call *c, char *report, size_t len) {
  fkh_set_guard_mode(mode);
  int at;
  int rc = run_runner(variant, g->t.cpu, c, 1, &at, report, len);
  fkh_set_guard_mode(FKH_GUARD_CANARY);
  if (rc == RUNNER_FAULT) return FAULT;
  if (rc == CLEAN) return c->failed ? CANARY : CLEAN;
  return ERROR;
}

static int controls_failed;

static void expect(const char *who, const char *what, int mode, int want, int got, const char *report) {
  int ok = want == got;
  controls_failed += !ok;
  say("negative control: %-34s %-58s mode %-6s -> %-13s (expected: %s)%s\n", who, what, fkh_guard_mode_name(mode),
      outcome_name(got), outcome_name(want), ok ? "" : "  <-- NOT CAUGHT");
  if (report && *report) say("    %s\n", report);
}

static void negative_controls(const gtarget *tg, int nt) {
  int probed = 0;
  cur_prefix = "    caught";
  fflush(stdout);
  /* 1. synthetic accesses on the host */
  static const struct { int kind, mode, want; } probes[] = {
    { READ_AFTER, FKH_GUARD_END, FAULT },      { READ_BEFORE, FKH_GUARD_START, FAULT },
    { READ_EMPTY, FKH_GUARD_END, FAULT },      { READ_BEFORE_EMPTY, FKH_GUARD_START, FAULT },
    { WRITE_AFTER, FKH_GUARD_START, CANARY },  { WRITE_BEFORE, FKH_GUARD_END, CANARY },
    { READ_AFTER, FKH_GUARD_CANARY, CLEAN },   { READ_BEFORE, FKH_GUARD_CANARY, CLEAN },
  };
  for (int i = 0; i < COUNT(probes); i++) {
    pid_t pid = fork();
    if (pid == 0) probe_child(probes[i].mode, probes[i].kind);
    expect("host (synthetic, C)", probe_names[probes[i].kind], probes[i].mode, probes[i].want, wait_outcome(pid), NULL);
  }
  /* 2. stamps handed a buffer one element short, or an offset one element before the start */
  static const struct { int which, mode, want; } stamp_controls[] = {
    { LOAD_PAST_END, FKH_GUARD_END, FAULT },        { STORE_PAST_END, FKH_GUARD_END, FAULT },
    { STORE_PAST_END, FKH_GUARD_START, CANARY },    { STORE_BEFORE_START, FKH_GUARD_START, FAULT },
    { STORE_BEFORE_START, FKH_GUARD_END, CANARY },
  };
  for (int t = 0; t < nt; t++) {
    const gtarget *g = &tg[t];
    char why[200];
    if (!fkh_available(&g->t, why, sizeof why)) continue;
    if (g->remote && !probed++) {
      /* the runner's own synthetic access: proves qemu-user faults on a PROT_NONE guest page and
       * that the mode reached the runner through the environment (canary mode: no fault) */
      static const struct { const char *variant; int mode, want; } rprobes[] = {
        { "overrun_after", FKH_GUARD_END, FAULT },   { "overrun_before", FKH_GUARD_START, FAULT },
        { "overrun_after", FKH_GUARD_CANARY, CLEAN }, { "overrun_before", FKH_GUARD_CANARY, CLEAN },
      };
      for (int i = 0; i < COUNT(rprobes); i++) {
        fkh_call c;
        char report[2048];
        fkh_set_guard_mode(rprobes[i].mode);
        fkh_call_init(&c, "vmath_exp", "runner_probe");
        fkh_set_i64(&c, "n", 9);
        fkh_set_buf(&c, "x", 9);
        fkh_set_buf(&c, "y", 9);
        char who[64];
        snprintf(who, sizeof who, "aarch64 runner (qemu -cpu %s)", g->t.cpu);
        int got = remote_control(g, rprobes[i].mode, rprobes[i].variant, &c, report, sizeof report);
        expect(who, !strcmp(rprobes[i].variant, "overrun_after") ? "runner reads 1 byte past the end"
                                                                  : "runner reads 1 byte before the start",
               rprobes[i].mode, rprobes[i].want, got, report);
        fkh_call_free(&c);
      }
    }
    for (int i = 0; i < COUNT(stamp_controls); i++) {
      int which = stamp_controls[i].which, mode = stamp_controls[i].mode, got;
      if (!variant_has(g, which == STORE_PAST_END ? "vmath_exp" : "gemv_f32")) continue;
      char report[2048] = "";
      if (g->remote) {
        fkh_call c;
        fkh_set_guard_mode(mode);
        control_call(which, &c);
        got = remote_control(g, mode, g->t.variant, &c, report, sizeof report);
        if (got == CANARY) snprintf(report, sizeof report, "%s", c.why);
        fkh_call_free(&c);
      } else {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) host_control_child(g, mode, which);
        got = wait_outcome(pid);
      }
      expect(g->t.label, control_names[which], mode, stamp_controls[i].want, got, report);
    }
    /* 3. overruns planted in a real batch: each reported, the batch resumed after it, every other
     * case compared (the path a real over-read would take) */
    if (variant_has(g, "vmath_exp")) {
      gtarget one = *g;
      one.nforms = 1;
      one.forms[0] = fkh_form_index("vmath_exp");
      fkh_call *calls;
      selection sel;
      int keep_random = opt_random;
      opt_random = 0;
      plant_every = 40;
      int n = build_cases(one.forms[0], &calls, &sel), planted = plant(calls, n, 0);
      fkt_free_cases(calls, n);
      stats st;
      fflush(stdout);
      if (g->remote) run_remote(&one, FKH_GUARD_END, &st);
      else run_host(&one, FKH_GUARD_END, &st);
      fkh_set_guard_mode(FKH_GUARD_CANARY);
      plant_every = 0;
      opt_random = keep_random;
      int ok = st.faults == planted && planted > 0 && st.calls == n - planted && !st.canary && !st.mismatches &&
               !st.errors && !st.contract_bad;
      controls_failed += !ok;
      say("negative control: %-34s vmath_exp, %d named cases, y one element short in %d of them: mode end -> %d "
          "faults, %ld calls compared, %d mismatches (expected: %d faults, %d calls)%s\n",
          g->t.label, n, planted, st.faults, st.calls, st.mismatches, planted, n - planted, ok ? "" : "  <-- NOT CAUGHT");
    }
  }
  fkh_set_guard_mode(FKH_GUARD_CANARY);
}

/* ---------------------------------------------------------------- main ------------------ */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One worker process per target: both modes, one summary line each; exit 0 when clean. */
static int worker(const gtarget *g) {
  static const int modes[] = { FKH_GUARD_END, FKH_GUARD_START };
  int bad = 0;
  for (int i = 0; i < 2; i++) {
    double t0 = now();
    stats st;
    if (g->remote) run_remote(g, modes[i], &st);
    else run_host(g, modes[i], &st);
    int fail = st.faults || st.canary || st.mismatches || st.errors || st.contract_bad;
    char cmp[64];
    if (g->fast && !st.compared) snprintf(cmp, sizeof cmp, "fast tier (not compared)");
    else if (g->fast) snprintf(cmp, sizeof cmp, "mismatches vs fast contract %d", st.mismatches);
    else snprintf(cmp, sizeof cmp, "mismatches vs contract %d", st.mismatches);
    say("%s %-30s mode %-5s: %2d forms, %5ld cases, %5ld calls run, faults %d, canary breaks %d, %s, errors %d "
        "(%.1f s)%s%s\n",
        fail ? "FAIL" : "ok  ", g->t.label, fkh_guard_mode_name(modes[i]), st.forms, st.cases, st.calls, st.faults,
        st.canary, cmp, st.errors + st.contract_bad, now() - t0, fail ? "; first: " : "", fail ? st.first : "");
    bad |= fail;
  }
  return bad || short_buffers;
}

int main(int argc, char **argv) {
  const char *env = getenv("FKG_RANDOM");
  if (env && *env) opt_random = atoi(env);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--random") && i + 1 < argc) opt_random = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-trim")) opt_trim = 0;
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) opt_only = argv[++i];
    else if (!strcmp(argv[i], "--form") && i + 1 < argc) opt_form = argv[++i];
    else if (!strcmp(argv[i], "--jobs") && i + 1 < argc) opt_jobs = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--random K] [--no-trim] [--only SUBSTRING] [--form SUBSTRING] [--jobs N]\n", argv[0]);
      return 2;
    }
  }
  if (opt_jobs < 1) opt_jobs = 1;
  double t0 = now();
  fkh_set_guard_mode(FKH_GUARD_CANARY);
  setvbuf(stdout, NULL, _IONBF, 0);

  /* every form must have cases */
  int missing = 0;
  for (int f = 0; f < fkh_nforms; f++)
    if (!builder_of(f)) {
      say("FAIL: form %s: no case builder for leaf %s (tests/leaves)\n", fkh_forms[f].id, fkh_forms[f].leaf);
      missing++;
    }

  gtarget all[MAX_TARGETS], tg[MAX_TARGETS];
  int na = add_targets(all, 0, x86_stamps, COUNT(x86_stamps), 0);
  na = add_targets(all, na, a64_stamps, COUNT(a64_stamps), 1);
  int nt = 0;
  for (int i = 0; i < na; i++) {
    char why[200];
    if (opt_only && !strstr(all[i].t.label, opt_only)) continue;
    if (!fkh_available(&all[i].t, why, sizeof why)) {
      say("SKIP %s: %s\n", all[i].t.label, why);
      continue;
    }
    tg[nt++] = all[i];
  }

  /* the selection, per form */
  char nrand[32];
  snprintf(nrand, sizeof nrand, opt_random < 0 ? "every" : "%d seeded", opt_random);
  say("guard pages: page size %ld; buffers %s; per form every named case (edges, every tail length) + %s random "
      "case\n",
      sysconf(_SC_PAGESIZE), opt_trim ? "trimmed to the extent each field's template declares" : "as built", nrand);
  int covered[MAX_FORMS] = { 0 };
  for (int t = 0; t < nt; t++)
    for (int i = 0; i < tg[t].nforms; i++) covered[tg[t].forms[i]] = 1;
  for (int f = 0; f < fkh_nforms && f < MAX_FORMS; f++) {
    if (!builder_of(f) || (opt_form && !strstr(fkh_forms[f].id, opt_form))) continue;
    fkh_call *calls;
    selection sel;
    int n = build_cases(f, &calls, &sel);
    say("  selected %-26s %4d cases: %3d named + %3d of %3d random; %4d buffers trimmed%s\n", fkh_forms[f].id, n,
        sel.named, sel.random_kept, sel.random, sel.trimmed, covered[f] ? "" : "  (no available target has it)");
    fkt_free_cases(calls, n);
  }

  negative_controls(tg, nt);
  cur_prefix = "FAULT";
  if (controls_failed) say("FAIL: %d negative control(s) not caught: the guard pages prove nothing here\n", controls_failed);

  /* the targets, opt_jobs at a time, the AArch64 ones (slowest) first */
  int order[MAX_TARGETS], no = 0, bad = 0, running = 0;
  for (int pass = 1; pass >= 0; pass--)
    for (int t = 0; t < nt; t++)
      if (tg[t].remote == pass) order[no++] = t;
  fflush(stdout);
  pid_t pids[MAX_TARGETS] = { 0 };
  for (int i = 0; i < no || running > 0;) {
    if (i < no && running < opt_jobs) {
      pid_t pid = fork();
      if (pid == 0) _exit(worker(&tg[order[i]]));
      pids[i++] = pid;
      running++;
      continue;
    }
    int status;
    pid_t pid = wait(&status);
    if (pid < 0) break;
    running--;
    if (WIFEXITED(status) && WEXITSTATUS(status) <= 1) {
      bad |= WEXITSTATUS(status);
      continue;
    }
    bad = 1;   /* the worker itself died: a fault in the contract model or the harness (see above) */
    for (int k = 0; k < i; k++)
      if (pids[k] == pid) say("FAIL %s: its worker ended with status 0x%x\n", tg[order[k]].t.label, status);
  }

  int fail = bad || controls_failed || missing || short_buffers;
  say("guard_pages: %d targets x 2 modes, %s (%.1f s)\n", nt, fail ? "FAIL" : "PASS", now() - t0);
  return fail ? 1 : 0;
}
