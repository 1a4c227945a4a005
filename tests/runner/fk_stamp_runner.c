/* tests/runner/fk_stamp_runner.c: runs a batch of calls on this machine's stamps.
 *
 *   fk_stamp_runner <calls-file> <results-file>
 *
 * Built for AArch64 and run under qemu-aarch64 by the host suites (Criterion's own runner
 * spins under qemu-user here, so the host drives this plain program instead). The calls file
 * names a variant ("neon") or "contract" / "contract_fast" (the contract models of the exact tier,
 * or of the deterministic fast tier, compiled for this ISA). Exit 0
 * when every call ran (a call's own failure is reported in the results), 2 on a bad file.
 * Two more modes serve tests/test_runtime.c: --resolve and --rope (below).
 *
 * Buffers come from fkh_buf_alloc, so FKH_GUARD_PAGES (end|start, passed through by qemu-aarch64
 * like the rest of the environment) puts them flush against a PROT_NONE page here too. A fault
 * (SIGSEGV, SIGBUS) while a call runs is reported on stderr: the call's index, form, case,
 * variant, buffer mode, the address and where it lies; the runner then exits 4. Two synthetic
 * variants serve tests/guard/ as negative controls: "overrun_after" reads the byte just past the
 * end of each call's first buffer, "overrun_before" the byte just before its start. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/fkh.h"
#include "flashkern.h"

/* fk_stamp_runner --resolve <form> <exact|fast>: what the runtime resolves on this (emulated)
 * CPU: prints the symbol and exits 0, or prints the error and exits 3. */
static int resolve(const char *form, const char *tier) {
  fk_leaf leaf;
  fk_error err;
  fk_tier t = strcmp(tier, "fast") == 0 ? FK_TIER_FAST : FK_TIER_EXACT;
  if (fk_leaf_resolve(form, t, fk_cpu_features(), &leaf, &err) != FK_OK) {
    printf("%s: %s\n", fk_strerror(err.status), err.message);
    return 3;
  }
  printf("%s\n", leaf.symbol);
  return 0;
}

/* fk_stamp_runner --rope <theta> <head_dim> <pos_begin> <npos> <file>: writes the cos then the
 * sin table of fk_rope_table, raw, to file (the host compares them with its own bytes). */
static int rope(char **argv) {
  float theta = strtof(argv[0], NULL);
  int64_t hd = strtoll(argv[1], NULL, 10), pos = strtoll(argv[2], NULL, 10), npos = strtoll(argv[3], NULL, 10);
  size_t n = (size_t)(npos * (hd / 2));
  float *c = malloc(n * sizeof *c + 1), *s = malloc(n * sizeof *s + 1);
  fk_error err;
  if (!c || !s || fk_rope_table(theta, hd, pos, npos, c, s, &err) != FK_OK) {
    fprintf(stderr, "fk_stamp_runner: fk_rope_table failed\n");
    return 3;
  }
  FILE *f = fopen(argv[4], "wb");
  if (!f || fwrite(c, sizeof *c, n, f) != n || fwrite(s, sizeof *s, n, f) != n || fclose(f) != 0) {
    fprintf(stderr, "fk_stamp_runner: cannot write %s\n", argv[4]);
    return 2;
  }
  free(c);
  free(s);
  return 0;
}

/* The call running now, for the fault report. */
static fkh_call *cur_calls;
static volatile int cur_index = -1, cur_n;
static char cur_variant[32];

static void on_fault(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  char msg[768], where[256] = "";
  int k = cur_index;
  if (cur_calls && k >= 0 && k < cur_n) {
    fkh_locate(&cur_calls[k], si->si_addr, where, sizeof where);
    snprintf(msg, sizeof msg,
             "fk_stamp_runner: %s at %p in call %d of %d: form %s, case '%s', variant %s, buffers %s mode: %s\n",
             sig == SIGBUS ? "SIGBUS" : "SIGSEGV", si->si_addr, k, cur_n, fkh_forms[cur_calls[k].form].id,
             cur_calls[k].name, cur_variant, fkh_guard_mode_name(fkh_guard_mode()), where);
  } else {
    snprintf(msg, sizeof msg, "fk_stamp_runner: %s at %p outside any call\n", sig == SIGBUS ? "SIGBUS" : "SIGSEGV",
             si->si_addr);
  }
  ssize_t w = write(2, msg, strlen(msg));
  (void)w;
  _exit(4);
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

/* The negative controls' synthetic access: one byte just outside the call's first buffer. */
static void overrun(fkh_call *c, int after) {
  const fkh_form *f = &fkh_forms[c->form];
  for (int i = 0; i < f->nfields; i++) {
    if (f->fields[i].kind != FK_FIELD_PTR || !c->v[i].buf.alloc) continue;
    const volatile uint8_t *p = after ? c->v[i].buf.data + c->v[i].buf.nbytes : c->v[i].buf.data - 1;
    (void)*p;
    return;
  }
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "--resolve") == 0) return resolve(argv[2], argv[3]);
  if (argc == 7 && strcmp(argv[1], "--rope") == 0) return rope(argv + 2);
  if (argc != 3) {
    fprintf(stderr, "usage: %s <calls-file> <results-file> | --resolve <form> <exact|fast> | --rope <theta> <hd> <pos> <npos> <file>\n", argv[0]);
    return 2;
  }
  fkh_call *calls;
  int n;
  char variant[32];
  if (fkh_read_calls(argv[1], &calls, &n, variant, sizeof variant) != 0) {
    fprintf(stderr, "fk_stamp_runner: cannot read calls from %s\n", argv[1]);
    return 2;
  }
  cur_calls = calls;
  cur_n = n;
  snprintf(cur_variant, sizeof cur_variant, "%s", variant);
  catch_faults();
  for (int i = 0; i < n; i++) {
    cur_index = i;
    if (strcmp(variant, "overrun_after") == 0 || strcmp(variant, "overrun_before") == 0) {
      overrun(&calls[i], strcmp(variant, "overrun_after") == 0);
      continue;
    }
    if (strcmp(variant, "contract") == 0 || strcmp(variant, "contract_fast") == 0) {
      fkh_invoke_contract_tier(&calls[i], 0, strcmp(variant, "contract_fast") == 0);
      continue;
    }
    fkh_fn fn = fkh_host_stamp(calls[i].form, variant, NULL);
    if (!fn) {
      calls[i].failed = 1;
      snprintf(calls[i].why, sizeof calls[i].why, "no %s stamp for form %s", variant, fkh_forms[calls[i].form].id);
      continue;
    }
    fkh_invoke(&calls[i], fn);
  }
  cur_index = -1;
  if (fkh_write_results(argv[2], calls, n) != 0) {
    fprintf(stderr, "fk_stamp_runner: cannot write %s\n", argv[2]);
    return 2;
  }
  for (int i = 0; i < n; i++) fkh_call_free(&calls[i]);
  free(calls);
  return 0;
}
