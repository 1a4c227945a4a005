/* bench/peer_onednn.c: oneDNN bf16 matmul, y[m][n] = x[m][:] . W[n][:], for each M of the problem's list.
 *
 * Two contenders share this file:
 * - prepacked: the weights in oneDNN's preferred layout (format_tag::any), reordered from the
 *   shared bf16 copies once in prepare() into oneDNN's own > 1 GiB of copies;
 * - row-major: the weights as given, the N x K row-major bf16 matrix used as the K x N
 *   weights operand (format tag ba, i.e. transposed), on the shared bf16 copies.
 * src is bf16 (x converted once, untimed, by the contract's RNE), weights bf16, dst f32.
 * One primitive per (M, thread count) is created before timing, with the OpenMP thread count
 * set first: the library is built on the OpenMP runtime, reads omp_get_max_threads() when it
 * plans a primitive and when it runs one, so select() calls omp_set_num_threads() on the
 * thread that executes. The scratchpad is user-managed (allocated here, never on the timed
 * path). */
#include <dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "fkb.h"

enum { MAX_POOLS = FKB_MS_MAX * FKB_THREADS_MAX };

typedef struct pool {        /* the weight copies one layout rotates through */
  dnnl_memory_desc_t md;
  char *region;              /* NULL for the shared copies (row-major) */
  size_t region_bytes, stride, ncopies;
  dnnl_memory_t *mem;        /* one memory object per copy */
} pool;

typedef struct prim {
  dnnl_primitive_t p;
  dnnl_memory_t src, dst, scratch;
  void *scratch_buf;
  int pool;
  char impl[64];             /* copied: the primitive descriptor that named it is gone */
} prim;

typedef struct onednn_state {
  int packed;
  dnnl_engine_t eng;
  dnnl_stream_t stream;
  prim prims[FKB_MS_MAX][FKB_THREADS_MAX];   /* per M of ms[], per thread count */
  pool pools[MAX_POOLS];
  int npools, nthreads_max;
  uint16_t *xbf;             /* m_max x k */
  float *y;                  /* m_max x n */
  int64_t n, k, m;
  int64_t ms[FKB_MS_MAX];
  int nms;
  const prim *cur;
} onednn_state;

#define CHECK(call)                                                                                                  \
  do {                                                                                                               \
    dnnl_status_t s_ = (call);                                                                                       \
    if (s_ != dnnl_success) {                                                                                        \
      snprintf(err, errlen, "%s failed: dnnl status %d", #call, (int)s_);                                           \
      goto fail;                                                                                                     \
    }                                                                                                                \
  } while (0)

const char *fkb_onednn_version(void) {
  static char v[160];
  const dnnl_version_t *d = dnnl_version();
  snprintf(v, sizeof v, "oneDNN %d.%d.%d (git %s, CPU runtime %s)", d->major, d->minor, d->patch,
           d->hash ? d->hash : "?", d->cpu_runtime == DNNL_RUNTIME_OMP ? "OpenMP" : "other");
  return v;
}

/* "blocked, inner 16a64b2a" (a = K, b = N) or "plain ba" for the row-major weights */
static void describe(const dnnl_memory_desc_t *md, char *buf, size_t len) {
  const dnnl_blocking_desc_t *b = &md->format_desc.blocking;
  if (md->format_kind != dnnl_blocked) {
    snprintf(buf, len, "format kind %d", (int)md->format_kind);
    return;
  }
  if (b->inner_nblks == 0) {
    snprintf(buf, len, "plain %s", b->strides[0] == 1 ? "ba" : "ab");
    return;
  }
  size_t at = (size_t)snprintf(buf, len, "blocked %s-outer, inner ", b->strides[0] < b->strides[1] ? "b" : "a");
  for (int i = 0; i < b->inner_nblks && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%lld%c", (long long)b->inner_blks[i], (char)('a' + b->inner_idxs[i]));
}

static int find_pool(const onednn_state *st, const dnnl_memory_desc_t *md) {
  for (int i = 0; i < st->npools; i++)
    if (dnnl_memory_desc_equal(&st->pools[i].md, md)) return i;
  return -1;
}

static int prepare(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err, size_t errlen,
                   int packed) {
  onednn_state *st = fkb_alloc(sizeof *st);
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t pd = NULL, rpd = NULL;
  dnnl_primitive_t reorder = NULL;
  dnnl_memory_t from = NULL;
  if (!st) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  st->packed = packed;
  st->n = p->n;
  st->k = p->k;
  st->m = 1;
  st->nthreads_max = p->nthreads_max;
  st->nms = p->nms;
  for (int i = 0; i < p->nms; i++) st->ms[i] = p->ms[i];
  st->xbf = fkb_alloc((size_t)(p->m_max * p->k) * sizeof(uint16_t));
  st->y = fkb_alloc((size_t)(p->m_max * p->n) * sizeof(float));
  if (!st->xbf || !st->y) {
    snprintf(err, errlen, "out of memory");
    goto fail;
  }
  for (int64_t i = 0; i < p->m_max * p->k; i++) st->xbf[i] = fkb_f32_to_bf16(p->x[i]);

  CHECK(dnnl_engine_create(&st->eng, dnnl_cpu, 0));
  CHECK(dnnl_stream_create(&st->stream, st->eng, dnnl_stream_default_flags));
  CHECK(dnnl_primitive_attr_create(&attr));
  CHECK(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user));

  dnnl_memory_desc_t rowmajor_md; /* the N x K row-major weights as the K x N operand */
  dnnl_dims_t wdims = { p->k, p->n };
  CHECK(dnnl_memory_desc_init_by_tag(&rowmajor_md, 2, wdims, dnnl_bf16, dnnl_ba));

  for (int mi = 0; mi < st->nms; mi++)
    for (int t = 1; t <= p->nthreads_max; t++) {
      int64_t m = st->ms[mi];
      prim *pr = &st->prims[mi][t - 1];
      dnnl_memory_desc_t src_md, wei_md, dst_md;
      dnnl_dims_t sdims = { m, p->k }, ddims = { m, p->n };
      CHECK(dnnl_memory_desc_init_by_tag(&src_md, 2, sdims, dnnl_bf16, dnnl_ab));
      CHECK(dnnl_memory_desc_init_by_tag(&wei_md, 2, wdims, dnnl_bf16, packed ? dnnl_format_tag_any : dnnl_ba));
      CHECK(dnnl_memory_desc_init_by_tag(&dst_md, 2, ddims, dnnl_f32, dnnl_ab));
      dnnl_matmul_desc_t desc;
      CHECK(dnnl_matmul_desc_init(&desc, &src_md, &wei_md, NULL, &dst_md));
      omp_set_num_threads(t); /* the primitive is planned for t threads */
      CHECK(dnnl_primitive_desc_create(&pd, &desc, attr, st->eng, NULL));
      const char *impl = NULL;
      CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
      snprintf(pr->impl, sizeof pr->impl, "%s", impl ? impl : "?");
      const dnnl_memory_desc_t *w = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
      int at = find_pool(st, w);
      if (at < 0) {
        at = st->npools++;
        st->pools[at].md = *w;
      }
      pr->pool = at;
      const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
      size_t sp_bytes = dnnl_memory_desc_get_size(sp);
      if (sp_bytes) {
        pr->scratch_buf = fkb_alloc(sp_bytes);
        if (!pr->scratch_buf) {
          snprintf(err, errlen, "out of memory");
          goto fail;
        }
        CHECK(dnnl_memory_create(&pr->scratch, sp, st->eng, pr->scratch_buf));
      }
      CHECK(dnnl_memory_create(&pr->src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), st->eng, st->xbf));
      CHECK(dnnl_memory_create(&pr->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), st->eng, st->y));
      CHECK(dnnl_primitive_create(&pr->p, pd));
      dnnl_primitive_desc_destroy(pd);
      pd = NULL;
    }

  /* the copies: the shared ones as they are, or reordered into each layout the primitives chose */
  omp_set_num_threads(p->nthreads_max);
  out->ncopies = 0;
  out->weight_bytes = 0;
  for (int i = 0; i < st->npools; i++) {
    pool *pl = &st->pools[i];
    size_t bytes = dnnl_memory_desc_get_size(&pl->md);
    pl->ncopies = packed ? fkb_copy_count(bytes) : c->count;
    pl->mem = fkb_alloc(pl->ncopies * sizeof *pl->mem);
    if (!pl->mem) {
      snprintf(err, errlen, "out of memory");
      goto fail;
    }
    if (packed) {
      pl->stride = fkb_copy_stride(bytes);
      pl->region_bytes = pl->ncopies * pl->stride;
      pl->region = fkb_region_alloc(pl->region_bytes);
      if (!pl->region) {
        snprintf(err, errlen, "out of memory (%zu copies of %zu bytes)", pl->ncopies, bytes);
        goto fail;
      }
      CHECK(dnnl_reorder_primitive_desc_create(&rpd, &rowmajor_md, st->eng, &pl->md, st->eng, NULL));
      CHECK(dnnl_primitive_create(&reorder, rpd));
      CHECK(dnnl_memory_create(&from, &rowmajor_md, st->eng, DNNL_MEMORY_NONE));
    }
    for (size_t j = 0; j < pl->ncopies; j++) {
      void *shared = (void *)(uintptr_t)c->w[j % c->count]; /* oneDNN reads weights only */
      void *handle = packed ? pl->region + j * pl->stride : shared;
      CHECK(dnnl_memory_create(&pl->mem[j], &pl->md, st->eng, handle));
      if (packed) {
        CHECK(dnnl_memory_set_data_handle(from, shared));
        dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, from }, { DNNL_ARG_TO, pl->mem[j] } };
        CHECK(dnnl_primitive_execute(reorder, st->stream, 2, args));
        CHECK(dnnl_stream_wait(st->stream));
      }
    }
    if (packed) {
      dnnl_memory_destroy(from);
      dnnl_primitive_destroy(reorder);
      dnnl_primitive_desc_destroy(rpd);
      from = NULL, reorder = NULL, rpd = NULL;
    }
    if (out->ncopies == 0 || pl->ncopies < out->ncopies) out->ncopies = pl->ncopies;
    if ((double)bytes > out->weight_bytes) out->weight_bytes = (double)bytes;
  }
  dnnl_primitive_attr_destroy(attr);

  /* detail: the implementations (one line if every M and thread count got the same) and the layouts */
  size_t at = 0;
  int same = 1;
  for (int mi = 0; mi < st->nms; mi++)
    for (int t = 0; t < p->nthreads_max; t++) same &= strcmp(st->prims[mi][t].impl, st->prims[0][0].impl) == 0;
  if (same)
    at += (size_t)snprintf(out->detail, sizeof out->detail, "impl %s for every M and thread count",
                           st->prims[0][0].impl);
  else
    for (int mi = 0; mi < st->nms; mi++)
      for (int t = 0; t < p->nthreads_max && at < sizeof out->detail; t++)
        at += (size_t)snprintf(out->detail + at, sizeof out->detail - at, "%sM=%lld %dT %s", at ? ", " : "impl ",
                               (long long)st->ms[mi], t + 1, st->prims[mi][t].impl);
  for (int i = 0; i < st->npools && at < sizeof out->detail; i++) {
    char lay[96];
    describe(&st->pools[i].md, lay, sizeof lay);
    at += (size_t)snprintf(out->detail + at, sizeof out->detail - at, "; weights %s, %zu copies", lay,
                           st->pools[i].ncopies);
  }
  out->state = st;
  out->own_copies = packed;
  return 0;

fail:
  if (from) dnnl_memory_destroy(from);
  if (reorder) dnnl_primitive_destroy(reorder);
  if (rpd) dnnl_primitive_desc_destroy(rpd);
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (attr) dnnl_primitive_attr_destroy(attr);
  fkb_onednn_finish(st);
  return -1;
}

int fkb_onednn_prepare_packed(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                              size_t errlen) {
  return prepare(p, c, out, err, errlen, 1);
}

int fkb_onednn_prepare_rowmajor(const fkb_problem *p, const fkb_copies *c, fkb_prepared *out, char *err,
                                size_t errlen) {
  return prepare(p, c, out, err, errlen, 0);
}

int fkb_onednn_select(void *state, int64_t m, int nthreads, char *err, size_t errlen) {
  onednn_state *st = state;
  int mi = 0;
  while (mi < st->nms && st->ms[mi] != m) mi++;
  if (mi == st->nms || nthreads < 1 || nthreads > st->nthreads_max) {
    snprintf(err, errlen, "no primitive for M=%lld, %d threads", (long long)m, nthreads);
    return -1;
  }
  st->m = m;
  st->cur = &st->prims[mi][nthreads - 1];
  omp_set_num_threads(nthreads);
  return 0;
}

void fkb_onednn_run(void *state, size_t copy, int tid, int nthreads) {
  (void)tid, (void)nthreads;
  const onednn_state *st = state;
  const prim *pr = st->cur;
  const pool *pl = &st->pools[pr->pool];
  dnnl_exec_arg_t args[4] = { { DNNL_ARG_SRC, pr->src },
                              { DNNL_ARG_WEIGHTS, pl->mem[copy % pl->ncopies] },
                              { DNNL_ARG_DST, pr->dst },
                              { DNNL_ARG_SCRATCHPAD, pr->scratch } };
  dnnl_primitive_execute(pr->p, st->stream, pr->scratch ? 4 : 3, args);
  dnnl_stream_wait(st->stream);
}

void fkb_onednn_output(void *state, float *y) {
  const onednn_state *st = state;
  memcpy(y, st->y, (size_t)(st->m * st->n) * sizeof(float));
}

void fkb_onednn_finish(void *state) {
  onednn_state *st = state;
  for (int mi = 0; mi < FKB_MS_MAX; mi++)
    for (int t = 0; t < FKB_THREADS_MAX; t++) {
      prim *pr = &st->prims[mi][t];
      if (pr->p) dnnl_primitive_destroy(pr->p);
      if (pr->src) dnnl_memory_destroy(pr->src);
      if (pr->dst) dnnl_memory_destroy(pr->dst);
      if (pr->scratch) dnnl_memory_destroy(pr->scratch);
      fkb_free(pr->scratch_buf);
    }
  for (int i = 0; i < st->npools; i++) {
    pool *pl = &st->pools[i];
    if (pl->mem)
      for (size_t j = 0; j < pl->ncopies; j++)
        if (pl->mem[j]) dnnl_memory_destroy(pl->mem[j]);
    fkb_free(pl->mem);
    fkb_region_free(pl->region, pl->region_bytes);
  }
  if (st->stream) dnnl_stream_destroy(st->stream);
  if (st->eng) dnnl_engine_destroy(st->eng);
  fkb_free(st->xbf);
  fkb_free(st->y);
  fkb_free(st);
}
