/* runtime/fk_state.c: the state that carries across calls and turns, and its snapshots.
 *
 * Snapshot image (native byte order; a snapshot moves between runs of one host, not between
 * machines): "FKSTATE\0", u32 version, u32 programs, i64 hidden, i64 tail_in, i64 tokens,
 * i64 frames, u64 the model shapes' digest, the carry (2 x hidden bf16, block plans), the OLA
 * ring (1280 f32, tail plans), the model programs' state (fk_model.c: positions, carries, KV
 * caches, the detokenizer's frames and ring, the sampler's seed and draws), then a u64 FNV-1a
 * checksum of everything before it. */
#include <string.h>

#include "fk_plan_internal.h"

enum { VERSION = 2, HEADER = 8 + 4 + 4 + 5 * 8 };
static const char MAGIC[8] = "FKSTATE";
/* the cursors a snapshot may carry: runs add to them without overflowing int64 */
#define CURSOR_MAX ((int64_t)1 << 62)

static uint64_t fnv1a(const unsigned char *b, size_t n) {
  uint64_t hsh = 0xcbf29ce484222325u;
  for (size_t i = 0; i < n; i++) hsh = (hsh ^ b[i]) * 0x100000001b3u;
  return hsh;
}

static size_t carry_bytes(const fk_plan *p) { return p->programs & FK_PROGRAMS_BLOCK ? (size_t)(2 * p->h) * 2 : 0; }
static size_t ring_bytes(const fk_plan *p) { return p->programs & FK_PROGRAMS_TAIL ? FK_ISTFT_RING * 4 : 0; }

/* Every model shape the state image depends on, hashed: a snapshot only loads into a plan of
 * the same shapes. */
static uint64_t shape_digest(const fk_plan *p) {
  int64_t v[16 + 2 * FK_MAX_LAYERS];
  size_t n = 0;
  v[n++] = p->vocab;
  v[n++] = p->cb_vocab;
  for (int si = 0; si < 2; si++) {
    const fk_stack_rt *t = &p->stack[si];
    v[n++] = t->on ? t->h : 0;
    v[n++] = t->ffn;
    v[n++] = t->heads;
    v[n++] = t->kv;
    v[n++] = t->slots;
    v[n++] = t->layers;
    for (int64_t i = 0; i < t->layers; i++) v[n++] = t->layer[i].kind;
  }
  return fnv1a((const unsigned char *)v, n * sizeof v[0]);
}

fk_status fk_state_reset(fk_plan *p) {
  if (!p) return FK_EINVAL;
  int idle = 0;
  if (!atomic_compare_exchange_strong(&p->busy, &idle, 1)) return FK_EBUSY;
  if (p->carry) memset(p->carry, 0, carry_bytes(p));
  if (p->ring) memset(p->ring, 0, ring_bytes(p));
  fk_model_reset(p);
  p->tokens = 0;
  p->frames = 0;
  atomic_store(&p->busy, 0);
  return FK_OK;
}

fk_state_info fk_state_query(const fk_plan *p) {
  if (!p) return (fk_state_info){ 0, 0, 0, 0, 0, 0 };
  return (fk_state_info){ p->tokens, p->frames, p->stack[0].pos, p->dframes / 6, p->rng[0], p->rng[1] };
}

size_t fk_state_bytes(const fk_plan *p) {
  return p ? HEADER + carry_bytes(p) + ring_bytes(p) + fk_model_state_bytes(p) + 8 : 0;
}

fk_status fk_sampler_seed(fk_plan *p, uint64_t seed) {
  if (!p || !(p->programs & FK_PROGRAMS_LM)) return FK_EINVAL;
  int idle = 0;
  if (!atomic_compare_exchange_strong(&p->busy, &idle, 1)) return FK_EBUSY;
  p->rng[0] = seed;
  p->rng[1] = 0;
  atomic_store(&p->busy, 0);
  return FK_OK;
}

fk_status fk_state_save(const fk_plan *p, void *buf, size_t len, fk_error *err) {
  FK_RETURN_ERROR_IF(!p, err, FK_EINVAL, "fk_state_save: plan is NULL");
  FK_RETURN_ERROR_IF(!buf, err, FK_EINVAL, "fk_state_save: buf is NULL");
  size_t need = fk_state_bytes(p);
  FK_RETURN_ERROR_IF(len < need, err, FK_EINVAL, "fk_state_save: len = %zu: the snapshot needs %zu bytes", len, need);
  /* the plan is claimed for the copy, as fk_run claims it: no run can start mid-snapshot */
  fk_plan *q = (fk_plan *)(uintptr_t)p;
  int idle = 0;
  FK_RETURN_ERROR_IF(!atomic_compare_exchange_strong(&q->busy, &idle, 1), err, FK_EBUSY,
                     "fk_state_save: fk_run is in flight");
  unsigned char *o = buf;
  uint32_t version = VERSION, programs = p->programs;
  int64_t dims[5] = { p->h, p->tail_in, p->tokens, p->frames, (int64_t)shape_digest(p) };
  memcpy(o, MAGIC, 8);
  memcpy(o + 8, &version, 4);
  memcpy(o + 12, &programs, 4);
  memcpy(o + 16, dims, sizeof dims);
  size_t at = HEADER;
  if (carry_bytes(p)) memcpy(o + at, p->carry, carry_bytes(p));
  at += carry_bytes(p);
  if (ring_bytes(p)) memcpy(o + at, p->ring, ring_bytes(p));
  at += ring_bytes(p);
  fk_model_state_copy(q, o + at, 1);
  at += fk_model_state_bytes(p);
  uint64_t sum = fnv1a(o, at);
  memcpy(o + at, &sum, 8);
  atomic_store(&q->busy, 0);
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
  LOAD_CHECK(version != VERSION, "snapshot version %u, this library reads %u", version, (unsigned)VERSION);
  LOAD_CHECK(programs != p->programs, "snapshot of a plan with programs 0x%x, this plan has 0x%x", programs,
             p->programs);
  LOAD_CHECK(dims[0] != p->h, "snapshot of hidden = %lld, this plan has %lld", (long long)dims[0], (long long)p->h);
  LOAD_CHECK(dims[1] != p->tail_in, "snapshot of tail_in = %lld, this plan has %lld", (long long)dims[1],
             (long long)p->tail_in);
  LOAD_CHECK(dims[4] != (int64_t)shape_digest(p), "snapshot of a plan whose model shapes differ from this plan's");
  size_t need = fk_state_bytes(p);
  LOAD_CHECK(len != need, "len = %zu: a snapshot of this plan is %zu bytes", len, need);
  uint64_t sum;
  memcpy(&sum, in + need - 8, 8);
  LOAD_CHECK(sum != fnv1a(in, need - 8), "checksum mismatch (the image is damaged)");
  LOAD_CHECK(dims[2] < 0 || dims[3] < 0 || dims[2] > CURSOR_MAX || dims[3] > CURSOR_MAX,
             "cursors out of range (tokens %lld, frames %lld): each must be in 0..2^62", (long long)dims[2],
             (long long)dims[3]);
  const char *bad = fk_model_state_check(p, in + HEADER + carry_bytes(p) + ring_bytes(p));
  LOAD_CHECK(bad, "%s", bad);
  int idle = 0;
  FK_RETURN_ERROR_IF(!atomic_compare_exchange_strong(&p->busy, &idle, 1), err, FK_EBUSY,
                     "fk_state_load: fk_run is in flight");
  fk_model_state_copy(p, (unsigned char *)(uintptr_t)(in + HEADER + carry_bytes(p) + ring_bytes(p)), 0);
  if (carry_bytes(p)) memcpy(p->carry, in + HEADER, carry_bytes(p));
  if (ring_bytes(p)) memcpy(p->ring, in + HEADER + carry_bytes(p), ring_bytes(p));
  p->tokens = dims[2];
  p->frames = dims[3];
  atomic_store(&p->busy, 0);
  return FK_OK;
}
