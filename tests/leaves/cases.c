/* tests/leaves/cases.c: helpers shared by the case builders. */
#include "cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

fkh_call *fkt_push(fkt_list *l, const char *form_id, const char *name) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->calls = realloc(l->calls, (size_t)l->cap * sizeof *l->calls);
    if (!l->calls) {
      fprintf(stderr, "fkt: out of memory\n");
      exit(2);
    }
  }
  fkh_call *c = &l->calls[l->n++];
  fkh_call_init(c, form_id, name);
  return c;
}

void fkt_free_cases(fkh_call *calls, int n) {
  for (int i = 0; i < n; i++) fkh_call_free(&calls[i]);
  free(calls);
}

float fkt_f32(uint32_t bits) {
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t fkt_bf16_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

/* The case builders, by leaf, from the registry (weak: NULL where a leaf has none). */
#define FKT_BUILDER_ROW(leaf, path, gate, fast_tolerance) { #leaf, fkt_##leaf##_cases },
static const struct { const char *leaf; fkt_builder build; } builders[] = { FK_LEAVES(FKT_BUILDER_ROW) };

fkt_builder fkt_builder_of(const char *leaf) {
  for (size_t i = 0; i < sizeof builders / sizeof builders[0]; i++)
    if (strcmp(builders[i].leaf, leaf) == 0) return builders[i].build;
  return NULL;
}
