/* tests/test_coverage.c: every form of the registry (FK_FORMS in generated/fk_leaves.h) has its
 * evidence, or the test fails naming the form and what is missing:
 *   - a contract model, for a form with an exact tier (tests/contract/<leaf>.c: fkc_<id>);
 *   - a case builder for its leaf (tests/leaves/cases_<leaf>.c: fkt_<leaf>_cases) that builds at
 *     least one case of the form, every buffer at least its field's extent;
 *   - fixtures: its own (a manifest in fixtures/<leaf>/ naming the form), its base form's (FK_FX_VIA:
 *     the base has its own), or an exemption with the template's reason (FK_FX_EXEMPT, printed);
 *   - for a form with a fast tier: its leaf's fast-tier tolerance class, and fixtures (its own or its
 *     base's) with a boundary of a fast-tier class (a tolerance id containing `_fast_`: gemv_fast_f64,
 *     gemv_q_fast_f64 for the quantized GEMV forms).
 * The models and builders are declared weak (tests/contract/contract.h, tests/leaves/cases.h), so a
 * missing one is a NULL here, not a link error. Plain C: prints one line per form and a summary.
 *   test_coverage [FIXTURE_DIR] */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fkh.h"
#include "leaves/cases.h"

#ifndef FKT_FIXTURE_DIR
#define FKT_FIXTURE_DIR "fixtures"
#endif

/* What the manifests of fixtures/<leaf>/ say of a form: 1 when one names it (`form <name>`), and
 * through *has_class whether one of those has a boundary of a fast-tier class when cls is not NULL
 * (a tolerance id containing `_fast_`: the leaf's class, or a class of its own such as the quantized
 * GEMV forms' gemv_q_fast_f64; fixtures/README.md, "Tolerance ids"). */
static int manifests_name(const char *dir, const char *leaf, const char *form, const char *cls, int *has_class) {
  char path[1024], line[4096];
  snprintf(path, sizeof path, "%s/%s", dir, leaf);
  DIR *d = opendir(path);
  int named = 0;
  if (has_class) *has_class = 0;
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len < 10 || strcmp(e->d_name + len - 9, ".manifest") != 0) continue;
    char file[2048];
    snprintf(file, sizeof file, "%s/%s", path, e->d_name);
    FILE *f = fopen(file, "r");
    if (!f) continue;
    int mine = 0, cls_here = 0;
    while (fgets(line, sizeof line, f)) {
      line[strcspn(line, "\n")] = 0;
      if (!strncmp(line, "form ", 5) && !strcmp(line + 5, form)) mine = 1;
      if (cls && !strncmp(line, "boundary ", 9)) {
        const char *last = strrchr(line, ' ');
        if (last && strstr(last + 1, "_fast_")) cls_here = 1;
      }
    }
    fclose(f);
    named |= mine;
    if (mine && cls_here && has_class) *has_class = 1;
  }
  closedir(d);
  return named;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : FKT_FIXTURE_DIR;
  int fails = 0, exempt = 0, via = 0, own = 0;
  for (int f = 0; f < fkh_nforms; f++) {
    const fkh_form *fm = &fkh_forms[f];
    const fkh_leaf *leaf = fkh_leaf_of(fm->leaf);
    char why[1024] = "";
    size_t at = 0;
#define MISSING(...) (at += (size_t)snprintf(why + at, at < sizeof why ? sizeof why - at : 0, __VA_ARGS__))
    if ((fm->tiers & FK_TIERS_EXACT) && !fkh_has_contract(f))
      MISSING("; no contract model (tests/contract/%s.c: fkc_%s)", fm->leaf, fm->id);
    fkt_builder build = fkt_builder_of(fm->leaf);
    if (!build) {
      MISSING("; no case builder (tests/leaves/cases_%s.c: fkt_%s_cases)", fm->leaf, fm->leaf);
    } else {
      fkh_call *calls;
      int n = build(fm->id, &calls), short_bufs = 0;
      for (int i = 0; i < n; i++)
        for (int k = 0; k < fm->nfields; k++) {
          const fkh_field *fd = &fm->fields[k];
          if (fd->kind != FK_FIELD_PTR) continue;
          int64_t e = fkh_extent(&calls[i], k);
          size_t es = (size_t)FK_ELEM_BYTES(fd->elem);
          if (e > 0 && calls[i].v[k].buf.nbytes < (size_t)e * es && short_bufs++ == 0)
            MISSING("; case %s: field %s holds %zu elements, its extent %lld", calls[i].name, fd->name,
                    calls[i].v[k].buf.nbytes / es, (long long)e);
        }
      if (n < 1) MISSING("; the case builder builds no case of it");
      if (n > 0) fkt_free_cases(calls, n);
    }
    const char *base_form = fm->form;
    if (fm->fixtures == FK_FX_VIA) {
      int b = fkh_form_index(fm->fixtures_arg);
      if (b < 0 || fkh_forms[b].fixtures != FK_FX_OWN) MISSING("; fixtures via %s, which has none of its own", fm->fixtures_arg);
      else base_form = fkh_forms[b].form;
    }
    int has_fast = 0;
    const char *cls = (fm->tiers & FK_TIERS_FAST) ? (leaf ? leaf->fast_tolerance : "") : NULL;
    if (cls && !cls[0]) MISSING("; a fast tier without a tolerance class (the template's tolerance.fast)");
    if (fm->fixtures != FK_FX_EXEMPT) {
      if (!leaf || leaf->gate == FK_GATE_NONE) MISSING("; fixtures without a fixture gate");
      else if (!manifests_name(dir, fm->leaf, base_form, cls, &has_fast))
        MISSING("; no fixture in %s/%s names form %s", dir, fm->leaf, base_form);
      else if (cls && cls[0] && !has_fast) MISSING("; no fixture of form %s has a fast-tier boundary (a tolerance id "
                                                   "containing _fast_, the leaf's being %s)", base_form, cls);
    } else if (cls) {
      MISSING("; a fast tier needs fixtures with its tolerance class, not an exemption");
    }
    if (at) {
      printf("FAIL %-32s %s\n", fm->id, why + 2);
      fails++;
    } else if (fm->fixtures == FK_FX_EXEMPT) {
      printf("ok   %-32s exempt from fixtures: %s\n", fm->id, fm->fixtures_arg);
      exempt++;
    } else {
      printf("ok   %-32s %s%s%s\n", fm->id, fm->fixtures == FK_FX_VIA ? "fixtures via " : "fixtures of its own",
             fm->fixtures == FK_FX_VIA ? fm->fixtures_arg : "", cls ? ", fast tier class present" : "");
      if (fm->fixtures == FK_FX_VIA) via++;
      else own++;
    }
  }
  printf("coverage: %d forms of %d leaves: %d with their own fixtures, %d via a base form, %d exempt, %d failing\n",
         fkh_nforms, fkh_nleaves, own, via, exempt, fails);
  return fails ? 1 : 0;
}
