/* flashkern.h: the public API of libflashkern.
 *
 * Two levels. A plan (fk_plan_create, fk_run) is the runtime: readiness once (variants, one
 * arena, packed weights, tables, a fixed team of threads), then programs of phases with no
 * allocation, no file read and no ISA branch. Below it, a host may resolve single leaves
 * (fk_leaf_resolve) and call a stamp through the returned function pointer with the form's
 * argument struct (declared in fk_leaves.h, generated from the templates). Resolution fails
 * with an error naming the missing CPU feature; there is no scalar fallback. Library code
 * never aborts: errors are values. */
#ifndef FLASHKERN_H
#define FLASHKERN_H

#include <stddef.h>
#include <stdint.h>

#include "fk_leaves.h"
#include "fk_models.h" /* the block, tail and LFM2 model descriptors, sampling */

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header (CMake reads these lines: keep each a plain `#define NAME value`).
 * 0.x: the public structs and calls may change between minor versions; the soname carries the
 * minor version (README, "Versions and ABI"). */
#define FK_VERSION_MAJOR 0
#define FK_VERSION_MINOR 2
#define FK_VERSION_PATCH 0
#define FK_VERSION_STRING "0.2.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH (zstd's rule): 200 for 0.2.0. */
#define FK_VERSION_NUMBER (FK_VERSION_MAJOR * 10000 + FK_VERSION_MINOR * 100 + FK_VERSION_PATCH)

/* The version of the library linked (FK_VERSION_STRING as it was built; never NULL), and its
 * FK_VERSION_NUMBER: a host that loads libflashkern.so compares them with the header's. */
const char *fk_version(void);
unsigned fk_version_number(void);

/* Status codes; fk_strerror() names each one. */
typedef enum fk_status {
  FK_OK = 0,
  FK_EINVAL,        /* an argument is invalid (the message names it) */
  FK_EUNSUPPORTED,  /* every stamp of the leaf needs a feature the CPU lacks, or FK_CPU_MASK or the caller hid;
                       or the thread's floating-point environment is not the default (fk_plan_create) */
  FK_ENOTFOUND,     /* no such leaf form (fk_checkpoint.h: no such file or tensor) */
  FK_ENOMEM,        /* the arena (or a thread's stack) could not be allocated at readiness */
  FK_ESYSTEM,       /* the OS refused a thread at readiness */
  FK_EBUSY,         /* fk_run or a state call while another fk_run is in flight on the plan */
  FK_ESTATE,        /* a state snapshot that is not this plan's, or a program the state forbids */
  FK_STATUS_COUNT
} fk_status;

/* Bad input (docs/bad-input.md lists every case tests/badinput/ proves). A call that refuses
 * returns its status and writes nothing but *err: outputs, plan state and caller buffers stay as
 * they were, *out pointers as each function says. err may be NULL on every call (the status alone
 * then reports). No entry point requires alignment beyond the element's (uint16_t, float; snapshot
 * buffers: none). Outputs must not overlap inputs where a function says so; inputs may alias. */
typedef struct fk_error {
  fk_status status;
  char message[256];
  const char *file; /* where in the library the error was raised */
  int line;
} fk_error;

/* The name of a status ("FK_EUNSUPPORTED: ..."); never NULL. */
const char *fk_strerror(fk_status s);

/* CPU features (FK_CPU_* bits of fk_leaves.h) detected on first call and cached. The
 * environment variable FK_CPU_MASK, read at that first call, is ANDed in, so a test or a user can
 * hide features and reach every variant and every refusal. Its value is the FK_CPU_* bits to keep,
 * in hexadecimal: 1 to 16 hex digits, optionally after 0x ("3": avx2 and fma; "1f": no
 * avx512bf16); nothing else, not even a space. A value that is not that (empty, not a number,
 * trailing characters, more than 64 bits) hides every feature: fk_cpu_features() returns 0, and
 * fk_plan_create, fk_plan_check and fk_leaf_resolve refuse with FK_EINVAL naming FK_CPU_MASK and
 * its value (a mask meant to hide a feature is never ignored). Unset: nothing is hidden. */
uint64_t fk_cpu_features(void);

/* Writes the names of the features in `f` ("avx2 fma avx512f") into buf, truncated to len - 1
 * chars and NUL-terminated; returns buf. buf NULL or len 0: nothing is written. */
const char *fk_cpu_feature_names(uint64_t f, char *buf, size_t len);

/* A leaf's numerical tier: exact stamps are bit-identical on every ISA and to the contract
 * model; fast stamps use the CPU's bf16 dot instructions and are faithful within the bound
 * their fixtures derive (fixtures/README.md). */
typedef enum fk_tier { FK_TIER_EXACT = 0, FK_TIER_FAST = 1 } fk_tier;

typedef void (*fk_leaf_fn)(const void *args);

typedef struct fk_leaf {
  fk_leaf_fn fn;        /* call as fn(&args) with the form's fk_<form>_args */
  const char *form;     /* "gemv_bf16_rne" */
  const char *symbol;   /* "fk_gemv_bf16_rne__x86_64_avx512_exact" */
  const char *variant;  /* "avx512" */
  const char *tier;     /* "exact" */
} fk_leaf;

/* fk_leaf_resolve(): picks the widest stamp of form `form` ("rmsnorm_f32", "gemv_bf16_rne")
 * in tier `tier` whose features are all in `features` (usually fk_cpu_features()).
 * @return FK_OK and *out filled; FK_ENOTFOUND for an unknown form, or a form without stamps of
 * that tier; FK_EUNSUPPORTED when no stamp fits, the message naming each feature the narrowest
 * stamp needs and `features` lacks, and why: "this CPU lacks" it, it is "hidden by FK_CPU_MASK",
 * or it is "not in the features passed" (the CPU has it); FK_EINVAL for form or out NULL, a tier
 * that is not one, or an FK_CPU_MASK that cannot be read (whatever `features` says). *out is
 * written only on FK_OK. There is never a fallback to another tier. With FK_VARIANT_DEBUG set in
 * the environment, each resolution is logged to stderr. */
fk_status fk_leaf_resolve(const char *form, fk_tier tier, uint64_t features, fk_leaf *out, fk_error *err);

/* fk_leaf_check(): checks a direct call's argument struct (args: the form's fk_<form>_args)
 * against the form's argument table, as its template declares it (FK_FIELDS_<form> in
 * fk_leaves.h): each pointer's extent in elements from the struct's scalars, no overflow; no
 * NULL pointer the leaf would touch; no range past the address space; no output (out, in/out or
 * scratch) overlapping another buffer unless the template lets it be that buffer (swiglu's h may
 * be g or u). A stamp never checks its arguments: call this in a debug build or once per new
 * shape, not on the hot path. It reads args only.
 * @return FK_OK; FK_EINVAL naming the form, the field(s) and why; FK_ENOTFOUND for an unknown
 * form; FK_EINVAL for form or args NULL. */
fk_status fk_leaf_check(const char *form, const void *args, fk_error *err);

/* ---- bf16: the host's conversions, by the stamps' own rule ------------------------------------
 * fk_bf16_from_f32(): f32 -> bf16 bit pattern, round to nearest even by the integer rule every
 * exact stamp uses (docs/design.md, "BF16 rounding"): u += 0x7fff + ((u >> 16) & 1), out = u >> 16,
 * so subnormals are rounded (not flushed), and values from 0x7f7f8000 up round to infinity; every
 * NaN becomes the canonical quiet NaN 0x7fc0 (whatever its sign and payload). Never fails.
 * fk_f32_from_bf16(): bf16 -> f32, exact (the pattern shifted left by 16). */
uint16_t fk_bf16_from_f32(float f);
float fk_f32_from_bf16(uint16_t h);

/* fk_bf16_from_f32_n(), fk_f32_from_bf16_n(): the same over n elements, dst[i] from src[i]. In
 * place is allowed: dst may start at src's first byte (bf16 from f32: the n bf16 land in the first
 * half of the floats' bytes; f32 from bf16: the buffer must hold n floats). No other overlap is.
 * No alignment beyond the element's. n == 0 does nothing (src, dst may then be NULL).
 * @return FK_OK; FK_EINVAL naming src or dst when NULL (n > 0), n when n * 4 bytes overflow the
 * address space, src or dst when its n elements run past the top of it, dst when it overlaps src
 * other than in place (nothing written on a refusal). */
fk_status fk_bf16_from_f32_n(const float *src, uint16_t *dst, size_t n, fk_error *err);
fk_status fk_f32_from_bf16_n(const uint16_t *src, float *dst, size_t n, fk_error *err);

/* fk_gemv_packed_elems(): elements (bf16) of the packed copy of an n x k weight matrix, 0 when
 * n or k is < 1 or the size in bytes overflows size_t. */
size_t fk_gemv_packed_elems(int64_t n, int64_t k);

/* fk_gemv_pack(): writes the n x k row-major bf16 weights w (row stride ldw) into out in the
 * layout the gemv *_packed forms read (templates/gemv.lua: FK_GEMV_PACK_ROWS rows per group,
 * FK_GEMV_PACK_TILE elements per tile, zero padding). Call it before readiness, once.
 * @return FK_OK; FK_EINVAL naming the argument when a pointer is NULL, n or k < 1, ldw < k, the
 * rows of w ((n - 1) * ldw + k elements) overflow, out holds fewer than fk_gemv_packed_elems(n, k)
 * elements, or those elements of out overlap the rows of w (out is then untouched). */
fk_status fk_gemv_pack(const uint16_t *w, int64_t ldw, int64_t n, int64_t k, uint16_t *out, size_t out_elems,
                       fk_error *err);

/* fk_gemv_blocked_elems(), fk_gemv_pack_blocked(): the same for the blocked layout of the fast
 * tier's *_blocked forms (templates/gemv.lua: FK_GEMV_BLOCK_ROWS rows per block, FK_GEMV_BLOCK_GROUP
 * blocks interleaved per pair of k, k padded to FK_GEMV_BLOCK_KALIGN, rows to a whole group),
 * with the same refusals. */
size_t fk_gemv_blocked_elems(int64_t n, int64_t k);
fk_status fk_gemv_pack_blocked(const uint16_t *w, int64_t ldw, int64_t n, int64_t k, uint16_t *out,
                               size_t out_elems, fk_error *err);

/* Quantized weights (docs/design.md, "Quantized weights"): q8 and q4 carry GGUF's Q8_0 and Q4_0
 * (blocks of FK_Q_BLOCK = 32 k of one row, one IEEE binary16 scale d each; weight = q * d, exact
 * in f32). Three layouts: the GGUF blocks (Q8_0: 34 bytes, d then 32 int8; Q4_0: 18 bytes, d then
 * 16 bytes, byte j = element j (low nibble) | element j + 16 (high), nibble = q + 8), rows of
 * k / 32 blocks one after another; the packed layout the quantized GEMV stamps read; f32. */
#define FK_Q_BLOCK 32
/* (fk_qformat and fk_qmatrix, the descriptors' per-matrix form, are in fk_models.h.) */

/* binary16 <-> f32: fk_f16_from_f32 rounds to nearest even (overflow: +-inf; NaN: 0x7e00 with its
 * sign), fk_f32_from_f16 is exact. */
uint16_t fk_f16_from_f32(float f);
float fk_f32_from_f16(uint16_t h);

/* Bytes of n x k weights as GGUF blocks, and as the packed layout (rows in groups of
 * FK_GEMV_PACK_ROWS, k in tiles of 64: 272-byte q8 / 144-byte q4 records, zero-padded; q4k: k in
 * super-blocks of 256, 592-byte records); 0 when the format is unknown, n < 1, k is not a positive
 * multiple of 32 (FK_Q4K: of 256, its 144-byte super-block), or the size overflows size_t. */
size_t fk_q_gguf_bytes(fk_qformat f, int64_t n, int64_t k);
size_t fk_q_packed_bytes(fk_qformat f, int64_t n, int64_t k);

/* fk_q_quantize(), fk_q_quantize_bf16(): n x k row-major weights (row stride ldw, f32 or bf16)
 * into GGUF blocks by flashkern's quantizer: ggml's reference quantizer with round-to-nearest-even
 * (FK_Q8, FK_Q4), ggml's Q4_K reference quantizer operation by operation (FK_Q4K; docs/design.md).
 * Refused (FK_EINVAL naming it, out untouched): an unknown format, a NULL pointer, n < 1, k not a
 * positive multiple of 32 (FK_Q4K: 256), ldw < k, sizes that overflow, out smaller than
 * fk_q_gguf_bytes(f, n, k) or overlapping w, a weight that is not finite (named by row and
 * column), a block whose scale rounds to binary16 infinity (named by row and block; FK_Q4K: by
 * row and super-block, d or dmin). */
fk_status fk_q_quantize(fk_qformat f, const float *w, int64_t ldw, int64_t n, int64_t k, void *out, size_t out_bytes,
                        fk_error *err);
fk_status fk_q_quantize_bf16(fk_qformat f, const uint16_t *w, int64_t ldw, int64_t n, int64_t k, void *out,
                             size_t out_bytes, fk_error *err);

/* fk_q_dequantize(): n x k GGUF blocks (bytes of them at blocks) into f32 rows of stride ldo,
 * each weight q * d exactly (FK_Q4K: RN(d * sc * u - dmin * m), one rounding). fk_q_pack(): the
 * same blocks into the packed layout (a lossless re-layout: out holds fk_q_packed_bytes(f, n, k)).
 * Call before readiness. Refused as above, and blocks shorter than fk_q_gguf_bytes(f, n, k),
 * ldo < k, and a scale that is inf or NaN (named by row and block, or super-block and d / dmin;
 * nothing written). */
fk_status fk_q_dequantize(fk_qformat f, const void *blocks, size_t bytes, int64_t n, int64_t k, float *out,
                          int64_t ldo, fk_error *err);
fk_status fk_q_pack(fk_qformat f, const void *blocks, size_t bytes, int64_t n, int64_t k, void *out, size_t out_bytes,
                    fk_error *err);

/* How the runtime calls the packed forms with more than 4 activation rows (a GEMM: a prompt, many
 * frames), for a host that calls them itself: at most FK_GEMV_CALL_ROWS activation rows per call,
 * and each member's share of weight rows in blocks of fk_gemv_block_rows(k) rows (about 1 MB of
 * bf16 weights: a multiple of FK_GEMV_PACK_ROWS, at least that), every group of activation rows
 * passing over a block before the next; each call's xs then holds its rows' arranged x and the
 * block's partial sums (the form's xs extent). The blocking changes no bit of a result.
 * fk_gemv_block_rows() is 0 when k < 1. */
#define FK_GEMV_CALL_ROWS 24
int64_t fk_gemv_block_rows(int64_t k);
/* fk_gemv_call_scratch(): the floats of xs one such call needs at reduction length k (up to
 * FK_GEMV_CALL_ROWS rows' arranged x, a GEMM block's sums, and for k > FK_GEMV_GEMM_KBLOCK the
 * partial sums of a block of fk_gemv_block_rows(k) weight rows from a multiple of
 * FK_GEMV_PACK_ROWS): at least the packed forms' xs extent for any such call. The runtime gives
 * each member this much. 0 when k < 1 or k > 2^40. */
size_t fk_gemv_call_scratch(int64_t k);

/* fk_rope_table(): the RoPE tables of one head size, at readiness (never during a pass):
 * cos_out[(p - pos_begin) * (head_dim / 2) + i] = cos(a), sin_out[...] = sin(a) for positions
 * p in [pos_begin, pos_begin + npos) and i < head_dim / 2, with a = (float)p * inv_freq[i] and
 * inv_freq[i] = 1.0f / f32(theta^((float)(2i) / head_dim)) in f32, as transformers and
 * liquid-audio compute them; cos and sin rounded once from a double evaluation. No libm: the
 * same bytes on every ISA. The qkprep leaf reads table row pos + j for row j (pass tables from
 * pos_begin = 0, or shift the pointers by pos_begin rows and the leaf's pos likewise).
 * @return FK_OK; FK_EINVAL naming the argument for NULL tables, theta not in (1, 1e30),
 * head_dim odd or outside 2..1024, positions outside [0, 2^24), or the two tables (npos *
 * head_dim / 2 floats each) overlapping (nothing is written then). */
fk_status fk_rope_table(float theta, int64_t head_dim, int64_t pos_begin, int64_t npos, float *cos_out,
                        float *sin_out, fk_error *err);

/* fk_rope_inv_freq(): the head_dim / 2 f32 inverse frequencies fk_rope_table uses (inv[i] above).
 * @return FK_OK; FK_EINVAL as fk_rope_table for inv NULL, theta or head_dim. */
fk_status fk_rope_inv_freq(float theta, int64_t head_dim, float *inv, fk_error *err);


/* ---- plans: readiness once, then programs ------------------------------------------------- */

/* The programs a plan can run (fk_run). A program is a table of phases; each phase splits its
 * leaf calls' rows across the team, a barrier ends it, and state commits in causal order.
 *   FK_PROG_BLOCK_PREFILL  one LFM2 ShortConv block (operator_norm -> in_proj -> conv -> out_proj
 *                          + residual) over 1..max_rows rows, the residual stream updated in place:
 *     rmsnorm      rmsnorm_bf16_wide             rows split across the team
 *     in_proj      gemv_bf16_rne_packed          3*hidden weight rows split; row groups of <= 24
 *     conv         shortconv_bf16[_bias]_wide    member 0: all rows, the carry committed row by row
 *     out_proj     gemv_bf16_rne_add_packed      hidden weight rows split; y = r = the residual row
 *   FK_PROG_BLOCK_DECODE   the same phases for exactly one row (one token).
 *   FK_PROG_TAIL           the LFM2.5 detokenizer's spectral tail over 1..max_frames frames:
 *     head         gemv_f32_bias_packed          1282 weight rows split; frame groups of <= 24
 *     frames       istft_frame[_i16]             member 0: frame by frame into the OLA ring -> PCM
 *   FK_PROG_TAIL_FLUSH     end of a PCM stream: the last 480 samples; the ring and the frame cursor
 *                          restart (a stream of 0 frames flushes nothing).
 * Exact-tier results are bit-identical for every team size. */
/*   FK_PROG_LM_PREFILL     a whole LFM2 language model (desc.lm) over 1..lm.max_rows prompt tokens:
 *                          embedding gather, every layer (conv or attention, then the SwiGLU
 *                          feed-forward), the final norm, the last row's logits (tied or own head)
 *                          and the next token (greedy argmax, or io.sampling's temperature/top-k
 *                          draw); the KV caches, conv carries and position commit in causal order.
 *   FK_PROG_LM_DECODE      the same for exactly one token.
 *   FK_PROG_DETOK          the LFM2.5 audio detokenizer (desc.detok) over 1..detok.max_frames code
 *                          frames (8 codes each): codebook mean, x6 repeat, the LFM2 stack with
 *                          sliding-window attention, final norm, 512 -> 1282 head, spectral tail ->
 *                          PCM (1920 samples per code frame once the stream runs; the first code
 *                          frame gives 1440: the ISTFT's "same" padding).
 *   FK_PROG_DETOK_FLUSH    end of the audio stream: the last 480 samples; the stack's state and the
 *                          position restart with the next frame.
 *   FK_PROG_AUDIO_PREFILL  LFM2.5-Audio (desc.audio), a turn's first step: the backbone over
 *                          1..audio.lm.max_rows prompt tokens (as FK_PROG_LM_PREFILL), the last
 *                          row's text logits and a text token (io.sampling); starts the turn's
 *                          modality state machine (io.loop: generate_sequential or _interleaved).
 *   FK_PROG_AUDIO_STEP     one more step of the turn: the backbone fed the last output (a text
 *                          token's embedding, or after a frame audio_embedding(codes + offsets).sum(0)),
 *                          then per the modality either a text token or an audio frame: depth_linear,
 *                          and for codebook c = 0..7 in order: the feedback embedding of code c-1,
 *                          the Depthformer's layers at position c, codebook c's head, its draw
 *                          (io.audio_sampling). io.out says which; io.modality the next step's.
 *     The state machine (liquid-audio 1.3.0's loops): sequential: text until <|audio_start|> (128),
 *     then frames until one whose code 0 is 2048 (all its codes become 2048, back to text);
 *     <|im_end|> (7) ends the turn (emitted). Interleaved: a counter starts at n_text and drops by
 *     one every step (the prefill's included); text switches to audio at 0 or after <|text_end|>
 *     (130), with the counter at n_audio; audio switches back to text at 0 unless 130 was seen
 *     (counter n_text), and after a 2048 frame; 7 ends the turn (not emitted: io.out END).
 * The phases of the model programs are listed by fk_phase_query (one per layer step). */
typedef enum fk_program {
  FK_PROG_BLOCK_PREFILL = 0,
  FK_PROG_BLOCK_DECODE,
  FK_PROG_TAIL,
  FK_PROG_TAIL_FLUSH,
  FK_PROG_LM_PREFILL,
  FK_PROG_LM_DECODE,
  FK_PROG_DETOK,
  FK_PROG_DETOK_FLUSH,
  FK_PROG_AUDIO_PREFILL,
  FK_PROG_AUDIO_STEP,
  FK_PROG_COUNT
} fk_program;

/* fk_plan_desc.programs: which families the plan is ready for. */
#define FK_PROGRAMS_BLOCK (1u << 0) /* FK_PROG_BLOCK_PREFILL and FK_PROG_BLOCK_DECODE */
#define FK_PROGRAMS_TAIL (1u << 1)  /* FK_PROG_TAIL and FK_PROG_TAIL_FLUSH */
#define FK_PROGRAMS_LM (1u << 2)    /* FK_PROG_LM_PREFILL and FK_PROG_LM_DECODE */
#define FK_PROGRAMS_DETOK (1u << 3) /* FK_PROG_DETOK and FK_PROG_DETOK_FLUSH */
#define FK_PROGRAMS_AUDIO (1u << 4) /* FK_PROG_AUDIO_PREFILL and FK_PROG_AUDIO_STEP */

/* The audio programs' io.loop, io.out and io.modality. */
enum { FK_AUDIO_SEQUENTIAL = 0, FK_AUDIO_INTERLEAVED = 1 };
enum { FK_AUDIO_OUT_TEXT = 0, FK_AUDIO_OUT_FRAME = 1, FK_AUDIO_OUT_END = 2 };
enum { FK_AUDIO_TEXT = 0, FK_AUDIO_AUDIO = 1 };

/* fk_plan_desc.flags */
#define FK_PLAN_TIMING (1u << 0) /* time each phase (CLOCK_MONOTONIC, read by member 0 at each barrier) */
#define FK_PLAN_PCM_I16 (1u << 1) /* the tail writes int16 PCM (uint16_t bit patterns), not f32 */
/* Team placement. By default, when the process may run on at least `threads` CPUs, readiness
 * binds member m (m >= 1) to its own CPU, never the one the caller (member 0, left unbound) runs
 * on at readiness; when the caller later runs on a bound member's CPU, fk_run rebinds that
 * member to the CPU the caller left. Unbound, the scheduler put two members on one CPU after idle gaps (on 2
 * vCPUs: 197 us per run of an empty program instead of 0.16 us, before waiters yielded). A
 * waiter at a barrier polls briefly, then yields its CPU, then sleeps (fk_team.c), so members
 * that do share a CPU still progress. FK_PLAN_NO_PIN leaves every member to the scheduler
 * (hosts that place threads themselves). */
#define FK_PLAN_NO_PIN (1u << 2)

/* A plan descriptor. Zero-initialise it and set what the programs need; every field is checked
 * by fk_plan_create and a refusal names the field. */
typedef struct fk_plan_desc {
  uint32_t programs;         /* FK_PROGRAMS_* bits, at least one */
  int threads;               /* team size, 1..64; member 0 is the thread that calls fk_run */
  /* NULL: the plan starts a team of its own. A ready plan: this plan runs on that plan's team
   * (threads must match) instead of starting threads, as a model's layers share one team.
   * Plans on one team run one at a time (fk_run refuses with FK_EBUSY otherwise); the team
   * lives until the last plan on it is destroyed, in any order. */
  const struct fk_plan *team_of;
  fk_tier tier;              /* the GEMV phases' tier (the other leaves are exact only) */
  uint64_t forbid_features;  /* FK_CPU_* bits the plan must not use, on top of FK_CPU_MASK */
  uint32_t flags;            /* FK_PLAN_* bits */
  /* FK_Q8 or FK_Q4: every weight matrix a GEMV phase reads that the descriptor gives in bf16 (the
   * stacks' projections and feed-forwards, the LM and text heads, the Depthformer's depth_linear
   * and codebook heads, the spectral head, the block's in_proj and out_proj) is quantized at
   * readiness by fk_q_quantize_bf16's rounding and packed; its k must be a multiple of 32. The
   * embeddings, norms and conv taps stay bf16. FK_QNONE (0): bf16 weights. A matrix given as GGUF
   * blocks (fk_qmatrix in fk_models.h) keeps its own format either way. The quantized GEMVs run in
   * desc.tier like the others: FK_TIER_FAST quantizes their activations per block of 32 and uses
   * integer dot products (AVX512-VNNI or FEAT_DotProd; docs/design.md "The quantized fast tier").
   * FK_Q4K needs every quantized matrix's k a multiple of 256 and runs its GEMVs in the exact tier in
   * every plan (no fast q4k stamp yet). */
  fk_qformat quantize;
  /* FK_PROGRAMS_BLOCK */
  int64_t hidden;            /* block width, 1..65536 (LFM2: 1024, 1536, 2048) */
  int64_t max_rows;          /* most rows of one prefill call, 1..65536 */
  float norm_eps;            /* RMSNorm epsilon, finite and > 0 (LFM2: 1e-5) */
  fk_block_weights block;
  /* FK_PROGRAMS_TAIL */
  int64_t tail_in;           /* features per frame into the head, 1..65536 (LFM2.5: 512) */
  int64_t max_frames;        /* most frames of one tail call, 1..65536 */
  float clip;                /* magnitude clip, > 0; INFINITY for none (LFM2.5; Vocos: 100) */
  fk_tail_weights tail;
  /* FK_PROGRAMS_LM, FK_PROGRAMS_DETOK */
  fk_lm_desc lm;
  fk_detok_desc detok;
  /* FK_PROGRAMS_AUDIO */
  fk_audio_desc audio;
} fk_plan_desc;

typedef struct fk_plan fk_plan;

/* fk_plan_create(): readiness. Validates every field, resolves one stamp per phase for this
 * CPU (fk_cpu_features() minus forbid_features; FK_VARIANT_DEBUG logs each choice), allocates
 * one arena for packed weights, scratch and state (pages touched now), packs the weights,
 * starts threads - 1 workers (or joins desc.team_of's team), and resets the state.
 * @return FK_OK and *out; FK_EINVAL naming the field, or FK_CPU_MASK and its value when the
 * environment's mask cannot be read (fk_cpu_features()); FK_EUNSUPPORTED naming the phase, leaf
 * and each missing feature with why: "this CPU lacks" it, "hidden by FK_CPU_MASK", "forbidden by
 * desc.forbid_features"; FK_EUNSUPPORTED naming the bits of the calling thread's MXCSR (x86) /
 * FPCR (AArch64) that are not the Linux default the leaves are exact under (flush to zero,
 * denormals as zero, default NaN, a rounding mode or an unmasked exception: docs/design.md);
 * FK_ENOMEM, FK_ESYSTEM. On failure *out is NULL and nothing is kept. */
fk_status fk_plan_create(const fk_plan_desc *desc, fk_plan **out, fk_error *err);
/* Readiness's checks alone: every field validated and every stamp resolved as fk_plan_create
 * would, nothing allocated, no thread started, no weight read. On FK_OK, *arena_bytes (if not
 * NULL) is the size of the one allocation fk_plan_create would make. Same statuses and messages
 * as fk_plan_create. */
fk_status fk_plan_check(const fk_plan_desc *desc, size_t *arena_bytes, fk_error *err);

/* fk_plan_destroy(): stops the team and frees the arena. NULL is a no-op. Not concurrently
 * with fk_run on the same plan. */
void fk_plan_destroy(fk_plan *plan);

/* The buffers of one fk_run. Only the fields of the program's family are read. */
typedef struct fk_io {
  int64_t rows;       /* block: rows (decode: 1); tail: frames. x, feat: the rows the program reads */
  /* block programs */
  uint16_t *x;        /* rows x hidden bf16 residual stream, row stride ldx; updated in place */
  int64_t ldx;        /* >= hidden */
  /* tail programs */
  const float *feat;  /* rows x tail_in f32 features, row stride ldfeat */
  int64_t ldfeat;     /* >= tail_in */
  void *pcm;          /* PCM out (float, or uint16_t with FK_PLAN_PCM_I16), pcm_cap samples; the
                         samples due must not overlap feat's rows nor this fk_io */
  int64_t pcm_cap;
  int64_t pcm_count;  /* out: samples written (frame 0 of a stream: 0, frame 1: 160, then 320;
                         flush: 480) */
  /* FK_PROGRAMS_LM */
  const int32_t *tokens;      /* rows token ids, each in [0, vocab) */
  float *logits;              /* out, or NULL: the last row's vocab f32 logits */
  const struct fk_sampling *sampling; /* NULL: greedy (argmax); else a temperature/top-k draw */
  int32_t next;               /* out: the next token */
  /* FK_PROGRAMS_DETOK (pcm, pcm_cap, pcm_count as the tail) */
  const int32_t *codes;       /* rows code frames x 8 codes, frame-major, each in [0, codebook_vocab) */
  /* FK_PROGRAMS_AUDIO (also tokens, rows, logits, sampling: the text's, next: as the LM; a step runs rows = 1) */
  int32_t loop;               /* prefill: FK_AUDIO_SEQUENTIAL or FK_AUDIO_INTERLEAVED */
  const struct fk_sampling *audio_sampling; /* NULL: greedy codes; else every codebook's draw */
  const int32_t *force;       /* NULL, or the output to emit and feed back instead of the draw: one
                                 token (a text step) or 8 codes (a frame; code c is codebook c+1's feedback) */
  int32_t out;                /* out: FK_AUDIO_OUT_TEXT (next), _FRAME (frame), _END (next = 7: the turn ended) */
  int32_t modality;           /* out: the next step's, FK_AUDIO_TEXT or FK_AUDIO_AUDIO */
  int32_t frame[FK_CODEBOOKS]; /* out: the frame (all 2048: the end of the audio), ready for FK_PROG_DETOK */
  int32_t drawn[FK_CODEBOOKS]; /* out: the sampler's choices before io.force and the 2048 rule (text: [0]) */
  float *frame_logits;        /* out, or NULL: 8 x audio_vocab f32, each codebook's logits */
} fk_io;

/* fk_run(): runs one program on the team. Checks the program (enabled at readiness), rows,
 * strides, pointers and the PCM capacity first: a refusal writes nothing and leaves the state
 * as it was. After the checks: no allocation, no system call but the barrier's futex, no file.
 * Not reentrant on one plan (FK_EBUSY); distinct plans run concurrently.
 * @return FK_OK; FK_EINVAL naming the field (among them: rows of ldx or ldfeat that overflow the
 * address space; io.pcm overlapping io.feat or the fk_io); FK_ESTATE (a flush after exactly 1
 * frame: the flush leaf needs T >= 2); FK_EBUSY. */
fk_status fk_run(fk_plan *plan, fk_program program, fk_io *io, fk_error *err);

/* ---- state: what carries across calls and turns --------------------------------------------
 * The ShortConv carry (the last two B*x rows, 2 x hidden bf16), the token cursor (rows the
 * block has consumed), the OLA ring (1280 f32) and the frame cursor of the current PCM stream.
 * The model programs add, per stack, the position, each conv layer's carry and each attention
 * layer's K and V caches (every slot), the detokenizer's frame count and OLA ring, and the
 * sampler's seed and draw counter.
 * A snapshot is a versioned, checksummed byte image tied to the plan's shapes, in native byte
 * order: "FKSTATE\0", u32 version (3), u32 programs, i64 hidden, i64 tail_in, i64 tokens,
 * i64 frames, u64 digest of the model shapes (56 bytes), then each family's state in the order
 * block, tail, LM, detokenizer: the carry (2 x hidden bf16: Bx[t-2], then Bx[t-1]; block plans),
 * the OLA ring (1280 f32; tail plans), the LM's (i64 position, per layer the carry or K then V
 * (slots x kv_heads x 64 bf16), u64 seed, u64 draws), the detokenizer's (i64 position, per layer
 * the same, i64 STFT frames, its OLA ring); then u64 FNV-1a of everything before it. */
typedef struct fk_state_info {
  int64_t tokens;  /* rows the block programs have committed since the last reset */
  int64_t frames;  /* frames of the current PCM stream (0 after a flush) */
  int64_t lm_pos;  /* tokens the language model has consumed (its next position) */
  int64_t detok_frames; /* code frames of the current detokenizer stream (0 after its flush) */
  uint64_t seed, draws; /* the sampler's generator: seed, and draws made (its counter); the audio
                           model's when the plan has both */
  int64_t audio_pos;    /* tokens and frames the audio model's backbone has consumed */
  int32_t audio_modality; /* the next audio step's modality (FK_AUDIO_TEXT / _AUDIO) */
  int32_t audio_turn;   /* 0: no turn (reset), 1: a turn runs, 2: the turn ended (<|im_end|>) */
} fk_state_info;

/* Sets the sampler's seed and restarts its counter (FK_PROGRAMS_LM, FK_PROGRAMS_AUDIO: both).
 * FK_EINVAL: plan NULL or neither; FK_EBUSY while a run is in flight. */
fk_status fk_sampler_seed(fk_plan *plan, uint64_t seed);

/* Zeros the state: the start of a sequence (the sampler's seed is kept, its counter restarts). FK_EBUSY (nothing changed) while fk_run, or a
 * snapshot, is in flight on the plan; FK_EINVAL for a NULL plan. */
fk_status fk_state_reset(fk_plan *plan);
fk_state_info fk_state_query(const fk_plan *plan);
size_t fk_state_bytes(const fk_plan *plan);      /* the snapshot size */
/* Copies the state; the plan is claimed for the copy, so no fk_run starts mid-snapshot.
 * @return FK_OK; FK_EINVAL when plan or buf is NULL or len < fk_state_bytes() (buf untouched);
 * FK_EBUSY while fk_run is in flight (buf untouched). */
fk_status fk_state_save(const fk_plan *plan, void *buf, size_t len, fk_error *err);
/* @return FK_OK; FK_ESTATE when the image is not a snapshot of a plan of these shapes (magic,
 * version, programs, hidden, tail_in, len, checksum, cursors outside 0..2^62: the message says
 * which); FK_EINVAL (plan or buf NULL), FK_EBUSY. The state is only replaced when every check
 * passes; buf is only read. */
fk_status fk_state_load(fk_plan *plan, const void *buf, size_t len, fk_error *err);

/* ---- introspection: the stamps chosen, and per-phase times ------------------------------- */
typedef struct fk_phase_info {
  const char *name;    /* "rmsnorm", "in_proj", ... */
  const char *symbol;  /* the stamp this phase calls */
  const char *split;   /* how the phase's rows are shared: "rows", "weight rows", "member 0" */
  uint64_t runs;       /* completed runs of the phase (FK_PLAN_TIMING) */
  uint64_t ns;         /* total wall time in ns, barrier included (FK_PLAN_TIMING) */
  int layer;           /* the model layer the phase works on, -1 for none */
} fk_phase_info;

int fk_plan_threads(const fk_plan *plan);
/* The CPU member m is bound to, or -1 (member 0, FK_PLAN_NO_PIN, fewer CPUs than members, or
 * binding refused by the system: never an error). */
int fk_plan_member_cpu(const fk_plan *plan, int member);
size_t fk_plan_arena_bytes(const fk_plan *plan); /* the one allocation readiness made */
/* The number of phases of `program`, 0 when the plan is not ready for it. */
int fk_program_phases(const fk_plan *plan, fk_program program);
/* @return FK_OK; FK_EINVAL for plan or out NULL, or a program without phase i (*out untouched). */
fk_status fk_phase_query(const fk_plan *plan, fk_program program, int i, fk_phase_info *out, fk_error *err);
/* The program's name ("block_prefill"), or "?" */
const char *fk_program_name(fk_program program);
/* Zeros the phase timings. */
void fk_plan_timing_reset(fk_plan *plan);

#ifdef __cplusplus
}
#endif

#endif /* FLASHKERN_H */
