/* tests/test_noalloc.c: after readiness, no allocation, no free and no file opened, in any thread
 * (plain C, not Criterion: the interposer must see every call of the process and nothing else
 * may run beside the plan).
 *
 * malloc, calloc, realloc, free, posix_memalign, aligned_alloc, memalign, valloc (tests/interpose.c),
 * open, openat, fopen are interposed (the executable's definitions win over libc's for every
 * caller, the library's threads included) and forward to glibc's internal entry points. With the counters
 * armed, a 2-thread plan at LFM2 width runs 1,000 block steps (decode, and prefills of 1..8
 * rows) and 1,000 tail frames with flushes, timing on; then a plan of the whole-model programs
 * (tests/model: the traces' synthetic LM and detokenizer) runs 1,000 LM steps (prompts, greedy and
 * top-k decode, resets) and 240 detokenizer code frames with flushes and snapshots; then the
 * counts must be zero. With the checkpoint loader (FKT_CKPT), the same runs again on a plan made
 * from an LFM2.5-Audio directory written to disk (tests/ckpt/ckpt_write.c): fk_model_open,
 * fk_model_describe and fk_plan_create before the counted region, the model closed (unmapped)
 * before it, so the plan can read nothing of the files. The test proves it can see: one
 * deliberate malloc with the counters armed must count. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interpose.h"
#include "audio/audio_desc.h"
#include "model/model_desc.h"
#include "plan/plan_model.h"
#ifdef FKT_CKPT
#include "ckpt_write.h"
#include "fk_checkpoint.h"
#endif

/* the malloc family is tests/interpose.c's; the opens are interposed here, counted with it */
#define count fkt_interpose_count

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef FILE *(*fopen_fn)(const char *, const char *);

int open(const char *path, int flags, ...) {
  count("open");
  va_list ap;
  va_start(ap, flags);
  int mode = va_arg(ap, int);
  va_end(ap);
  return ((open_fn)dlsym(RTLD_NEXT, "open"))(path, flags, mode);
}
int openat(int dir, const char *path, int flags, ...) {
  count("openat");
  va_list ap;
  va_start(ap, flags);
  int mode = va_arg(ap, int);
  va_end(ap);
  return ((openat_fn)dlsym(RTLD_NEXT, "openat"))(dir, path, flags, mode);
}
FILE *fopen(const char *path, const char *mode) {
  count("fopen");
  return ((fopen_fn)dlsym(RTLD_NEXT, "fopen"))(path, mode);
}

static void must(fk_status s, const fk_error *err, const char *what) {
  if (s == FK_OK) return;
  fprintf(stderr, "test_noalloc: %s: %s: %s\n", what, fk_strerror(s), err->message);
  exit(1);
}

/* 1,000 LM calls and 240 detokenizer frames on plan p (desc d) with the counters armed. */
static int run_models(fk_plan *p, const fk_plan_desc *d, const char *what) {
  fk_error err;
  must(fk_sampler_seed(p, 2026), &err, "fk_sampler_seed");
  int32_t *tok = malloc(16 * 4), *codes = malloc(4 * 8 * 4);
  float *logits = malloc((size_t)d->lm.vocab * 4), *pcm = malloc((4 * 1920 + 480) * 4);
  for (int i = 0; i < 16; i++) tok[i] = (int32_t)(i * 37 % d->lm.vocab);
  for (int i = 0; i < 32; i++) codes[i] = (int32_t)(i * 613 % d->detok.codebook_vocab);
  size_t snap_len = fk_state_bytes(p);
  unsigned char *snap = malloc(snap_len);
  static const fk_sampling topk = { 0.8f, 40 };
  fkt_interpose_arm(1);
  long lm = 0, frames = 0;
  for (int s = 0; s < 1000; s++) {
    fk_state_info si = fk_state_query(p);
    if (si.lm_pos + 16 > d->lm.stack.max_pos) must(fk_state_reset(p), &err, "reset");
    si = fk_state_query(p);
    fk_io io = { .rows = si.lm_pos == 0 ? 1 + s % 16 : 1, .tokens = tok, .logits = s % 3 ? logits : NULL,
                 .sampling = s % 2 ? &topk : NULL };
    must(fk_run(p, si.lm_pos == 0 ? FK_PROG_LM_PREFILL : FK_PROG_LM_DECODE, &io, &err), &err, "lm");
    tok[0] = io.next;
    lm++;
  }
  for (int f = 0; f < 240; f += 1 + f % 3) {
    fk_io io = { .rows = 1 + f % 3, .codes = codes, .pcm = pcm, .pcm_cap = 4 * 1920 + 480 };
    must(fk_run(p, FK_PROG_DETOK, &io, &err), &err, "detok");
    frames += io.rows;
    if (f % 40 == 39 || f % 40 == 38) {
      must(fk_state_save(p, snap, snap_len, &err), &err, "save (models)");
      must(fk_state_load(p, snap, snap_len, &err), &err, "load (models)");
      fk_io fl = { .pcm = pcm, .pcm_cap = 480 };
      must(fk_run(p, FK_PROG_DETOK_FLUSH, &fl, &err), &err, "detok flush");
    }
  }
  fkt_interpose_arm(0);
  long n = fkt_interpose_calls();
  printf("test_noalloc: %s: %ld LM calls (greedy and top-k, prompts after resets), %ld detokenizer code frames, "
         "flushes + snapshots, 2 threads: %ld allocations/frees/opens after readiness\n", what, lm, frames, n);
  if (n != 0) {
    fprintf(stderr, "test_noalloc: FAIL: %ld calls after readiness (%s), the first: %s\n", n, what, fkt_interpose_first());
    return 1;
  }
  free(tok);
  free(codes);
  free(logits);
  free(pcm);
  free(snap);
  return 0;
}

/* The whole-model programs of the traces' descriptors. */
static int model_programs(void) {
  fkt_models mm;
  if (fkt_models_make(&mm) != 0) return 1;
  fk_plan_desc d = fkt_models_desc(&mm, FK_PROGRAMS_LM | FK_PROGRAMS_DETOK, 2);
  d.flags = FK_PLAN_TIMING;
  fk_plan *p;
  fk_error err;
  must(fk_plan_create(&d, &p, &err), &err, "fk_plan_create (models)");
  if (run_models(p, &d, "models")) return 1;
  fk_plan_destroy(p);
  fkt_models_free(&mm);
  return 0;
}

/* The audio family (tests/audio/audio_desc.h's small model) beside the detokenizer: 1,000 frames
 * (greedy and sampled, sequential and interleaved turns), each streamed into FK_PROG_DETOK as the
 * host would, with snapshots; after 60 frames of a turn a frame forced to end the audio, then
 * <|im_end|>. */
static int audio_programs(void) {
  fkt_models mm;
  fkt_audio a;
  if (fkt_models_make(&mm) != 0 || fkt_audio_make(&a, &fkt_audio_small_cfg, 2) != 0) return 1;
  fk_plan_desc dt = fkt_models_desc(&mm, FK_PROGRAMS_DETOK, 2), d = a.desc;
  fkt_audio_add_detok(&d, &dt);
  fk_plan *p;
  fk_error err;
  must(fk_plan_create(&d, &p, &err), &err, "fk_plan_create (audio)");
  must(fk_sampler_seed(p, 2026), &err, "fk_sampler_seed");
  int32_t *ids = malloc(8 * 4), *force = malloc(8 * 4);
  float *pcm = malloc((1920 + 480) * 4);
  size_t snap_len = fk_state_bytes(p);
  unsigned char *snap = malloc(snap_len);
  static const fk_sampling smp = { 0.9f, 64 };
  for (int i = 0; i < 8; i++) ids[i] = 3 + 17 * i;
  fkt_interpose_arm(1);
  long frames = 0, steps = 0, turns = 0, turn_frames = 0;
  while (frames < 1000) {
    fk_state_info si = fk_state_query(p);
    if (si.audio_pos + 80 > d.audio.lm.stack.max_pos) must(fk_state_reset(p), &err, "reset");
    si = fk_state_query(p);
    fk_io io = { .rows = 1, .audio_sampling = turns % 2 ? &smp : NULL, .force = force };
    fk_program prog = FK_PROG_AUDIO_STEP;
    if (si.audio_turn != 1) { /* a new turn: <|audio_start|> forced at once */
      prog = FK_PROG_AUDIO_PREFILL;
      io.rows = 8;
      io.tokens = ids;
      io.loop = (int32_t)(turns++ % 2);
      force[0] = 128;
      turn_frames = 0;
    } else if (si.audio_modality == FK_AUDIO_TEXT) {
      force[0] = 7;
    } else if (turn_frames == 60) {
      force[0] = 2048;
      for (int c = 1; c < 8; c++) force[c] = c;
    } else {
      io.force = NULL;
    }
    must(fk_run(p, prog, &io, &err), &err, "audio");
    steps++;
    int sound = io.out == FK_AUDIO_OUT_FRAME;
    for (int c = 0; sound && c < 8; c++) sound = io.frame[c] < 2048; /* the detokenizer's codebooks hold 2048 */
    if (sound) {
      fk_io dio = { .rows = 1, .codes = io.frame, .pcm = pcm, .pcm_cap = 1920 + 480 };
      must(fk_run(p, FK_PROG_DETOK, &dio, &err), &err, "detok");
      frames++;
      turn_frames++;
      if (frames % 100 == 0) {
        must(fk_state_save(p, snap, snap_len, &err), &err, "save (audio)");
        must(fk_state_load(p, snap, snap_len, &err), &err, "load (audio)");
      }
    } else if (io.out == FK_AUDIO_OUT_FRAME && io.frame[0] == 2048 && turn_frames >= 2) {
      fk_io fl = { .pcm = pcm, .pcm_cap = 480 };
      must(fk_run(p, FK_PROG_DETOK_FLUSH, &fl, &err), &err, "detok flush");
    }
  }
  fkt_interpose_arm(0);
  long n = fkt_interpose_calls();
  printf("test_noalloc: audio: %ld calls, %ld frames streamed into the detokenizer, %ld turns, 2 threads: %ld "
         "allocations/frees/opens after readiness\n", steps, frames, turns, n);
  if (n != 0) {
    fprintf(stderr, "test_noalloc: FAIL: %ld calls after readiness (audio), the first: %s\n", n, fkt_interpose_first());
    return 1;
  }
  free(ids);
  free(force);
  free(pcm);
  free(snap);
  fk_plan_destroy(p);
  fkt_audio_free(&a);
  fkt_models_free(&mm);
  return 0;
}

#ifdef FKT_CKPT
/* The same programs from an LFM2.5-Audio checkpoint on disk (backbone and audio_detokenizer/). */
static int checkpoint_programs(void) {
  char dir[64], msg[256];
  fkm_weights lm, det;
  if (fkm_synth_model("lm", &lm, msg, sizeof msg) || fkm_synth_model("detok", &det, msg, sizeof msg) || !fkw_tmpdir(dir) ||
      fkw_audio_dir(dir, &lm, &det, &(fkw_opts){ 0 })) {
    fprintf(stderr, "test_noalloc: cannot write the checkpoint: %s\n", msg);
    return 1;
  }
  fk_error err;
  fk_model *m;
  must(fk_model_open(dir, FK_MODEL_AUTO, &m, &err), &err, "fk_model_open");
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.threads = 2;
  d.flags = FK_PLAN_TIMING;
  d.lm.max_rows = 16;
  d.lm.stack.max_pos = 256;
  d.detok.max_frames = 4;
  must(fk_model_describe(m, &d, &err), &err, "fk_model_describe");
  fk_plan *p;
  must(fk_plan_create(&d, &p, &err), &err, "fk_plan_create (checkpoint)");
  fk_model_close(m); /* unmapped: a read of the files after readiness would fault */
  if (run_models(p, &d, "checkpoint")) return 1;
  fk_plan_destroy(p);
  fkm_weights_free(&lm);
  fkm_weights_free(&det);
  fkw_rmdir(dir);
  return 0;
}
#endif

int main(void) {
  enum { H = 2048, TAIL_IN = 512, STEPS = 1000, MAXR = 8 };
  /* resolve the dlsym'd entry points before arming (dlsym may allocate once) */
  FILE *f = fopen("/dev/null", "r");
  if (f) fclose(f);
  int fd = open("/dev/null", O_RDONLY);
  if (fd >= 0) close(fd);
  fd = openat(AT_FDCWD, "/dev/null", O_RDONLY);
  if (fd >= 0) close(fd);

  fkp_model m;
  if (fkp_model_make(&m, H, TAIL_IN, 0, 7) != 0) return 1;
  fk_plan_desc d = fkp_desc(&m, FK_PROGRAMS_BLOCK | FK_PROGRAMS_TAIL, 2, MAXR, 4);
  d.flags = FK_PLAN_TIMING;
  fk_plan *p;
  fk_error err;
  must(fk_plan_create(&d, &p, &err), &err, "fk_plan_create");
  uint16_t *x = malloc((size_t)(MAXR * H) * 2);
  float *feat = malloc((size_t)(4 * TAIL_IN) * 4), *pcm = malloc((4 * 320 + 480) * 4);
  fkp_fill_bf16(x, (size_t)(MAXR * H), 1.0f, 1);
  fkp_fill_f32(feat, (size_t)(4 * TAIL_IN), 1.0f, 2);
  size_t snap_len = fk_state_bytes(p);
  unsigned char *snap = malloc(snap_len);

  /* the interposer sees an allocation when there is one */
  fkt_interpose_arm(1);
  void *volatile probe = malloc(16); /* volatile: the compiler may not drop the pair */
  fkt_interpose_arm(0);
  free(probe);
  if (fkt_interpose_calls() != 1 || fkt_interpose_live() != 1) {
    fprintf(stderr, "test_noalloc: the interposer did not see a malloc (%ld calls, %ld live)\n", fkt_interpose_calls(),
            fkt_interpose_live());
    return 1;
  }

  fkt_interpose_arm(1);
  long frames = 0, rows = 0;
  for (int s = 0; s < STEPS; s++) {
    int64_t r = s % 10 == 0 ? 1 + s / 10 % MAXR : 1;
    fk_io io = { .rows = r, .x = x, .ldx = H };
    must(fk_run(p, r == 1 ? FK_PROG_BLOCK_DECODE : FK_PROG_BLOCK_PREFILL, &io, &err), &err, "block");
    rows += r;
    fk_io t = { .rows = 1, .feat = feat + (s % 4) * TAIL_IN, .ldfeat = TAIL_IN, .pcm = pcm, .pcm_cap = 4 * 320 + 480 };
    must(fk_run(p, FK_PROG_TAIL, &t, &err), &err, "tail");
    frames++;
    if (s % 100 == 99) {
      fk_io fl = { .pcm = pcm, .pcm_cap = 480 };
      must(fk_run(p, FK_PROG_TAIL_FLUSH, &fl, &err), &err, "flush");
      must(fk_state_save(p, snap, snap_len, &err), &err, "save");
      must(fk_state_load(p, snap, snap_len, &err), &err, "load");
    }
    /* keep the residual stream bounded: the steps feed back into x */
    if (s % 50 == 49) fkp_fill_bf16(x, (size_t)(MAXR * H), 1.0f, (uint64_t)s);
  }
  fkt_interpose_arm(0);
  long n = fkt_interpose_calls();
  fk_phase_info info;
  must(fk_phase_query(p, FK_PROG_BLOCK_DECODE, 1, &info, &err), &err, "fk_phase_query");
  printf("test_noalloc: %d block steps (%ld rows), %ld tail frames, 10 flushes + snapshots, 2 threads, hidden %d: "
         "%ld allocations/frees/opens after readiness (in_proj ran %llu times)\n",
         STEPS, rows, frames, H, n, (unsigned long long)info.runs);
  if (n != 0) {
    fprintf(stderr, "test_noalloc: FAIL: %ld calls after readiness, the first: %s\n", n, fkt_interpose_first());
    return 1;
  }
  fk_plan_destroy(p);
  free(x);
  free(feat);
  free(pcm);
  free(snap);
  fkp_model_free(&m);
#ifdef FKT_CKPT
  if (checkpoint_programs()) return 1;
#endif
  if (audio_programs()) return 1;
  return model_programs();
}
