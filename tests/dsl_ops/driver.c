/* tests/dsl_ops/driver.c: checks the opcheck stamps of this ISA against C, lane by lane.
 * Built and run by tests/dsl_ops.sh (natively and under qemu-aarch64). Exit 0 when every
 * stamp agrees bit for bit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fk_leaves.h"

typedef void (*fn_t)(const fk_opcheck_ew_args *);
typedef void (*int_fn_t)(const fk_opcheck_int_args *);
#define ROW(id, variant, tier, symbol, features) { #id, #symbol, (void (*)(void))symbol },
static const struct { const char *id, *name; void (*fn)(void); } all[] = { FK_STAMPS_HOST(ROW) };

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float val(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
/* the NaN rule: every stored NaN is the canonical 0x7fc00000 */
static uint32_t canon(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u : u; }
static uint16_t canon16(uint16_t h) { return (h & 0x7fffu) > 0x7f80u ? 0x7fc0u : h; }

typedef void (*canon_fn_t)(const fk_opcheck_canon_args *);

/* form canon: canon (vector, tails, scalar) and canon_raw over every kind of NaN in every lane */
static int check_canon(int *runs) {
  enum { MAXN = 37, NR = 3, GUARD = 8 };
  static const uint32_t kinds[] = { 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fc12345u, 0xffe54321u,
                                    0x7fffffffu, 0xffffffffu, 0x7fa00003u, 0x7f800000u, 0xff800000u, 0x00000000u,
                                    0x80000000u, 0x00000001u, 0x3f800000u, 0x7f7fffffu, 0xff400000u };
  static const uint16_t kinds16[] = { 0x7fc0, 0xffc0, 0x7f81, 0xff81, 0x7fc1, 0xffe5, 0x7fff, 0xffff, 0x7fa0,
                                      0x7f80, 0xff80, 0x0000, 0x8000, 0x0001, 0x3f80, 0x7f7f, 0xff40 };
  const int nk = (int)(sizeof kinds / sizeof kinds[0]);
  int bad = 0;
  for (size_t s = 0; s < sizeof all / sizeof all[0]; s++) {
    if (strcmp(all[s].id, "opcheck_canon") != 0) continue;
    canon_fn_t fn = (canon_fn_t)all[s].fn;
    for (int64_t n = 1; n <= MAXN; n++) {
      float a[MAXN], cn[MAXN + GUARD], cs[MAXN + GUARD];
      uint16_t h[32 * NR], cr[32 * NR + GUARD];
      for (int i = 0; i < n; i++) a[i] = val(kinds[(i + n) % nk]);
      for (int i = 0; i < 32 * NR; i++) h[i] = kinds16[(i * 7 + n) % nk];
      for (int i = 0; i < MAXN + GUARD; i++) cn[i] = cs[i] = val(0x7fa5a5a5u);
      for (int i = 0; i < 32 * NR + GUARD; i++) cr[i] = 0x7fa5;
      fk_opcheck_canon_args args = { a, h, cn, cs, cr, n, n % (NR + 1) };
      fn(&args);
      (*runs)++;
      for (int i = 0; i < MAXN + GUARD; i++) {
        uint32_t want = i < n ? canon(bits(a[i])) : 0x7fa5a5a5u;
        if ((bits(cn[i]) != want || bits(cs[i]) != want) && bad++ < 5)
          printf("%s n=%lld [%d]: canon 0x%08x, scalar 0x%08x, want 0x%08x\n", all[s].name, (long long)n, i,
                 bits(cn[i]), bits(cs[i]), want);
      }
      for (int i = 0; i < 32 * NR + GUARD; i++) {
        uint16_t want = i < 32 * (n % (NR + 1)) ? canon16(h[i]) : 0x7fa5;
        if (cr[i] != want && bad++ < 5)
          printf("%s n=%lld [%d]: canon_raw 0x%04x, want 0x%04x\n", all[s].name, (long long)n, i, cr[i], want);
      }
    }
  }
  return bad;
}

typedef void (*rows_fn_t)(const fk_opcheck_rows_args *);

/* form rows: reduce_add_rows against the halving tree in C, one vector at a time: values of
 * exponents 2^-27 .. 2^27 and either sign (so that another pairing rounds differently), with a
 * NaN, an inf and -0 in some lanes */
static int check_rows(int *runs) {
  enum { NR = 3, GUARD = 8 };
  int bad = 0;
  for (size_t s = 0; s < sizeof all / sizeof all[0]; s++) {
    if (strcmp(all[s].id, "opcheck_rows") != 0) continue;
    rows_fn_t fn = (rows_fn_t)all[s].fn;
    for (int rep = 0; rep < 20; rep++) {
      float a[256 * NR], y[16 * NR + GUARD], mv[112 + GUARD];
      uint64_t z = 0x9e3779b97f4a7c15ull * (uint64_t)(rep + 1);
      for (int i = 0; i < 256 * NR; i++) {
        z = z * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t u = (uint32_t)(z >> 32);
        a[i] = val((u & 0x807fffffu) | ((100u + (u >> 8) % 54u) << 23));
      }
      if (rep % 4 == 1) a[37] = val(0x7fc12345u), a[300] = val(0x7f800000u), a[511] = val(0x80000000u);
      for (int i = 0; i < 16 * NR + GUARD; i++) y[i] = val(0x7fa5a5a5u);
      for (int i = 0; i < 112 + GUARD; i++) mv[i] = val(0x7fa5a5a5u);
      int64_t nr = 1 + rep % NR;
      fk_opcheck_rows_args args = { a, y, mv, nr };
      fn(&args);
      (*runs)++;
      for (int i = 0; i < 16 * NR + GUARD; i++) {
        uint32_t want = 0x7fa5a5a5u;
        if (i < 16 * nr) {
          float v[16];
          memcpy(v, a + 16 * i, sizeof v);
          for (int h = 8; h >= 1; h /= 2)
            for (int l = 0; l < h; l++) v[l] = v[l] + v[l + h];
          want = canon(bits(v[0]));
        }
        if (bits(y[i]) != want && bad++ < 5)
          printf("%s rep %d [%d]: reduce_add_rows 0x%08x, want 0x%08x\n", all[s].name, rep, i, bits(y[i]), want);
      }
      /* the moves, as indices into x = a[0..15], y = a[16..31] (chunk c, lane j) */
      for (int i = 0; i < 112 + GUARD; i++) {
        int q = i / 16, c = (i % 16) / 4, j = i % 4, from = -1;
        switch (q) {
        case 0: from = c < 2 ? 4 * (3 - c) + j : 16 + 4 * (3 - c) + j; break;      /* sel128 0x1b */
        case 1: case 2: from = 4 * c + 2 * (q - 1) + j / 2 + (j % 2) * 16; break;  /* unpack g = 1 */
        case 3: case 4: from = 4 * c + 2 * (q - 3) + j % 2 + (j / 2) * 16; break;  /* unpack g = 2 */
        case 5: case 6: from = 4 * c + 2 * (j % 2) + (q - 5) + (j / 2) * 16; break; /* uzp4 */
        default: break;
        }
        uint32_t want = from < 0 ? 0x7fa5a5a5u : canon(bits(a[from]));
        if (bits(mv[i]) != want && bad++ < 5)
          printf("%s rep %d: move %d [%d]: 0x%08x, want 0x%08x\n", all[s].name, rep, q, i % 16, bits(mv[i]), want);
      }
    }
  }
  return bad;
}

typedef void (*quant_fn_t)(const fk_opcheck_quant_args *);

/* IEEE binary16 -> f32 bits, by the fields (a subnormal through an exact product); a NaN is compared
 * by class only (its payload is the ISA's: docs/dsl.md) */
static uint32_t f16_bits(uint16_t h) {
  uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 0x3ffu;
  if (e == 31) return s | 0x7f800000u | m << 13;
  if (e) return s | (e + 112) << 23 | m << 13;
  return s | bits((float)m * 0x1p-24f);
}
static int f16_ok(uint16_t h, uint32_t got) {
  if ((h & 0x7fffu) > 0x7c00u) return (got & 0x7fffffffu) > 0x7f800000u && got >> 31 == (uint32_t)(h >> 15);
  return got == f16_bits(h);
}

/* form quant: load_i8 / load_u8 over every byte value at odd offsets (int8 and uint8 arrays alike),
 * in a tile loop and outside it; load_bcast_f16 over special binary16 patterns and, once, all 65536
 * (every lane of the broadcast compared), and a dequantized product q * scale */
static int check_quant(int *runs) {
  enum { NRMAX = 9, GUARD = 8, NB = 32 * NRMAX + 320, NHALL = 65535 };
  static const uint16_t special[] = { 0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0200, 0x0400, 0x8400,
                                      0x0401, 0x3c00, 0xbc00, 0x3bff, 0x3555, 0x1234, 0x7bff, 0xfbff, 0x7c00,
                                      0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7dff, 0xffff };
  static int8_t q[NB];
  static uint8_t u[NB];
  static uint16_t h[NHALL + 1];
  static int32_t si[64 * NRMAX + GUARD], zi[64 * NRMAX + GUARD], xi[80 + GUARD], hb[32 * NHALL + GUARD];
  static float sf[16 * NRMAX + GUARD];
  static const int soffs[4] = { 0, 17, 3, 257 }, zoffs[4] = { 0, 17, 3, 31 };
  int bad = 0;
  for (size_t s = 0; s < sizeof all / sizeof all[0]; s++) {
    if (strcmp(all[s].id, "opcheck_quant") != 0) continue;
    quant_fn_t fn = (quant_fn_t)all[s].fn;
    for (int rep = 0; rep <= NRMAX + 1; rep++) {
      int64_t nr = rep <= NRMAX ? rep : NRMAX, nh = rep <= NRMAX ? (int64_t)(sizeof special / 2) - 1 : NHALL;
      for (int i = 0; i < NB; i++) q[i] = (int8_t)(uint8_t)(i * 37 + rep * 11), u[i] = (uint8_t)(i * 101 + rep * 3 + 7);
      for (int64_t j = 0; j <= nh; j++) h[j] = rep <= NRMAX ? special[(j + rep) % (nh + 1)] : (uint16_t)j;
      for (int i = 0; i < 64 * NRMAX + GUARD; i++) si[i] = zi[i] = 0x7fa5a5a5;
      for (int i = 0; i < 80 + GUARD; i++) xi[i] = 0x7fa5a5a5;
      for (int64_t i = 0; i < 32 * nh + GUARD; i++) hb[i] = 0x7fa5a5a5;
      for (int i = 0; i < 16 * NRMAX + GUARD; i++) sf[i] = val(0x7fa5a5a5u);
      fk_opcheck_quant_args args = { q, u, h, si, zi, sf, xi, hb, nr, nh };
      fn(&args);
      (*runs)++;
      const uint8_t *qb = (const uint8_t *)q;
      for (int i = 0; i < 64 * NRMAX + GUARD; i++) {
        int k = i / 64, m = (i % 64) / 16, bs = 32 * k + soffs[m] + i % 16, bz = 32 * k + zoffs[m] + i % 16;
        int32_t want_s = 0x7fa5a5a5, want_z = 0x7fa5a5a5;
        if (i < 64 * nr) {
          want_s = m == 2 ? (int8_t)u[bs] : q[bs];
          want_z = m == 2 ? qb[bz] : u[bz];
        }
        if ((si[i] != want_s || zi[i] != want_z) && bad++ < 5)
          printf("%s nr=%lld [%d]: load_i8 %d want %d, load_u8 %d want %d\n", all[s].name, (long long)nr, i, si[i],
                 want_s, zi[i], want_z);
      }
      for (int i = 0; i < 16 * NRMAX + GUARD; i++) {
        uint32_t want = 0x7fa5a5a5u;
        if (i < 16 * nr) {
          int k = i / 16;
          float scale = val(f16_bits((uint16_t)(u[32 * k + 6] | u[32 * k + 7] << 8)));
          want = canon(bits((float)q[32 * k + i % 16] * scale));
        }
        if (bits(sf[i]) != want && bad++ < 5)
          printf("%s nr=%lld [%d]: q * scale 0x%08x want 0x%08x\n", all[s].name, (long long)nr, i, bits(sf[i]), want);
      }
      for (int i = 0; i < 80 + GUARD; i++) {
        int m = i / 16, l = i % 16;
        int32_t want = i >= 80 ? 0x7fa5a5a5
                       : m == 0 ? q[301 + l] : m == 1 ? u[288 + l] : m == 2 ? u[7 + l] : m == 3 ? (int8_t)u[250 + l] : qb[301 + l];
        if (xi[i] != want && bad++ < 5)
          printf("%s nr=%lld: xi[%d] %d want %d\n", all[s].name, (long long)nr, i, xi[i], want);
      }
      for (int64_t i = 0; i < 32 * nh + GUARD; i++) {
        uint32_t got = (uint32_t)hb[i];
        int ok = i < 32 * nh ? f16_ok(h[i / 32 + (i % 32) / 16], got) : got == 0x7fa5a5a5u;
        if (!ok && bad++ < 5)
          printf("%s nh=%lld [%lld]: load_bcast_f16 of 0x%04x: 0x%08x want 0x%08x\n", all[s].name, (long long)nh,
                 (long long)i, i < 32 * nh ? h[i / 32 + (i % 32) / 16] : 0, got,
                 i < 32 * nh ? f16_bits(h[i / 32 + (i % 32) / 16]) : 0x7fa5a5a5u);
      }
    }
  }
  return bad;
}

static uint64_t mix(uint64_t *z) {
  *z = *z * 6364136223846793005ull + 1442695040888963407ull;
  return *z ^ (*z >> 29);
}

/* form int: igt_v, sfill/sadd_acc, uint64 memory, ixor, ishr, imul, iconst64 */
static int check_int(int *runs) {
  enum { MAXN = 37, GUARD = 8 };
  int bad = 0;
  for (size_t s = 0; s < sizeof all / sizeof all[0]; s++) {
    if (strcmp(all[s].id, "opcheck_int") != 0) continue;
    int_fn_t fn = (int_fn_t)all[s].fn;
    for (int64_t n = 1; n <= MAXN; n++) {
      float a[MAXN], b[MAXN], gt[MAXN + GUARD], run[MAXN + GUARD];
      uint64_t st[8 + GUARD], z = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
      for (int i = 0; i < n; i++) {
        a[i] = val((uint32_t)mix(&z));
        b[i] = i % 3 == 0 ? a[i] : val((uint32_t)mix(&z));
        if (isnan(a[i])) a[i] = 1.5f;   /* the running sum: ordinary values (NaN bits are still compared by gt) */
      }
      for (int i = 0; i < MAXN + GUARD; i++) gt[i] = run[i] = val(0x7fa5a5a5u);
      st[0] = mix(&z), st[1] = n % 2 ? mix(&z) : 0xffffffffffffffffull;
      for (int i = 2; i < 8 + GUARD; i++) st[i] = 0xa5a5a5a5a5a5a5a5ull;
      fk_opcheck_int_args args = { a, b, gt, run, st, n };
      fn(&args);
      (*runs)++;
      float acc = 1.0f;
      for (int i = 0; i < MAXN + GUARD; i++) {
        uint32_t want_gt = i < n ? ((int32_t)bits(a[i]) > (int32_t)bits(b[i]) ? 0xffffffffu : 0u) : 0x7fa5a5a5u;
        if (i < n) acc += a[i];
        uint32_t want_run = i < n ? canon(bits(acc)) : 0x7fa5a5a5u;
        if (bits(gt[i]) != want_gt || bits(run[i]) != want_run) {
          if (bad++ < 5)
            printf("%s n=%lld [%d]: gt 0x%08x want 0x%08x, run 0x%08x want 0x%08x\n", all[s].name, (long long)n, i,
                   bits(gt[i]), want_gt, bits(run[i]), want_run);
        }
      }
      const uint64_t x = st[0], y = st[1];
      const uint64_t want[6] = { x ^ y, x >> 1, y >> 63, x * 0x9e3779b97f4a7c15ull, 0xfedcba9876543210ull,
                                 ((x * y) >> 40) + x };
      for (int i = 0; i < 6 + GUARD; i++) {
        uint64_t w = i < 6 ? want[i] : 0xa5a5a5a5a5a5a5a5ull;
        if (st[2 + i] != w && bad++ < 5)
          printf("%s n=%lld: st[%d] 0x%016llx want 0x%016llx\n", all[s].name, (long long)n, 2 + i,
                 (unsigned long long)st[2 + i], (unsigned long long)w);
      }
    }
  }
  return bad;
}

int main(void) {
  enum { MAXN = 37, GUARD = 8 };
  /* special pairs for max: NaN either side, +-0 both orders, equal, ordinary */
  static const uint32_t sa[] = { 0x7fc00001, 0x3f800000, 0x00000000, 0x80000000, 0xff800000, 0x40000000, 0x3f800000, 0x80000001 };
  static const uint32_t sb[] = { 0x3f800000, 0x7fc00002, 0x80000000, 0x00000000, 0x7f800000, 0xc0000000, 0x3f800000, 0x00000001 };
  int bad = 0, runs = 0;
  for (size_t s = 0; s < sizeof all / sizeof all[0]; s++) {
    if (strcmp(all[s].id, "opcheck_ew") != 0) continue;
    fn_t fn = (fn_t)all[s].fn;
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
      fn(&args);
      runs++;
      for (int i = 0; i < MAXN + GUARD; i++) {
        uint32_t want_mx = i < n ? canon(bits(a[i] > b[i] ? a[i] : b[i])) : 0x7fa5a5a5u;
        uint32_t want_fm = i < n ? canon(bits(fmaf(a[i], b[i] * 0.75f, c[i]))) : 0x7fa5a5a5u;
        if (bits(mx[i]) != want_mx || bits(fm[i]) != want_fm) {
          if (bad++ < 5)
            printf("%s n=%lld [%d]: max 0x%08x want 0x%08x, fma 0x%08x want 0x%08x\n", all[s].name,
                   (long long)n, i, bits(mx[i]), want_mx, bits(fm[i]), want_fm);
        }
      }
      uint32_t want0 = canon(bits(a[0] * b[0] + c[0])), want1 = bits((float)(n - 1));
      if (bits(sc[0]) != want0 || bits(sc[1]) != want1 || bits(sc[2]) != 0x7fa5a5a5u) {
        if (bad++ < 5) printf("%s n=%lld: scalar 0x%08x 0x%08x, want 0x%08x 0x%08x\n", all[s].name,
                              (long long)n, bits(sc[0]), bits(sc[1]), want0, want1);
      }
    }
  }
  int int_runs = 0, canon_runs = 0, rows_runs = 0, quant_runs = 0;
  bad += check_int(&int_runs);
  bad += check_canon(&canon_runs);
  bad += check_rows(&rows_runs);
  bad += check_quant(&quant_runs);
  runs += int_runs + canon_runs + rows_runs + quant_runs;
  printf("opcheck: %d stamp runs (%d of form int, %d of form canon, %d of form rows, %d of form quant), %d mismatches\n",
         runs, int_runs, canon_runs, rows_runs, quant_runs, bad);
  if (int_runs == 0 || canon_runs == 0 || rows_runs == 0 || quant_runs == 0) return 1;
  return bad != 0 || runs == 0;
}
