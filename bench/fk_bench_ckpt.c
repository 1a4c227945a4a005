/* bench/fk_bench_ckpt.c: what a checkpoint directory costs (bench/README.md, "Checkpoints"):
 * readiness (fk_model_open, then fk_model_describe + fk_plan_create) beside the checkpoint's size,
 * and flashkern-run's decode tokens/s on it against fk_bench_model's on the same shapes, measured in
 * the same run, round by round.
 *
 *   fk_bench_ckpt --run PATH --model-bench PATH [--out DIR] [--dir DIR] [--rounds R] [--steps N]
 *                 [--threads 1,2] [--tiers exact,fast] [--quick] [--keep]
 *
 *   --run          the flashkern-run binary; --model-bench the fk_bench_model binary
 *   --dir          where the checkpoints are written (default: a new folder under /var/tmp, removed at
 *                  the end unless --keep); they take 2.2 GB
 *
 * 1. Two checkpoints at LFM2-350M's shapes (tests/model/synth.h's lm_350m weights, the shapes of
 *    fk_bench_model's lm_350m: vocab 65536, hidden 1024, ffn 4608, 16 layers, 6 of them attention,
 *    16 / 8 heads of 64, tied head), written as transformers lays them out (tests/ckpt/ckpt_write.c):
 *      bf16  one model.safetensors, transformers 5's config.json;
 *      f32   3 shards and model.safetensors.index.json, the released checkpoints' config style (the
 *            loader converts f32 to bf16 at readiness).
 * 2. Readiness, every round, each checkpoint cold and warm. Cold: every file is fsync'ed and its
 *    pages dropped from the page cache (posix_fadvise DONTNEED), and mincore() must then count none
 *    of them resident, so the open reads from the disk. Warm: right after a cold one (every page
 *    cached). Timed: fk_model_open; fk_model_describe + fk_plan_create (FK_PROGRAMS_LM, 2 threads,
 *    exact tier: the packing); readiness = both (fk_model_close and fk_plan_destroy untimed).
 * 3. Decode tokens/s, every round: fk_bench_model --only lm_350m --reps 1 --steps N (a 12-token
 *    prompt, then N timed decode calls, for each threads x tier), and flashkern-run --max-new N+1 on
 *    each checkpoint for each threads x tier (a 12-token prompt; its first token comes from the
 *    prefill, so N decode steps; it prints their tokens/s). Which of the two goes first alternates
 *    round by round.
 * 4. The read probe (bw_probe.c: a streaming read of 1.125 GiB), 1 and 2 threads, at the start of every
 *    round after a 200 ms pause, each timed pass after an untimed one: the decode steps stream the
 *    plan's weights from DRAM, so this is their ceiling.
 * Output: DIR/ckpt.csv (table,case,threads,tier,metric,median,min,max,n) and DIR/ckpt-meta.csv;
 * bench/report.py ckpt renders DIR/ckpt.md. Progress on stderr. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_write.h"
#include "fk_checkpoint.h"
#include "fkb.h"

#ifndef FKB_FLASHKERN_VERSION
#define FKB_FLASHKERN_VERSION "this tree"
#endif

#define die(...) fkb_die("fk_bench_ckpt", __VA_ARGS__)
#define now fkb_now

enum { PROMPT = 12, NCKPT = 2, MAX_FILES = 16 };

static struct {
  const char *run, *model_bench, *out, *dir;
  int rounds, steps, keep;
  int threads[2], nthreads;
  int tiers[2], ntiers;
} opt = { NULL, NULL, "bench/results", NULL, 7, 256, 0, { 1, 2 }, 2, { FK_TIER_EXACT, FK_TIER_FAST }, 2 };

static const char *const CKPT[NCKPT] = { "bf16", "f32" };
static const char *tier_name(int t) { return t == FK_TIER_FAST ? "fast" : "exact"; }

/* ---- the checkpoints ------------------------------------------------------------------------- */

typedef struct ckpt {
  char dir[512];
  char file[MAX_FILES][600];
  int nfiles;                 /* every file of the directory (configs, index, safetensors) */
  double bytes;               /* their sizes together */
  double write_s;
  fk_model_info info;         /* from one open: tensors, safetensors files, their bytes, owned */
} ckpt;

static void list_files(ckpt *c) {
  DIR *d = opendir(c->dir);
  if (!d) die("%s: %s", c->dir, strerror(errno));
  c->nfiles = 0;
  c->bytes = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    if (c->nfiles == MAX_FILES) die("%s: more than %d files", c->dir, MAX_FILES);
    char p[sizeof c->file[0]];
    if ((size_t)snprintf(p, sizeof p, "%.400s/%.190s", c->dir, e->d_name) >= sizeof p)
      die("%s/%s: path too long", c->dir, e->d_name);
    memcpy(c->file[c->nfiles++], p, sizeof p);
    struct stat st;
    if (stat(p, &st)) die("%s: %s", p, strerror(errno));
    c->bytes += (double)st.st_size;
  }
  closedir(d);
}

/* drops every file's pages from the page cache; returns the pages still resident after (mincore) */
static long drop_cache(const ckpt *c) {
  long resident = 0;
  const long page = sysconf(_SC_PAGESIZE);
  for (int i = 0; i < c->nfiles; i++) {
    int fd = open(c->file[i], O_RDONLY);
    if (fd < 0) die("%s: %s", c->file[i], strerror(errno));
    struct stat st;
    if (fstat(fd, &st)) die("%s: %s", c->file[i], strerror(errno));
    if (fsync(fd) || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)) die("%s: cannot drop its pages", c->file[i]);
    if (st.st_size > 0) {
      void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) die("%s: mmap: %s", c->file[i], strerror(errno));
      size_t pages = ((size_t)st.st_size + (size_t)page - 1) / (size_t)page;
      unsigned char *vec = malloc(pages);
      if (!vec || mincore(m, (size_t)st.st_size, vec)) die("%s: mincore", c->file[i]);
      for (size_t k = 0; k < pages; k++) resident += vec[k] & 1;
      free(vec);
      munmap(m, (size_t)st.st_size);
    }
    close(fd);
  }
  return resident;
}

static void write_ckpts(ckpt *c, const char *root) {
  fkm_weights w;
  char err[256];
  double t0 = now();
  if (fkm_synth_model("lm_350m", &w, err, sizeof err)) die("%s", err);
  fprintf(stderr, "fk_bench_ckpt: lm_350m weights synthesised in %.1f s\n", now() - t0);
  const fkw_opts o[NCKPT] = { { .dtype = "BF16", .tied = 1 }, { .dtype = "F32", .shards = 3, .released = 1, .tied = 1 } };
  for (int i = 0; i < NCKPT; i++) {
    snprintf(c[i].dir, sizeof c[i].dir, "%.400s/%s", root, CKPT[i]);
    if (mkdir(c[i].dir, 0700) && errno != EEXIST) die("%s: %s", c[i].dir, strerror(errno));
    t0 = now();
    if (fkw_lm_dir(c[i].dir, &w, &o[i])) die("cannot write %s", c[i].dir);
    c[i].write_s = now() - t0;
    list_files(&c[i]);
    fprintf(stderr, "fk_bench_ckpt: %s: %d files, %.2f GB, written in %.1f s\n", c[i].dir, c[i].nfiles,
            c[i].bytes / 1e9, c[i].write_s);
  }
  fkm_weights_free(&w);
}

static void rm_ckpts(ckpt *c, const char *root) {
  for (int i = 0; i < NCKPT; i++) {
    for (int k = 0; k < c[i].nfiles; k++) unlink(c[i].file[k]);
    rmdir(c[i].dir);
  }
  rmdir(root);
}

/* ---- readiness ------------------------------------------------------------------------------- */

static fkb_series ready_open[NCKPT][2], ready_plan[NCKPT][2], ready_all[NCKPT][2];

static void readiness(ckpt *c, int ci, int warm) {
  if (!warm) {
    long left = drop_cache(c);
    if (left) die("%s: %ld pages still cached after posix_fadvise(DONTNEED): no cold open here", c->dir, left);
  }
  fk_error err;
  fk_model *m;
  double t0 = now();
  if (fk_model_open(c->dir, FK_MODEL_AUTO, &m, &err) != FK_OK) die("fk_model_open(%s): %s", c->dir, err.message);
  double t1 = now();
  fk_plan_desc d = { .programs = FK_PROGRAMS_LM, .threads = 2, .tier = FK_TIER_EXACT };
  fk_plan *p;
  if (fk_model_describe(m, &d, &err) != FK_OK) die("fk_model_describe(%s): %s", c->dir, err.message);
  if (fk_plan_create(&d, &p, &err) != FK_OK) die("fk_plan_create(%s): %s", c->dir, err.message);
  double t2 = now();
  if (fk_model_query(m, &c->info, &err) != FK_OK) die("fk_model_query: %s", err.message);
  c->info.architecture = NULL; /* its strings live with the model */
  c->info.dtype = NULL;
  fk_plan_destroy(p);
  fk_model_close(m);
  fkb_series *s[3] = { &ready_open[ci][warm], &ready_plan[ci][warm], &ready_all[ci][warm] };
  s[0]->v[s[0]->n++] = 1e3 * (t1 - t0);
  s[1]->v[s[1]->n++] = 1e3 * (t2 - t1);
  s[2]->v[s[2]->n++] = 1e3 * (t2 - t0);
  fprintf(stderr, "fk_bench_ckpt: %s %s: open %.0f ms, describe + plan %.0f ms\n", CKPT[ci], warm ? "warm" : "cold",
          1e3 * (t1 - t0), 1e3 * (t2 - t1));
}

/* ---- decode tokens/s: the two commands --------------------------------------------------------- */

/* [source][threads index][tier index]: source 0 fk_bench_model, 1 + ci flashkern-run on CKPT[ci] */
static fkb_series tok_s[1 + NCKPT][2][2];
static int skipped[2][2];   /* fk_bench_model said a fast plan is unsupported here */

static int index_of(const int *v, int n, int x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return i;
  return -1;
}

static void list_arg(char *buf, size_t n, int what) {
  buf[0] = 0;
  for (int i = 0; i < (what ? opt.ntiers : opt.nthreads); i++) {
    size_t at = strlen(buf);
    if (what) snprintf(buf + at, n - at, "%s%s", i ? "," : "", tier_name(opt.tiers[i]));
    else snprintf(buf + at, n - at, "%s%d", i ? "," : "", opt.threads[i]);
  }
}

static void run_model_bench(void) {
  char cmd[2048], th[32], ti[32], line[512];
  list_arg(th, sizeof th, 0);
  list_arg(ti, sizeof ti, 1);
  /* --prefill none: the plans keep the 12-token prompt's max_rows, the prefill measure is not run */
  snprintf(cmd, sizeof cmd, "'%s' --only lm_350m --reps 1 --steps %d --threads %s --tiers %s --prefill none "
           "2>/dev/null", opt.model_bench, opt.steps, th, ti);
  FILE *f = popen(cmd, "r");
  if (!f) die("cannot run %s", cmd);
  int got = 0;
  while (fgets(line, sizeof line, f)) {
    char model[64], tier[16], metric[64];
    int threads, n;
    double v;
    if (sscanf(line, "flashkern,%63[^,],%15[^,],%d,%63[^,],%lf,%d", model, tier, &threads, metric, &v, &n) != 6) continue;
    if (strcmp(model, "lm_350m")) continue;
    int hi = index_of(opt.threads, opt.nthreads, threads), ti2 = !strcmp(tier, "fast");
    int tix = index_of(opt.tiers, opt.ntiers, ti2 ? FK_TIER_FAST : FK_TIER_EXACT);
    if (hi < 0 || tix < 0) continue;
    if (!strcmp(metric, "skipped")) skipped[hi][tix] = 1;
    if (strcmp(metric, "decode_tok_s")) continue;
    fkb_series *s = &tok_s[0][hi][tix];
    s->v[s->n++] = v;
    got++;
  }
  int rc = pclose(f);
  if (rc) die("%s exited with %d", cmd, rc);
  if (!got) die("%s printed no decode_tok_s line", cmd);
  fprintf(stderr, "fk_bench_model: %d decode figures\n", got);
}

static void run_flashkern_run(const ckpt *c, int ci, int hi, int tix) {
  char cmd[2048], line[1024];
  int at = snprintf(cmd, sizeof cmd, "'%s' --model '%s' --max-new %d --threads %d --tier %s --tokens ", opt.run, c->dir,
                    opt.steps + 1, opt.threads[hi], tier_name(opt.tiers[tix]));
  for (int i = 0; i < PROMPT; i++) at += snprintf(cmd + at, sizeof cmd - (size_t)at, "%s%d", i ? "," : "", 17 + 83 * i);
  snprintf(cmd + at, sizeof cmd - (size_t)at, " 2>&1 >/dev/null");
  FILE *f = popen(cmd, "r");
  if (!f) die("cannot run %s", cmd);
  double v = -1;
  long long steps = -1;
  while (fgets(line, sizeof line, f)) {
    const char *p = strstr(line, " decode steps in ");
    const char *q = strstr(line, " s: ");
    if (!p || !q) continue;
    const char *g = strstr(line, "tokens generated, ");
    if (g) steps = strtoll(g + strlen("tokens generated, "), NULL, 10);
    v = strtod(q + 4, NULL);
  }
  int rc = pclose(f);
  if (rc || v <= 0) die("%s: exit %d, no tokens/s line", cmd, rc);
  if (steps != opt.steps) die("%s: %lld decode steps, expected %d", cmd, steps, opt.steps);
  fkb_series *s = &tok_s[1 + ci][hi][tix];
  s->v[s->n++] = v;
  fprintf(stderr, "flashkern-run: %s %dT %s: %.1f tokens/s\n", CKPT[ci], opt.threads[hi], tier_name(opt.tiers[tix]), v);
}

/* ---- output ------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  const char *usage = "usage: fk_bench_ckpt --run FLASHKERN_RUN --model-bench FK_BENCH_MODEL [--out DIR] [--dir DIR] "
                      "[--rounds R] [--steps N] [--threads 1,2] [--tiers exact,fast] [--quick] [--keep]";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--quick")) opt.rounds = 2, opt.steps = 16;
    else if (!strcmp(a, "--keep")) opt.keep = 1;
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) return puts(usage), 0;
    else if (!v) die("%s", usage);
    else if (!strcmp(a, "--run")) opt.run = v, i++;
    else if (!strcmp(a, "--model-bench")) opt.model_bench = v, i++;
    else if (!strcmp(a, "--out")) opt.out = v, i++;
    else if (!strcmp(a, "--dir")) opt.dir = v, i++;
    else if (!strcmp(a, "--rounds")) opt.rounds = atoi(v), i++;
    else if (!strcmp(a, "--steps")) opt.steps = atoi(v), i++;
    else if (!strcmp(a, "--threads")) opt.nthreads = fkb_parse_threads(v, opt.threads), i++;
    else if (!strcmp(a, "--tiers")) opt.ntiers = fkb_parse_tiers(v, opt.tiers), i++;
    else die("%s", usage);
  }
  if (!opt.run || !opt.model_bench) die("%s", usage);
  if (access(opt.run, X_OK) || access(opt.model_bench, X_OK)) die("--run and --model-bench must name executables");
  if (opt.rounds < 1 || opt.rounds > FKB_MAX_REPS) die("--rounds must be in 1..%d", FKB_MAX_REPS);
  if (opt.steps < 1 || opt.steps > 4000) die("--steps must be in 1..4000");
  if (!opt.nthreads || !opt.ntiers) die("--threads and --tiers need at least one value");
  fkb_out_dir("fk_bench_ckpt", opt.out);

  char root[400];
  if (opt.dir) {
    snprintf(root, sizeof root, "%s", opt.dir);
    if (mkdir(root, 0700) && errno != EEXIST) die("%s: %s", root, strerror(errno));
  } else {
    snprintf(root, sizeof root, "/var/tmp/fk_bench_ckpt.XXXXXX");
    if (!mkdtemp(root)) die("mkdtemp: %s", strerror(errno));
  }
  fkb_out *o = fkb_out_open("fk_bench_ckpt", opt.out, "ckpt", "table,case,threads,tier,metric,median,min,max,n", argc, argv);
  static ckpt c[NCKPT];
  write_ckpts(c, root);
  fkb_probe *probe = fkb_probe_create(FKB_ROTATE_BYTES);
  if (!probe) die("cannot allocate the read probe");
  static fkb_series probe_s[2];

  for (int r = 0; r < opt.rounds; r++) {
    fprintf(stderr, "fk_bench_ckpt: round %d of %d\n", r + 1, opt.rounds);
    /* the probe first, after a pause: right after a command exits, the kernel is still freeing its
     * gigabytes, which took a 1-thread read down to 1.1 GB/s in a trial run */
    struct timespec pause = { 0, 200 * 1000 * 1000 };
    nanosleep(&pause, NULL);
    for (int t = 1; t <= 2; t++) {
      fkb_probe_gbs(probe, t); /* untimed: the same pass once, warm */
      probe_s[t - 1].v[probe_s[t - 1].n++] = fkb_probe_gbs(probe, t);
    }
    fprintf(stderr, "fk_bench_ckpt: read probe %.1f / %.1f GB/s (1 / 2 threads)\n", probe_s[0].v[r], probe_s[1].v[r]);
    for (int k = 0; k < NCKPT; k++) {
      int ci = (k + r) % NCKPT;
      readiness(&c[ci], ci, 0);
      readiness(&c[ci], ci, 1);
    }
    for (int part = 0; part < 2; part++) {
      if ((part + r) % 2 == 0) {
        run_model_bench();
        continue;
      }
      for (int ci = 0; ci < NCKPT; ci++)
        for (int hi = 0; hi < opt.nthreads; hi++)
          for (int tix = 0; tix < opt.ntiers; tix++)
            if (!skipped[hi][tix]) run_flashkern_run(&c[ci], ci, hi, tix);
    }
  }

  /* the commands are this run's work too: the noise meter counts them as other processes, so the
   * report subtracts their CPU time (every child has been waited for) */
  struct rusage ru;
  if (getrusage(RUSAGE_CHILDREN, &ru)) die("getrusage: %s", strerror(errno));
  fkb_meta_num(o, "children_cpu_s", "", (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                                             (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec);
  fkb_meta(o, "version", "flashkern", "flashkern %s", FKB_FLASHKERN_VERSION);
  fkb_meta(o, "rounds", "", "%d", opt.rounds);
  fkb_meta(o, "steps", "", "%d", opt.steps);
  fkb_meta(o, "prompt", "", "%d", PROMPT);
  fkb_meta(o, "probe", "kind", "%s", fkb_probe_kind(probe));
  fkb_meta_num(o, "probe", "bytes", (double)fkb_probe_bytes(probe));
  for (int ci = 0; ci < NCKPT; ci++) {
    fkb_meta(o, "ckpt_files", CKPT[ci], "%d", c[ci].nfiles);
    fkb_meta(o, "ckpt_safetensors", CKPT[ci], "%d", c[ci].info.files);
    fkb_meta_num(o, "ckpt_bytes", CKPT[ci], c[ci].bytes);
    fkb_meta(o, "ckpt_tensors", CKPT[ci], "%lld", (long long)c[ci].info.tensors);
    fkb_meta_num(o, "ckpt_owned_bytes", CKPT[ci], (double)c[ci].info.owned_bytes);
    fkb_meta_num(o, "ckpt_write_s", CKPT[ci], c[ci].write_s);
  }
  /* what one decode step streams: every weight of the bf16 checkpoint once (the tied head is the
   * embedding table; the embedding itself gives one row), so its safetensors bytes */
  fkb_meta_num(o, "step_bytes", "", (double)c[0].info.file_bytes);
  fkb_meta(o, "shape", "", "vocab %lld, hidden %lld, ffn %lld, %lld layers (%lld attention), %lld / %lld heads of %lld, "
           "tied head", (long long)c[0].info.vocab, (long long)c[0].info.hidden, (long long)c[0].info.ffn,
           (long long)c[0].info.layers, (long long)c[0].info.attn_layers, (long long)c[0].info.heads,
           (long long)c[0].info.kv_heads, (long long)c[0].info.head_dim);
  for (int t = 0; t < 2; t++) fkb_series_row(o, "probe", "read", t + 1, "-", "gbps", &probe_s[t]);
  for (int ci = 0; ci < NCKPT; ci++)
    for (int warm = 0; warm < 2; warm++) {
      char cs[32];
      snprintf(cs, sizeof cs, "%s %s", CKPT[ci], warm ? "warm" : "cold");
      fkb_series_row(o, "ready", cs, 2, "exact", "open_ms", &ready_open[ci][warm]);
      fkb_series_row(o, "ready", cs, 2, "exact", "plan_ms", &ready_plan[ci][warm]);
      fkb_series_row(o, "ready", cs, 2, "exact", "ready_ms", &ready_all[ci][warm]);
    }
  for (int src = 0; src < 1 + NCKPT; src++)
    for (int hi = 0; hi < opt.nthreads; hi++)
      for (int tix = 0; tix < opt.ntiers; tix++) {
        if (!tok_s[src][hi][tix].n) continue;
        char cs[64];
        if (src) snprintf(cs, sizeof cs, "flashkern-run %s", CKPT[src - 1]);
        else snprintf(cs, sizeof cs, "fk_bench_model");
        fkb_series_row(o, "decode", cs, opt.threads[hi], tier_name(opt.tiers[tix]), "tok_s", &tok_s[src][hi][tix]);
      }
  fkb_out_close(o);
  fkb_probe_destroy(probe);
  if (!opt.keep) rm_ckpts(c, root);
  else fprintf(stderr, "fk_bench_ckpt: the checkpoints stay in %s\n", root);
  return 0;
}
