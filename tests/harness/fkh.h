/* tests/harness/fkh.h: one way to call any leaf form on any target.
 *
 * A call is a form (from the registry tables in generated/fk_leaves.h) plus one value per
 * argument field: an integer, a float, or a buffer. Targets: the contract model, a host stamp,
 * or an AArch64 stamp run by the stamp runner under qemu-aarch64 (a batch of calls per qemu
 * start). Every buffer carries canaries on both sides; a target that writes outside a buffer
 * fails the call. FKH_GUARD_PAGES=end|start puts one side against a PROT_NONE page instead
 * (fkh_buf below): any access past it faults. Outputs of two targets are compared bit for bit,
 * NaNs included: every NaN an exact leaf stores is the canonical 0x7fc00000 / 0x7fc0 on every
 * target (docs/design.md, "NaN, subnormal and tie policy"), so there is no NaN exception.
 */
#ifndef FKH_H
#define FKH_H

#include <stddef.h>
#include <stdint.h>

#include "fk_leaves.h"

enum { FKH_MAX_FIELDS = 20, FKH_GUARD = 64 };   /* attn_prefill_ring64_wide: 20 fields */

/* The registry tables of generated/fk_leaves.h (FK_LEAVES, FK_FORMS, FK_FIELDS_<id>) as data. */
typedef struct fkh_field {
  const char *name;
  int offset, kind, elem, dir;
  /* pointers: the elements the leaf may touch from the pointer on, computed from the argument
   * struct's scalars (the template's extent); -1 where the data decides it. NULL for scalars. */
  int64_t (*extent)(const void *args);
  const char *alias;   /* the pointer fields this output may be, '|'-separated, or "" */
} fkh_field;

typedef struct fkh_form {
  const char *leaf, *form, *id;
  int size, nfields;
  const fkh_field *fields;
  int tiers;           /* FK_TIERS_EXACT | FK_TIERS_FAST */
  int fixtures;        /* FK_FX_OWN, FK_FX_VIA, FK_FX_EXEMPT */
  const char *fixtures_arg;   /* FK_FX_VIA: the base form's id; FK_FX_EXEMPT: the reason */
} fkh_form;

typedef struct fkh_leaf {
  const char *leaf, *template_path;
  int gate;                     /* FK_GATE_* */
  const char *fast_tolerance;   /* the fast tier's tolerance class, or "" */
} fkh_leaf;

extern const fkh_form fkh_forms[];
extern const int fkh_nforms;
extern const fkh_leaf fkh_leaves[];
extern const int fkh_nleaves;
int fkh_form_index(const char *id); /* "gemv_bf16_rne" -> index, -1 if unknown */
const fkh_leaf *fkh_leaf_of(const char *leaf);   /* NULL if unknown */

/* A buffer: nbytes of data with canaries around it. [alloc, alloc + nbytes + 2 * FKH_GUARD) is
 * the whole canaried extent in every mode, and data sits at the same offset from alloc in every
 * buffer of one mode, so copying that extent between two buffers of the same mode copies the data.
 *   canary mode (default): guard (FKH_GUARD) | data | guard (FKH_GUARD), from malloc;
 *   FKH_GUARD_END:   canary (2 * FKH_GUARD) | data, the data ending exactly at a page boundary
 *                    followed by a PROT_NONE page (alloc = data - 2 * FKH_GUARD);
 *   FKH_GUARD_START: data | canary (2 * FKH_GUARD), the data beginning exactly at a page boundary
 *                    preceded by a PROT_NONE page (alloc = data).
 * In the guard-page modes any access even one byte past the end (END) or before the start (START)
 * faults, and a write just past the other side still breaks the canary. The data is only as
 * aligned as its size makes it (END: data + nbytes is page aligned); a 0-byte buffer's data points
 * at the guard boundary. */
typedef struct fkh_buf {
  uint8_t *alloc;   /* the canaried extent (see above); NULL: no buffer */
  uint8_t *data;
  size_t nbytes;
  uint8_t *map;     /* guard-page modes: the mapping (guard page included), else NULL */
  size_t maplen;
  int mode;         /* FKH_GUARD_CANARY, FKH_GUARD_END or FKH_GUARD_START */
} fkh_buf;

typedef struct fkh_val {
  int64_t i64;
  float f32;
  fkh_buf buf;
} fkh_val;

typedef struct fkh_call {
  int form;
  char name[96];
  fkh_val v[FKH_MAX_FIELDS];
  int failed;            /* set by a target: canary broken or target error */
  char why[160];
} fkh_call;

/* Buffers -------------------------------------------------------------------------------- */
void fkh_buf_alloc(fkh_buf *b, size_t nbytes);             /* zeroed data, canaried guards */
void fkh_buf_free(fkh_buf *b);
int fkh_buf_guards_ok(const fkh_buf *b);                   /* 1 if both guards intact */

/* Buffer mode of this process's next allocations. The environment variable FKH_GUARD_PAGES
 * selects it, read at the first allocation: "end" or "start" (the guard-page modes above),
 * unset, empty or "canary": canaries only; anything else is an error. fkh_set_guard_mode
 * overrides it and exports it (FKH_GUARD_PAGES, set or unset) so that the stamp runner started
 * under qemu-aarch64 allocates its buffers the same way. */
enum { FKH_GUARD_CANARY = 0, FKH_GUARD_END = 1, FKH_GUARD_START = 2 };
int fkh_guard_mode(void);
void fkh_set_guard_mode(int mode);
const char *fkh_guard_mode_name(int mode);                 /* "canary", "end", "start" */
/* Where addr lies relative to the call's buffers (for fault reports): "inside field 'y' at
 * data[+12] ...", "0 bytes past the end of field 'x' ...", "4 bytes before the start of field
 * 'y' ..." (the nearest buffer within 1 MiB). Returns 1 if near one, else 0. */
int fkh_locate(const fkh_call *c, const void *addr, char *out, size_t len);

/* Calls ---------------------------------------------------------------------------------- */
void fkh_call_init(fkh_call *c, const char *form_id, const char *name);
int fkh_field_index(const fkh_call *c, const char *field);  /* -1 if absent */
void fkh_set_i64(fkh_call *c, const char *field, int64_t v);
void fkh_set_f32(fkh_call *c, const char *field, float v);
/* The extent of pointer field i for the call's scalars (elements, -1: decided by the data). */
int64_t fkh_extent(const fkh_call *c, int field);
/* Allocates a buffer of n elements of the field's element type, zero-filled. */
void *fkh_set_buf(fkh_call *c, const char *field, size_t n);
void *fkh_buf_of(fkh_call *c, const char *field);
int64_t fkh_i64_of(const fkh_call *c, const char *field);
void fkh_call_copy(fkh_call *dst, const fkh_call *src);     /* deep copy of every buffer */
void fkh_call_free(fkh_call *c);

/* Targets -------------------------------------------------------------------------------- */
typedef enum { FKH_CONTRACT, FKH_HOST, FKH_REMOTE } fkh_kind;

typedef struct fkh_target {
  fkh_kind kind;
  char variant[24];        /* host/remote: stamp variant ("avx512", "neon"; remote "contract" and
                              "contract_fast": the models built for AArch64); contract: "" (the
                              exact tier's models, fkc_<id>) or "fast" (fkc_<id>_fast) */
  char cpu[24];            /* remote: qemu -cpu value */
  int perturb;             /* contract: fkc_perturb */
  char label[64];
} fkh_target;

fkh_target fkh_contract(int perturb);
/* The fast tier's contract models (fkc_<id>_fast: the forms whose fast tier is deterministic, the
 * quantized GEMV forms); a call of another form fails. */
fkh_target fkh_contract_fast(int perturb);
fkh_target fkh_host(const char *variant);
fkh_target fkh_remote(const char *variant, const char *cpu);

/* 1 if this machine can run the target (host: CPU features; remote: runner and qemu exist),
 * else 0 and a reason. */
int fkh_available(const fkh_target *t, char *why, size_t whylen);

/* Runs every call on the target, in place. Returns 0, or -1 with a message (the calls that
 * failed have failed=1 and a reason). */
int fkh_run(const fkh_target *t, fkh_call *calls, int ncalls, char *err, size_t errlen);

/* Comparison ----------------------------------------------------------------------------- */
/* Compares every output (out/inout) buffer of a and b bit for bit. Returns 1 when equal, else 0
 * and a message naming the call, field, index and both bit patterns. */
int fkh_same_outputs(const fkh_call *a, const fkh_call *b, char *msg, size_t msglen);

/* Remote protocol (shared by the host and the stamp runner) ------------------------------ */
int fkh_write_calls(const char *path, const fkh_call *calls, int ncalls, const char *symbol_suffix);
int fkh_read_calls(const char *path, fkh_call **calls, int *ncalls, char *suffix, size_t suffixlen);
int fkh_write_results(const char *path, const fkh_call *calls, int ncalls);
int fkh_read_results(const char *path, fkh_call *calls, int ncalls, char *err, size_t errlen);

/* Local execution of one call through a function taking the argument struct. */
typedef void (*fkh_fn)(const void *args);
void fkh_invoke(fkh_call *c, fkh_fn fn);
void fkh_invoke_contract(fkh_call *c, int perturb);
void fkh_invoke_contract_tier(fkh_call *c, int perturb, int fast);   /* fast: fkc_<id>_fast */
int fkh_has_contract(int form);   /* 1 if tests/contract/ has the form's model (fkc_<id>) */
int fkh_has_fast_contract(int form);   /* 1 if it has the form's fast-tier model (fkc_<id>_fast) */
void fkh_fill_struct(const fkh_call *c, uint8_t *s);  /* the form's argument struct */
/* The host stamp of a form and variant, or NULL. */
fkh_fn fkh_host_stamp(int form, const char *variant, uint64_t *features);
uint64_t fkh_cpu_features(void);

/* Deterministic randomness (splitmix64) and value makers; integer-only, identical on every ISA. */
typedef struct fkh_rng { uint64_t s; } fkh_rng;
uint64_t fkh_next(fkh_rng *r);
int64_t fkh_range(fkh_rng *r, int64_t lo, int64_t hi);       /* inclusive */
float fkh_f32(fkh_rng *r, int emin, int emax);                /* random sign, exponent, mantissa */
uint16_t fkh_bf16(fkh_rng *r, int emin, int emax);

#endif
