/* bench/fkb_fft.h: what the inverse-FFT benchmark's driver (fk_bench_fft.c) shares with its peers.
 *
 * The transform peers (FFTW's c2r plans, OpenBLAS's dense inverse DFT) are called from the driver
 * itself; this header holds the two pieces built with their own flags:
 *   fft_scale.c       the 1/N pass a user adds after FFTW's unnormalized c2r (-O3 -march=native,
 *                     so the pass costs FFTW as little as the compiler can make it cost);
 *   fft_peer_frame.c  one detokenizer ISTFT frame written the way a user would without flashkern:
 *                     libm expf/cosf/sinf polar, FFTW c2r, window, overlap-add, divide by the
 *                     envelope, plain C, built -O2. */
#ifndef FKB_FFT_H
#define FKB_FFT_H

#include <stddef.h>
#include <stdint.h>

/* y[i] *= s for i < n (fft_scale.c). */
void fkb_fft_scale(float *y, int n, float s);
const char *fkb_fft_scale_flags(void);

/* ---- the user-written frame (fft_peer_frame.c) ------------------------------------------------ *
 * The LFM2.5 detokenizer's ISTFT(n_fft 1280, hop 320, win 1280, padding "same"), one frame t per
 * call, the same contract as flashkern's istft_frame (templates/istft.lua): x holds 641
 * log-magnitudes then 641 phases; X[k] = min(clip, expf(x[k])) (cosf, sinf)(x[641 + k]); the
 * frame is FFTW's c2r of X times the periodic Hann window over 1280 (the 1/N folded into the
 * window), overlap-added into a 1280-sample buffer that is shifted by 320 after each frame; the
 * oldest 320 samples are divided by the squared-window envelope of the frames covering them
 * (tables computed in double at creation) and written to y: none for frame 0, the last 160 for
 * frame 1 ("same" padding trims 480), 320 after. */
typedef struct fkb_peer_frame fkb_peer_frame;

/* fftw_flags: the planner flags (FFTW_MEASURE). plan_desc receives FFTW's plan (fftwf_sprint_plan,
 * whitespace squeezed). NULL when out of memory or FFTW cannot plan. */
fkb_peer_frame *fkb_peer_frame_create(unsigned fftw_flags, char *plan_desc, size_t len);
void fkb_peer_frame_reset(fkb_peer_frame *p); /* a new stream: overlap-add buffer zeroed, t = 0 */
int fkb_peer_frame_run(fkb_peer_frame *p, const float *x, float *y, float clip); /* samples written */
void fkb_peer_frame_destroy(fkb_peer_frame *p);
const char *fkb_peer_frame_flags(void);

#endif /* FKB_FFT_H */
