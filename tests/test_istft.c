/* tests/test_istft.c: the detokenizer's ISTFT frame leaf (templates/istft.lua).
 *   exact: every stamp == contract model bit for bit (frames 0..9 and later, random and zero
 *          states, the clip, exp edges, large phases, NaN), x86_64 and AArch64. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flashkern.h"
#include "suite.h"

FKT_EXACT_SUITE(istft, fkt_istft_cases)
