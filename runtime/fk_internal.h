/* runtime/fk_internal.h: what every runtime file shares (not installed): error recording
 * (fk_error_set, FK_RETURN_ERROR_IF), why a CPU feature is missing (fk_cpu_explain), stamp
 * resolution with its reasons (fk_leaf_pick), and the byte-range helpers fk_overlap and fk_extent. */
#ifndef FK_INTERNAL_H
#define FK_INTERNAL_H

#include <stdint.h>

#include "flashkern.h"

fk_status fk_error_set(fk_error *err, fk_status s, const char *file, int line, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));

/* Records file:line and returns the status from the enclosing function when cond holds. */
#define FK_RETURN_ERROR_IF(cond, err, status, ...) \
  do { \
    if (cond) return fk_error_set((err), (status), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

/* FK_CPU_MASK as fk_cpu_features() read it: FK_OK, or FK_EINVAL naming FK_CPU_MASK, its value and
 * what is wrong with it, the message starting with `who` (the entry point refusing). */
fk_status fk_cpu_mask_check(const char *who, fk_error *err);
/* FK_EUNSUPPORTED naming each control bit of this thread's MXCSR / FPCR that is not the Linux
 * default the leaves are exact under (round to nearest even, no flush to zero, no default-NaN
 * mode, no trap); FK_OK otherwise. Read once per call (readiness), never written. */
fk_status fk_fpenv_check(const char *who, fk_error *err);

/* Why the features in need & ~features are missing, into buf (len bytes, NUL-terminated; returns
 * buf): "this CPU lacks <names>" for those the CPU does not offer, "<names> hidden by
 * FK_CPU_MASK=<value>" for those the mask removed, "<names> <excluded_by>" for the rest (the
 * caller removed them: "forbidden by desc.forbid_features"), groups joined by "; ".
 * fk_cpu_explain() asks this process's CPU and FK_CPU_MASK; fk_cpu_missing() is the same rule
 * over given values (detected: what the CPU offers; mask_set: FK_CPU_MASK was set to mask). */
const char *fk_cpu_explain(uint64_t need, uint64_t features, const char *excluded_by, char *buf, size_t len);
const char *fk_cpu_missing(uint64_t need, uint64_t features, uint64_t detected, int mask_set, uint64_t mask,
                           const char *mask_text, const char *excluded_by, char *buf, size_t len);

/* 1 when a CPU of this CPUID vendor string (leaf 0: EBX, EDX, ECX) and leaf 1 EAX has the hwstream
 * trait (FK_CPU_HWSTREAM: AMD family 19h), else 0; fk_cpu_features() sets the bit from it on x86_64. */
int fk_cpu_hwstream(const char vendor[12], uint32_t leaf1_eax);

/* fk_leaf_resolve() with the reason for a feature the caller removed (excluded_by, as in
 * fk_cpu_explain) and without FK_CPU_MASK's check (the caller made it). */
fk_status fk_leaf_pick(const char *form, fk_tier tier, uint64_t features, const char *excluded_by, fk_leaf *out,
                       fk_error *err);

/* fk_q_pack with fn naming the caller in its refusals (readiness: the descriptor's field). */
fk_status fk_q_pack_named(const char *fn, fk_qformat f, const void *blocks, size_t bytes, int64_t n, int64_t k,
                          void *out, size_t out_bytes, fk_error *err);
/* fk_q_quantize_bf16 then fk_q_pack in one pass, no GGUF copy (readiness's quantizer): the same
 * checks and refusals, fn naming the caller in them. */
fk_status fk_q_pack_bf16(const char *fn, fk_qformat f, const uint16_t *w, int64_t ldw, int64_t n, int64_t k, void *out,
                         size_t out_bytes, fk_error *err);

/* A weight format's name in messages: "q8", "q4", "q4k" ("bf16" for FK_QNONE). */
static inline const char *fk_q_name(fk_qformat f) {
  return f == FK_Q8 ? "q8" : f == FK_Q4 ? "q4" : f == FK_Q4K ? "q4k" : "bf16";
}

/* 1 when the byte ranges [a, a + an) and [b, b + bn) share a byte (an empty range shares none). */
static inline int fk_overlap(const void *a, size_t an, const void *b, size_t bn) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return an && bn && x < y + bn && y < x + an;
}

/* Bytes spanned by `rows` rows of `width` elements of `elem` bytes at row stride `ld` (rows,
 * width >= 1, ld >= width): ((rows - 1) * ld + width) * elem, or 0 when beyond PTRDIFF_MAX. */
static inline size_t fk_extent(int64_t rows, int64_t ld, int64_t width, size_t elem) {
  const int64_t lim = PTRDIFF_MAX / (int64_t)elem;
  if (width > lim || (rows > 1 && ld > (lim - width) / (rows - 1))) return 0;
  return (size_t)((rows - 1) * ld + width) * elem;
}

#endif
