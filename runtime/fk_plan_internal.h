/* runtime/fk_plan_internal.h: the plan, its team and its programs (not installed). */
#ifndef FK_PLAN_INTERNAL_H
#define FK_PLAN_INTERNAL_H

#include "fk_team.h"

/* The leaf each phase calls, resolved at readiness. ORDER ROLE: role_names in fk_plan.c. */
typedef enum fk_role {
  R_NORM, R_IN, R_CONV, R_OUT, R_HEAD, R_FRAME, R_FLUSH,
  /* the model programs (fk_model.c) */
  R_MCONV, R_EMBED, R_CODEBOOK, R_QKPREP, R_ATTN_DEC, R_ATTN_PRE, R_ATTN_DEC_RING, R_ATTN_PRE_RING, R_SWIGLU,
  R_LOGITS, R_ARGMAX, R_TOPK, R_COUNT
} fk_role;

typedef struct fk_plan fk_plan;
typedef struct fk_step fk_step;

/* One phase of a program: run by every member on its share, a barrier after it. Steps are built
 * at readiness into the arena (a model program has a few per layer). */
struct fk_step {
  void (*run)(fk_plan *, const fk_step *, int member);
  const char *name, *split;
  fk_role role;
  int stack, layer; /* the model stack (0: lm, 1: detok) and layer a model step works on, else -1 */
};

typedef struct fk_layer_rt {
  fk_layer_kind kind;
  uint16_t *norm1, *norm2;         /* operator_norm, ffn_norm */
  uint16_t *in_w, *conv_w, *out_w; /* conv: packed in_proj, tap-major taps, packed out_proj */
  uint16_t *q_w, *k_w, *v_w, *o_w, *q_norm, *k_norm; /* attention: packed projections */
  uint16_t *w1, *w3, *w2;          /* packed feed-forward */
  /* state */
  uint16_t *carry;                 /* conv: 2 x h, Bx[t-2] then Bx[t-1] */
  uint16_t *kc, *vc;               /* attention: slots x kv_heads x head_dim */
} fk_layer_rt;

/* An LFM2 stack made ready: shapes, packed weights, transient planes, state. */
typedef struct fk_stack_rt {
  int on;
  int64_t h, ffn, layers, heads, kv, hd, window, max_pos, max_rows;
  int64_t slots;     /* KV slots: max_pos (linear) or the ring R = window + max_rows - 1 */
  int64_t ring;      /* 0: linear cache; R: ring */
  float eps;
  fk_layer_rt layer[FK_MAX_LAYERS];
  uint16_t *final_norm;
  float *cos, *sin;  /* RoPE tables, max_pos rows */
  /* transient planes (max_rows rows each) */
  uint16_t *res;     /* the residual stream (the LM's; the detokenizer's) */
  float *xn;         /* a norm's output widened: a GEMV's x */
  uint16_t *bcx;     /* conv in_proj out [B | C | x] */
  float *cy;         /* conv gated output widened */
  uint16_t *q;       /* query rows, heads * hd */
  uint16_t *ay;      /* attention output bf16 */
  float *ayw;        /* attention output widened: o_proj's x */
  uint16_t *g, *u;   /* w1 x, w3 x */
  float *hf;         /* swiglu output widened: w2's x */
  float *s[FK_MAX_THREADS]; /* attention scores per member */
  /* state */
  int64_t pos;       /* the next position */
} fk_stack_rt;

/* One fk_run's parameters, posted by member 0 before the start barrier. */
typedef struct fk_job {
  fk_program program;
  int64_t rows;
  uint16_t *x;
  int64_t ldx;
  const float *feat;
  int64_t ldfeat;
  void *pcm;
  int64_t frame0; /* the stream's frame index of the job's first frame */
  /* model programs */
  const int32_t *tokens, *codes;
  float *logits;
  const fk_sampling *sampling;
  int64_t pos0;   /* the stack's position of row 0 */
  int32_t next;
} fk_job;

typedef struct fk_phase_time {
  uint64_t runs, ns;
} fk_phase_time;

struct fk_plan {
  /* shapes and options, from the descriptor */
  uint32_t programs, flags;
  int threads;
  fk_tier tier;
  int64_t h, max_rows, tail_in, max_frames;
  float eps, clip;
  fk_leaf leaf[R_COUNT];
  /* the arena: this struct, then every buffer below, one allocation */
  void *arena;
  size_t arena_bytes;
  /* weights, packed or rearranged at readiness */
  uint16_t *norm_w, *in_w, *conv_w, *conv_b, *out_w, *head_w;
  float *head_b;
  /* transient planes (live within one program) */
  float *xn;         /* max_rows x h: RMSNorm out, in_proj's x */
  uint16_t *bcx;     /* max_rows x 3h: in_proj out, [B | C | x] */
  float *cy;         /* max_rows x h: the conv's gated output, out_proj's x */
  float *spec;       /* max_frames x SPEC_LD: the head's output, the frames' x */
  float *work;       /* the ISTFT frame's scratch */
  float *xs[FK_MAX_THREADS]; /* per member: the GEMV's x arrangement, 4 x round_up(k, 64) */
  /* the model programs (fk_model.c) */
  fk_stack_rt stack[2];     /* 0: the language model, 1: the detokenizer */
  int64_t vocab, cb_vocab, detok_max_frames;
  uint16_t *embed;          /* vocab x h rows (gather) */
  uint16_t *lm_head;        /* packed vocab x h */
  float *logits;            /* vocab: the logits when io.logits is NULL */
  float *feat;              /* detok: 6 * max_frames x h, the final norm's output widened */
  uint16_t *codebooks;      /* (8 * cb_vocab) x h */
  float *dring;             /* detok: its own OLA ring */
  int64_t dframes;          /* detok: STFT frames of the current stream */
  uint64_t rng[2];          /* the sampler's generator: { seed, draws } (the topk leaf's state) */
  float *sample_scratch;    /* vocab floats for the topk leaf */
  /* the programs' steps and their timings, in the arena */
  fk_step *steps[FK_PROG_COUNT];
  int nsteps[FK_PROG_COUNT];
  fk_phase_time *timing[FK_PROG_COUNT];
  /* state */
  uint16_t *carry;   /* 2 x h */
  float *ring;       /* FK_ISTFT_RING */
  int64_t tokens, frames;
  /* the team (maybe shared) and this plan's run */
  fk_team *team;
  _Atomic int busy;
  fk_job job;
  /* tests only (fk_plan_set_trace): called by member 0 after each step's barrier */
  void (*trace)(void *ctx, const fk_plan *p, const fk_step *st);
  void *trace_ctx;
};

/* For the model tests: observe the planes after every step (NULL: off). Not for hosts. */
static inline void fk_plan_set_trace(fk_plan *p, void (*fn)(void *, const fk_plan *, const fk_step *), void *ctx) {
  p->trace = fn;
  p->trace_ctx = ctx;
}

/* One GEMV phase's work (fk_model.c): the job's activation rows in groups of <= 4 over the member's
 * share of n weight rows; row i's outputs go to y + ((slot0 + i) mod ring, or slot0 + i when ring
 * is 0) * ldy. role picks the stamp and struct: R_IN (bf16 out), R_OUT (bf16 out + the residual r),
 * R_LOGITS (f32 out), R_HEAD (f32 out + the head's bias). */
typedef struct fk_gemv_job {
  fk_role role;
  const uint16_t *w;
  const float *x;
  int64_t ldx, k;
  void *y;
  const void *r; /* the residual (R_OUT) */
  int64_t ldy;
  int64_t slot0, ring;
} fk_gemv_job;
void fk_gemv_run(fk_plan *p, int member, const fk_gemv_job *g, int64_t rows, int64_t n);
/* The spectral tail's frames (member 0): job.frame0 + f for f < frames, spectra in p->spec, PCM
 * from p->job.pcm, overlap-added into `ring`. */
void fk_frames_run(fk_plan *p, float *ring, int64_t frames);

/* ---- fk_model.c: the LM and detokenizer programs ---- */
fk_status fk_model_check_desc(const fk_plan_desc *d, fk_error *err);
/* Fills the plan's model shapes from the descriptor (before layout). */
void fk_model_shapes(fk_plan *p, const fk_plan_desc *d);
/* Carves the model's weights, planes and state; returns the largest GEMV k it needs. */
int64_t fk_model_layout(fk_plan *p, void *(*carve)(void *c, size_t bytes), void *c);
/* Steps of a model program (count when out is NULL). */
int fk_model_steps(const fk_plan *p, fk_program prog, fk_step *out);
fk_status fk_model_pack(fk_plan *p, const fk_plan_desc *d, fk_error *err);
fk_status fk_model_check_io(const fk_plan *p, fk_program prog, const fk_io *io, int64_t *pcm_need, fk_error *err);
/* The state a model program commits after its last barrier (the caller writes io's outputs). */
void fk_model_commit(fk_plan *p, fk_program prog);
void fk_model_reset(fk_plan *p);
size_t fk_model_state_bytes(const fk_plan *p);
/* Copies the model state into (save) or out of (load) a snapshot region. */
void fk_model_state_copy(fk_plan *p, unsigned char *img, int save);
/* NULL when the model part of a snapshot image is consistent with the plan, else what is wrong. */
const char *fk_model_state_check(const fk_plan *p, const unsigned char *img);
enum { FK_SPEC_LD = (FK_ISTFT_SPEC + 15) / 16 * 16 };


/* Member `m` of `n` takes units [b, e) of `units`: contiguous, in member order, sizes within one. */
static inline void fk_share(int64_t units, int m, int n, int64_t *b, int64_t *e) {
  *b = units * m / n;
  *e = units * (m + 1) / n;
}

/* A GEMV's weight rows in whole pack groups (the packed forms start at a group). */
static inline void fk_share_rows(int64_t rows, int m, int n, int64_t *b, int64_t *e) {
  int64_t g0, g1;
  fk_share((rows + FK_GEMV_PACK_ROWS - 1) / FK_GEMV_PACK_ROWS, m, n, &g0, &g1);
  *b = g0 * FK_GEMV_PACK_ROWS;
  *e = g1 * FK_GEMV_PACK_ROWS < rows ? g1 * FK_GEMV_PACK_ROWS : rows;
}

/* For fk_bench_runtime only: runs `phases` empty phases on the team (dispatch and barriers,
 * no leaf), as fk_run would. */
void fk_plan_run_empty(fk_plan *plan, int phases);

#endif
