/* runtime/fk_families.c: the table of program families, the one place the engine names them.
 *
 * A family lives in its own file behind one fk_family (fk_plan_internal.h); adding one is a row
 * here. The order is the order readiness checks and lays out the families and the order of
 * their bytes in a state snapshot. */
#include "fk_plan_internal.h"

extern const fk_family fk_block_family; /* fk_prog_block.c: the ShortConv block, FK_PROGRAMS_BLOCK */
extern const fk_family fk_tail_family;  /* fk_prog_tail.c: the spectral tail, FK_PROGRAMS_TAIL */
extern const fk_family fk_lm_family;    /* fk_prog_lm.c: the LFM2 language model, FK_PROGRAMS_LM */
extern const fk_family fk_detok_family; /* fk_prog_detok.c: the LFM2.5 detokenizer, FK_PROGRAMS_DETOK */
extern const fk_family fk_audio_family; /* fk_prog_audio.c: LFM2.5-Audio's generation, FK_PROGRAMS_AUDIO */

const fk_family *const fk_families[] = { &fk_block_family, &fk_tail_family, &fk_lm_family, &fk_detok_family,
                                         &fk_audio_family };
const int fk_nfamilies = (int)(sizeof fk_families / sizeof fk_families[0]);

/* a plan holds at most one family per program (fk_plan.fam) */
_Static_assert(sizeof fk_families / sizeof fk_families[0] <= FK_PROG_COUNT, "more families than programs");
