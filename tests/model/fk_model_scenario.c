/* tests/model/fk_model_scenario.c: one fixed session of the model programs, printed as digests;
 * test_model runs it natively at several team sizes and under qemu-aarch64 (-cpu max,
 * neoverse-n1) and compares the lines: the exact tier is the same bits on both ISAs and for
 * every team size.
 *   lm: a 12-token prompt, then 8 greedy decode steps; per call the next token, a digest of the
 *       logits and a digest of every step's residual stream (each layer boundary); then 8 sampled
 *       steps (temperature 40, top-k 50, seed 0x5eed); at the end the state snapshot's digest (KV
 *       caches, carries, position, the sampler's counter).
 *   the same LM with a sliding window of 8 (a ring cache; the window truncates from position 8);
 *   detok: 12 code frames, one per call, then the flush: the PCM's digest and the state's.
 * The calls are tests/model/session.c's. Usage: fk_model_scenario THREADS [lm|detok|both]
 *   fk_model_scenario THREADS gemm [exact|fast] [FORBID] [FLIP_ROW] [TOKENS] [FRAMES]: the GEMM
 *       path against row by row (fkt_session_gemm): an LM prompt of TOKENS (53: calls of 24 + 24 +
 *       5 rows inside) in one call against one token per call, and FRAMES detokenizer frames (9:
 *       54 rows) in one call against frame by frame; FORBID: FK_CPU_* bits in hex the plan must
 *       not use (desc.forbid_features), to reach the other variants; FLIP_ROW: the perturbation
 *       (-1: none). Exits 1 when a run differs.
 *   fk_model_scenario THREADS quant [desc|blocks|mixed] [q8|q4|q4k|both] [exact|fast] [lm]: the LM and
 *       detokenizer sessions with every GEMV matrix quantized, q8 then q4 (both), or the one format named
 *       (q4k's GEMVs run in the exact tier in a fast plan too):
 *       by desc.quantize (desc), or (blocks) given as GGUF blocks per matrix (fk_lfm2_layer.q,
 *       lm_head_q: the same bits are expected), or (mixed) only layers 0..2 as GGUF blocks and the
 *       rest bf16 (two formats); in the exact tier (default) or the fast one (desc.tier); lm: the LM
 *       session alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_desc.h"
#include "session.h"

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  const char *which = argc > 2 ? argv[2] : "both";
  fkt_models m;
  if (fkt_models_make(&m) != 0) return 1;
  if (strcmp(which, "gemm") == 0) {
    const char *tier = argc > 3 ? argv[3] : "exact";
    uint64_t forbid = argc > 4 ? strtoull(argv[4], NULL, 16) : 0;
    int flip = argc > 5 ? atoi(argv[5]) : -1, rc = 0;
    int64_t tokens = argc > 6 ? atoll(argv[6]) : 53, frames = argc > 7 ? atoll(argv[7]) : 9;
    for (int lm = 1; lm >= 0 && rc == 0; lm--) {
      fk_plan_desc d = fkt_models_desc(&m, lm ? FK_PROGRAMS_LM : FK_PROGRAMS_DETOK, threads);
      d.tier = strcmp(tier, "fast") == 0 ? FK_TIER_FAST : FK_TIER_EXACT;
      d.forbid_features = forbid;
      d.lm.max_rows = tokens;
      d.detok.max_frames = frames;
      rc = fkt_session_gemm(&d, lm, lm ? tokens : frames, flip, stdout);
    }
    fkt_models_free(&m);
    return rc < 0 ? 2 : rc;
  }
  if (strcmp(which, "quant") == 0) {
    const char *how = argc > 3 ? argv[3] : "desc", *only = argc > 4 ? argv[4] : "both";
    const fk_tier tier = argc > 5 && strcmp(argv[5], "fast") == 0 ? FK_TIER_FAST : FK_TIER_EXACT;
    const int lm_only = argc > 6 && strcmp(argv[6], "lm") == 0;
    for (fk_qformat f = FK_Q8; f <= FK_Q4K; f++) {
      const char *name = f == FK_Q8 ? "q8" : f == FK_Q4 ? "q4" : "q4k";
      if (strcmp(only, "both") == 0 ? f == FK_Q4K : strcmp(only, name) != 0) continue;
      printf("quantize %s%s\n", name, tier == FK_TIER_FAST ? " fast" : "");
      fk_plan_desc l = fkt_models_desc(&m, FK_PROGRAMS_LM, threads), d = fkt_models_desc(&m, FK_PROGRAMS_DETOK, threads);
      l.tier = d.tier = tier;
      if (strcmp(how, "desc") == 0) {
        l.quantize = d.quantize = f;
      } else {
        int upto = strcmp(how, "mixed") == 0 ? 3 : FK_MAX_LAYERS;
        if (fkt_models_qblocks(&m, &l, f, upto) != 0 || fkt_models_qblocks(&m, &d, f, upto) != 0) return 1;
        if (upto < FK_MAX_LAYERS) {
          /* the mixed plan's head stays bf16 too; the detokenizer's spectral head is bf16 here */
          l.lm.lm_head = fkt_models_desc(&m, FK_PROGRAMS_LM, threads).lm.lm_head;
          l.lm.lm_head_q = (fk_qmatrix){ FK_QNONE, NULL };
        } else {
          d.quantize = f; /* the spectral head has no per-matrix blocks: quantized by desc.quantize */
        }
      }
      if (fkt_session_lm(&l, stdout) != 0 || (!lm_only && fkt_session_detok(&d, stdout) != 0)) return 1;
    }
    fkt_models_free(&m);
    return 0;
  }
  for (int win = 0; win <= 8 && strcmp(which, "detok") != 0; win += 8) {
    /* window 8: the ring cache of W + max_rows - 1 slots, decode through the prefill ring form */
    fk_plan_desc d = fkt_models_desc(&m, FK_PROGRAMS_LM, threads);
    d.lm.stack.window = win;
    if (win) printf("lm window %d\n", win);
    if (fkt_session_lm(&d, stdout) != 0) return 1;
  }
  if (strcmp(which, "lm") != 0) {
    fk_plan_desc d = fkt_models_desc(&m, FK_PROGRAMS_DETOK, threads);
    if (fkt_session_detok(&d, stdout) != 0) return 1;
  }
  fkt_models_free(&m);
  return 0;
}
