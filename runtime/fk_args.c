/* runtime/fk_args.c: fk_leaf_check, a direct stamp call's argument struct checked against the
 * form's argument table (FK_FIELDS_<id> in fk_leaves.h, from the template): every pointer's
 * extent (the template's expression of the scalars, evaluated here with overflow detected), NULL
 * pointers the leaf would touch, ranges past the address space, and outputs overlapping any other
 * buffer the template does not name as an alias. Nothing is listed here: the forms, fields,
 * extents and aliases all come from the registry. */
#include <string.h>

#include "fk_internal.h"

/* The extents' arithmetic, overflow counted in *ovf (the expressions are int64_t throughout). */
static inline int64_t ext_add(int64_t x, int64_t y, int *ovf) {
  int64_t r;
  *ovf |= __builtin_add_overflow(x, y, &r);
  return r;
}
static inline int64_t ext_sub(int64_t x, int64_t y, int *ovf) {
  int64_t r;
  *ovf |= __builtin_sub_overflow(x, y, &r);
  return r;
}
static inline int64_t ext_mul(int64_t x, int64_t y, int *ovf) {
  int64_t r;
  *ovf |= __builtin_mul_overflow(x, y, &r);
  return r;
}
static inline int64_t ext_div(int64_t x, int64_t y, int *ovf) {
  if (y == 0 || (x == INT64_MIN && y == -1)) {
    *ovf = 1;
    return 0;
  }
  return x / y;
}
#undef FK_EXT_ADD
#undef FK_EXT_SUB
#undef FK_EXT_MUL
#undef FK_EXT_DIV
#undef FK_EXT_NEG
#define FK_EXT_ADD(x, y) ext_add((x), (y), ovf)
#define FK_EXT_SUB(x, y) ext_sub((x), (y), ovf)
#define FK_EXT_MUL(x, y) ext_mul((x), (y), ovf)
#define FK_EXT_DIV(x, y) ext_div((x), (y), ovf)
#define FK_EXT_NEG(x) ext_sub(0, (x), ovf)

typedef int64_t (*extent_fn)(const void *args, int *ovf);

#define EXTENT_FN(id, name, off, kind, elem, dir, extent, alias) \
  static int64_t extent_##id##_##name(const void *p, int *ovf) { \
    const fk_##id##_args *a = p; \
    (void)a; \
    (void)ovf; \
    return (int64_t)(extent); \
  }
#define FORM_EXTENTS(leaf, form, id, tiers, fx, fxarg) FK_FIELDS_##id(EXTENT_FN)
FK_FORMS(FORM_EXTENTS)

typedef struct field_row {
  const char *name;
  int offset, kind, elem, dir;
  extent_fn extent;
  const char *alias;
} field_row;

#define FIELD_ROW(id, name, off, kind, elem, dir, extent, alias) \
  { #name, off, kind, elem, dir, kind == FK_FIELD_PTR ? extent_##id##_##name : NULL, alias },
#define FORM_FIELDS(leaf, form, id, tiers, fx, fxarg) static const field_row fields_##id[] = { FK_FIELDS_##id(FIELD_ROW) };
FK_FORMS(FORM_FIELDS)

typedef struct form_row {
  const char *id;
  const field_row *fields;
  int nfields;
} form_row;

#define FORM_ROW(leaf, form, id, tiers, fx, fxarg) { #id, fields_##id, (int)(sizeof fields_##id / sizeof fields_##id[0]) },
static const form_row forms[] = { FK_FORMS(FORM_ROW) };
enum { NFORMS = sizeof forms / sizeof forms[0], MAXF = 32 };

static size_t elem_bytes(int elem) { return (size_t)FK_ELEM_BYTES(elem); }

static const char *dir_name(int dir) {
  return dir == FK_DIR_IN ? "input" : dir == FK_DIR_INOUT ? "in/out" : dir == FK_DIR_SCRATCH ? "scratch" : "output";
}

/* 1 when `name` is one of the '|'-separated names of `list` */
static int listed(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *end = strchr(p, '|');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && !strncmp(p, name, n)) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

fk_status fk_leaf_check(const char *form, const void *args, fk_error *err) {
  FK_RETURN_ERROR_IF(!form, err, FK_EINVAL, "fk_leaf_check: form is NULL");
  FK_RETURN_ERROR_IF(!args, err, FK_EINVAL, "fk_leaf_check: args is NULL");
  const form_row *f = NULL;
  for (int i = 0; i < NFORMS && !f; i++)
    if (!strcmp(forms[i].id, form)) f = &forms[i];
  FK_RETURN_ERROR_IF(!f, err, FK_ENOTFOUND, "fk_leaf_check: no leaf form '%s'", form);
  /* every pointer's byte range, from its extent */
  uintptr_t lo[MAXF] = { 0 };
  size_t bytes[MAXF] = { 0 };
  for (int i = 0; i < f->nfields && i < MAXF; i++) {
    const field_row *fd = &f->fields[i];
    if (fd->kind != FK_FIELD_PTR) continue;
    int ovf = 0;
    const int64_t e = fd->extent(args, &ovf);
    const void *p;
    memcpy(&p, (const unsigned char *)args + fd->offset, sizeof p);
    FK_RETURN_ERROR_IF(ovf, err, FK_EINVAL, "%s: %s (%s): its extent overflows int64 with these arguments", form,
                       fd->name, dir_name(fd->dir));
    FK_RETURN_ERROR_IF(e < -1, err, FK_EINVAL, "%s: %s (%s): extent %lld elements: an argument is negative", form,
                       fd->name, dir_name(fd->dir), (long long)e);
    if (e == -1) {   /* the data decides how far the leaf reads (a gather's table): NULL is all we see */
      FK_RETURN_ERROR_IF(!p, err, FK_EINVAL, "%s: %s (%s) is NULL", form, fd->name, dir_name(fd->dir));
      continue;
    }
    if (e == 0) continue;
    const size_t es = elem_bytes(fd->elem);
    FK_RETURN_ERROR_IF(!p, err, FK_EINVAL, "%s: %s (%s) is NULL, and the leaf touches %lld elements of it", form,
                       fd->name, dir_name(fd->dir), (long long)e);
    FK_RETURN_ERROR_IF((uint64_t)e > (uint64_t)PTRDIFF_MAX / es || (uintptr_t)p > UINTPTR_MAX - (uintptr_t)e * es, err,
                       FK_EINVAL, "%s: %s (%s): %lld elements from %p run past the address space", form, fd->name,
                       dir_name(fd->dir), (long long)e, p);
    lo[i] = (uintptr_t)p;
    bytes[i] = (size_t)e * es;
  }
  /* an output overlaps nothing but the inputs its template names */
  for (int i = 0; i < f->nfields && i < MAXF; i++) {
    const field_row *o = &f->fields[i];
    if (!bytes[i] || o->dir == FK_DIR_IN) continue;
    for (int j = 0; j < f->nfields && j < MAXF; j++) {
      const field_row *q = &f->fields[j];
      if (j == i || !bytes[j] || listed(o->alias, q->name)) continue;
      if (q->dir != FK_DIR_IN && j < i) continue;   /* two outputs: reported once */
      FK_RETURN_ERROR_IF(fk_overlap((const void *)lo[i], bytes[i], (const void *)lo[j], bytes[j]), err, FK_EINVAL,
                         "%s: %s (%s, %zu bytes) overlaps %s (%s, %zu bytes)%s%s", form, o->name, dir_name(o->dir),
                         bytes[i], q->name, dir_name(q->dir), bytes[j], o->alias[0] ? "; it may be only " : "",
                         o->alias);
    }
  }
  return FK_OK;
}
