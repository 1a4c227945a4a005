/* bench/fft_scale.c: the 1/N pass after FFTW's unnormalized c2r (bench/fkb_fft.h). Built
 * -O3 -march=native: the compiler vectorizes it with the widest vectors the CPU has, so the pass
 * charged to FFTW's "+ 1/N" row is as cheap as a user's compiler can make it. */
#include "fkb_fft.h"

void fkb_fft_scale(float *y, int n, float s) {
  for (int i = 0; i < n; i++) y[i] *= s;
}

const char *fkb_fft_scale_flags(void) {
  return "gcc " __VERSION__ ", -O3 -march=native";
}
