/* tests/plan/fk_plan_scenario.c: one fixed session of every program, printed as digests; the
 * plan suite runs it natively and under qemu-aarch64 and compares the lines (the exact tier is
 * the same bits on both ISAs). Usage: fk_plan_scenario THREADS
 *
 * fk_plan_scenario fpenv: for each control bit of this ISA's MXCSR / FPCR, sets it (alone),
 * asks fk_plan_check and restores the register; prints one line per bit:
 *   "<bit> refused" (FK_EUNSUPPORTED, the message naming the bit), "<bit> unsettable" (the
 *   register kept it at its default: a trap enable the CPU does not implement, or FEAT_AFP's AH /
 *   FIZ / NEP on a core without it), or "<bit> ACCEPTED <status> <message>" (a defect);
 * then "default accepted" or "default REFUSED <message>". plan::fpenv_refused reads the lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_model.h"

static void check(fk_status s, const fk_error *err) {
  if (s == FK_OK) return;
  fprintf(stderr, "fk_plan_scenario: %s: %s\n", fk_strerror(s), err->message);
  exit(1);
}

/* ---- fpenv: the floating-point environment refused at readiness -------------------------------- */

typedef struct fp_case {
  const char *name; /* as fk_fpenv_check's message names it */
  uint64_t set, clear;
} fp_case;

#if defined(__x86_64__)
static uint64_t fp_get(void) { return __builtin_ia32_stmxcsr(); }
static void fp_set(uint64_t v) { __builtin_ia32_ldmxcsr((unsigned)v); }
static const fp_case fp_cases[] = {
  { "FTZ", 1u << 15, 0 }, { "DAZ", 1u << 6, 0 }, { "RC", 1u << 13, 0 }, { "RC", 2u << 13, 0 },
  { "RC", 3u << 13, 0 }, { "IM", 0, 1u << 7 }, { "DM", 0, 1u << 8 }, { "ZM", 0, 1u << 9 },
  { "OM", 0, 1u << 10 }, { "UM", 0, 1u << 11 }, { "PM", 0, 1u << 12 },
};
#elif defined(__aarch64__)
static uint64_t fp_get(void) {
  uint64_t v;
  __asm__ volatile("mrs %0, fpcr" : "=r"(v));
  return v;
}
static void fp_set(uint64_t v) { __asm__ volatile("msr fpcr, %0" : : "r"(v)); }
static const fp_case fp_cases[] = {
  { "FZ", 1u << 24, 0 }, { "DN", 1u << 25, 0 }, { "RMode", 1u << 22, 0 }, { "RMode", 2u << 22, 0 },
  { "RMode", 3u << 22, 0 }, { "AH", 1u << 1, 0 }, { "FIZ", 1u << 0, 0 }, { "NEP", 1u << 2, 0 },
  { "IOE", 1u << 8, 0 }, { "DZE", 1u << 9, 0 }, { "OFE", 1u << 10, 0 }, { "UFE", 1u << 11, 0 },
  { "IXE", 1u << 12, 0 }, { "IDE", 1u << 15, 0 },
};
#endif

static int fpenv(void) {
  fkp_model m;
  if (fkp_model_make(&m, 64, 72, 1, 2026) != 0) return 1;
  fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, 2, 8, 4);
  fk_error err;
  size_t bytes;
  const uint64_t saved = fp_get();
  for (size_t i = 0; i < sizeof fp_cases / sizeof fp_cases[0]; i++) {
    const fp_case *c = &fp_cases[i];
    uint64_t want = (saved | c->set) & ~c->clear;
    fp_set(want);
    uint64_t got = fp_get();
    fk_status s = got == want ? fk_plan_check(&d, &bytes, &err) : FK_OK;
    fp_set(saved);
    if (got != want) printf("%s unsettable\n", c->name);
    else if (s == FK_EUNSUPPORTED && strstr(err.message, c->name)) printf("%s refused\n", c->name);
    else printf("%s ACCEPTED %s %s\n", c->name, fk_strerror(s), s == FK_OK ? "" : err.message);
  }
  fk_status s = fk_plan_check(&d, &bytes, &err);
  if (s == FK_OK) printf("default accepted\n");
  else printf("default REFUSED %s\n", err.message);
  fkp_model_free(&m);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "fpenv")) return fpenv();
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  enum { H = 200, TAIL_IN = 72, ROWS = 11, FRAMES = 6 };
  fkp_model m;
  if (fkp_model_make(&m, H, TAIL_IN, 1, 2026) != 0) return 1;
  fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, threads, 8, 4);
  d.clip = 100.0f;
  fk_plan *p;
  fk_error err;
  check(fk_plan_create(&d, &p, &err), &err);
  static uint16_t x[ROWS * H];
  static float feat[FRAMES * TAIL_IN], pcm[FRAMES * 320 + 480];
  fkp_fill_bf16(x, ROWS * H, 2.0f, 1);
  fkp_fill_f32(feat, FRAMES * TAIL_IN, 1.0f, 2);
  static const int calls[] = { 8, 1, 1, 1 };
  int64_t at = 0;
  for (int i = 0; i < 4; i++) {
    fk_io io = { .rows = calls[i], .x = x + at * H, .ldx = H };
    check(fk_run(p, calls[i] == 1 ? FK_PROG_BLOCK_DECODE : FK_PROG_BLOCK_PREFILL, &io, &err), &err);
    at += calls[i];
  }
  int64_t n = 0;
  for (int f = 0; f < FRAMES; f += 3) {
    fk_io io = { .rows = 3, .feat = feat + f * TAIL_IN, .ldfeat = TAIL_IN, .pcm = pcm + n,
                 .pcm_cap = (int64_t)(sizeof pcm / sizeof pcm[0]) - n };
    check(fk_run(p, FK_PROG_TAIL, &io, &err), &err);
    n += io.pcm_count;
  }
  size_t len = fk_state_bytes(p);
  unsigned char *snap = malloc(len);
  check(fk_state_save(p, snap, len, &err), &err);
  fk_io io = { .pcm = pcm + n, .pcm_cap = 480 };
  check(fk_run(p, FK_PROG_TAIL_FLUSH, &io, &err), &err);
  n += io.pcm_count;
  printf("block %016llx\n", (unsigned long long)fkp_fnv(x, sizeof x, 0));
  printf("pcm %lld %016llx\n", (long long)n, (unsigned long long)fkp_fnv(pcm, (size_t)n * 4, 0));
  printf("state %zu %016llx\n", len, (unsigned long long)fkp_fnv(snap, len, 0));
  free(snap);
  fk_plan_destroy(p);
  fkp_model_free(&m);
  return 0;
}
