/* runtime/fk_leaf.c: the variant table and resolution of a form to one stamp.
 * The table comes from the registry (FK_STAMPS_HOST in fk_leaves.h); nothing is listed here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fk_internal.h"

typedef struct stamp_row {
  const char *form, *variant, *tier, *symbol;
  fk_leaf_fn fn;
  uint64_t features;
} stamp_row;

#define FK_STAMP_ROW(id, variant, tier, symbol, features) \
  { #id, #variant, #tier, #symbol, (fk_leaf_fn)(void (*)(void))symbol, features },
static const stamp_row stamps[] = { FK_STAMPS_HOST(FK_STAMP_ROW) };
enum { NSTAMPS = sizeof stamps / sizeof stamps[0] };

static const char *const tier_names[] = { [FK_TIER_EXACT] = "exact", [FK_TIER_FAST] = "fast" };

fk_status fk_leaf_resolve(const char *form, fk_tier tier, uint64_t features, fk_leaf *out, fk_error *err) {
  FK_RETURN_ERROR_IF(!form, err, FK_EINVAL, "fk_leaf_resolve: form is NULL");
  FK_RETURN_ERROR_IF(!out, err, FK_EINVAL, "fk_leaf_resolve: out is NULL");
  FK_RETURN_ERROR_IF((unsigned)tier > FK_TIER_FAST, err, FK_EINVAL, "fk_leaf_resolve: tier %d is not a tier", (int)tier);
  /* a mask meant to hide features that cannot be read is refused, not guessed at */
  fk_status s = fk_cpu_mask_check("fk_leaf_resolve", err);
  if (s != FK_OK) return s;
  return fk_leaf_pick(form, tier, features, "not in the features passed", out, err);
}

fk_status fk_leaf_pick(const char *form, fk_tier tier, uint64_t features, const char *excluded_by, fk_leaf *out,
                       fk_error *err) {
  const char *tname = tier_names[tier];
  const stamp_row *best = NULL, *narrowest = NULL;
  int known = 0;
  /* registry order lists each form's variants from narrowest to widest: keep the last fit */
  for (int i = 0; i < NSTAMPS; i++) {
    if (strcmp(stamps[i].form, form) != 0) continue;
    known = 1;
    if (strcmp(stamps[i].tier, tname) != 0) continue;
    if (!narrowest) narrowest = &stamps[i];
    if ((stamps[i].features & ~features) == 0) best = &stamps[i];
  }
  FK_RETURN_ERROR_IF(!known, err, FK_ENOTFOUND, "no leaf form '%s'", form);
  FK_RETURN_ERROR_IF(!narrowest, err, FK_ENOTFOUND, "leaf '%s' has no %s-tier stamp", form, tname);
  if (!best) {
    char why[160], have[128];
    fk_cpu_explain(narrowest->features, features, excluded_by, why, sizeof why);
    fk_cpu_feature_names(features, have, sizeof have);
    return fk_error_set(err, FK_EUNSUPPORTED, __FILE__, __LINE__,
                        "leaf '%s' (%s tier): %s (the narrowest stamp, %s, needs them; usable: %s)", form, tname, why,
                        narrowest->variant, have[0] ? have : "none");
  }
  *out = (fk_leaf){ best->fn, best->form, best->symbol, best->variant, best->tier };
  if (getenv("FK_VARIANT_DEBUG")) fprintf(stderr, "flashkern: %s -> %s\n", form, best->symbol);
  return FK_OK;
}
