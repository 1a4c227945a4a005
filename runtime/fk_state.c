/* runtime/fk_state.c: the state's framing: fk_state_reset, _query, _bytes, _save, _load.
 *
 * Snapshot image (native byte order; a snapshot moves between runs of one host, not between
 * machines): "FKSTATE\0", u32 version, u32 programs, the header words (fk_state_head: i64 hidden,
 * i64 tail_in, i64 tokens, i64 frames, u64 the digest of every ready family's shapes), then each
 * ready family's bytes in table order (fk_families.c; what each holds: its fk_family.state_*),
 * then a u64 FNV-1a checksum of everything before it. This file checks what every image shares
 * (magic, version, programs, the header's shapes and digest, length, checksum, cursors) and asks
 * each family to check, save and load its own bytes. */
#include <string.h>

#include "fk_plan_internal.h"

enum { VERSION = 3, HEADER = 8 + 4 + 4 + 5 * 8 };
static const char MAGIC[8] = "FKSTATE";
/* the cursors a snapshot may carry: runs add to them without overflowing int64 */
#define CURSOR_MAX ((int64_t)1 << 62)

uint64_t fk_fnv1a(uint64_t h, const void *b, size_t n) {
  const unsigned char *c = b;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3u;
  return h;
}

/* The plan's header words: every ready family's, in table order. */
static fk_state_head head_of(const fk_plan *p) {
  fk_state_head h = { 0, 0, 0, 0, FK_FNV_BASIS };
  for (int i = 0; i < p->nfam; i++) p->fam[i].fam->state_head(p->fam[i].rec, &h);
  return h;
}

fk_status fk_state_reset(fk_plan *p) {
  if (!p) return FK_EINVAL;
  if (!fk_plan_claim(p)) return FK_EBUSY;
  for (int i = 0; i < p->nfam; i++) p->fam[i].fam->reset(p->fam[i].rec);
  fk_plan_release(p);
  return FK_OK;
}

fk_state_info fk_state_query(const fk_plan *p) {
  fk_state_info info = { 0 };
  if (!p) return info;
  for (int i = 0; i < p->nfam; i++) p->fam[i].fam->query(p->fam[i].rec, &info);
  return info;
}

fk_status fk_sampler_seed(fk_plan *p, uint64_t seed) {
  int n = 0;
  if (!p) return FK_EINVAL;
  for (int i = 0; i < p->nfam; i++) n += p->fam[i].fam->seed != NULL;
  if (!n) return FK_EINVAL;
  if (!fk_plan_claim(p)) return FK_EBUSY;
  for (int i = 0; i < p->nfam; i++)
    if (p->fam[i].fam->seed) p->fam[i].fam->seed(p->fam[i].rec, seed);
  fk_plan_release(p);
  return FK_OK;
}

size_t fk_state_bytes(const fk_plan *p) {
  if (!p) return 0;
  size_t n = HEADER + 8;
  for (int i = 0; i < p->nfam; i++) n += p->fam[i].fam->state_bytes(p->fam[i].rec);
  return n;
}

fk_status fk_state_save(const fk_plan *p, void *buf, size_t len, fk_error *err) {
  FK_RETURN_ERROR_IF(!p, err, FK_EINVAL, "fk_state_save: plan is NULL");
  FK_RETURN_ERROR_IF(!buf, err, FK_EINVAL, "fk_state_save: buf is NULL");
  size_t need = fk_state_bytes(p);
  FK_RETURN_ERROR_IF(len < need, err, FK_EINVAL, "fk_state_save: len = %zu: the snapshot needs %zu bytes", len, need);
  /* the plan is claimed for the copy, as fk_run claims it: no run can start mid-snapshot */
  fk_plan *q = (fk_plan *)(uintptr_t)p;
  FK_RETURN_ERROR_IF(!fk_plan_claim(q), err, FK_EBUSY, "fk_state_save: fk_run is in flight");
  unsigned char *o = buf;
  uint32_t version = VERSION, programs = p->programs;
  fk_state_head h = head_of(p);
  int64_t dims[5] = { h.hidden, h.tail_in, h.tokens, h.frames, (int64_t)h.digest };
  memcpy(o, MAGIC, 8);
  memcpy(o + 8, &version, 4);
  memcpy(o + 12, &programs, 4);
  memcpy(o + 16, dims, sizeof dims);
  size_t at = HEADER;
  for (int i = 0; i < p->nfam; i++) {
    p->fam[i].fam->state_save(p->fam[i].rec, o + at);
    at += p->fam[i].fam->state_bytes(p->fam[i].rec);
  }
  uint64_t sum = fk_fnv1a(FK_FNV_BASIS, o, at);
  memcpy(o + at, &sum, 8);
  fk_plan_release(q);
  return FK_OK;
}

#define LOAD_CHECK(cond, ...) FK_RETURN_ERROR_IF(cond, err, FK_ESTATE, "fk_state_load: " __VA_ARGS__)

fk_status fk_state_load(fk_plan *p, const void *buf, size_t len, fk_error *err) {
  FK_RETURN_ERROR_IF(!p, err, FK_EINVAL, "fk_state_load: plan is NULL");
  FK_RETURN_ERROR_IF(!buf, err, FK_EINVAL, "fk_state_load: buf is NULL");
  const unsigned char *in = buf;
  LOAD_CHECK(len < HEADER || memcmp(in, MAGIC, 8) != 0, "not a flashkern state snapshot (magic)");
  uint32_t version, programs;
  int64_t dims[5];
  memcpy(&version, in + 8, 4);
  memcpy(&programs, in + 12, 4);
  memcpy(dims, in + 16, sizeof dims);
  fk_state_head h = head_of(p);
  LOAD_CHECK(version != VERSION, "snapshot version %u, this library reads %u", version, (unsigned)VERSION);
  LOAD_CHECK(programs != p->programs, "snapshot of a plan with programs 0x%x, this plan has 0x%x", programs,
             p->programs);
  LOAD_CHECK(dims[0] != h.hidden, "snapshot of hidden = %lld, this plan has %lld", (long long)dims[0],
             (long long)h.hidden);
  LOAD_CHECK(dims[1] != h.tail_in, "snapshot of tail_in = %lld, this plan has %lld", (long long)dims[1],
             (long long)h.tail_in);
  LOAD_CHECK(dims[4] != (int64_t)h.digest, "snapshot of a plan whose model shapes differ from this plan's");
  size_t need = fk_state_bytes(p);
  LOAD_CHECK(len != need, "len = %zu: a snapshot of this plan is %zu bytes", len, need);
  uint64_t sum;
  memcpy(&sum, in + need - 8, 8);
  LOAD_CHECK(sum != fk_fnv1a(FK_FNV_BASIS, in, need - 8), "checksum mismatch (the image is damaged)");
  LOAD_CHECK(dims[2] < 0 || dims[3] < 0 || dims[2] > CURSOR_MAX || dims[3] > CURSOR_MAX,
             "cursors out of range (tokens %lld, frames %lld): each must be in 0..2^62", (long long)dims[2],
             (long long)dims[3]);
  size_t at = HEADER;
  for (int i = 0; i < p->nfam; i++) {
    const char *bad = p->fam[i].fam->state_check(p->fam[i].rec, in + at);
    LOAD_CHECK(bad, "%s", bad);
    at += p->fam[i].fam->state_bytes(p->fam[i].rec);
  }
  FK_RETURN_ERROR_IF(!fk_plan_claim(p), err, FK_EBUSY, "fk_state_load: fk_run is in flight");
  const fk_state_head loaded = { dims[0], dims[1], dims[2], dims[3], (uint64_t)dims[4] };
  at = HEADER;
  for (int i = 0; i < p->nfam; i++) {
    p->fam[i].fam->state_load(p->fam[i].rec, in + at, &loaded);
    at += p->fam[i].fam->state_bytes(p->fam[i].rec);
  }
  fk_plan_release(p);
  return FK_OK;
}
