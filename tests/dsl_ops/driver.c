/* tests/dsl_ops/driver.c: checks the opcheck stamps of this ISA against C, lane by lane.
 * Built and run by tests/dsl_ops.sh (natively and under qemu-aarch64). Exit 0 when every
 * stamp agrees bit for bit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fk_leaves.h"

typedef void (*fn_t)(const fk_opcheck_ew_args *);
#define ROW(id, variant, tier, symbol, features) { #symbol, symbol },
static const struct { const char *name; fn_t fn; } stamps[] = { FK_STAMPS_HOST(ROW) };

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float val(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

int main(void) {
  enum { MAXN = 37, GUARD = 8 };
  /* special pairs for max: NaN either side, +-0 both orders, equal, ordinary */
  static const uint32_t sa[] = { 0x7fc00001, 0x3f800000, 0x00000000, 0x80000000, 0xff800000, 0x40000000, 0x3f800000, 0x80000001 };
  static const uint32_t sb[] = { 0x3f800000, 0x7fc00002, 0x80000000, 0x00000000, 0x7f800000, 0xc0000000, 0x3f800000, 0x00000001 };
  int bad = 0, runs = 0;
  for (size_t s = 0; s < sizeof stamps / sizeof stamps[0]; s++) {
    for (int64_t n = 1; n <= MAXN; n++) {
      float a[MAXN], b[MAXN], c[MAXN], mx[MAXN + GUARD], fm[MAXN + GUARD], sc[2 + GUARD];
      uint64_t z = 0x243f6a8885a308d3ull + (uint64_t)n;
      for (int i = 0; i < n; i++) {
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        a[i] = val((uint32_t)(z >> 32) & 0xbfffffffu);      /* finite, random sign */
        b[i] = val((uint32_t)z & 0xbfffffffu);
        c[i] = val((uint32_t)(z >> 16) & 0xbfffffffu);
        if (i < 8) { a[i] = val(sa[i]); b[i] = val(sb[i]); }
      }
      for (int i = 0; i < MAXN + GUARD; i++) mx[i] = fm[i] = val(0x7fa5a5a5u);
      for (int i = 0; i < 2 + GUARD; i++) sc[i] = val(0x7fa5a5a5u);
      fk_opcheck_ew_args args = { a, b, c, mx, fm, sc, n, 0.75f };
      stamps[s].fn(&args);
      runs++;
      for (int i = 0; i < MAXN + GUARD; i++) {
        uint32_t want_mx = i < n ? bits(a[i] > b[i] ? a[i] : b[i]) : 0x7fa5a5a5u;
        uint32_t want_fm = i < n ? bits(fmaf(a[i], b[i] * 0.75f, c[i])) : 0x7fa5a5a5u;
        if (bits(mx[i]) != want_mx || bits(fm[i]) != want_fm) {
          if (bad++ < 5)
            printf("%s n=%lld [%d]: max 0x%08x want 0x%08x, fma 0x%08x want 0x%08x\n", stamps[s].name,
                   (long long)n, i, bits(mx[i]), want_mx, bits(fm[i]), want_fm);
        }
      }
      uint32_t want0 = bits(a[0] * b[0] + c[0]), want1 = bits((float)(n - 1));
      if (bits(sc[0]) != want0 || bits(sc[1]) != want1 || bits(sc[2]) != 0x7fa5a5a5u) {
        if (bad++ < 5) printf("%s n=%lld: scalar 0x%08x 0x%08x, want 0x%08x 0x%08x\n", stamps[s].name,
                              (long long)n, bits(sc[0]), bits(sc[1]), want0, want1);
      }
    }
  }
  printf("opcheck: %d stamp runs, %d mismatches\n", runs, bad);
  return bad != 0 || runs == 0;
}
