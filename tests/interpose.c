/* tests/interpose.c: see interpose.h. */
#include "interpose.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static atomic_int armed;
static atomic_long calls, live;
static char first[64];

void fkt_interpose_arm(int on) {
  if (on) {
    atomic_store(&calls, 0);
    atomic_store(&live, 0);
    first[0] = 0;
  }
  atomic_store(&armed, on);
}

void fkt_interpose_count(const char *what) {
  if (!atomic_load(&armed)) return;
  if (atomic_fetch_add(&calls, 1) == 0) snprintf(first, sizeof first, "%s", what);
}

long fkt_interpose_calls(void) { return atomic_load(&calls); }
const char *fkt_interpose_first(void) { return first; }
long fkt_interpose_live(void) { return atomic_load(&live); }

/* a block came (+1) or went (-1) while armed */
static void *block(void *p, long d) {
  if (p && atomic_load(&armed)) atomic_fetch_add(&live, d);
  return p;
}

void *malloc(size_t n) {
  fkt_interpose_count("malloc");
  return block(__libc_malloc(n), 1);
}
void *calloc(size_t a, size_t b) {
  fkt_interpose_count("calloc");
  return block(__libc_calloc(a, b), 1);
}
void *realloc(void *p, size_t n) {
  fkt_interpose_count("realloc");
  void *q = __libc_realloc(p, n);
  if (!p) return block(q, 1);
  if (!n) block(p, -1); /* glibc: realloc(p, 0) frees p */
  return q;
}
void free(void *p) {
  if (p) fkt_interpose_count("free");
  block(p, -1);
  __libc_free(p);
}
int posix_memalign(void **out, size_t align, size_t n) {
  fkt_interpose_count("posix_memalign");
  void *p = block(__libc_memalign(align, n), 1);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}
void *aligned_alloc(size_t align, size_t n) {
  fkt_interpose_count("aligned_alloc");
  return block(__libc_memalign(align, n), 1);
}
void *memalign(size_t align, size_t n) {
  fkt_interpose_count("memalign");
  return block(__libc_memalign(align, n), 1);
}
void *valloc(size_t n) {
  fkt_interpose_count("valloc");
  return block(__libc_memalign(4096, n), 1);
}
