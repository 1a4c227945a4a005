/* bench/clock_probe.c: the clock a pinned core runs at, for turning llvm-mca's cycles into bytes per
 * second (bench/results/quant-analysis.md): a chain of dependent register adds (one cycle each; `add
 * reg, reg`, which no renamer eliminates), alone and beside independent zmm FMAs (4 a 4-cycle
 * iteration: the clock under AVX-512 load). Not built by CMake; x86_64 with AVX-512F.
 *
 *   gcc -O1 bench/clock_probe.c -o clock_probe && taskset -c 1 ./clock_probe */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static double seconds(struct timespec a, struct timespec b) {
  return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
}

int main(void) {
  for (int rep = 0; rep < 5; rep++) {
    struct timespec a, b;
    uint64_t n = 2000000000ull, x = 1;
    clock_gettime(CLOCK_MONOTONIC, &a);
    __asm__ volatile("1:\n\t"
                     "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
                     "add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\t"
                     "sub $8, %1\n\tjnz 1b\n"
                     : "+r"(x), "+r"(n)::"cc");
    clock_gettime(CLOCK_MONOTONIC, &b);
    double alone = 2e9 / seconds(a, b) / 1e9;
    n = 1000000000ull;
    __asm__ volatile("vxorps %%zmm0, %%zmm0, %%zmm0\n\tvxorps %%zmm1, %%zmm1, %%zmm1\n\t"
                     "vxorps %%zmm2, %%zmm2, %%zmm2\n\tvxorps %%zmm3, %%zmm3, %%zmm3\n\t"
                     "vxorps %%zmm8, %%zmm8, %%zmm8" ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm8");
    clock_gettime(CLOCK_MONOTONIC, &a);
    __asm__ volatile("1:\n\t"
                     "add %0, %0\n\tvfmadd231ps %%zmm8, %%zmm8, %%zmm0\n\t"
                     "add %0, %0\n\tvfmadd231ps %%zmm8, %%zmm8, %%zmm1\n\t"
                     "add %0, %0\n\tvfmadd231ps %%zmm8, %%zmm8, %%zmm2\n\t"
                     "add %0, %0\n\tvfmadd231ps %%zmm8, %%zmm8, %%zmm3\n\t"
                     "sub $4, %1\n\tjnz 1b\n"
                     : "+r"(x), "+r"(n)::"xmm0", "xmm1", "xmm2", "xmm3", "cc");
    clock_gettime(CLOCK_MONOTONIC, &b);
    double loaded = 1e9 / seconds(a, b) / 1e9;
    printf("round %d: %.2f GHz alone, %.2f GHz beside zmm FMAs (x = %llu)\n", rep, alone, loaded,
           (unsigned long long)x);
  }
  return 0;
}
