/* tests/harness/targets.c: running calls on a target (host side only). */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flashkern.h"
#include "fkh.h"

#ifndef FKH_RUNNER
#define FKH_RUNNER ""
#endif
#ifndef FKH_QEMU
#define FKH_QEMU "qemu-aarch64"
#endif

extern char **environ;

fkh_target fkh_contract(int perturb) {
  fkh_target t = { .kind = FKH_CONTRACT, .perturb = perturb };
  snprintf(t.label, sizeof t.label, perturb ? "contract(perturbed %d)" : "contract", perturb);
  return t;
}

fkh_target fkh_contract_fast(int perturb) {
  fkh_target t = { .kind = FKH_CONTRACT, .perturb = perturb };
  snprintf(t.variant, sizeof t.variant, "fast");
  snprintf(t.label, sizeof t.label, perturb ? "contract fast(perturbed %d)" : "contract fast", perturb);
  return t;
}

fkh_target fkh_host(const char *variant) {
  fkh_target t = { .kind = FKH_HOST };
  snprintf(t.variant, sizeof t.variant, "%s", variant);
  snprintf(t.label, sizeof t.label, "host %s", variant);
  return t;
}

fkh_target fkh_remote(const char *variant, const char *cpu) {
  fkh_target t = { .kind = FKH_REMOTE };
  snprintf(t.variant, sizeof t.variant, "%s", variant);
  snprintf(t.cpu, sizeof t.cpu, "%s", cpu);
  snprintf(t.label, sizeof t.label, "aarch64 %s (qemu -cpu %s)", variant, cpu);
  return t;
}

uint64_t fkh_cpu_features(void) { return fk_cpu_features(); }

static const char *runner_path(void) {
  const char *p = getenv("FKH_RUNNER");
  return p && *p ? p : FKH_RUNNER;
}

static const char *qemu_path(void) {
  const char *p = getenv("FKH_QEMU");
  return p && *p ? p : FKH_QEMU;
}

static int on_path(const char *prog) {
  if (strchr(prog, '/')) return access(prog, X_OK) == 0;
  const char *path = getenv("PATH");
  if (!path) return 0;
  char buf[4096];
  for (const char *p = path; *p;) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog);
    if (access(buf, X_OK) == 0) return 1;
    p += n + (e ? 1 : 0);
  }
  return 0;
}

int fkh_available(const fkh_target *t, char *why, size_t whylen) {
  if (t->kind == FKH_CONTRACT) return 1;
  if (t->kind == FKH_HOST) {
    uint64_t need = 0;
    for (int f = 0; f < fkh_nforms; f++) {
      uint64_t feat;
      if (fkh_host_stamp(f, t->variant, &feat)) need |= feat;
    }
    /* a trait (FK_CPU_TRAITS) says what the variant is tuned for, not what it needs to run */
    uint64_t missing = need & ~fk_cpu_features() & ~FK_CPU_TRAITS;
    if (missing) {
      char names[128];
      snprintf(why, whylen, "this CPU lacks %s", fk_cpu_feature_names(missing, names, sizeof names));
      return 0;
    }
    return 1;
  }
  if (!*runner_path() || access(runner_path(), R_OK) != 0) {
    snprintf(why, whylen, "no AArch64 stamp runner at '%s'", runner_path());
    return 0;
  }
  if (!on_path(qemu_path())) {
    snprintf(why, whylen, "%s not found", qemu_path());
    return 0;
  }
  return 1;
}

static int run_remote(const fkh_target *t, fkh_call *calls, int ncalls, char *err, size_t errlen) {
  char req[] = "/tmp/fkh_callsXXXXXX", res[] = "/tmp/fkh_resultsXXXXXX";
  int fd1 = mkstemp(req), fd2 = mkstemp(res);
  if (fd1 < 0 || fd2 < 0) {
    snprintf(err, errlen, "mkstemp: %s", strerror(errno));
    return -1;
  }
  close(fd1);
  close(fd2);
  int rc = -1;
  if (fkh_write_calls(req, calls, ncalls, t->variant) != 0) {
    snprintf(err, errlen, "cannot write %s", req);
    goto out;
  }
  const char *argv[] = { qemu_path(), "-cpu", t->cpu, runner_path(), req, res, NULL };
  pid_t pid;
  int e = posix_spawnp(&pid, argv[0], NULL, NULL, (char *const *)argv, environ);
  if (e != 0) {
    snprintf(err, errlen, "cannot start %s: %s", argv[0], strerror(e));
    goto out;
  }
  int status;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    snprintf(err, errlen, "%s -cpu %s %s failed (status 0x%x)", argv[0], t->cpu, argv[3], status);
    goto out;
  }
  rc = fkh_read_results(res, calls, ncalls, err, errlen);
out:
  unlink(req);
  unlink(res);
  return rc;
}

int fkh_run(const fkh_target *t, fkh_call *calls, int ncalls, char *err, size_t errlen) {
  if (t->kind == FKH_REMOTE) return run_remote(t, calls, ncalls, err, errlen);
  for (int i = 0; i < ncalls; i++) {
    if (t->kind == FKH_CONTRACT) {
      fkh_invoke_contract_tier(&calls[i], t->perturb, !strcmp(t->variant, "fast"));
      continue;
    }
    fkh_fn fn = fkh_host_stamp(calls[i].form, t->variant, NULL);
    if (!fn) {
      snprintf(err, errlen, "no host stamp %s for form %s", t->variant, fkh_forms[calls[i].form].id);
      return -1;
    }
    fkh_invoke(&calls[i], fn);
  }
  return 0;
}
