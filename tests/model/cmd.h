/* tests/model/cmd.h: a command's standard output, for the Criterion suites that run a scenario
 * natively and under qemu-aarch64 or run flashkern-run; the command must exit 0 (asserted, with its
 * output). Include after <criterion/criterion.h>. The caller frees the text. */
#ifndef FKT_CMD_H
#define FKT_CMD_H

#include <stdio.h>
#include <stdlib.h>

static inline char *fkt_run_cmd(const char *cmd) {
  FILE *f = popen(cmd, "r");
  cr_assert(f, "popen %s", cmd);
  size_t cap = 1 << 16, n = 0, r;
  char *out = malloc(cap);
  cr_assert(out);
  while ((r = fread(out + n, 1, cap - 1 - n, f)) > 0) {
    n += r;
    if (n == cap - 1) {
      cap *= 2;
      out = realloc(out, cap);
      cr_assert(out);
    }
  }
  out[n] = 0;
  int st = pclose(f);
  cr_assert_eq(st, 0, "%s exited with %d:\n%s", cmd, st, out);
  return out;
}

#endif
