/* tests/audio/fk_audio_scenario.c: the audio session (audio_session.h) on the small model, printed;
 * test_audio runs it natively at several team sizes and under qemu-aarch64 (-cpu max,
 * neoverse-n1) and compares the lines: the exact tier is the same bits on both ISAs and for every
 * team size. Usage: fk_audio_scenario THREADS [small|trace] [q8|q4|q4k] [fast] (q8, q4, q4k: desc.quantize:
 * every GEMV matrix of the backbone, the Depthformer, depth_linear and the heads quantized at readiness (q4k:
 * the trace model, whose every k is a multiple of 256); fast: desc.tier FK_TIER_FAST, the quantized fast
 * tier's integer dot products, q4k's GEMVs in the exact tier) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio_desc.h"
#include "audio_session.h"

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  const fkt_audio_cfg *cfg = argc > 2 && !strcmp(argv[2], "trace") ? &fkt_audio_trace_cfg : &fkt_audio_small_cfg;
  fkt_audio a;
  if (fkt_audio_make(&a, cfg, threads) != 0) return 1;
  if (argc > 3)
    a.desc.quantize = !strcmp(argv[3], "q8") ? FK_Q8 : !strcmp(argv[3], "q4") ? FK_Q4 : !strcmp(argv[3], "q4k") ? FK_Q4K
                                                                                                              : FK_QNONE;
  if (argc > 4 && !strcmp(argv[4], "fast")) a.desc.tier = FK_TIER_FAST;
  fk_plan *p;
  fk_error err;
  if (fk_plan_create(&a.desc, &p, &err) != FK_OK) {
    fprintf(stderr, "fk_audio_scenario: %s\n", err.message);
    return 1;
  }
  fk_sampler_seed(p, 0x5eed);
  fkt_audio_sess s = { 0 };
  int r;
  while ((r = fkt_audio_step(&s, p, stdout)) == 1) {
  }
  size_t len = fk_state_bytes(p);
  unsigned char *snap = malloc(len);
  if (!snap || fk_state_save(p, snap, len, &err) != FK_OK) return 1;
  printf("state %zu %016llx\n", len, (unsigned long long)fkt_audio_fnv(snap, len, 0));
  free(snap);
  fk_plan_destroy(p);
  fkt_audio_free(&a);
  return r < 0;
}
