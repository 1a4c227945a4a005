/* tests/interpose.h: the malloc family interposed for the tests that count what a call allocates
 * (tests/interpose.c): the executable's malloc, calloc, realloc, free, posix_memalign,
 * aligned_alloc, memalign and valloc win over libc's for every caller, the library's threads and
 * libc's own (strdup) included, and forward to glibc's internal entry points. While armed they
 * count every call (the first one named) and the blocks live: allocated minus freed. Plain glibc
 * builds only: a sanitizer owns malloc (test_noalloc does not run under the asan preset;
 * test_badinput then asks LeakSanitizer instead). */
#ifndef FKT_INTERPOSE_H
#define FKT_INTERPOSE_H

/* Arms (1) or disarms (0) the counters; arming zeroes them. */
void fkt_interpose_arm(int on);
/* Counts one call named `what` when armed (the tests' own interposers: open, fopen). */
void fkt_interpose_count(const char *what);
/* Calls counted since armed, and the first one's name ("" for none). */
long fkt_interpose_calls(void);
const char *fkt_interpose_first(void);
/* Blocks allocated minus blocks freed since armed. */
long fkt_interpose_live(void);

#endif
