/* runtime/cli/flashkern_run.c: flashkern-run, a checkpoint directory to tokens or to a WAV file.
 *
 *   flashkern-run --model DIR (--tokens 1,2,3 | --tokens-file F) [--max-new N] [--temperature T]
 *                 [--top-k K] [--seed S] [--stop ID] [--threads N] [--tier exact|fast] [--quantize q8|q4|q4k]
 *                 [--progress]
 *   flashkern-run --model DIR --codes FILE --wav OUT.wav [--pcm16] [--threads N] [--tier exact|fast]
 *                 [--quantize q8|q4|q4k]
 *   flashkern-run --model DIR --speak (--tokens ... | --tokens-file F) --wav OUT.wav [--loop sequential|interleaved]
 *                 [--max-new N] [--temperature T] [--top-k K] [--audio-temperature T] [--audio-top-k K]
 *                 [--seed S] [--codes-out FILE] [--pcm16] [--threads N] [--tier exact|fast]
 *                 [--quantize q8|q4|q4k] [--progress]
 *
 * The first form opens an LFM2 language model (a checkpoint directory or a GGUF file, or an
 * LFM2.5-Audio backbone as a text model), feeds
 * the prompt's ids (prefill in chunks of max_rows), then generates up to N tokens, greedy or with a
 * temperature / top-k draw; it prints the generated ids on stdout (one line, space-separated) and
 * the timing on stderr: readiness (open + plan), the prefill, and decode tokens/s. The second form
 * opens a detokenizer (an audio_detokenizer/ folder, or an LFM2.5-Audio directory), reads code
 * frames from FILE (8 integers per line, codebooks 0..7; blank lines and '#' comments skipped) and
 * writes the PCM (24 kHz mono; float samples, exactly the program's, or 16-bit with --pcm16)
 * through libsndfile. Tokenization stays with the host (README: ids from the checkpoint's own
 * tokenizer.json). The third form runs an LFM2.5-Audio turn (FK_PROGRAMS_AUDIO): the prompt's prefill,
 * then up to N steps of liquid-audio's generate_sequential (default) or generate_interleaved loop,
 * each a text token or an audio frame of 8 codes; every frame goes straight into the detokenizer
 * (FK_PROGRAMS_DETOK, one frame per call) and the PCM into the WAV, flushed when the turn ends;
 * the text ids are printed on stdout, the codes optionally written 8 per line (--codes-out, the
 * second form's input). --quantize quantizes every GEMV weight matrix at readiness (desc.quantize:
 * GGUF Q8_0 / Q4_0 blocks by round-to-nearest-even, Q4_K by ggml's quantizer, docs/design.md). Exit status: 0, 1 on a runtime or file error (one line naming it), 2 on a bad
 * argument. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sndfile.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fk_checkpoint.h"

enum { CODEBOOKS = 8, SAMPLE_RATE = 24000, MAX_TOKENS = 1 << 20 };

static const char *const USAGE =
  "usage: flashkern-run --model DIR (--tokens 1,2,3 | --tokens-file FILE) [--max-new N] [--temperature T]\n"
  "                     [--top-k K] [--seed S] [--stop ID] [--threads N] [--tier exact|fast] [--quantize Q]\n"
  "                     [--progress]\n"
  "       flashkern-run --model DIR --codes FILE --wav OUT.wav [--pcm16] [--threads N] [--tier exact|fast]\n"
  "                     [--quantize Q]\n"
  "       flashkern-run --model DIR --speak (--tokens LIST | --tokens-file FILE) --wav OUT.wav [--loop L]\n"
  "                     [--max-new N] [--temperature T] [--top-k K] [--audio-temperature T] [--audio-top-k K]\n"
  "                     [--seed S] [--codes-out FILE] [--pcm16] [--threads N] [--tier exact|fast]\n"
  "                     [--quantize Q] [--progress]\n"
  "\n"
  "  --model DIR        a checkpoint directory: transformers' Lfm2ForCausalLM, liquid-audio's LFM2.5-Audio,\n"
  "                     or an audio_detokenizer/ folder; or an LFM2 .gguf file (llama.cpp's; F32, F16, BF16,\n"
  "                     Q8_0, Q4_0, Q4_K tensors) (fk_model_open)\n"
  "  --tokens LIST      the prompt's token ids, comma-separated (tokenize with the checkpoint's tokenizer.json)\n"
  "  --tokens-file F    the prompt's ids from a file, separated by commas or white space\n"
  "  --max-new N        tokens to generate after the prompt (default 32)\n"
  "  --temperature T    > 0: sample (x / T, top-k, softmax, a draw); default: greedy (argmax)\n"
  "  --top-k K          with --temperature: keep the K most likely tokens (ties at the K-th kept); 0: all\n"
  "  --seed S           the sampler's seed (default 0); the draws are reproducible on every CPU\n"
  "  --stop ID          stop after generating this id (e.g. the config's eos); default: never\n"
  "  --threads N        the plan's team, 1..64 (default 1)\n"
  "  --tier exact|fast  exact: bit-identical on every ISA (default); fast: native bf16 dot products\n"
  "  --quantize Q       q8, q4 or q4k: quantize every GEMV weight matrix at readiness (GGUF Q8_0 / Q4_0\n"
  "                     blocks, rounded to nearest even; q4k: Q4_K by ggml's quantizer, its k a multiple of\n"
  "                     256, the exact tier; embeddings and norms stay bf16); default: bf16 weights\n"
  "  --progress         a progress line on stderr (default: when stderr is a terminal)\n"
  "  --codes FILE       code frames for the detokenizer: 8 integers per line, codebooks 0..7\n"
  "  --wav OUT.wav      where the PCM goes (24 kHz mono, float samples; --pcm16: 16-bit)\n"
  "  --speak            an LFM2.5-Audio turn: text tokens and audio frames, the frames' PCM into --wav\n"
  "  --loop L           sequential (liquid-audio's generate_sequential, default) or interleaved\n"
  "  --max-new N        with --speak: steps after the prompt (tokens and frames; default 32); the turn\n"
  "                     also ends at <|im_end|>\n"
  "  --audio-temperature T, --audio-top-k K   the codes' sampling (default greedy); --temperature and\n"
  "                     --top-k are the text tokens'\n"
  "  --codes-out FILE   with --speak: the frames' codes, 8 per line (for --codes)\n"
  "\n"
  "Prints the generated ids on stdout; readiness, prefill and tokens/s (or frames and the real-time\n"
  "factor) on stderr. Exit 0; 1: an error at run time; 2: a bad argument.\n";

static void die_arg(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die_arg(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("flashkern-run: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs(" (flashkern-run --help)\n", stderr);
  va_end(ap);
  exit(2);
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("flashkern-run: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A whole decimal integer in [lo, hi], or a bad-argument exit naming the option. */
static long long int_arg(const char *opt, const char *s, long long lo, long long hi) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi) die_arg("%s '%s': want an integer in [%lld, %lld]", opt, s, lo, hi);
  return v;
}

/* Ids separated by commas and/or white space into *ids (grown); `what` names the source. */
static int64_t parse_ids(const char *text, int32_t **ids, const char *what) {
  int64_t n = 0, cap = 0;
  const char *p = text;
  for (;;) {
    while (*p == ',' || *p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (!*p) break;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno || v < 0 || v > INT32_MAX) die_arg("%s: '%.20s' is not a token id", what, p);
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      if (cap > MAX_TOKENS) die_arg("%s: more than %d ids", what, MAX_TOKENS);
      *ids = realloc(*ids, (size_t)cap * sizeof **ids);
      if (!*ids) die("out of memory");
    }
    (*ids)[n++] = (int32_t)v;
    p = end;
  }
  if (!n) die_arg("%s: no token ids", what);
  return n;
}

static char *read_file(const char *path, const char *what) {
  FILE *f = fopen(path, "rb");
  if (!f) die("%s '%s': %s", what, path, strerror(errno));
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (n + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  if (!buf || ferror(f)) die("%s '%s': read failed", what, path);
  fclose(f);
  buf[n] = 0;
  return buf;
}

typedef struct opts {
  const char *model, *tokens, *tokens_file, *codes, *wav, *codes_out;
  long long max_new, top_k, audio_top_k, threads, stop;
  unsigned long long seed;
  double temperature, audio_temperature;
  int fast, pcm16, progress, speak, interleaved;
  fk_qformat quantize;
} opts;

static double positive(const char *opt, const char *v) {
  char *end;
  double t = strtod(v, &end);
  if (!*v || *end || !(t > 0) || !isfinite(t)) die_arg("%s '%s': want a number > 0", opt, v);
  return t;
}

static opts parse(int argc, char **argv) {
  opts o = { .max_new = 32, .threads = 1, .stop = -1, .temperature = 0, .progress = -1 };
  int seen_tier = 0, seen_quant = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(USAGE, stdout);
      exit(0);
    }
    if (!strcmp(a, "--pcm16")) { o.pcm16 = 1; continue; }
    if (!strcmp(a, "--progress")) { o.progress = 1; continue; }
    if (!strcmp(a, "--speak")) { o.speak = 1; continue; }
    if (strncmp(a, "--", 2) != 0) die_arg("unexpected argument '%s'", a);
    if (i + 1 >= argc) die_arg("%s needs a value", a);
    const char *v = argv[++i];
    if (!strcmp(a, "--model")) o.model = v;
    else if (!strcmp(a, "--tokens")) o.tokens = v;
    else if (!strcmp(a, "--tokens-file")) o.tokens_file = v;
    else if (!strcmp(a, "--codes")) o.codes = v;
    else if (!strcmp(a, "--wav")) o.wav = v;
    else if (!strcmp(a, "--max-new")) o.max_new = int_arg(a, v, 0, MAX_TOKENS);
    else if (!strcmp(a, "--top-k")) o.top_k = int_arg(a, v, 0, MAX_TOKENS);
    else if (!strcmp(a, "--threads")) o.threads = int_arg(a, v, 1, 64);
    else if (!strcmp(a, "--stop")) o.stop = int_arg(a, v, 0, INT32_MAX);
    else if (!strcmp(a, "--seed")) o.seed = (unsigned long long)int_arg(a, v, 0, LLONG_MAX);
    else if (!strcmp(a, "--codes-out")) o.codes_out = v;
    else if (!strcmp(a, "--audio-top-k")) o.audio_top_k = int_arg(a, v, 0, MAX_TOKENS);
    else if (!strcmp(a, "--temperature")) o.temperature = positive(a, v);
    else if (!strcmp(a, "--audio-temperature")) o.audio_temperature = positive(a, v);
    else if (!strcmp(a, "--loop")) {
      if (!strcmp(v, "sequential")) o.interleaved = 0;
      else if (!strcmp(v, "interleaved")) o.interleaved = 1;
      else die_arg("--loop '%s': sequential or interleaved", v);
    } else if (!strcmp(a, "--quantize")) {
      if (seen_quant++) die_arg("--quantize given twice");
      if (!strcmp(v, "q8")) o.quantize = FK_Q8;
      else if (!strcmp(v, "q4")) o.quantize = FK_Q4;
      else if (!strcmp(v, "q4k")) o.quantize = FK_Q4K;
      else die_arg("--quantize '%s': q8, q4 or q4k", v);
    } else if (!strcmp(a, "--tier")) {
      if (seen_tier++) die_arg("--tier given twice");
      if (!strcmp(v, "exact")) o.fast = 0;
      else if (!strcmp(v, "fast")) o.fast = 1;
      else die_arg("--tier '%s': exact or fast", v);
    } else die_arg("unknown option '%s'", a);
  }
  if (!o.model) die_arg("--model DIR is required");
  const int lm = o.tokens || o.tokens_file, det = o.codes || o.wav;
  if (o.speak) {
    if (!lm || !o.wav) die_arg("--speak needs a prompt (--tokens or --tokens-file) and --wav");
    if (o.codes) die_arg("--codes is the detokenizer's input: with --speak, --codes-out writes the codes");
    if (o.tokens && o.tokens_file) die_arg("--tokens and --tokens-file: one of the two");
    if (o.stop >= 0) die_arg("--stop is for text: a --speak turn ends at <|im_end|>");
    if (o.top_k && !(o.temperature > 0)) die_arg("--top-k needs --temperature");
    if (o.audio_top_k && !(o.audio_temperature > 0)) die_arg("--audio-top-k needs --audio-temperature");
    if (o.progress < 0) o.progress = isatty(2);
    return o;
  }
  if (o.codes_out || o.audio_temperature > 0 || o.audio_top_k) die_arg("--codes-out and --audio-* go with --speak");
  if (lm == det) die_arg("give either a prompt (--tokens or --tokens-file) or --codes with --wav");
  if (o.tokens && o.tokens_file) die_arg("--tokens and --tokens-file: one of the two");
  if (det && (!o.codes || !o.wav)) die_arg("--codes and --wav go together");
  if (o.top_k && !(o.temperature > 0)) die_arg("--top-k needs --temperature");
  if (o.pcm16 && !det) die_arg("--pcm16 is for --wav");
  if (o.progress < 0) o.progress = isatty(2);
  return o;
}

static fk_model *open_model(const opts *o, fk_plan_desc *d) {
  fk_error err;
  fk_model *m = NULL;
  fk_status s = fk_model_open(o->model, FK_MODEL_AUTO, &m, &err);
  if (s != FK_OK) die("%s: %s", fk_strerror(s), err.message);
  memset(d, 0, sizeof *d);
  d->threads = (int)o->threads;
  d->tier = o->fast ? FK_TIER_FAST : FK_TIER_EXACT;
  d->quantize = o->quantize;
  if ((s = fk_model_describe(m, d, &err)) != FK_OK) die("%s: %s", fk_strerror(s), err.message);
  return m;
}

static int run_lm(const opts *o) {
  int32_t *prompt = NULL;
  char *text = o->tokens_file ? read_file(o->tokens_file, "--tokens-file") : NULL;
  const int64_t np = parse_ids(text ? text : o->tokens, &prompt, text ? o->tokens_file : "--tokens");
  free(text);
  const double t0 = now();
  fk_plan_desc d;
  fk_model *m = open_model(o, &d);
  if (!(d.programs & FK_PROGRAMS_LM)) die("%s: no language model in this directory", o->model);
  for (int64_t i = 0; i < np; i++)
    if (prompt[i] >= d.lm.vocab) die("--tokens: id %d is outside the vocabulary (%lld)", prompt[i], (long long)d.lm.vocab);
  d.programs = FK_PROGRAMS_LM;   /* an audio model's detokenizer is not needed for text */
  const int64_t need = np + o->max_new;
  if (d.lm.stack.max_pos < need) d.lm.stack.max_pos = need;
  fk_plan *plan;
  fk_error err;
  fk_status s = fk_plan_create(&d, &plan, &err);
  if (s != FK_OK) die("fk_plan_create: %s: %s", fk_strerror(s), err.message);
  fk_model_close(m); /* the plan copied what it needs: the mapping and any converted tensors go now */
  if (o->seed && fk_sampler_seed(plan, (uint64_t)o->seed) != FK_OK) die("fk_sampler_seed refused the seed");
  const double t1 = now();
  fk_sampling sampling = { (float)o->temperature, o->top_k };
  const fk_sampling *samp = o->temperature > 0 ? &sampling : NULL;
  fk_io io;
  int32_t next = 0;
  for (int64_t at = 0; at < np; at += d.lm.max_rows) {
    memset(&io, 0, sizeof io);
    io.rows = np - at < d.lm.max_rows ? np - at : d.lm.max_rows;
    io.tokens = prompt + at;
    io.sampling = samp;
    if ((s = fk_run(plan, FK_PROG_LM_PREFILL, &io, &err)) != FK_OK) die("prefill: %s: %s", fk_strerror(s), err.message);
    next = io.next;
  }
  const double t2 = now();
  int64_t made = 0;
  double last = t2;
  while (made < o->max_new) {
    printf("%s%d", made ? " " : "", next);
    made++;
    if (next == o->stop || made == o->max_new) break;
    memset(&io, 0, sizeof io);
    io.rows = 1;
    io.tokens = &next;
    io.sampling = samp;
    if ((s = fk_run(plan, FK_PROG_LM_DECODE, &io, &err)) != FK_OK) die("decode: %s: %s", fk_strerror(s), err.message);
    next = io.next;
    if (o->progress && now() - last > 0.5) {
      last = now();
      fprintf(stderr, "\r  %lld / %lld tokens, %.1f tokens/s   ", (long long)made, (long long)o->max_new,
              (double)made / (last - t2));
    }
  }
  printf("\n");
  fflush(stdout);
  const double t3 = now();
  const int64_t decodes = made > 0 ? made - 1 : 0;   /* the first token came from the prefill */
  if (o->progress) fputc('\n', stderr);
  fprintf(stderr, "readiness %.1f ms (open + plan); prefill %lld tokens in %.2f ms; %lld tokens generated, "
          "%lld decode steps in %.3f s: %.1f tokens/s\n", 1e3 * (t1 - t0), (long long)np, 1e3 * (t2 - t1),
          (long long)made, (long long)decodes, t3 - t2, decodes > 0 ? (double)decodes / (t3 - t2) : 0.0);
  fk_plan_destroy(plan);
  free(prompt);
  return 0;
}

/* The PCM (f32, or int16 with --pcm16) as a 24 kHz mono WAV at --wav. */
static void write_wav(const opts *o, const void *pcm, int64_t n) {
  SF_INFO info = { .samplerate = SAMPLE_RATE, .channels = 1,
                   .format = SF_FORMAT_WAV | (o->pcm16 ? SF_FORMAT_PCM_16 : SF_FORMAT_FLOAT) };
  SNDFILE *sf = sf_open(o->wav, SFM_WRITE, &info);
  if (!sf) die("--wav '%s': %s", o->wav, sf_strerror(NULL));
  sf_count_t wrote = o->pcm16 ? sf_write_short(sf, (const short *)pcm, n) : sf_write_float(sf, (const float *)pcm, n);
  if (wrote != n || sf_close(sf) != 0) die("--wav '%s': write failed", o->wav);
}

static int run_detok(const opts *o) {
  char *text = read_file(o->codes, "--codes");
  int32_t *codes = NULL;
  int64_t ncodes = 0, cap = 0, line = 0;
  for (char *p = text, *eol; *p; p = eol + (*eol != 0)) {
    eol = strchr(p, '\n');
    if (!eol) eol = p + strlen(p);
    line++;
    char *hash = memchr(p, '#', (size_t)(eol - p));
    char *end = hash ? hash : eol;
    int got = 0;
    for (char *q = p; q < end;) {
      while (q < end && (*q == ' ' || *q == '\t' || *q == ',' || *q == '\r')) q++;
      if (q >= end) break;
      char *e;
      errno = 0;
      long v = strtol(q, &e, 10);
      if (e == q || e > end || errno || v < 0 || v > INT32_MAX) die_arg("--codes %s:%lld: not a code", o->codes, (long long)line);
      if (ncodes == cap) {
        cap = cap ? 2 * cap : 1024;
        codes = realloc(codes, (size_t)cap * sizeof *codes);
        if (!codes) die("out of memory");
      }
      codes[ncodes++] = (int32_t)v;
      got++;
      q = e;
    }
    if (got && got != CODEBOOKS) die_arg("--codes %s:%lld: %d codes, want %d per line", o->codes, (long long)line, got, CODEBOOKS);
  }
  free(text);
  const int64_t frames = ncodes / CODEBOOKS;
  if (frames < 2) die_arg("--codes %s: %lld frames, want at least 2", o->codes, (long long)frames);
  const double t0 = now();
  fk_plan_desc d;
  fk_model *m = open_model(o, &d);
  if (!(d.programs & FK_PROGRAMS_DETOK)) die("%s: no audio detokenizer in this directory", o->model);
  d.programs = FK_PROGRAMS_DETOK;
  if (o->pcm16) d.flags |= FK_PLAN_PCM_I16;
  for (int64_t i = 0; i < ncodes; i++)
    if (codes[i] >= d.detok.codebook_vocab)
      die("--codes: code %d (frame %lld) is outside the codebook (%lld)", codes[i], (long long)(i / CODEBOOKS),
          (long long)d.detok.codebook_vocab);
  fk_plan *plan;
  fk_error err;
  fk_status s = fk_plan_create(&d, &plan, &err);
  if (s != FK_OK) die("fk_plan_create: %s: %s", fk_strerror(s), err.message);
  fk_model_close(m); /* the plan copied what it needs */
  const double t1 = now();
  const size_t es = o->pcm16 ? 2 : 4;
  /* the first code frame gives 1440 samples, each later one 1920, the flush 480 */
  const int64_t total = 1440 + (frames - 1) * 1920 + 480;
  unsigned char *pcm = malloc((size_t)total * es);
  if (!pcm) die("out of memory");
  int64_t have = 0;
  for (int64_t f = 0; f < frames; f += d.detok.max_frames) {
    fk_io io;
    memset(&io, 0, sizeof io);
    io.rows = frames - f < d.detok.max_frames ? frames - f : d.detok.max_frames;
    io.codes = codes + f * CODEBOOKS;
    io.pcm = pcm + (size_t)have * es;
    io.pcm_cap = total - have;
    if ((s = fk_run(plan, FK_PROG_DETOK, &io, &err)) != FK_OK) die("detok: %s: %s", fk_strerror(s), err.message);
    have += io.pcm_count;
  }
  fk_io io;
  memset(&io, 0, sizeof io);
  io.pcm = pcm + (size_t)have * es;
  io.pcm_cap = total - have;
  if ((s = fk_run(plan, FK_PROG_DETOK_FLUSH, &io, &err)) != FK_OK) die("flush: %s: %s", fk_strerror(s), err.message);
  have += io.pcm_count;
  const double t2 = now();
  write_wav(o, pcm, have);
  const double audio = (double)have / SAMPLE_RATE;
  fprintf(stderr, "readiness %.1f ms (open + plan); %lld code frames -> %lld samples (%.2f s of audio) in %.3f s: "
          "real-time factor %.4f; wrote %s\n", 1e3 * (t1 - t0), (long long)frames, (long long)have, audio, t2 - t1,
          (t2 - t1) / audio, o->wav);
  fk_plan_destroy(plan);
  free(pcm);
  free(codes);
  return 0;
}

/* An LFM2.5-Audio turn: prefill, steps until <|im_end|> or --max-new, each frame into the detokenizer. */
static int run_speak(const opts *o) {
  int32_t *prompt = NULL;
  char *text = o->tokens_file ? read_file(o->tokens_file, "--tokens-file") : NULL;
  const int64_t np = parse_ids(text ? text : o->tokens, &prompt, text ? o->tokens_file : "--tokens");
  free(text);
  if (np > 65536) die_arg("--tokens: %lld ids, at most 65536", (long long)np);
  FILE *codes_out = NULL;
  if (o->codes_out && !(codes_out = fopen(o->codes_out, "w"))) die("--codes-out '%s': %s", o->codes_out, strerror(errno));
  const double t0 = now();
  fk_model *m;
  fk_error err;
  fk_status s = fk_model_open(o->model, FK_MODEL_AUTO, &m, &err);
  if (s != FK_OK) die("%s: %s", fk_strerror(s), err.message);
  fk_plan_desc d;
  memset(&d, 0, sizeof d);
  d.programs = FK_PROGRAMS_AUDIO | FK_PROGRAMS_DETOK;
  d.threads = (int)o->threads;
  d.tier = o->fast ? FK_TIER_FAST : FK_TIER_EXACT;
  d.quantize = o->quantize;
  d.detok.max_frames = 1;
  d.audio.lm.max_rows = np > 64 ? np : 64; /* the prompt in one prefill: a turn starts once */
  if ((s = fk_model_describe(m, &d, &err)) != FK_OK) die("%s: %s", fk_strerror(s), err.message);
  for (int64_t i = 0; i < np; i++)
    if (prompt[i] >= d.audio.lm.vocab)
      die("--tokens: id %d is outside the vocabulary (%lld)", prompt[i], (long long)d.audio.lm.vocab);
  if (o->pcm16) d.flags |= FK_PLAN_PCM_I16;
  const int64_t need = np + o->max_new;
  if (d.audio.lm.stack.max_pos < need) d.audio.lm.stack.max_pos = need;
  if (d.detok.stack.max_pos < 6 * (o->max_new + 1)) d.detok.stack.max_pos = 6 * (o->max_new + 1);
  fk_plan *plan;
  if ((s = fk_plan_create(&d, &plan, &err)) != FK_OK) die("fk_plan_create: %s: %s", fk_strerror(s), err.message);
  fk_model_close(m);
  if (o->seed && fk_sampler_seed(plan, (uint64_t)o->seed) != FK_OK) die("fk_sampler_seed refused the seed");
  const double t1 = now();
  const fk_sampling ts = { (float)o->temperature, o->top_k }, as = { (float)o->audio_temperature, o->audio_top_k };
  const size_t es = o->pcm16 ? 2 : 4;
  const int64_t cap = 1920 * (o->max_new + 1) + 480;
  unsigned char *pcm = malloc((size_t)cap * es);
  if (!pcm) die("out of memory");
  int64_t have = 0, tokens = 0, frames = 0, steps = 0, unsounded = 0;
  fk_io io;
  memset(&io, 0, sizeof io);
  io.rows = np;
  io.tokens = prompt;
  io.loop = o->interleaved ? FK_AUDIO_INTERLEAVED : FK_AUDIO_SEQUENTIAL;
  io.sampling = o->temperature > 0 ? &ts : NULL;
  if ((s = fk_run(plan, FK_PROG_AUDIO_PREFILL, &io, &err)) != FK_OK) die("prefill: %s: %s", fk_strerror(s), err.message);
  const double t2 = now();
  double last = t2;
  for (;;) {
    if (io.out == FK_AUDIO_OUT_FRAME) {
      int sound = io.frame[0] != 2048; /* the end of the audio (all 2048) is not a frame of sound */
      for (int c = 1; sound && c < CODEBOOKS; c++)
        if (io.frame[c] == 2048) { /* 2049 codes per codebook, 2048 in the detokenizer's: liquid's decode refuses it */
          sound = 0;
          unsounded++;
        }
      if (sound) {
        if (codes_out)
          for (int c = 0; c < CODEBOOKS; c++) fprintf(codes_out, "%d%c", io.frame[c], c == CODEBOOKS - 1 ? '\n' : ' ');
        fk_io dio;
        memset(&dio, 0, sizeof dio);
        dio.rows = 1;
        dio.codes = io.frame;
        dio.pcm = pcm + (size_t)have * es;
        dio.pcm_cap = cap - have;
        if ((s = fk_run(plan, FK_PROG_DETOK, &dio, &err)) != FK_OK) die("detok: %s: %s", fk_strerror(s), err.message);
        have += dio.pcm_count;
        frames++;
      }
    } else if (io.out == FK_AUDIO_OUT_TEXT || !o->interleaved) { /* sequential emits <|im_end|> */
      printf("%s%d", tokens ? " " : "", io.next);
      tokens++;
    }
    if (io.out == FK_AUDIO_OUT_END || steps == o->max_new) break;
    memset(&io, 0, sizeof io);
    io.rows = 1;
    io.sampling = o->temperature > 0 ? &ts : NULL;
    io.audio_sampling = o->audio_temperature > 0 ? &as : NULL;
    if ((s = fk_run(plan, FK_PROG_AUDIO_STEP, &io, &err)) != FK_OK) die("step: %s: %s", fk_strerror(s), err.message);
    steps++;
    if (o->progress && now() - last > 0.5) {
      last = now();
      fprintf(stderr, "\r  %lld steps: %lld tokens, %lld frames, %.2f frames/s   ", (long long)steps, (long long)tokens,
              (long long)frames, (double)frames / (last - t2));
    }
  }
  fk_io fl;
  memset(&fl, 0, sizeof fl);
  fl.pcm = pcm + (size_t)have * es;
  fl.pcm_cap = cap - have;
  /* the stream's last 480 samples (the flush needs two frames: one frame's 1440 samples stay as they are) */
  if (frames >= 2 && (s = fk_run(plan, FK_PROG_DETOK_FLUSH, &fl, &err)) != FK_OK)
    die("flush: %s: %s", fk_strerror(s), err.message);
  have += frames >= 2 ? fl.pcm_count : 0;
  const double t3 = now();
  printf("\n");
  fflush(stdout);
  if (codes_out && fclose(codes_out) != 0) die("--codes-out '%s': write failed", o->codes_out);
  write_wav(o, pcm, have);
  if (o->progress) fputc('\n', stderr);
  const double audio = (double)have / SAMPLE_RATE;
  fprintf(stderr, "readiness %.1f ms (open + plan); prefill %lld tokens in %.2f ms; %lld steps in %.3f s: %lld text tokens, "
          "%lld audio frames (%.2f frames/s), %.2f s of audio: real-time factor %.3f; wrote %s\n", 1e3 * (t1 - t0),
          (long long)np, 1e3 * (t2 - t1), (long long)steps, t3 - t2, (long long)tokens, (long long)frames,
          t3 > t2 ? (double)frames / (t3 - t2) : 0.0, audio, audio > 0 ? (t3 - t2) / audio : 0.0, o->wav);
  if (unsounded)
    fprintf(stderr, "%lld frames with code 2048 past codebook 0 (the detokenizer's codes are 0..2047) were not voiced\n",
            (long long)unsounded);
  fk_plan_destroy(plan);
  free(pcm);
  free(prompt);
  return 0;
}

int main(int argc, char **argv) {
  const opts o = parse(argc, argv);
  return o.speak ? run_speak(&o) : o.codes ? run_detok(&o) : run_lm(&o);
}
