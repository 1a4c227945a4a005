/* tests/dsl_ops/driver.c: checks the opcheck stamps of this ISA against C, lane by lane.
 * Built and run by tests/dsl_ops.sh (natively and under qemu-aarch64). A fast-tier stamp whose CPU
 * features the machine lacks (avx512vnni: an x86 CPU without AVX512_VNNI) is skipped, not
 * run, and reported; every other stamp must run (one that never ran fails). Exit 0 when every stamp
 * that ran agrees bit for bit. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fk_leaves.h"

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

typedef void (*fn_t)(const fk_opcheck_ew_args *);
typedef void (*int_fn_t)(const fk_opcheck_int_args *);
#define ROW(id, variant, tier, symbol, features) { #id, #symbol, #variant, #tier, (void (*)(void))symbol, features },
static const struct {
  const char *id, *name, *variant, *tier;
  void (*fn)(void);
  uint64_t features;
} all[] = { FK_STAMPS_HOST(ROW) };
enum { NSTAMPS = sizeof all / sizeof all[0] };
static int ran[NSTAMPS]; /* the stamps run (a fast-tier stamp skipped for its features stays 0) */

/* The machine's FK_CPU_* features, detected as runtime/fk_cpu.c does (CPUID and XGETBV's ZMM state;
 * AT_HWCAP / AT_HWCAP2) */
static uint64_t host_features(void) {
  uint64_t f = 0;
#if defined(__x86_64__)
  uint32_t a, b, c, d;
  if (__get_cpuid_max(0, NULL) < 7) return 0;
  __cpuid_count(1, 0, a, b, c, d);
  int fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
  if (!((c >> 27) & 1)) return 0; /* OSXSAVE */
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  uint64_t xcr0 = (uint64_t)hi << 32 | lo;
  int ymm_ok = (xcr0 & 0x6) == 0x6, zmm_ok = ymm_ok && (xcr0 & 0xe0) == 0xe0;
  __cpuid_count(7, 0, a, b, c, d);
  uint32_t leaf7_eax = a;
  if (ymm_ok && ((b >> 5) & 1)) f |= FK_CPU_AVX2;
  if (ymm_ok && fma) f |= FK_CPU_FMA;
  if (ymm_ok && f16c) f |= FK_CPU_F16C;
  if (zmm_ok && ((b >> 16) & 1)) f |= FK_CPU_AVX512F;
  if (zmm_ok && ((b >> 30) & 1)) f |= FK_CPU_AVX512BW;
  if (zmm_ok && ((b >> 31) & 1)) f |= FK_CPU_AVX512VL;
  if (zmm_ok && ((c >> 11) & 1)) f |= FK_CPU_AVX512VNNI;
  if (leaf7_eax >= 1) {
    __cpuid_count(7, 1, a, b, c, d);
    if (zmm_ok && ((a >> 5) & 1)) f |= FK_CPU_AVX512BF16;
    if (ymm_ok && ((a >> 4) & 1)) f |= FK_CPU_AVXVNNI;
  }
#elif defined(__aarch64__)
  unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  if (hw & (1ul << 1)) f |= FK_CPU_ASIMD;  /* HWCAP_ASIMD */
  if (hw2 & (1ul << 14)) f |= FK_CPU_BF16; /* HWCAP2_BF16 */
  if (hw2 & (1ul << 13)) f |= FK_CPU_I8MM; /* HWCAP2_I8MM */
  if (hw & (1ul << 20)) f |= FK_CPU_DOTPROD; /* HWCAP_ASIMDDP */
#endif
  return f;
}
static uint64_t host;

/* A fast-tier stamp whose features this machine lacks is skipped (the exact tier's run everywhere, as
 * the library's baseline). */
static int skipped(size_t s) { return strcmp(all[s].tier, "fast") == 0 && (all[s].features & ~host) != 0; }

/* Stamp s is of form id and not skipped: count a run. */
static int runs_here(size_t s, const char *id) {
  if (strcmp(all[s].id, id) != 0 || skipped(s)) return 0;
  ran[s] = 1;
  return 1;
}

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
  for (size_t s = 0; s < NSTAMPS; s++) {
    if (!runs_here(s, "opcheck_canon")) continue;
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
  for (size_t s = 0; s < NSTAMPS; s++) {
    if (!runs_here(s, "opcheck_rows")) continue;
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
/* vtable's word l (tests/dsl_ops/opcheck.lua VT_WORDS) */
static uint32_t vt_word(int l) {
  return l == 3 ? 0x7f800001u : l == 10 ? 0xffc00000u : 0x9e3779b9u * (uint32_t)(l + 1);
}
/* the little-endian 32-bit word l of the bytes at p */
static uint32_t word(const uint8_t *p, int l) {
  return (uint32_t)p[4 * l] | (uint32_t)p[4 * l + 1] << 8 | (uint32_t)p[4 * l + 2] << 16 | (uint32_t)p[4 * l + 3] << 24;
}
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
  static int32_t si[64 * NRMAX + GUARD], zi[64 * NRMAX + GUARD], xi[80 + GUARD], hb[32 * NHALL + GUARD],
      pi[32 * NRMAX + GUARD], lk[64 * NRMAX + 112 + GUARD];
  static float sf[16 * NRMAX + GUARD];
  static const int soffs[4] = { 0, 17, 3, 257 }, zoffs[4] = { 0, 17, 3, 31 };
  int bad = 0;
  for (size_t s = 0; s < NSTAMPS; s++) {
    if (!runs_here(s, "opcheck_quant")) continue;
    quant_fn_t fn = (quant_fn_t)all[s].fn;
    for (int rep = 0; rep <= NRMAX + 1; rep++) {
      int64_t nr = rep <= NRMAX ? rep : NRMAX, nh = rep <= NRMAX ? (int64_t)(sizeof special / 2) - 1 : NHALL;
      for (int i = 0; i < NB; i++) q[i] = (int8_t)(uint8_t)(i * 37 + rep * 11), u[i] = (uint8_t)(i * 101 + rep * 3 + 7);
      for (int64_t j = 0; j <= nh; j++) h[j] = rep <= NRMAX ? special[(j + rep) % (nh + 1)] : (uint16_t)j;
      for (int i = 0; i < 64 * NRMAX + GUARD; i++) si[i] = zi[i] = 0x7fa5a5a5;
      for (int i = 0; i < 80 + GUARD; i++) xi[i] = 0x7fa5a5a5;
      for (int64_t i = 0; i < 32 * nh + GUARD; i++) hb[i] = 0x7fa5a5a5;
      for (int i = 0; i < 16 * NRMAX + GUARD; i++) sf[i] = val(0x7fa5a5a5u);
      for (int i = 0; i < 32 * NRMAX + GUARD; i++) pi[i] = 0x7fa5a5a5;
      for (int i = 0; i < 64 * NRMAX + 112 + GUARD; i++) lk[i] = 0x7fa5a5a5;
      fk_opcheck_quant_args args = { q, u, h, si, zi, sf, xi, hb, pi, lk, nr, nh };
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
      /* shifted indices: tile k's q bytes from 36 k + 1 (an exact shift: a bumped pointer), u bytes from
       * k / 2 + 2 (a shift that rounds: computed per tile) */
      for (int i = 0; i < 32 * NRMAX + GUARD; i++) {
        int k = i / 32, l = i % 16;
        int32_t want = i >= 32 * nr ? 0x7fa5a5a5 : i % 32 < 16 ? q[36 * k + 1 + l] : u[k / 2 + 2 + l];
        if (pi[i] != want && bad++ < 5)
          printf("%s nr=%lld: shifted index [%d] %d want %d\n", all[s].name, (long long)nr, i, pi[i], want);
      }
      /* lut16 and the slot's lanes: tile k's table is u's words at byte 32 k (then byte 100 for the
       * one outside the loop, by q bytes at 301 sign-extended: their low nibble); then vtable's words,
       * and their lookup by u bytes at 40 */
      for (int i = 0; i < 64 * NRMAX + 112 + GUARD; i++) {
        int k = i / 64, m = (i % 64) / 16, l = i % 16;
        int32_t want = 0x7fa5a5a5;
        if (i < 64 * nr) {
          int e = m == 0 ? q[32 * k + 5 + l] & 15 : m == 1 ? (uint8_t)q[32 * k + 5 + l] >> 4 : m == 2 ? 3 : 15;
          want = (int32_t)word(u + 32 * k, e);
        } else if (i < 64 * nr + 48) {
          int j = i - 64 * (int)nr, m0 = j / 16, l0 = j % 16;
          want = (int32_t)word(u + 100, m0 == 0 ? q[301 + l0] & 15 : m0 == 1 ? 7 : l0);
        } else if (i < 64 * nr + 80) {
          int j = i - 64 * (int)nr - 48;
          want = (int32_t)vt_word(j < 16 ? j : u[40 + j - 16] & 15);
        } else if (i < 64 * nr + 112) {
          /* the slots' running sums over the tiles (integers: exact in f32) */
          int j = i - 64 * (int)nr - 80;
          float sum = 0.0f;
          for (int kk = 0; kk < nr; kk++) sum += j < 16 ? (float)u[32 * kk + j] : 2.0f * (float)q[32 * kk + 9 + j - 16];
          want = (int32_t)bits(sum);
        }
        if (lk[i] != want && bad++ < 5)
          printf("%s nr=%lld: lut16 / reload_bcast / vtable / slots [%d] 0x%08x want 0x%08x\n", all[s].name, (long long)nr, i,
                 (uint32_t)lk[i], (uint32_t)want);
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
  for (size_t s = 0; s < NSTAMPS; s++) {
    if (!runs_here(s, "opcheck_int")) continue;
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

typedef void (*q8dot_fn_t)(const fk_opcheck_q8dot_args *);

/* int32 word l of the bytes at p (little endian): load_bcast8's lane l reads word l % 8 */
/* reduce_add8 of the 8 lanes p[0..7] (a half of a vector): the halving tree's last three levels,
 * lane i += lane i + s for s = 4, 2, 1, in f32 */
static float red8(const float *p) {
  float w[4];
  for (int i = 0; i < 4; i++) w[i] = p[i] + p[i + 4];
  for (int i = 0; i < 2; i++) w[i] = w[i] + w[i + 2];
  return w[0] + w[1];
}
/* the int8 dot product of the stamp being checked: 1 for dot_s8s8 (the dotprod variant: SDOT), 0 for
 * dot_u8s8 (avx512vnni, avxvnni: VPDPBUSD) */
static int dot_signed;
/* one lane: acc + the four products u8(w[b]) * s8(x[b]) (dot_s8s8: s8(w[b])), wrapping (in uint32_t) */
static uint32_t dot4(uint32_t acc, const uint8_t *w, const int8_t *x) {
  for (int b = 0; b < 4; b++) acc += (uint32_t)((dot_signed ? (int32_t)(int8_t)w[b] : (int32_t)w[b]) * x[b]);
  return acc;
}
/* dot_u7s8's lane: acc + the four products of (w[b] >> sh) & mask (0..127) and s8(x[b]), wrapping */
static uint32_t dot4u7(uint32_t acc, const uint8_t *w, int sh, int mask, const int8_t *x) {
  for (int b = 0; b < 4; b++) acc += (uint32_t)(((w[b] >> sh) & mask) * x[b]);
  return acc;
}

/* form q8dot (the fast tier's avx2madd / avxvnni / avx512vnni / dotprod stamps, skipped without the
 * feature): load_bcast8 of bytes at offsets off LDP's grid and past an immediate's reach (raw words and
 * through the dot as w), dot_u8s8 (avx512vnni, avxvnni), dot_s8s7 (avx2madd) or dot_s8s8 (dotprod) over
 * every byte pair (the first rep: pair j = (j & 255, j >> 8) for j < 65536) from accumulators near the
 * int32 limits (the sums wrap), chained and with constants; dot_u7s8 of w's low 7 bits and of its
 * nibbles (q4's shape) over every pair likewise, x's -128 included on every variant; load_f16x8 and
 * load_f16x4q over special binary16 patterns and, once, all 65536, with pair_split of the first and
 * of int32 lanes; reduce_add8 of both halves of finite f32 vectors (wide exponents, either sign:
 * another order rounds differently) against the tree in C, bit for bit;
 * store_i8 of every value -128..127 at odd byte offsets, the bytes between and after the stores
 * checked untouched */
static int check_q8dot(int *runs) {
  enum { NRMAX = 1024, NHMAX = 8192, GUARD = 8, NU = 64 * NRMAX + 2112, NH = 8 * NHMAX + 528, NF = 112, NXO = 320 };
  enum { NO8 = 512 * NRMAX + GUARD, NHF = 176 * NHMAX + GUARD, NDQ = 160 * NRMAX + GUARD, NNB = 64 * NRMAX + GUARD };
  static const uint16_t special[] = { 0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x83ff, 0x0200, 0x0400, 0x8400,
                                      0x0401, 0x3c00, 0xbc00, 0x3bff, 0x3555, 0x1234, 0x7bff, 0xfbff, 0x7c00,
                                      0xfc00, 0x7e00, 0xfe00, 0x7c01, 0x7dff, 0xffff, 0xfc01, 0x7fff };
  static const uint32_t edges[] = { 0x7fffffffu, 0x80000000u, 0xffffffffu, 0u, 0x7ffe0000u, 0x80010000u };
  /* load_bcast8 (f32 elements of u), load_f16x8 and load_f16x4q (binary16 elements of h) offsets */
  static const int boffs[4] = { 0, 5, 260, 12 }, xboffs[3] = { 244, 260, 7 }, hoffs[3] = { 0, 3, 520 };
  static const int qoffs[4] = { 0, 4, 523, 520 }, xqoffs[3] = { 501, 5, 500 };
  static const int soffs[4] = { 1, 19, 1041, 529 }, xsoffs[4] = { 301, 777, 1500, 1999 };
  static const uint8_t cw[4] = { 0x80, 0x01, 0xff, 0x80 }; /* vconst 0x80ff0180 as bytes */
  const int nspecial = (int)(sizeof special / sizeof special[0]);
  static uint8_t u[NU];
  static int8_t x[NU];
  static uint16_t h[NH];
  static float f[NF];
  static int32_t acc[16 * NRMAX + 16], v[64 * NRMAX + 64], nb[NNB], dq[NDQ], hf[NHF], o8[NO8], xo[NXO + GUARD];
  static uint8_t want8[4 * NO8];
  int bad = 0;
  for (size_t s = 0; s < NSTAMPS; s++) {
    if (!runs_here(s, "opcheck_q8dot")) continue;
    q8dot_fn_t fn = (q8dot_fn_t)all[s].fn;
    /* avx2madd: dot_s8s7, whose x bytes are -127..127 (the activations' quants): -128 becomes -127;
     * its reps 11..21 repeat 0..10 with x's -128 kept, where only dot_u7s8's slots (any x byte) and
     * the ops without x are checked */
    int s8s7 = strcmp(all[s].variant, "avx2madd") == 0;
    dot_signed = strcmp(all[s].variant, "dotprod") == 0 || s8s7;
    for (int rep_ = 0; rep_ <= (s8s7 ? 21 : 10); rep_++) {
      int rep = rep_ % 11, keep128 = rep_ > 10;
      int64_t nr = rep == 0 ? NRMAX : rep - 1, nh = rep == 0 ? NHMAX : rep % 4;
      uint64_t z = 0x5851f42d4c957f2dull * (uint64_t)(rep + 1);
      for (int i = 0; i < NU; i++) {
        uint64_t r = mix(&z);
        u[i] = (uint8_t)r, x[i] = (int8_t)(uint8_t)(r >> 8);
        if (rep == 0 && i < 65536) u[i] = (uint8_t)i, x[i] = (int8_t)(uint8_t)(i >> 8);
        if (s8s7 && !keep128 && x[i] == -128) x[i] = -127;
      }
      for (int i = 0; i < 16 * NRMAX + 16; i++) {
        uint64_t r = mix(&z);
        acc[i] = (int32_t)(r % 3 == 0 ? edges[(r >> 8) % 6] : (uint32_t)(r >> 16));
      }
      for (int i = 0; i < 64 * NRMAX + 64; i++) v[i] = rep == 0 ? i % 256 - 128 : (int32_t)(mix(&z) % 256) - 128;
      for (int i = 0; i < NH; i++) h[i] = rep == 0 && i < 65536 ? (uint16_t)i : special[(i * 7 + rep) % nspecial];
      /* finite f32 of exponents 2^-27 .. 2^26 and either sign; now and then -0 or a subnormal */
      for (int i = 0; i < NF; i++) {
        uint32_t r = (uint32_t)(mix(&z) >> 16);
        f[i] = val((r & 0x807fffffu) | ((100u + (r >> 8) % 54u) << 23));
        if (r % 29 == 0) f[i] = val(0x80000000u);
        if (r % 31 == 0) f[i] = val(r & 0x807fffffu);
      }
      memset(nb, 0xa5, sizeof nb), memset(dq, 0xa5, sizeof dq), memset(hf, 0xa5, sizeof hf);
      memset(o8, 0xa5, sizeof o8), memset(xo, 0xa5, sizeof xo);
      fk_opcheck_q8dot_args args = { u, x, acc, h, v, f, nb, dq, hf, o8, xo, nr, nh };
      fn(&args);
      (*runs)++;
      const uint32_t g = 0xa5a5a5a5u;
      /* nb: the raw words of load_bcast8 at f32 element 16 k + boffs[m] of u (byte 64 k + 4 boffs[m]) */
      for (int64_t i = 0; i < 64 * nr + GUARD; i++) {
        uint32_t want = g;
        if (i < 64 * nr) {
          int64_t k = i / 64;
          int m = (int)(i % 64) / 16, l = (int)(i % 16);
          want = word(u + 64 * k + 4 * boffs[m], l % 8);
        }
        if ((uint32_t)nb[i] != want && bad++ < 5)
          printf("%s nr=%lld: nb[%lld] (load_bcast8) 0x%08x want 0x%08x\n", all[s].name, (long long)nr, (long long)i,
                 (uint32_t)nb[i], want);
      }
      /* dq: per tile k and lane l, the dots of slot 0 .. 7 (the variant's), 8 .. 9 (dot_u7s8) */
      for (int64_t i = 0; i < 160 * nr + GUARD; i++) {
        uint32_t want = g;
        if (i < 160 * nr) {
          int64_t k = i / 160;
          int sl = (int)(i % 160) / 16, l = (int)(i % 16);
          const uint8_t *ub = u + 64 * k;
          const int8_t *xl = x + 64 * k + 4 * l;
          uint32_t a = (uint32_t)acc[16 * k + l];
          if (sl == 0) want = dot4(a, ub + 4 * l, xl);
          else if (sl == 1) want = dot4(a, ub + 18 + 4 * l, xl);
          else if (sl <= 6) {
            /* w: load_bcast8's lane l, word l % 8 of the 32 bytes at 4 boffs[m] */
            want = dot4(a, ub + 4 * boffs[sl == 6 ? 3 : sl - 2] + 4 * (l % 8), xl);
            if (sl == 6) want = dot4(want, ub + 4 * l, xl);
          } else if (sl == 7) want = dot4(0x7ffffff0u, cw, xl);
          else if (sl == 8) want = dot4u7(a, ub + 4 * l, 0, 0x7f, xl);
          else want = dot4u7(dot4u7(a, ub + 4 * l, 0, 0x0f, xl), ub + 4 * l, 4, 0x0f, xl);
          if (keep128 && sl < 8) continue; /* dot_s8s7 of an x byte -128: the ISA's result */
        }
        if ((uint32_t)dq[i] != want && bad++ < 5)
          printf("%s nr=%lld: dq[%lld] (int8 dot slot %d lane %d) 0x%08x want 0x%08x\n", all[s].name, (long long)nr,
                 (long long)i, (int)(i % 160) / 16, (int)(i % 16), (uint32_t)dq[i], want);
      }
      /* hf: per tile t of 8 binary16, load_f16x8 at 8 t + hoffs[m], pair_split of the first, then
       * load_f16x4q at 8 t + qoffs[m] (lane l: the binary16 l / 4 of the four) */
      for (int64_t i = 0; i < 176 * nh + GUARD; i++) {
        uint32_t got = (uint32_t)hf[i];
        int ok = got == g, sl = (int)(i % 176) / 16, l = (int)(i % 16);
        uint16_t hv = 0;
        if (i < 176 * nh) {
          int64_t tt = i / 176;
          if (sl < 3) {
            hv = h[8 * tt + hoffs[sl] + l];
            ok = l < 8 ? f16_ok(hv, got) : got == 0;
          } else if (sl < 7) {
            int lane = 2 * (sl - 3) + (l >= 8);
            hv = h[8 * tt + lane];
            ok = f16_ok(hv, got) && got == (uint32_t)hf[176 * tt + lane];
          } else {
            hv = h[8 * tt + qoffs[sl - 7] + l / 4];
            ok = f16_ok(hv, got);
          }
        }
        if (!ok && bad++ < 5)
          printf("%s nh=%lld: hf[%lld] (%s slot %d lane %d of 0x%04x) 0x%08x\n", all[s].name, (long long)nh,
                 (long long)i, i >= 176 * nh ? "guard" : sl < 3 ? "load_f16x8" : sl < 7 ? "pair_split" : "load_f16x4q",
                 sl, l, hv, got);
      }
      /* xo: outside the loops */
      for (int i = 0; i < NXO + GUARD; i++) {
        int sl = i / 16, l = i % 16, ok;
        uint32_t got = (uint32_t)xo[i], want = g;
        const char *what = "guard";
        if (sl < 3) want = word(u + 4 * xboffs[sl], l % 8), what = "load_bcast8";
        else if (sl < 6) {
          if (keep128) continue; /* dot_s8s7 of an x byte -128: the ISA's result */
          want = dot4((uint32_t)acc[l], u + 4 * xboffs[sl - 3] + 4 * (l % 8), x + 1200 + 4 * l);
          what = "int8 dot of load_bcast8";
        } else if (sl >= 8 && sl < 12) want = (uint32_t)acc[2 * (sl - 8) + (l >= 8)], what = "pair_split";
        else if (sl == 15) {
          /* xo[240 + 2 q + half]: f[16 q + 8 half ..] for q = 0..6; xo[254 + half]: f[3 ..] (load_bcast8) */
          want = bits(red8(f + (l < 14 ? 16 * (l / 2) + 8 * (l % 2) : 3)));
          what = "reduce_add8";
        } else if (sl == 17) {
          want = bits(l < 8 ? f[3] * f[7] : f[5] * f[9]), what = "sel128 of broadcasts, times";
        } else if (sl == 18 || sl == 19) {
          float p = f[16 + 6 + (l >= 8)];
          want = bits(sl == 18 ? p + f[2] : f[11] - p);
          what = sl == 18 ? "pair_split + broadcast" : "broadcast - pair_split";
        }
        if (sl == 16) {
          /* load_f16x4q (lane l: the binary16 l / 4 at 501) times f[l]: a NaN by class */
          float w = val(f16_bits(h[501 + l / 4])) * f[l];
          want = bits(w), what = "load_f16x4q times";
          ok = w != w ? (got & 0x7fffffffu) > 0x7f800000u : got == want;
        } else if ((sl >= 6 && sl < 8) || (sl >= 12 && sl < 15)) {
          uint16_t hv;
          if (sl < 8) {
            hv = h[(sl == 6 ? 501 : 5) + l];
            ok = l < 8 ? f16_ok(hv, got) : got == 0;
            want = l < 8 ? f16_bits(hv) : 0, what = "load_f16x8";
          } else {
            hv = h[xqoffs[sl - 12] + l / 4];
            ok = f16_ok(hv, got);
            want = f16_bits(hv), what = "load_f16x4q";
          }
        } else ok = got == want;
        if (!ok && bad++ < 5)
          printf("%s nr=%lld: xo[%d] (%s) 0x%08x want 0x%08x\n", all[s].name, (long long)nr, i, what, got, want);
      }
      /* o8: the bytes of each store_i8, 0xa5 elsewhere */
      int64_t n8 = 4 * (512 * (nr > 1 ? nr : 1) + GUARD);
      memset(want8, 0xa5, (size_t)n8);
      for (int64_t k = 0; k < nr; k++)
        for (int m = 0; m < 4; m++)
          for (int b = 0; b < 16; b++) want8[2048 * k + soffs[m] + b] = (uint8_t)v[64 * k + 16 * m + b];
      for (int m = 0; m < 4; m++)
        for (int b = 0; b < 16; b++) want8[xsoffs[m] + b] = (uint8_t)v[16 * (3 - m) + b];
      const uint8_t *got8 = (const uint8_t *)o8;
      for (int64_t i = 0; i < n8; i++)
        if (got8[i] != want8[i] && bad++ < 5)
          printf("%s nr=%lld: o8 byte %lld (store_i8) 0x%02x want 0x%02x\n", all[s].name, (long long)nr, (long long)i,
                 got8[i], want8[i]);
    }
  }
  return bad;
}

int main(void) {
  enum { MAXN = 37, GUARD = 8 };
  host = host_features();
  /* special pairs for max: NaN either side, +-0 both orders, equal, ordinary */
  static const uint32_t sa[] = { 0x7fc00001, 0x3f800000, 0x00000000, 0x80000000, 0xff800000, 0x40000000, 0x3f800000, 0x80000001 };
  static const uint32_t sb[] = { 0x3f800000, 0x7fc00002, 0x80000000, 0x00000000, 0x7f800000, 0xc0000000, 0x3f800000, 0x00000001 };
  int bad = 0, runs = 0;
  for (size_t s = 0; s < NSTAMPS; s++) {
    if (!runs_here(s, "opcheck_ew")) continue;
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
  int int_runs = 0, canon_runs = 0, rows_runs = 0, quant_runs = 0, q8dot_runs = 0;
  bad += check_int(&int_runs);
  bad += check_canon(&canon_runs);
  bad += check_rows(&rows_runs);
  bad += check_quant(&quant_runs);
  bad += check_q8dot(&q8dot_runs);
  runs += int_runs + canon_runs + rows_runs + quant_runs + q8dot_runs;
  printf("opcheck: %d stamp runs (%d of form int, %d of form canon, %d of form rows, %d of form quant, %d of form q8dot), "
         "%d mismatches\n", runs, int_runs, canon_runs, rows_runs, quant_runs, q8dot_runs, bad);
  /* every stamp this machine can run ran (a stamp of a form without a checker, or skipped wrongly,
   * fails); every form has stamps on this ISA; a stamp whose features the machine lacks is reported */
  static const char *const forms[] = { "opcheck_ew", "opcheck_int", "opcheck_canon", "opcheck_quant",
                                       "opcheck_rows", "opcheck_q8dot" };
  int nran = 0, nskipped = 0, missing = 0;
  for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
    int stamps = 0;
    for (size_t s = 0; s < NSTAMPS; s++) stamps += strcmp(all[s].id, forms[f]) == 0;
    if (stamps == 0) printf("opcheck: form %s has no stamp on this ISA\n", forms[f]), missing++;
  }
  for (size_t s = 0; s < NSTAMPS; s++) {
    if (ran[s]) {
      nran++;
    } else if (skipped(s)) {
      nskipped++;
      printf("opcheck: %s skipped: this CPU lacks its variant's features (%s)\n", all[s].name, all[s].variant);
    } else {
      printf("opcheck: %s never ran, though this CPU has its features\n", all[s].name);
      missing++;
    }
  }
  printf("opcheck: %d of %d stamps ran, %d skipped (CPU features missing)\n", nran, (int)NSTAMPS, nskipped);
  return bad != 0 || missing != 0 || runs == 0;
}
