/* tests/test_rmsnorm.c: RMSNorm stamps (templates/rmsnorm.lua), exact tier.
 *   exact:    every stamp == contract model, bit for bit, over >= 200 random shapes and every
 *             edge case, on x86_64 and on AArch64 (qemu -cpu max, -cpu neoverse-n1);
 *             AArch64 stamps == x86_64 stamps; AArch64 contract build == host contract build.
 *   fixtures: every stamp within the bound each fixture manifest derives (transformers'
 *             Lfm2RMSNorm and numpy float64), the residual commit bit-exact. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>

#include "suite.h"

FKT_LEAF_SUITE(rmsnorm, fkt_rmsnorm_cases)
