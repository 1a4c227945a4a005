/* tests/audio/test_audio.c: the audio family (FK_PROGRAMS_AUDIO) end to end from stamps, on
 * synthetic weights (audio_desc.h) and the two-turn script (audio_session.h).
 *   team_sizes, same_on_aarch64: the scenario's lines (every call's output, draws, logits digests,
 *     the final snapshot) are the same for 1, 2 and 3 members, with the AVX2 stamps, and under
 *     qemu-aarch64 (-cpu max, neoverse-n1).
 *   trace_model_same_on_aarch64: the same script on the traces' model (fixtures/audio's weights) under
 *     qemu -cpu max gives the host's bits.
 *   snapshot_moves: the script split at every call, the state moved by a snapshot into a fresh
 *     plan, equals one plan end to end (the two turns included: KV, carries, sampler counter,
 *     modality state, the last output fed back).
 *   state_machine: the modality sequence the runtime reports equals liquid-audio's loops restated
 *     from the outputs (sequential and interleaved); the forced switches happen where forced.
 *   refusals: a step before a prefill or after <|im_end|>, forced ids out of range, a bad loop or
 *     sampling: refused with the field named and the state unchanged; bad descriptors named.
 *   counter_committed: sampled codes advance the counter once per draw; greedy ones do not.
 *   quantized_q4k_same_everywhere: desc.quantize q4k on the trace model, the same bits on 1..3 members,
 *     AVX2, and in a fast plan;
 *   quantized_same_everywhere: the script with desc.quantize q8 and q4, the same bits on every team
 *     size and target, and not the bf16 plan's; quantized_fast_same_everywhere: the same in the fast
 *     tier (1..3 members, qemu -cpu max), not the exact tier's bits. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio_desc.h"
#include "audio_session.h"
#include "cmd.h"


Test(audio, team_sizes, .timeout = 600) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s 1", FKT_AUDIO_SCENARIO_HOST);
  char *one = fkt_run_cmd(cmd);
  cr_assert(strstr(one, "out 1 frame") && strstr(one, "out 2 "), "the script emits frames and ends:\n%s", one);
  for (int t = 2; t <= 3; t++) {
    snprintf(cmd, sizeof cmd, "%s %d", FKT_AUDIO_SCENARIO_HOST, t);
    char *other = fkt_run_cmd(cmd);
    cr_assert_str_eq(other, one, "%d members:\n%s\n1 member:\n%s", t, other, one);
    free(other);
  }
  cr_log_info("1..3 members, the same bits:\n%s", one);
  free(one);
}

Test(audio, same_on_aarch64, .timeout = 1200) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s 2", FKT_AUDIO_SCENARIO_HOST);
  char *host = fkt_run_cmd(cmd);
  /* the AVX2 stamps (FK_CPU_MASK=3 hides AVX-512) on this machine */
  snprintf(cmd, sizeof cmd, "FK_CPU_MASK=3 %s 2", FKT_AUDIO_SCENARIO_HOST);
  char *avx2 = fkt_run_cmd(cmd);
  cr_assert_str_eq(avx2, host, "x86_64 AVX2:\n%s\nhost:\n%s", avx2, host);
  free(avx2);
  static const char *cpus[] = { "max", "neoverse-n1" };
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, "timeout 900 %s -cpu %s %s 2", FKH_QEMU, cpus[i], FKT_AUDIO_SCENARIO_AARCH64);
    char *arm = fkt_run_cmd(cmd);
    cr_assert_str_eq(arm, host, "aarch64 (-cpu %s):\n%s\nhost:\n%s", cpus[i], arm, host);
    free(arm);
  }
  free(host);
}

/* desc.quantize: the script with every GEMV matrix (backbone, Depthformer, depth_linear, the heads)
 * quantized, q8 and q4: the same bits for 1, 2 and 3 members, with the AVX2 stamps and under
 * qemu-aarch64 (-cpu max, neoverse-n1), and not the bf16 plan's bits. (The quantized programs'
 * faithfulness is tests/model's quantized_faithful: the LM and detokenizer traces.) */
Test(audio, quantized_same_everywhere, .timeout = 1200) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s 2", FKT_AUDIO_SCENARIO_HOST);
  char *bf16 = fkt_run_cmd(cmd);
  static const char *fmt[] = { "q8", "q4" };
  for (int f = 0; f < 2; f++) {
    snprintf(cmd, sizeof cmd, "%s 2 small %s", FKT_AUDIO_SCENARIO_HOST, fmt[f]);
    char *host = fkt_run_cmd(cmd);
    cr_assert_str_neq(host, bf16, "%s: the bf16 plan's bits", fmt[f]);
    const char *other[] = { "%s 1 small %s", "%s 3 small %s", "FK_CPU_MASK=3 %s 2 small %s" };
    for (int i = 0; i < 3; i++) {
      snprintf(cmd, sizeof cmd, other[i], FKT_AUDIO_SCENARIO_HOST, fmt[f]);
      char *o = fkt_run_cmd(cmd);
      cr_assert_str_eq(o, host, "%s (%s):\n%s\nhost:\n%s", fmt[f], other[i], o, host);
      free(o);
    }
    static const char *cpus[] = { "max", "neoverse-n1" };
    for (int i = 0; i < 2; i++) {
      snprintf(cmd, sizeof cmd, "timeout 900 %s -cpu %s %s 2 small %s", FKH_QEMU, cpus[i], FKT_AUDIO_SCENARIO_AARCH64,
               fmt[f]);
      char *arm = fkt_run_cmd(cmd);
      cr_assert_str_eq(arm, host, "%s aarch64 (-cpu %s):\n%s\nhost:\n%s", fmt[f], cpus[i], arm, host);
      free(arm);
    }
    free(host);
  }
  free(bf16);
}

/* q4k (desc.quantize FK_Q4K, the trace model: every k a multiple of 256): the script's bits the same for
 * 2 members (AVX-512), 3 (the AVX2 stamps) and 1 in a fast plan (q4k's GEMVs run in the exact tier in
 * every plan; every other phase of these programs is exact-tier in both). (Under qemu-aarch64 and against
 * q4's bits: tests/model's q4k sessions.) */
Test(audio, quantized_q4k_same_everywhere, .timeout = 1200) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s 2 trace q4k", FKT_AUDIO_SCENARIO_HOST);
  char *host = fkt_run_cmd(cmd);
  static const char *other[] = { "FK_CPU_MASK=3 %s 3 trace q4k", "%s 1 trace q4k fast" };
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, other[i], FKT_AUDIO_SCENARIO_HOST);
    char *o = fkt_run_cmd(cmd);
    cr_assert_str_eq(o, host, "q4k (%s):\n%s\nhost:\n%s", other[i], o, host);
    free(o);
  }
  free(host);
}

/* The quantized fast tier (activations quantized per block, VPDPBUSD / SDOT) through the whole audio
 * script (backbone, Depthformer, depth_linear, heads): deterministic too, the same bits on 1..3
 * members and (q8) on qemu -cpu neoverse-n1 (dotprod) as on x86_64 (avx512vnni), and not the exact
 * tier's. */
Test(audio, quantized_fast_same_everywhere, .timeout = 1200) {
  if (!(fk_cpu_features() & FK_CPU_AVX512VNNI)) cr_skip_test("this CPU has no AVX512-VNNI");
  char cmd[1024];
  static const char *fmt[] = { "q8", "q4" };
  for (int f = 0; f < 2; f++) {
    snprintf(cmd, sizeof cmd, "%s 2 small %s", FKT_AUDIO_SCENARIO_HOST, fmt[f]);
    char *exact = fkt_run_cmd(cmd);
    snprintf(cmd, sizeof cmd, "%s 2 small %s fast", FKT_AUDIO_SCENARIO_HOST, fmt[f]);
    char *host = fkt_run_cmd(cmd);
    cr_assert_str_neq(host, exact, "%s fast: the exact tier's bits", fmt[f]);
    for (int t = 1; t <= 3; t += 2) {
      snprintf(cmd, sizeof cmd, "%s %d small %s fast", FKT_AUDIO_SCENARIO_HOST, t, fmt[f]);
      char *o = fkt_run_cmd(cmd);
      cr_assert_str_eq(o, host, "%s fast, %d members:\n%s\n2 members:\n%s", fmt[f], t, o, host);
      free(o);
    }
    if (f == 0) { /* (q8 only under qemu: q4's dotprod stamps run in tests/model's sessions and the leaf suite) */
      snprintf(cmd, sizeof cmd, "timeout 900 %s -cpu neoverse-n1 %s 2 small %s fast", FKH_QEMU,
               FKT_AUDIO_SCENARIO_AARCH64, fmt[f]);
      char *arm = fkt_run_cmd(cmd);
      cr_assert_str_eq(arm, host, "%s fast aarch64 (-cpu neoverse-n1, dotprod):\n%s\nhost:\n%s", fmt[f], arm, host);
      free(arm);
    }
    free(exact);
    free(host);
  }
}

static fkt_audio A;
static void setup(void) { cr_assert_eq(fkt_audio_make(&A, &fkt_audio_small_cfg, 2), 0); }
static void teardown(void) { fkt_audio_free(&A); }

static fk_plan *make_plan(void) {
  fk_plan *p = NULL;
  fk_error err;
  cr_assert_eq(fk_plan_create(&A.desc, &p, &err), FK_OK, "fk_plan_create: %s", err.message);
  cr_assert_eq(fk_sampler_seed(p, 0x5eed), FK_OK);
  return p;
}

/* The text head alone given as GGUF blocks (audio.lm.lm_head_q, q8, no desc.quantize): readiness
 * resolves the q8 logits stamp for it (the logits phase names it), the script runs, and its text logits
 * are not the bf16 head's. */
Test(audio, text_head_as_gguf_blocks, .init = setup, .fini = teardown, .timeout = 300) {
  fk_plan_desc d = A.desc;
  int64_t v = d.audio.lm.vocab, h = d.audio.lm.stack.hidden;
  size_t bytes = fk_q_gguf_bytes(FK_Q8, v, h);
  void *blocks = malloc(bytes);
  fk_error err;
  cr_assert_eq(fk_q_quantize_bf16(FK_Q8, d.audio.lm.embed, h, v, h, blocks, bytes, &err), FK_OK, "%s", err.message);
  d.audio.lm.lm_head_q = (fk_qmatrix){ FK_Q8, blocks };
  fk_plan *p = NULL, *ref = make_plan();
  cr_assert_eq(fk_plan_create(&d, &p, &err), FK_OK, "fk_plan_create: %s", err.message);
  int found = 0;
  for (int i = 0; i < fk_program_phases(p, FK_PROG_AUDIO_PREFILL); i++) {
    fk_phase_info ph;
    cr_assert_eq(fk_phase_query(p, FK_PROG_AUDIO_PREFILL, i, &ph, &err), FK_OK);
    if (!strcmp(ph.name, "logits")) {
      cr_assert(strstr(ph.symbol, "gemv_q8_f32"), "the logits phase runs %s", ph.symbol);
      found = 1;
    }
  }
  cr_assert(found, "no logits phase");
  static float lq[4096], lb[4096];
  cr_assert_leq(v, 4096);
  int32_t tok[3] = { 1, 2, 3 };
  fk_io io = { .rows = 3, .tokens = tok, .logits = lq, .loop = FK_AUDIO_SEQUENTIAL };
  cr_assert_eq(fk_run(p, FK_PROG_AUDIO_PREFILL, &io, &err), FK_OK, "%s", err.message);
  io.logits = lb;
  cr_assert_eq(fk_run(ref, FK_PROG_AUDIO_PREFILL, &io, &err), FK_OK, "%s", err.message);
  cr_assert_neq(memcmp(lq, lb, (size_t)v * sizeof lq[0]), 0, "the q8 head gave the bf16 head's logits");
  fk_plan_destroy(p);
  fk_plan_destroy(ref);
  free(blocks);
}

/* the whole script on p into a memory stream */
static char *script(fk_plan *p, fkt_audio_sess *s, int calls) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  int r = 1;
  for (int k = 0; (calls < 0 || k < calls) && (r = fkt_audio_step(s, p, f)) == 1; k++) {
  }
  cr_assert_geq(r, 0, "the script was refused");
  fclose(f);
  return buf;
}

Test(audio, snapshot_moves, .init = setup, .fini = teardown, .timeout = 600) {
  fk_plan *one = make_plan();
  fkt_audio_sess s1 = { 0 };
  char *whole = script(one, &s1, -1);
  int calls = s1.call;
  cr_assert_gt(calls, 10);
  fk_error err;
  for (int split = 1; split < calls; split += 3) {
    fk_plan *a = make_plan(), *b = make_plan();
    fkt_audio_sess s = { 0 };
    char *head = script(a, &s, split);
    size_t len = fk_state_bytes(a);
    unsigned char *img = malloc(len);
    cr_assert_eq(fk_state_save(a, img, len, &err), FK_OK, "%s", err.message);
    cr_assert_eq(fk_state_load(b, img, len, &err), FK_OK, "%s", err.message);
    fk_plan_destroy(a); /* the rest runs on the fresh plan */
    char *tail = script(b, &s, -1);
    size_t n = strlen(head);
    cr_assert(!strncmp(whole, head, n) && !strcmp(whole + n, tail),
              "split at call %d:\n%s---\n%s\nwhole:\n%s", split, head, tail, whole);
    free(head);
    free(tail);
    free(img);
    fk_plan_destroy(b);
  }
  free(whole);
  fk_plan_destroy(one);
}

/* liquid-audio 1.3.0's loops restated on the outputs: the modality each call leaves */
Test(audio, state_machine, .init = setup, .fini = teardown, .timeout = 300) {
  fk_plan *p = make_plan();
  fkt_audio_sess s = { 0 };
  char *lines = script(p, &s, -1);
  int mod = FK_AUDIO_TEXT, left = 0, text_done = 0, inter = 0, n_text = (int)A.cfg.n_text,
      n_audio = (int)A.cfg.n_audio, switches = 0, frames = 0, ends = 0;
  char *save = NULL;
  for (char *ln = strtok_r(lines, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
    int call, out, got, turn, a[8], tok = -1;
    char kind[16];
    cr_assert_eq(sscanf(ln, "call %d %15s out %d", &call, kind, &out), 3, "%s", ln);
    if (!strcmp(kind, "prefill")) {
      inter = call != 0;
      mod = FK_AUDIO_TEXT;
      left = n_text;
      text_done = 0;
    }
    if (inter) left--;
    const char *m = strstr(ln, " modality ");
    cr_assert(m && sscanf(m, " modality %d turn %d", &got, &turn) == 2, "%s", ln);
    if (out == FK_AUDIO_OUT_FRAME) {
      cr_assert_eq(mod, FK_AUDIO_AUDIO, "a frame in text modality: %s", ln);
      cr_assert_eq(sscanf(strstr(ln, " frame "), " frame %d %d %d %d %d %d %d %d", &a[0], &a[1], &a[2], &a[3],
                          &a[4], &a[5], &a[6], &a[7]), 8, "%s", ln);
      frames++;
      if (inter && !left && !text_done) {
        mod = FK_AUDIO_TEXT;
        left = n_text;
      }
      if (a[0] == 2048) {
        for (int c = 1; c < 8; c++) cr_assert_eq(a[c], 2048, "the end frame is all 2048: %s", ln);
        mod = FK_AUDIO_TEXT;
      }
    } else {
      cr_assert_eq(mod, FK_AUDIO_TEXT, "a token in audio modality: %s", ln);
      cr_assert_eq(sscanf(strstr(ln, " next "), " next %d", &tok), 1, "%s", ln);
      if (tok == 7) {
        cr_assert_eq(out, FK_AUDIO_OUT_END, "<|im_end|> ends the turn: %s", ln);
        cr_assert_eq(turn, 2, "%s", ln);
        ends++;
      } else if (!inter) {
        if (tok == 128) mod = FK_AUDIO_AUDIO;
      } else {
        if (tok == 130) text_done = 1;
        if (!left || text_done) {
          mod = FK_AUDIO_AUDIO;
          left = n_audio;
        }
      }
    }
    if (got != mod) switches = -1000;
    cr_assert_eq(got, mod, "the modality after %s", ln);
    switches++;
  }
  cr_assert_eq(ends, 2, "both turns end");
  cr_assert_geq(frames, 7, "turn 1's 4 frames and turn 2's");
  cr_log_info("%d calls, %d frames, the modality as the loops say", switches, frames);
  free(lines);
  fk_plan_destroy(p);
}

static void refused(fk_plan *p, fk_program prog, fk_io *io, fk_status want, const char *needle) {
  size_t len = fk_state_bytes(p);
  unsigned char *before = malloc(len), *after = malloc(len);
  fk_error err;
  cr_assert_eq(fk_state_save(p, before, len, &err), FK_OK);
  fk_status s = fk_run(p, prog, io, &err);
  cr_assert_eq(s, want, "status %d (%s)", (int)s, s == FK_OK ? "" : err.message);
  cr_assert(strstr(err.message, needle), "message '%s' names '%s'", err.message, needle);
  cr_assert_eq(fk_state_save(p, after, len, &err), FK_OK);
  cr_assert(!memcmp(before, after, len), "a refusal changed the state");
  free(before);
  free(after);
}

Test(audio, refusals, .init = setup, .fini = teardown, .timeout = 300) {
  fk_plan *p = make_plan();
  fk_io io = { .rows = 1 };
  refused(p, FK_PROG_AUDIO_STEP, &io, FK_ESTATE, "FK_PROG_AUDIO_PREFILL starts one");
  int32_t ids[2] = { 3, 4 }, bad[8] = { 0, 0, 0, 0, 0, 0, 0, 5000 };
  io = (fk_io){ .rows = 2, .tokens = ids, .loop = 7 };
  refused(p, FK_PROG_AUDIO_PREFILL, &io, FK_EINVAL, "io.loop = 7");
  fk_sampling zero = { 0.0f, 5 };
  io = (fk_io){ .rows = 2, .tokens = ids, .sampling = &zero };
  refused(p, FK_PROG_AUDIO_PREFILL, &io, FK_EINVAL, "io.sampling->temperature");
  io = (fk_io){ .rows = 2, .tokens = ids, .force = bad + 7 };
  refused(p, FK_PROG_AUDIO_PREFILL, &io, FK_EINVAL, "io.force[0] = 5000");
  /* into audio: force <|audio_start|>, then a frame with a code past the vocabulary */
  int32_t start = 128;
  fk_error err;
  io = (fk_io){ .rows = 2, .tokens = ids, .force = &start };
  cr_assert_eq(fk_run(p, FK_PROG_AUDIO_PREFILL, &io, &err), FK_OK, "%s", err.message);
  cr_assert_eq(io.modality, FK_AUDIO_AUDIO);
  io = (fk_io){ .rows = 1, .force = bad };
  refused(p, FK_PROG_AUDIO_STEP, &io, FK_EINVAL, "io.force[7] = 5000");
  io = (fk_io){ .rows = 2 };
  refused(p, FK_PROG_AUDIO_STEP, &io, FK_EINVAL, "a step runs exactly 1 row");
  /* end the audio, then the turn */
  int32_t end[8] = { 2048, 1, 2, 3, 4, 5, 6, 7 }, im_end = 7;
  io = (fk_io){ .rows = 1, .force = end };
  cr_assert_eq(fk_run(p, FK_PROG_AUDIO_STEP, &io, &err), FK_OK, "%s", err.message);
  cr_assert_eq(io.out, FK_AUDIO_OUT_FRAME);
  for (int c = 0; c < 8; c++) cr_assert_eq(io.frame[c], 2048);
  cr_assert_eq(io.modality, FK_AUDIO_TEXT);
  io = (fk_io){ .rows = 1, .force = &im_end };
  cr_assert_eq(fk_run(p, FK_PROG_AUDIO_STEP, &io, &err), FK_OK, "%s", err.message);
  cr_assert_eq(io.out, FK_AUDIO_OUT_END);
  io = (fk_io){ .rows = 1 };
  refused(p, FK_PROG_AUDIO_STEP, &io, FK_ESTATE, "the turn ended");
  fk_plan_destroy(p);
  /* descriptors */
  fk_plan_desc d = A.desc;
  d.audio.depth.stack.head_dim = 64;
  cr_assert_eq(fk_plan_check(&d, NULL, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "desc.audio.depth.stack.head_dim = 64"), "%s", err.message);
  d = A.desc;
  d.audio.depth.audio_vocab = 1000;
  cr_assert_eq(fk_plan_check(&d, NULL, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "desc.audio.depth.audio_vocab = 1000"), "%s", err.message);
  d = A.desc;
  d.audio.depth.embed[3] = NULL;
  cr_assert_eq(fk_plan_check(&d, NULL, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "desc.audio.depth.embed[3] is NULL"), "%s", err.message);
  d = A.desc;
  d.audio.lm.vocab = 100;
  cr_assert_eq(fk_plan_check(&d, NULL, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "desc.audio.lm.vocab = 100"), "%s", err.message);
  d = A.desc;
  fk_lfm2_layer conv = A.depth_layers[0];
  conv.kind = FK_LAYER_CONV;
  fk_lfm2_layer layers[2] = { conv, A.depth_layers[1] };
  d.audio.depth.stack.layer = layers;
  cr_assert_eq(fk_plan_check(&d, NULL, &err), FK_EINVAL);
  cr_assert(strstr(err.message, "the Depthformer's layers are FK_LAYER_ATTN"), "%s", err.message);
}

Test(audio, counter_committed, .init = setup, .fini = teardown, .timeout = 300) {
  fk_plan *p = make_plan();
  int32_t ids[3] = { 5, 9, 11 }, start = 128;
  fk_sampling smp = { 0.9f, 64 }, greedy_k = { 0.9f, 1 };
  fk_error err;
  fk_io io = { .rows = 3, .tokens = ids, .force = &start };
  cr_assert_eq(fk_run(p, FK_PROG_AUDIO_PREFILL, &io, &err), FK_OK, "%s", err.message);
  cr_assert_eq(fk_state_query(p).draws, 0, "a greedy prefill draws nothing");
  io = (fk_io){ .rows = 1, .audio_sampling = &smp };
  cr_assert_eq(fk_run(p, FK_PROG_AUDIO_STEP, &io, &err), FK_OK, "%s", err.message);
  cr_assert_eq(fk_state_query(p).draws, 8, "a sampled frame draws once per codebook");
  io = (fk_io){ .rows = 1, .audio_sampling = &greedy_k };
  cr_assert_eq(fk_run(p, FK_PROG_AUDIO_STEP, &io, &err), FK_OK, "%s", err.message);
  cr_assert_eq(fk_state_query(p).draws, 8, "top_k 1 is greedy: no draw");
  for (int c = 0; c < 8; c++) cr_assert_eq(io.frame[c] == 2048 ? io.drawn[c] : io.frame[c], io.drawn[c]);
  fk_plan_destroy(p);
}

/* The traces' model itself (fixtures/audio's weights: Depthformer 1024 wide, 2049 codes) through the
 * script: AArch64 (qemu -cpu max) gives the host's bits, so what test_audio_trace judges on x86_64
 * holds on AArch64 as it stands. */
Test(audio, trace_model_same_on_aarch64, .timeout = 1200) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s 2 trace", FKT_AUDIO_SCENARIO_HOST);
  char *host = fkt_run_cmd(cmd);
  snprintf(cmd, sizeof cmd, "timeout 1100 %s -cpu max %s 2 trace", FKH_QEMU, FKT_AUDIO_SCENARIO_AARCH64);
  char *arm = fkt_run_cmd(cmd);
  cr_assert_str_eq(arm, host, "aarch64 (-cpu max), the traces' model:\n%s\nhost:\n%s", arm, host);
  free(arm);
  free(host);
}
