/* tests/harness/contract_call.c: the contract model of each form, behind the call interface. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../contract/contract.h"
#include "fkh.h"

typedef void (*contract_fn)(const void *args, fkc_perturb p);

/* The contract model of each form, from the registry: NULL where tests/contract/ has none (the
 * coverage test names such a form; a call of it fails). */
#define FKH_MODEL_ROW(leaf, form, id, tiers, fx, fxarg) (contract_fn)(void (*)(void))fkc_##id,
static const contract_fn models[] = { FK_FORMS(FKH_MODEL_ROW) };
/* The model of each form's fast tier, where that tier is deterministic (fkc_<id>_fast: the quantized
 * GEMV forms); NULL for every other form. */
#define FKH_FAST_MODEL_ROW(leaf, form, id, tiers, fx, fxarg) (contract_fn)(void (*)(void))fkc_##id##_fast,
static const contract_fn fast_models[] = { FK_FORMS(FKH_FAST_MODEL_ROW) };

int fkh_has_contract(int form) { return form >= 0 && form < fkh_nforms && models[form] != NULL; }

int fkh_has_fast_contract(int form) { return form >= 0 && form < fkh_nforms && fast_models[form] != NULL; }

void fkh_invoke_contract_tier(fkh_call *c, int perturb, int fast) {
  if (fast ? fkh_has_fast_contract(c->form) : fkh_has_contract(c->form)) {
    _Alignas(16) uint8_t s[256];
    fkh_fill_struct(c, s);   /* the contract reads the same struct the stamps read */
    (fast ? fast_models : models)[c->form](s, (fkc_perturb)perturb);
    return;
  }
  c->failed = 1;
  snprintf(c->why, sizeof c->why, "no %scontract model for form %s", fast ? "fast-tier " : "", fkh_forms[c->form].id);
}

void fkh_invoke_contract(fkh_call *c, int perturb) { fkh_invoke_contract_tier(c, perturb, 0); }
