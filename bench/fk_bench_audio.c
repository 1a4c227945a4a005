/* bench/fk_bench_audio.c: LFM2.5-Audio's generation at its real shapes (bench/README.md, "Audio"): flashkern's
 * FK_PROG_AUDIO_STEP and FK_PROG_DETOK against liquid-audio 1.3.0 on PyTorch CPU (bench/audio_peer.py), the same
 * checkpoint directory for both, measured in the same rounds.
 *
 *   fk_bench_audio [--out DIR] [--dir CKPT] [--peer PATH] [--python PATH] [--rounds R] [--frames N]
 *                  [--threads 1,2] [--tiers exact,fast] [--quick]
 *
 *   --dir     the checkpoint directory (default $FK_BENCH_AUDIO_DIR, else /tmp/fk_bench_audio); written once by
 *             `audio_peer.py write` when it holds no bench_bytes.json (2.8 GB, about a minute)
 *   --peer    bench/audio_peer.py; --python the interpreter (default /opt/fkref/bin/python)
 *
 * The model (audio_peer.py): backbone LFM2-1.2B (hidden 2048, 16 layers, 6 of them attention, 32 / 8 heads of
 * 64, ff 8192, vocab 65536, tied), Depthformer dim 1024, 6 layers (32 heads of 32, 8 kv, GLU 2816), 8 codebooks
 * of 2049, tied depth heads, audio_embedding 8 x 2049 x 2048; the LFM2.5 detokenizer (hidden 512, 8 layers);
 * synthetic weights (torch.manual_seed(0), the modules' own initialisation), bf16.
 *
 * Every round: the read probe (bw_probe.c, 1.125 GiB, 1 and 2 threads, after a 200 ms pause and an untimed
 * pass); then for each thread count the contenders in turn, the first one moving by one each round:
 *   flashkern exact, flashkern fast: fk_model_describe + fk_plan_create (FK_PROGRAMS_AUDIO | FK_PROGRAMS_DETOK,
 *     FK_PLAN_TIMING), then a turn: FK_PROG_AUDIO_PREFILL of 8 ids (sequential loop, io.force 128:
 *     <|audio_start|>), one untimed audio step, then N audio steps, each followed by FK_PROG_DETOK of its frame
 *     (streaming, 1 frame a call); io.force feeds the bench's frames (code 0 never 2048: the turn stays in audio),
 *     greedy draws (made, then replaced). Timed: each step and each detokenizer call (fkb_now). The Depthformer's
 *     share comes from the phase timings of FK_PROG_AUDIO_STEP over the N steps (reset after the untimed step).
 *     The plan is destroyed after its turn (one plan lives at a time: each packs 3.0 GB).
 *   pytorch: audio_peer.py's "run T N" (its docstring): _sample_audio_frame alone N times; a turn of N audio
 *     steps (lfm + _sample_audio_frame + audio_embedding feedback of the same forced frames); the detokenizer on
 *     the N frames in one call.
 * Output: DIR/audio.csv (table,case,threads,tier,metric,median,min,max,n), DIR/audio-meta.csv; report.py audio. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fk_checkpoint.h"
#include "fkb.h"

#ifndef FKB_FLASHKERN_VERSION
#define FKB_FLASHKERN_VERSION "this tree"
#endif

#define die(...) fkb_die("fk_bench_audio", __VA_ARGS__)
#define now fkb_now

enum { PROMPT = 8, NCONT = 3, CODEBOOKS = 8, SPLITS = 5 };
static const int32_t PROMPT_IDS[PROMPT] = { 1, 6, 17, 42, 99, 1000, 4242, 65000 };

static struct {
  const char *out, *dir, *peer, *python;
  int rounds, frames;
  int threads[2], nthreads;
  int tiers[2], ntiers;
} opt = { "bench/results", NULL, "bench/audio_peer.py", "/opt/fkref/bin/python", 5, 24, { 1, 2 }, 2,
          { FK_TIER_EXACT, FK_TIER_FAST }, 2 };

static const char *tier_name(int t) { return t == FK_TIER_FAST ? "fast" : "exact"; }

/* the forced frame f: audio_peer.py's frame_codes */
static void frame_codes(int f, int32_t *c) {
  for (int k = 0; k < CODEBOOKS; k++) c[k] = (17 * f + 101 * k + 5) % 2048;
}

/* ---- the PyTorch peer: a child reading commands on stdin ------------------------------------- */

static struct {
  pid_t pid;
  FILE *to, *from;
} peer;

static void peer_start(const char *dir) {
  int in[2], out[2];
  if (pipe(in) || pipe(out)) die("pipe: %s", strerror(errno));
  peer.pid = fork();
  if (peer.pid < 0) die("fork: %s", strerror(errno));
  if (!peer.pid) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    execl(opt.python, opt.python, opt.peer, "serve", dir, (char *)NULL);
    _exit(127);
  }
  close(in[0]), close(out[1]);
  peer.to = fdopen(in[1], "w");
  peer.from = fdopen(out[0], "r");
  if (!peer.to || !peer.from) die("fdopen");
}

static void peer_ask(const char *cmd, char *reply, size_t n) {
  if (fprintf(peer.to, "%s\n", cmd) < 0 || fflush(peer.to)) die("the PyTorch peer is gone (%s)", cmd);
  if (!fgets(reply, (int)n, peer.from)) die("the PyTorch peer gave no answer to '%s'", cmd);
  reply[strcspn(reply, "\n")] = 0;
}

static void peer_stop(void) {
  fclose(peer.to);
  fclose(peer.from);
  int st;
  if (waitpid(peer.pid, &st, 0) != peer.pid || !WIFEXITED(st) || WEXITSTATUS(st)) die("the PyTorch peer failed");
}

/* ---- bench_bytes.json (audio_peer.py write): "key": number ----------------------------------- */

static double json_num(const char *text, const char *key) {
  char k[96];
  snprintf(k, sizeof k, "\"%s\":", key);
  const char *p = strstr(text, k);
  if (!p) die("bench_bytes.json has no %s", key);
  return strtod(p + strlen(k), NULL);
}

/* ---- flashkern's turn ------------------------------------------------------------------------- */

/* the phase split of FK_PROG_AUDIO_STEP: backbone (the lfm's layers, its input embedding), depth_linear,
 * the Depthformer's layers (every codebook), the codebooks' heads and draws, their feedback embeddings */
static const char *const SPLIT[SPLITS] = { "backbone", "depth_linear", "depthformer", "heads", "feedback" };

static fkb_series fps[3][2][2];        /* [depth, steps, e2e][threads][tier: exact, fast; pytorch at 0] */
static fkb_series torch_fps[3][2];
static fkb_series split_ms[2][2][SPLITS], detok_ms[2][2], torch_detok_ms[2];
static size_t arena_bytes[2][2];
static int phases_logged;

/* FK_PROG_AUDIO_STEP's phases in order: the backbone's (feed_token, feed_frame, the 16 layers, final_norm and the
 * text branch's logits / sample, which an audio step skips), depth_linear, then per codebook cb_feed, the
 * Depthformer's layers, cb_norm, cb_logits, cb_sample */
static int classify(const fk_phase_info *ph, int *after_depth_linear) {
  const char *n = ph->name;
  if (!strcmp(n, "depth_linear")) return *after_depth_linear = 1, 1;
  if (!*after_depth_linear) return 0;
  if (!strcmp(n, "cb_feed")) return 4;
  if (!strncmp(n, "cb_", 3)) return 3;
  return 2;
}

static void fk_turn(fk_model *m, int hi, int ti) {
  const int threads = opt.threads[hi], tier = opt.tiers[ti];
  fk_error err;
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.programs = FK_PROGRAMS_AUDIO | FK_PROGRAMS_DETOK;
  d.threads = threads;
  d.tier = tier;
  d.flags = FK_PLAN_TIMING;
  d.detok.max_frames = 1;
  d.audio.lm.max_rows = 64;
  if (fk_model_describe(m, &d, &err) != FK_OK) die("fk_model_describe: %s", err.message);
  const int64_t need = PROMPT + opt.frames + 4;
  if (d.audio.lm.stack.max_pos < need) d.audio.lm.stack.max_pos = need;
  if (d.detok.stack.max_pos < 6 * (opt.frames + 2)) d.detok.stack.max_pos = 6 * (opt.frames + 2);
  fk_plan *p;
  if (fk_plan_create(&d, &p, &err) != FK_OK) die("fk_plan_create (%dT %s): %s", threads, tier_name(tier), err.message);
  arena_bytes[hi][ti] = fk_plan_arena_bytes(p);

  static float pcm[1920 * 4];
  const int32_t start = 128;
  int32_t forced[CODEBOOKS];
  fk_io io = { .rows = PROMPT, .tokens = PROMPT_IDS, .loop = FK_AUDIO_SEQUENTIAL, .force = &start };
  if (fk_run(p, FK_PROG_AUDIO_PREFILL, &io, &err) != FK_OK) die("prefill: %s", err.message);
  if (io.out != FK_AUDIO_OUT_TEXT || io.next != 128 || io.modality != FK_AUDIO_AUDIO)
    die("prefill: out %d next %d modality %d (expected text 128, then audio)", io.out, io.next, io.modality);
  double step_s = 0, detok_s = 0;
  for (int f = -1; f < opt.frames; f++) {
    frame_codes(f + 1, forced);
    io = (fk_io){ .rows = 1, .force = forced };
    double t0 = now();
    if (fk_run(p, FK_PROG_AUDIO_STEP, &io, &err) != FK_OK) die("audio step: %s", err.message);
    double t1 = now();
    if (io.out != FK_AUDIO_OUT_FRAME || io.modality != FK_AUDIO_AUDIO || memcmp(io.frame, forced, sizeof forced))
      die("audio step %d: out %d modality %d, not the forced frame", f, io.out, io.modality);
    fk_io dio = { .rows = 1, .codes = io.frame, .pcm = pcm, .pcm_cap = 1920 * 4 };
    if (fk_run(p, FK_PROG_DETOK, &dio, &err) != FK_OK) die("detok: %s", err.message);
    double t2 = now();
    if (dio.pcm_count != (f < 0 ? 1440 : 1920)) die("detok: %lld samples", (long long)dio.pcm_count);
    if (f < 0) {
      fk_plan_timing_reset(p); /* the untimed first step: its pages, its branch */
      continue;
    }
    step_s += t1 - t0;
    detok_s += t2 - t1;
  }
  double part[SPLITS] = { 0 }, phase_total = 0;
  const int np = fk_program_phases(p, FK_PROG_AUDIO_STEP);
  int after = 0;
  for (int i = 0; i < np; i++) {
    fk_phase_info ph;
    if (fk_phase_query(p, FK_PROG_AUDIO_STEP, i, &ph, &err) != FK_OK) die("fk_phase_query: %s", err.message);
    int k = classify(&ph, &after);
    if (!phases_logged && getenv("FK_BENCH_AUDIO_PHASES"))
      fprintf(stderr, "phase %3d %-28s layer %3d runs %6llu %9.3f ms -> %s\n", i, ph.name, ph.layer,
              (unsigned long long)ph.runs, 1e-6 * (double)ph.ns / opt.frames, SPLIT[k]);
    part[k] += 1e-9 * (double)ph.ns;
    phase_total += 1e-9 * (double)ph.ns;
  }
  if (!after) die("FK_PROG_AUDIO_STEP has no depth_linear phase");
  phases_logged = 1;
  fk_plan_destroy(p);
  const double n = opt.frames;
  double depth_s = part[1] + part[2] + part[3] + part[4];
  fkb_series *s[3] = { &fps[0][hi][ti], &fps[1][hi][ti], &fps[2][hi][ti] };
  s[0]->v[s[0]->n++] = n / depth_s;
  s[1]->v[s[1]->n++] = n / step_s;
  s[2]->v[s[2]->n++] = n / (step_s + detok_s);
  for (int k = 0; k < SPLITS; k++) split_ms[hi][ti][k].v[split_ms[hi][ti][k].n++] = 1e3 * part[k] / n;
  detok_ms[hi][ti].v[detok_ms[hi][ti].n++] = 1e3 * detok_s / n;
  fprintf(stderr, "flashkern %dT %s: depth %.2f, steps %.2f, e2e %.2f frames/s (phases %.1f of %.1f ms a step)\n",
          threads, tier_name(tier), n / depth_s, n / step_s, n / (step_s + detok_s), 1e3 * phase_total / n,
          1e3 * step_s / n);
}

static void torch_turn(int hi) {
  char cmd[64], reply[256];
  snprintf(cmd, sizeof cmd, "run %d %d", opt.threads[hi], opt.frames);
  peer_ask(cmd, reply, sizeof reply);
  double depth_s, steps_s, detok_s, total_s;
  if (sscanf(reply, "ok %lf %lf %lf %lf", &depth_s, &steps_s, &detok_s, &total_s) != 4)
    die("the PyTorch peer answered '%s'", reply);
  const double n = opt.frames;
  torch_fps[0][hi].v[torch_fps[0][hi].n++] = n / depth_s;
  torch_fps[1][hi].v[torch_fps[1][hi].n++] = n / steps_s;
  torch_fps[2][hi].v[torch_fps[2][hi].n++] = n / total_s;
  torch_detok_ms[hi].v[torch_detok_ms[hi].n++] = 1e3 * detok_s / n;
  fprintf(stderr, "pytorch %dT: depth %.2f, steps %.2f, e2e %.2f frames/s\n", opt.threads[hi], n / depth_s,
          n / steps_s, n / total_s);
  /* its OpenMP workers spin a little after a parallel region: let them sleep before the next contender */
  struct timespec pause = { 0, 300 * 1000 * 1000 };
  nanosleep(&pause, NULL);
}

/* ---- output ------------------------------------------------------------------------------------ */

/* a series' row; an empty series (a part this run did not time) has none */
static void row(fkb_out *o, const char *table, const char *cs, int threads, const char *tier, const char *metric,
                const fkb_series *s) {
  if (s->n) fkb_series_row(o, table, cs, threads, tier, metric, s);
}

int main(int argc, char **argv) {
  const char *usage = "usage: fk_bench_audio [--out DIR] [--dir CKPT] [--peer PATH] [--python PATH] [--rounds R] "
                      "[--frames N] [--threads 1,2] [--tiers exact,fast] [--quick]";
  opt.dir = getenv("FK_BENCH_AUDIO_DIR");
  if (!opt.dir || !*opt.dir) opt.dir = "/tmp/fk_bench_audio";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick")) opt.rounds = 2, opt.frames = 4;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) return puts(usage), 0;
    else if (!v) die("%s", usage);
    else if (!strcmp(a, "--out")) opt.out = v, i++;
    else if (!strcmp(a, "--dir")) opt.dir = v, i++;
    else if (!strcmp(a, "--peer")) opt.peer = v, i++;
    else if (!strcmp(a, "--python")) opt.python = v, i++;
    else if (!strcmp(a, "--rounds")) opt.rounds = atoi(v), i++;
    else if (!strcmp(a, "--frames")) opt.frames = atoi(v), i++;
    else if (!strcmp(a, "--threads")) opt.nthreads = fkb_parse_threads(v, opt.threads), i++;
    else if (!strcmp(a, "--tiers")) opt.ntiers = fkb_parse_tiers(v, opt.tiers), i++;
    else die("%s", usage);
  }
  if (opt.rounds < 1 || opt.rounds > FKB_MAX_REPS) die("--rounds must be in 1..%d", FKB_MAX_REPS);
  if (opt.frames < 2 || opt.frames > 2000) die("--frames must be in 2..2000");
  if (!opt.nthreads || !opt.ntiers) die("--threads and --tiers need at least one value");
  if (access(opt.python, X_OK) || access(opt.peer, R_OK)) die("--python must be executable, --peer readable");
  fkb_out_dir("fk_bench_audio", opt.out);

  /* the checkpoint, written once */
  char path[600];
  snprintf(path, sizeof path, "%.500s/bench_bytes.json", opt.dir);
  if (access(path, R_OK)) {
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "'%s' '%s' write '%s'", opt.python, opt.peer, opt.dir);
    fprintf(stderr, "fk_bench_audio: writing the checkpoint: %s\n", cmd);
    if (system(cmd)) die("%s failed", cmd);
  }
  static char bytes_json[4096];
  FILE *bf = fopen(path, "r");
  if (!bf) die("%s: %s", path, strerror(errno));
  size_t got = fread(bytes_json, 1, sizeof bytes_json - 1, bf);
  fclose(bf);
  bytes_json[got] = 0;

  fkb_out *o = fkb_out_open("fk_bench_audio", opt.out, "audio", "table,case,threads,tier,metric,median,min,max,n",
                            argc, argv);
  fk_error err;
  fk_model *m;
  double t0 = now();
  if (fk_model_open(opt.dir, FK_MODEL_AUTO, &m, &err) != FK_OK) die("fk_model_open(%s): %s", opt.dir, err.message);
  fk_model_info info;
  if (fk_model_query(m, &info, &err) != FK_OK) die("fk_model_query: %s", err.message);
  fprintf(stderr, "fk_bench_audio: %s opened in %.2f s: %lld tensors, %.2f GB, %lld layers\n", opt.dir, now() - t0,
          (long long)info.tensors, (double)info.file_bytes / 1e9, (long long)info.layers);

  peer_start(opt.dir);
  char versions[1024];
  peer_ask("versions", versions, sizeof versions);
  if (strncmp(versions, "versions ", 9)) die("the PyTorch peer answered '%s'", versions);

  fkb_probe *probe = fkb_probe_create(FKB_ROTATE_BYTES);
  if (!probe) die("cannot allocate the read probe");
  static fkb_series probe_s[2];
  fkb_cpu_mark mark0 = fkb_cpu_mark_now();

  for (int r = 0; r < opt.rounds; r++) {
    fprintf(stderr, "fk_bench_audio: round %d of %d\n", r + 1, opt.rounds);
    struct timespec pause = { 0, 200 * 1000 * 1000 };
    nanosleep(&pause, NULL);
    for (int hi = 0; hi < opt.nthreads; hi++) {
      int t = opt.threads[hi];
      fkb_probe_gbs(probe, t); /* untimed: the same pass once, warm */
      probe_s[hi].v[probe_s[hi].n++] = fkb_probe_gbs(probe, t);
    }
    fprintf(stderr, "fk_bench_audio: read probe %.1f GB/s (1st thread count), %.1f (2nd)\n", probe_s[0].v[r],
            opt.nthreads > 1 ? probe_s[1].v[r] : 0.0);
    const int ncont = opt.ntiers + 1;
    for (int hi = 0; hi < opt.nthreads; hi++)
      for (int k = 0; k < ncont; k++) {
        int c = (k + r) % ncont;
        if (c == opt.ntiers) torch_turn(hi);
        else fk_turn(m, hi, c);
      }
  }
  fkb_meta_num(o, "others_cpu_share_rounds", "", fkb_others_share(mark0, fkb_cpu_mark_now()));
  peer_stop();
  fk_model_close(m);

  /* the peer is this run's work too: the noise meter counts it as another process, so the report subtracts its
   * CPU time (it has been waited for) */
  struct rusage ru;
  if (getrusage(RUSAGE_CHILDREN, &ru)) die("getrusage: %s", strerror(errno));
  fkb_meta_num(o, "children_cpu_s", "", (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                                             (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec);
  fkb_meta(o, "version", "flashkern", "flashkern %s", FKB_FLASHKERN_VERSION);
  fkb_meta(o, "version", "pytorch", "%s", versions + 9);
  fkb_meta(o, "rounds", "", "%d", opt.rounds);
  fkb_meta(o, "frames", "", "%d", opt.frames);
  fkb_meta(o, "prompt", "", "%d", PROMPT);
  fkb_meta(o, "probe", "kind", "%s", fkb_probe_kind(probe));
  fkb_meta_num(o, "probe", "bytes", (double)fkb_probe_bytes(probe));
  fkb_meta_num(o, "ckpt_bytes", "", (double)info.file_bytes);
  fkb_meta(o, "ckpt_tensors", "", "%lld", (long long)info.tensors);
  fkb_meta(o, "shape", "backbone", "vocab %lld, hidden %lld, ffn %lld, %lld layers (%lld attention), %lld / %lld "
           "heads of %lld, tied head", (long long)info.vocab, (long long)info.hidden, (long long)info.ffn,
           (long long)info.layers, (long long)info.attn_layers, (long long)info.heads, (long long)info.kv_heads,
           (long long)info.head_dim);
  static const char *const KEYS[] = { "backbone_layers", "embed_tokens", "depth_linear", "depthformer",
                                      "depth_tables", "audio_embedding", "detok_step", "detok_all", "write_s" };
  for (size_t k = 0; k < sizeof KEYS / sizeof *KEYS; k++) fkb_meta_num(o, "bytes", KEYS[k], json_num(bytes_json, KEYS[k]));
  for (int hi = 0; hi < opt.nthreads; hi++)
    for (int ti = 0; ti < opt.ntiers; ti++) {
      char it[32];
      snprintf(it, sizeof it, "%dT %s", opt.threads[hi], tier_name(opt.tiers[ti]));
      fkb_meta_num(o, "plan_arena_bytes", it, (double)arena_bytes[hi][ti]);
    }
  static const char *const TABLE[3] = { "depth", "steps", "e2e" };
  for (int hi = 0; hi < opt.nthreads; hi++) {
    const int t = opt.threads[hi];
    row(o, "probe", "read", t, "-", "gbps", &probe_s[hi]);
    for (int w = 0; w < 3; w++) {
      for (int ti = 0; ti < opt.ntiers; ti++) row(o, TABLE[w], "flashkern", t, tier_name(opt.tiers[ti]), "frames_s", &fps[w][hi][ti]);
      row(o, TABLE[w], "pytorch", t, "-", "frames_s", &torch_fps[w][hi]);
    }
    for (int ti = 0; ti < opt.ntiers; ti++) {
      for (int k = 0; k < SPLITS; k++) row(o, "split", SPLIT[k], t, tier_name(opt.tiers[ti]), "ms", &split_ms[hi][ti][k]);
      row(o, "split", "detok", t, tier_name(opt.tiers[ti]), "ms", &detok_ms[hi][ti]);
    }
    row(o, "split", "detok", t, "pytorch", "ms", &torch_detok_ms[hi]);
  }
  fkb_out_close(o);
  fkb_probe_destroy(probe);
  return 0;
}
