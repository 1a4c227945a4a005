/* tests/harness/fkh.c: calls, buffers, targets, comparison and the runner protocol.
 * Compiled into the host test suites and into the AArch64 stamp runner. */
#define _GNU_SOURCE
#include "fkh.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---------------------------------------------------------------- registry tables ------ */

/* one function per pointer field: its extent over the argument struct */
#define FKH_EXTENT_FN(id, name, off, kind, elem, dir, extent, alias) \
  static int64_t extent_##id##_##name(const void *p) { \
    const fk_##id##_args *a = p; \
    (void)a; \
    return (int64_t)(extent); \
  }
#define FKH_DEF_EXTENTS(leaf, form, id, tiers, fx, fxarg) FK_FIELDS_##id(FKH_EXTENT_FN)
FK_FORMS(FKH_DEF_EXTENTS)
#define FKH_FIELD_ROW(id, name, off, kind, elem, dir, extent, alias) \
  { #name, off, kind, elem, dir, kind == FK_FIELD_PTR ? extent_##id##_##name : NULL, alias },
#define FKH_DEF_FIELDS(leaf, form, id, tiers, fx, fxarg) \
  static const fkh_field fields_##id[] = { FK_FIELDS_##id(FKH_FIELD_ROW) };
FK_FORMS(FKH_DEF_FIELDS)
#define FKH_DEF_FORM(leaf, form, id, tiers, fx, fxarg) \
  { #leaf, #form, #id, (int)sizeof(fk_##id##_args), (int)(sizeof fields_##id / sizeof fields_##id[0]), fields_##id, \
    tiers, fx, fxarg },
const fkh_form fkh_forms[] = { FK_FORMS(FKH_DEF_FORM) };
const int fkh_nforms = (int)(sizeof fkh_forms / sizeof fkh_forms[0]);
#define FKH_DEF_LEAF(leaf, path, gate, fast_tolerance) { #leaf, path, gate, fast_tolerance },
const fkh_leaf fkh_leaves[] = { FK_LEAVES(FKH_DEF_LEAF) };
const int fkh_nleaves = (int)(sizeof fkh_leaves / sizeof fkh_leaves[0]);

const fkh_leaf *fkh_leaf_of(const char *leaf) {
  for (int i = 0; i < fkh_nleaves; i++)
    if (strcmp(fkh_leaves[i].leaf, leaf) == 0) return &fkh_leaves[i];
  return NULL;
}

int fkh_form_index(const char *id) {
  for (int i = 0; i < fkh_nforms; i++)
    if (strcmp(fkh_forms[i].id, id) == 0) return i;
  return -1;
}

static void die(const char *what) {
  fprintf(stderr, "fkh: %s\n", what);
  exit(2);
}

/* ---------------------------------------------------------------- buffers -------------- */

static uint8_t guard_byte(size_t i) { return (uint8_t)(0xa5u ^ (i * 29u)); }

/* -1: not read yet (the environment decides at the first allocation) */
static int guard_mode = -1;

static int parse_mode(const char *v) {
  if (!v || !*v || !strcmp(v, "canary") || !strcmp(v, "0") || !strcmp(v, "off")) return FKH_GUARD_CANARY;
  if (!strcmp(v, "end")) return FKH_GUARD_END;
  if (!strcmp(v, "start")) return FKH_GUARD_START;
  fprintf(stderr, "fkh: FKH_GUARD_PAGES=%s: expected end, start or canary\n", v);
  exit(2);
}

int fkh_guard_mode(void) {
  if (guard_mode < 0) guard_mode = parse_mode(getenv("FKH_GUARD_PAGES"));
  return guard_mode;
}

const char *fkh_guard_mode_name(int mode) {
  return mode == FKH_GUARD_END ? "end" : mode == FKH_GUARD_START ? "start" : "canary";
}

void fkh_set_guard_mode(int mode) {
  guard_mode = mode == FKH_GUARD_END || mode == FKH_GUARD_START ? mode : FKH_GUARD_CANARY;
  if (guard_mode == FKH_GUARD_CANARY) unsetenv("FKH_GUARD_PAGES");
  else setenv("FKH_GUARD_PAGES", fkh_guard_mode_name(guard_mode), 1);
}

static size_t page_size(void) {
  static size_t ps;
  if (!ps) {
    long p = sysconf(_SC_PAGESIZE);
    ps = p > 0 ? (size_t)p : 4096;
  }
  return ps;
}

/* Guard-page modes: one mapping, its first (START) or last (END) page PROT_NONE. */
static void guard_alloc(fkh_buf *b, size_t nbytes, int mode) {
  size_t ps = page_size(), span = nbytes + 2 * FKH_GUARD;
  size_t body = (span + ps - 1) / ps * ps;
  b->maplen = body + ps;
  void *m = mmap(NULL, b->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    fprintf(stderr, "fkh: mmap of %zu bytes: %s\n", b->maplen, strerror(errno));
    exit(2);
  }
  b->map = m;
  uint8_t *guard = mode == FKH_GUARD_END ? b->map + body : b->map;
  if (mprotect(guard, ps, PROT_NONE) != 0) {
    fprintf(stderr, "fkh: mprotect: %s\n", strerror(errno));
    exit(2);
  }
  if (mode == FKH_GUARD_END) {
    b->data = guard - nbytes;            /* data + nbytes == the guard page */
    b->alloc = b->data - 2 * FKH_GUARD;
    for (size_t i = 0; i < 2 * FKH_GUARD; i++) b->alloc[i] = guard_byte(i);
  } else {
    b->data = b->map + ps;               /* data[-1] is in the guard page */
    b->alloc = b->data;
    for (size_t i = 0; i < 2 * FKH_GUARD; i++) b->data[nbytes + i] = guard_byte(i + 7);
  }
}

void fkh_buf_alloc(fkh_buf *b, size_t nbytes) {
  b->mode = fkh_guard_mode();
  b->nbytes = nbytes;
  if (b->mode != FKH_GUARD_CANARY) {
    guard_alloc(b, nbytes, b->mode);
    return;   /* a fresh mapping is zeroed */
  }
  b->map = NULL;
  b->maplen = 0;
  b->alloc = malloc(nbytes + 2 * FKH_GUARD);
  if (!b->alloc) die("out of memory");
  b->data = b->alloc + FKH_GUARD;
  for (size_t i = 0; i < FKH_GUARD; i++) {
    b->alloc[i] = guard_byte(i);
    b->data[nbytes + i] = guard_byte(i + 7);
  }
  memset(b->data, 0, nbytes);
}

void fkh_buf_free(fkh_buf *b) {
  if (b->map) munmap(b->map, b->maplen);
  else free(b->alloc);
  memset(b, 0, sizeof *b);
}

int fkh_buf_guards_ok(const fkh_buf *b) {
  if (!b->alloc) return 1;
  if (b->mode == FKH_GUARD_END) {
    for (size_t i = 0; i < 2 * FKH_GUARD; i++)
      if (b->alloc[i] != guard_byte(i)) return 0;
    return 1;
  }
  if (b->mode == FKH_GUARD_START) {
    for (size_t i = 0; i < 2 * FKH_GUARD; i++)
      if (b->data[b->nbytes + i] != guard_byte(i + 7)) return 0;
    return 1;
  }
  for (size_t i = 0; i < FKH_GUARD; i++)
    if (b->alloc[i] != guard_byte(i) || b->data[b->nbytes + i] != guard_byte(i + 7)) return 0;
  return 1;
}

int fkh_locate(const fkh_call *c, const void *addr, char *out, size_t len) {
  const fkh_form *f = &fkh_forms[c->form];
  uintptr_t a = (uintptr_t)addr, best = UINTPTR_MAX;
  int found = 0;
  snprintf(out, len, "not near any buffer of the call");
  for (int i = 0; i < f->nfields; i++) {
    const fkh_buf *b = &c->v[i].buf;
    if (f->fields[i].kind != FK_FIELD_PTR || !b->alloc) continue;
    uintptr_t lo = (uintptr_t)b->data, hi = lo + b->nbytes, d;
    if (a >= lo && a < hi) {
      snprintf(out, len, "inside field '%s' at data[+%zu] (nbytes %zu)", f->fields[i].name, (size_t)(a - lo), b->nbytes);
      return 1;
    }
    d = a >= hi ? a - hi : lo - a;
    if (d < best && d < 1u << 20) {
      best = d;
      found = 1;
      if (a >= hi)
        snprintf(out, len, "%zu bytes past the end of field '%s' (data %p, nbytes %zu, %s mode)", (size_t)(a - hi),
                 f->fields[i].name, (void *)b->data, b->nbytes, fkh_guard_mode_name(b->mode));
      else
        snprintf(out, len, "%zu bytes before the start of field '%s' (data %p, nbytes %zu, %s mode)", (size_t)(lo - a),
                 f->fields[i].name, (void *)b->data, b->nbytes, fkh_guard_mode_name(b->mode));
    }
  }
  return found;
}

/* ---------------------------------------------------------------- calls ---------------- */

void fkh_call_init(fkh_call *c, const char *form_id, const char *name) {
  memset(c, 0, sizeof *c);
  c->form = fkh_form_index(form_id);
  if (c->form < 0) die("unknown form");
  snprintf(c->name, sizeof c->name, "%s", name);
}

int fkh_field_index(const fkh_call *c, const char *field) {
  const fkh_form *f = &fkh_forms[c->form];
  for (int i = 0; i < f->nfields; i++)
    if (strcmp(f->fields[i].name, field) == 0) return i;
  return -1;
}

static int need_field(const fkh_call *c, const char *field, int kind) {
  int i = fkh_field_index(c, field);
  if (i < 0 || fkh_forms[c->form].fields[i].kind != kind) {
    fprintf(stderr, "fkh: form %s has no %s field '%s'\n", fkh_forms[c->form].id,
            kind == FK_FIELD_PTR ? "pointer" : kind == FK_FIELD_F32 ? "float" : "integer", field);
    exit(2);
  }
  return i;
}

void fkh_set_i64(fkh_call *c, const char *field, int64_t v) { c->v[need_field(c, field, FK_FIELD_I64)].i64 = v; }
void fkh_set_f32(fkh_call *c, const char *field, float v) { c->v[need_field(c, field, FK_FIELD_F32)].f32 = v; }
int64_t fkh_i64_of(const fkh_call *c, const char *field) { return c->v[need_field(c, field, FK_FIELD_I64)].i64; }

static size_t elem_size(int elem) { return (size_t)FK_ELEM_BYTES(elem); }

int64_t fkh_extent(const fkh_call *c, int field) {
  const fkh_field *fd = &fkh_forms[c->form].fields[field];
  if (fd->kind != FK_FIELD_PTR) die("fkh_extent: not a pointer field");
  _Alignas(16) uint8_t s[256];
  fkh_fill_struct(c, s);
  return fd->extent(s);
}

void *fkh_set_buf(fkh_call *c, const char *field, size_t n) {
  int i = need_field(c, field, FK_FIELD_PTR);
  fkh_buf_free(&c->v[i].buf);
  fkh_buf_alloc(&c->v[i].buf, n * elem_size(fkh_forms[c->form].fields[i].elem));
  return c->v[i].buf.data;
}

void *fkh_buf_of(fkh_call *c, const char *field) { return c->v[need_field(c, field, FK_FIELD_PTR)].buf.data; }

void fkh_call_copy(fkh_call *dst, const fkh_call *src) {
  *dst = *src;
  const fkh_form *f = &fkh_forms[src->form];
  for (int i = 0; i < f->nfields; i++) {
    if (f->fields[i].kind != FK_FIELD_PTR || !src->v[i].buf.alloc) continue;
    fkh_buf_alloc(&dst->v[i].buf, src->v[i].buf.nbytes);
    if (dst->v[i].buf.mode == src->v[i].buf.mode)   /* the same layout: data and canaries */
      memcpy(dst->v[i].buf.alloc, src->v[i].buf.alloc, src->v[i].buf.nbytes + 2 * FKH_GUARD);
    else
      memcpy(dst->v[i].buf.data, src->v[i].buf.data, src->v[i].buf.nbytes);
  }
}

void fkh_call_free(fkh_call *c) {
  for (int i = 0; i < FKH_MAX_FIELDS; i++) fkh_buf_free(&c->v[i].buf);
}

/* ---------------------------------------------------------------- local execution ------ */

void fkh_fill_struct(const fkh_call *c, uint8_t *s) {
  const fkh_form *f = &fkh_forms[c->form];
  memset(s, 0, (size_t)f->size);
  for (int i = 0; i < f->nfields; i++) {
    const fkh_field *fd = &f->fields[i];
    if (fd->kind == FK_FIELD_PTR) {
      void *p = c->v[i].buf.data;
      memcpy(s + fd->offset, &p, sizeof p);
    } else if (fd->kind == FK_FIELD_I64) {
      memcpy(s + fd->offset, &c->v[i].i64, 8);
    } else {
      memcpy(s + fd->offset, &c->v[i].f32, 4);
    }
  }
}

static void check_guards(fkh_call *c, const char *who) {
  const fkh_form *f = &fkh_forms[c->form];
  for (int i = 0; i < f->nfields; i++) {
    if (f->fields[i].kind == FK_FIELD_PTR && !fkh_buf_guards_ok(&c->v[i].buf)) {
      c->failed = 1;
      snprintf(c->why, sizeof c->why, "%s wrote outside buffer '%s'", who, f->fields[i].name);
      return;
    }
  }
}

void fkh_invoke(fkh_call *c, fkh_fn fn) {
  _Alignas(16) uint8_t s[256];
  fkh_fill_struct(c, s);
  fn(s);
  check_guards(c, "stamp");
}

/* ---------------------------------------------------------------- host stamps ---------- */

#ifdef FK_STAMPS_HOST
typedef struct { const char *id, *variant, *symbol; fkh_fn fn; uint64_t features; } host_stamp;
#define FKH_HOST_ROW(id, variant, tier, symbol, features) \
  { #id, #variant, #symbol, (fkh_fn)(void (*)(void))symbol, features },
static const host_stamp host_stamps[] = { FK_STAMPS_HOST(FKH_HOST_ROW) };

fkh_fn fkh_host_stamp(int form, const char *variant, uint64_t *features) {
  for (size_t i = 0; i < sizeof host_stamps / sizeof host_stamps[0]; i++) {
    if (strcmp(host_stamps[i].id, fkh_forms[form].id) == 0 && strcmp(host_stamps[i].variant, variant) == 0) {
      if (features) *features = host_stamps[i].features;
      return host_stamps[i].fn;
    }
  }
  return NULL;
}
#endif

/* ---------------------------------------------------------------- runner protocol ------ */
/* Little-endian on both ends. Calls: "FKH1" u32 ncalls, suffix; per call: id, name, i32 nan
 * policy, then per field in struct order: i64 | f32 | u64 nbytes + bytes. Results: "FKR1";
 * per call: i32 failed, why, then per out/inout field: u64 nbytes + bytes. */

static int wbytes(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n ? 0 : -1; }
static int rbytes(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n ? 0 : -1; }
static int wstr(FILE *f, const char *s) {
  uint32_t n = (uint32_t)strlen(s);
  return wbytes(f, &n, 4) || wbytes(f, s, n);
}
static int rstr(FILE *f, char *s, size_t cap) {
  uint32_t n;
  if (rbytes(f, &n, 4) || n >= cap) return -1;
  if (rbytes(f, s, n)) return -1;
  s[n] = 0;
  return 0;
}

int fkh_write_calls(const char *path, const fkh_call *calls, int ncalls, const char *suffix) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  uint32_t n = (uint32_t)ncalls;
  int bad = wbytes(f, "FKH2", 4) || wbytes(f, &n, 4) || wstr(f, suffix);
  for (int k = 0; k < ncalls && !bad; k++) {
    const fkh_call *c = &calls[k];
    const fkh_form *fm = &fkh_forms[c->form];
    bad = wstr(f, fm->id) || wstr(f, c->name);
    for (int i = 0; i < fm->nfields && !bad; i++) {
      if (fm->fields[i].kind == FK_FIELD_I64) bad = wbytes(f, &c->v[i].i64, 8);
      else if (fm->fields[i].kind == FK_FIELD_F32) bad = wbytes(f, &c->v[i].f32, 4);
      else {
        uint64_t nb = c->v[i].buf.nbytes;
        bad = wbytes(f, &nb, 8) || wbytes(f, c->v[i].buf.data, nb);
      }
    }
  }
  return (fclose(f) != 0 || bad) ? -1 : 0;
}

int fkh_read_calls(const char *path, fkh_call **out, int *nout, char *suffix, size_t suffixlen) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  char magic[4];
  uint32_t n;
  if (rbytes(f, magic, 4) || memcmp(magic, "FKH2", 4) || rbytes(f, &n, 4) || rstr(f, suffix, suffixlen)) {
    fclose(f);
    return -1;
  }
  fkh_call *calls = calloc(n ? n : 1, sizeof *calls);
  if (!calls) die("out of memory");
  int bad = 0;
  for (uint32_t k = 0; k < n && !bad; k++) {
    char id[64], name[96];
    bad = rstr(f, id, sizeof id) || rstr(f, name, sizeof name);
    if (bad || fkh_form_index(id) < 0) { bad = 1; break; }
    fkh_call_init(&calls[k], id, name);
    const fkh_form *fm = &fkh_forms[calls[k].form];
    for (int i = 0; i < fm->nfields && !bad; i++) {
      if (fm->fields[i].kind == FK_FIELD_I64) bad = rbytes(f, &calls[k].v[i].i64, 8);
      else if (fm->fields[i].kind == FK_FIELD_F32) bad = rbytes(f, &calls[k].v[i].f32, 4);
      else {
        uint64_t nb;
        bad = rbytes(f, &nb, 8);
        if (!bad) {
          fkh_buf_alloc(&calls[k].v[i].buf, (size_t)nb);
          bad = rbytes(f, calls[k].v[i].buf.data, (size_t)nb);
        }
      }
    }
  }
  fclose(f);
  if (bad) {
    for (uint32_t k = 0; k < n; k++) fkh_call_free(&calls[k]);
    free(calls);
    return -1;
  }
  *out = calls;
  *nout = (int)n;
  return 0;
}

int fkh_write_results(const char *path, const fkh_call *calls, int ncalls) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int bad = wbytes(f, "FKR1", 4);
  for (int k = 0; k < ncalls && !bad; k++) {
    const fkh_call *c = &calls[k];
    const fkh_form *fm = &fkh_forms[c->form];
    int32_t failed = c->failed;
    bad = wbytes(f, &failed, 4) || wstr(f, c->why);
    for (int i = 0; i < fm->nfields && !bad; i++) {
      if (fm->fields[i].kind != FK_FIELD_PTR || fm->fields[i].dir == FK_DIR_IN || fm->fields[i].dir == FK_DIR_SCRATCH)
        continue;
      uint64_t nb = c->v[i].buf.nbytes;
      bad = wbytes(f, &nb, 8) || wbytes(f, c->v[i].buf.data, nb);
    }
  }
  return (fclose(f) != 0 || bad) ? -1 : 0;
}

int fkh_read_results(const char *path, fkh_call *calls, int ncalls, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "no results file %s: %s", path, strerror(errno));
    return -1;
  }
  char magic[4];
  int bad = rbytes(f, magic, 4) || memcmp(magic, "FKR1", 4);
  for (int k = 0; k < ncalls && !bad; k++) {
    fkh_call *c = &calls[k];
    const fkh_form *fm = &fkh_forms[c->form];
    int32_t failed;
    bad = rbytes(f, &failed, 4) || rstr(f, c->why, sizeof c->why);
    c->failed = failed;
    for (int i = 0; i < fm->nfields && !bad; i++) {
      if (fm->fields[i].kind != FK_FIELD_PTR || fm->fields[i].dir == FK_DIR_IN || fm->fields[i].dir == FK_DIR_SCRATCH)
        continue;
      uint64_t nb;
      bad = rbytes(f, &nb, 8) || nb != c->v[i].buf.nbytes || rbytes(f, c->v[i].buf.data, (size_t)nb);
    }
  }
  fclose(f);
  if (bad) snprintf(err, errlen, "malformed results file %s", path);
  return bad ? -1 : 0;
}

/* ---------------------------------------------------------------- comparison ----------- */

int fkh_same_outputs(const fkh_call *a, const fkh_call *b, char *msg, size_t msglen) {
  const fkh_form *fm = &fkh_forms[a->form];
  if (a->failed || b->failed) {
    snprintf(msg, msglen, "%s: %s", a->name, a->failed ? a->why : b->why);
    return 0;
  }
  for (int i = 0; i < fm->nfields; i++) {
    const fkh_field *fd = &fm->fields[i];
    if (fd->kind != FK_FIELD_PTR || fd->dir == FK_DIR_IN || fd->dir == FK_DIR_SCRATCH) continue;
    const fkh_buf *x = &a->v[i].buf, *y = &b->v[i].buf;
    size_t es = elem_size(fd->elem), n = x->nbytes / es, bad = 0, first = 0;
    uint64_t ux = 0, uy = 0;
    for (size_t k = 0; k < n; k++) {
      uint64_t p = 0, q = 0;
      memcpy(&p, x->data + k * es, es);
      memcpy(&q, y->data + k * es, es);
      if (p == q) continue;   /* bits, NaNs included: the exact tier stores one canonical NaN */
      if (bad++ == 0) { first = k; ux = p; uy = q; }
    }
    if (bad) {
      snprintf(msg, msglen, "%s: field %s: %zu of %zu elements differ, first at [%zu]: 0x%0*llx vs 0x%0*llx",
               a->name, fd->name, bad, n, first, (int)(2 * es), (unsigned long long)ux, (int)(2 * es),
               (unsigned long long)uy);
      return 0;
    }
  }
  return 1;
}

/* ---------------------------------------------------------------- randomness ----------- */

uint64_t fkh_next(fkh_rng *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int64_t fkh_range(fkh_rng *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(fkh_next(r) % (uint64_t)(hi - lo + 1));
}

float fkh_f32(fkh_rng *r, int emin, int emax) {
  uint64_t z = fkh_next(r);
  int e = (int)fkh_range(r, emin, emax);
  uint32_t u = (uint32_t)(z & 0x7fffffu) | ((uint32_t)(z >> 63) << 31);
  if (e >= -126) u |= (uint32_t)(e + 127) << 23;   /* below: subnormal (exponent field 0) */
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t fkh_bf16(fkh_rng *r, int emin, int emax) {
  float f = fkh_f32(r, emin, emax);
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);    /* truncation: a random bf16 value, no rounding involved */
}
