/* tests/test_istft.c: the detokenizer's ISTFT frame leaf (templates/istft.lua).
 *   exact:    every stamp == contract model bit for bit (frames 0..9 and later, random and zero
 *             states, the clip, exp edges, large phases, NaN), x86_64 and AArch64.
 *   fixtures: streams of frames (fixtures/istft: liquid-audio's ISTFT module and a float64
 *             re-implementation; 60-frame streams, T = 2 and 3, special values, the clip, a round
 *             trip through a float64 STFT) run frame by frame on the stamp's own ring, then the
 *             flush; the whole output within the derived per-sample bounds.
 * exact and fixtures run as leaf::exact and leaf::fixtures (tests/test_leaf.c, linked into this
 * suite). */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flashkern.h"
#include "suite.h"

