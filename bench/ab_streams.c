/* bench/ab_streams.c: what one core (or two) can read from DRAM, by read pattern: S streams far apart
 * (each its 1/S of the buffer, read in step, 512 bytes of each per step) with a software prefetch of
 * every line D bytes ahead of each stream (prefetcht1 or prefetcht0; D = 0: none). S = 1, D = 0 is
 * bench/bw_probe.c's pattern (the read probe the benches report against). Not built by CMake: a tool
 * for the question "how far above the probe can a stream go here, and by which pattern", as
 * bench/ab_qcold.c is for one quantized stamp.
 *
 *   gcc -O2 -march=native bench/ab_streams.c -lpthread -o ab_streams
 *   ./ab_streams [THREADS (1) [HUGE (1: transparent huge pages requested) [ROUNDS (7)]]]
 *
 * The buffer: 1.5 GiB, written once (every page backed). A round runs every pattern once, in the
 * same order; per pattern the median GB/s over the rounds. With two threads each reads its half. */
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

enum { NS = 3, ND = 8, ROUNDS_MAX = 64 };
static const int STREAMS[NS] = { 1, 2, 4 };
static const long AHEAD[ND] = { 0, 512, 1024, 1536, 2048, 3072, 4096, 34816 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define XOR(acc, q, o) acc = _mm512_xor_si512(acc, _mm512_load_si512((const void *)((q) + (o))))
#define PF(q, d, hint)                                                                              \
  for (long l_ = 0; l_ < 512; l_ += 64) _mm_prefetch((const char *)(q) + (d) + l_, hint)
/* S streams in step, every line prefetched d bytes ahead (d = 0: none) with the given hint */
#define READER(name, S, hint)                                                                       \
  __attribute__((target("avx512f"))) static uint64_t name(const unsigned char *p, size_t bytes, long d) { \
    size_t len = bytes / S & ~(size_t)4095;                                                         \
    __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0; \
    for (size_t i = 0; i + 512 <= len; i += 512)                                                    \
      for (int s = 0; s < S; s++) {                                                                 \
        const unsigned char *q = p + len * (size_t)s + i;                                           \
        if (d) PF(q, d, hint);                                                                      \
        XOR(a0, q, 0); XOR(a1, q, 64); XOR(a2, q, 128); XOR(a3, q, 192);                            \
        XOR(a4, q, 256); XOR(a5, q, 320); XOR(a6, q, 384); XOR(a7, q, 448);                         \
      }                                                                                             \
    a0 = _mm512_xor_si512(_mm512_xor_si512(_mm512_xor_si512(a0, a1), _mm512_xor_si512(a2, a3)),     \
                          _mm512_xor_si512(_mm512_xor_si512(a4, a5), _mm512_xor_si512(a6, a7)));    \
    return (uint64_t)_mm512_reduce_add_epi64(a0);                                                   \
  }
READER(read1_t1, 1, _MM_HINT_T1)
READER(read2_t1, 2, _MM_HINT_T1)
READER(read4_t1, 4, _MM_HINT_T1)
READER(read1_t0, 1, _MM_HINT_T0)
READER(read2_t0, 2, _MM_HINT_T0)
READER(read4_t0, 4, _MM_HINT_T0)
static uint64_t (*const readers[2][NS])(const unsigned char *, size_t, long) = {
  { read1_t1, read2_t1, read4_t1 }, { read1_t0, read2_t0, read4_t0 }
};

typedef struct {
  const unsigned char *p;
  size_t bytes;
  int si, hint;
  long d;
  uint64_t sink;
} job;

static void *run(void *a) {
  job *j = a;
  j->sink = readers[j->hint][j->si](j->p, j->bytes, j->d);
  return NULL;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const size_t bytes = (size_t)1536 << 20;
  int threads = argc > 1 ? atoi(argv[1]) : 1, huge = argc > 2 ? atoi(argv[2]) : 1;
  int rounds = argc > 3 ? atoi(argv[3]) : 7;
  if (threads < 1 || threads > 2 || rounds < 1 || rounds > ROUNDS_MAX) {
    fprintf(stderr, "ab_streams: THREADS is 1 or 2, ROUNDS 1..%d\n", ROUNDS_MAX);
    return 2;
  }
  unsigned char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("ab_streams: mmap");
    return 1;
  }
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);
  for (size_t i = 0; i < bytes; i += 8) {
    uint64_t v = i * 0x9e3779b97f4a7c15u;
    memcpy(p + i, &v, sizeof v);
  }
  FILE *f = fopen("/proc/self/smaps_rollup", "r"); /* how much of it the kernel backed with huge pages */
  if (f) {
    char line[256];
    while (fgets(line, sizeof line, f))
      if (strstr(line, "AnonHugePages")) printf("buffer: 1.5 GiB, %s", line);
    fclose(f);
  }
  static double gbs[2][NS][ND][ROUNDS_MAX];
  for (int r = 0; r < rounds; r++)
    for (int h = 0; h < 2; h++)
      for (int si = 0; si < NS; si++)
        for (int di = 0; di < ND; di++) {
          if (h == 1 && AHEAD[di] == 0) continue; /* no prefetch: one pattern, not two */
          job js[2];
          pthread_t t;
          for (int k = 0; k < threads; k++)
            js[k] = (job){ p + bytes / (size_t)threads * (size_t)k, bytes / (size_t)threads, si, h, AHEAD[di], 0 };
          double t0 = now();
          if (threads == 2 && pthread_create(&t, NULL, run, &js[1])) return 1;
          run(&js[0]);
          if (threads == 2) pthread_join(t, NULL);
          gbs[h][si][di][r] = (double)bytes / (now() - t0) / 1e9;
        }
  printf("%d thread(s), huge pages %s, %d rounds: median GB/s by bytes ahead\n", threads,
         huge ? "requested" : "not requested", rounds);
  for (int h = 0; h < 2; h++)
    for (int si = 0; si < NS; si++) {
      printf("  %s S=%d:", h ? "prefetcht0" : "prefetcht1", STREAMS[si]);
      for (int di = h ? 1 : 0; di < ND; di++) {
        qsort(gbs[h][si][di], (size_t)rounds, sizeof(double), cmp);
        printf("  %ld: %.2f", AHEAD[di], gbs[h][si][di][rounds / 2]);
      }
      printf("\n");
    }
  return 0;
}
