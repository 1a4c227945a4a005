/* ggml's quantize_row_q4_K_ref (through ggml_quantize_chunk, no importance matrix) on raw f32 input
 * -> raw 144-byte blocks, for fixtures/ref/gen_quant_q4k.py's check (FK_GGML_Q4K):
 *   gcc -O2 -I$L/ggml/include q4k_ggml.c $B/ggml/src/libggml-base.a -lstdc++ -fopenmp -lm
 * (L, B as in bench/q4_min_peer.c) */
#include <stdio.h>
#include <stdlib.h>
#include "ggml.h"
int main(int argc, char **argv) {
  FILE *f = fopen(argv[1], "rb"); fseek(f, 0, SEEK_END); long n = ftell(f) / 4; fseek(f, 0, SEEK_SET);
  float *x = malloc(n * 4); if (fread(x, 4, n, f) != (size_t)n) return 2; fclose(f);
  void *q = malloc(n); size_t b = ggml_quantize_chunk(GGML_TYPE_Q4_K, x, q, 0, n / 256, 256, NULL);
  FILE *o = fopen(argv[2], "wb"); fwrite(q, 1, b, o); fclose(o); return 0;
}
