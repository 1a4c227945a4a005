#!/usr/bin/env python3
"""bench/report.py: renders every bench's results from its CSV (bench/README.md, "Results").

  report.py [--results DIR] [--out DIR] [--plot | --no-plot] [--check] (--all | BENCH ...)

BENCH is gemv, gemm, state, fft, runtime, model, decode, ckpt or audio. For each, reads DIR/<bench>.csv
(the rows), DIR/<bench>-meta.csv (key,item,value: the machine, versions, noise, probe and the run's
facts; the bench's C harness writes both) and writes OUT/<bench>.md and the gnuplot data
(OUT/<bench>*.dat), then, with --plot, runs gnuplot on bench/plot_<bench>.gp for OUT/<bench>.png.
model and decode read DIR/<bench>-rounds.csv instead (every round's lines, run_model.sh and
run_decode_quant.sh) and also write OUT/<bench>.csv (the rounds merged). DIR and OUT default to
bench/results; --plot is the default when gnuplot is on the PATH. --check writes nothing and exits 1
when a file in DIR is not what its CSV renders (the bench_report test). Standard library only (runs
with the system python3)."""
import argparse
import csv
import difflib
import io
import os
import shutil
import statistics
import subprocess
import sys
from collections import OrderedDict, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
NOISY = 0.05  # a case during which other processes used this share of the CPUs is marked


# ---- reading ------------------------------------------------------------------------------------

def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Meta:
    """DIR/<bench>-meta.csv: key,item,value rows in the order the bench wrote them."""

    def __init__(self, path):
        self.rows = [(r["key"], r["item"], r["value"]) for r in read_rows(path)]

    def get(self, key, item="", default=None):
        for k, i, v in self.rows:
            if k == key and i == item:
                return v
        if default is None:
            raise KeyError("%s: no %s%s" % ("meta", key, "/" + item if item else ""))
        return default

    def num(self, key, item=""):
        return float(self.get(key, item))

    def has(self, key, item=None):
        return any(k == key and (item is None or i == item) for k, i, _ in self.rows)

    def items(self, key):
        return [(i, v) for k, i, v in self.rows if k == key]


def num(s):
    return None if s is None or s == "" else float(s)


def f(v, d):
    """printf's %.*f: Python's float formatting rounds the same binary value the same way."""
    return "%.*f" % (d, v)


def machine_line(meta):
    """The machine in one line: CPU, caches, memory, THP, kernel, compiler, date."""
    g = lambda item: meta.get("machine", item)
    return "%s%s, %s CPUs online; caches %s; memory %s; THP %s; %s; compiler %s; %s" % (
        g("cpu"), ", virtual machine" if g("vm") == "1" else "", g("cpus"), g("caches"), g("memory"), g("thp"),
        g("kernel"), g("compiler"), g("date"))


def plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


# ---- gemv ---------------------------------------------------------------------------------------

def contender_lines(w, meta, contenders, shapes, team_text):
    """fk_bench_gemv's contender list: one line each (version, weight bytes, threads), then what
    prepare() reported, shapes with the same text grouped."""
    for name in contenders:
        team = meta.get("threading", name) == "team"
        w("- **%s**: %s; %s-byte weights; threads: %s." % (
            name, meta.get("version", name), meta.get("bytes_per_weight", name),
            team_text if team else "the library's own"))
        said = OrderedDict()
        for n, k in shapes:
            item = "%s|%sx%s" % (name, n, k)
            if meta.has("prepared", item):
                txt = meta.get("prepared", item)
            else:
                txt = "NOT RUN: " + meta.get("not_prepared", item)
            said.setdefault(txt, []).append("%sx%s" % (n, k))
        for txt, where in said.items():
            w("\n  - %s: %s" % (", ".join(where), txt))
        w("\n")



def render_gemv(rows, meta):
    shapes = list(OrderedDict.fromkeys((r["n"], r["k"]) for r in rows))
    contenders = [name for name, _ in meta.items("version")]
    threads = sorted({int(r["threads"]) for r in rows})
    ms = sorted({int(r["m"]) for r in rows})
    mmax = max(ms)
    cases = OrderedDict()
    for r in rows:
        cases.setdefault((r["n"], r["k"], int(r["m"]), r["mode"], int(r["threads"])), []).append(r)

    def row_of(n, k, m, mode, t, name):
        for r in cases.get((n, k, m, mode, t), []):
            if r["contender"] == name:
                return r
        return None

    def of_probe(n, k, m, mode, t, name):
        r = row_of(n, k, m, mode, t, name)
        return None if r is None or r["status"] != "ok" or r["of_probe"] == "" else float(r["of_probe"])

    md = []
    w = md.append
    w("# GEMV: flashkern and its peers\n\n")
    w("Written by `fk_bench_gemv` (bench/fk_bench_gemv.c) from one run: `%s`, %s s. "
      "Regenerate with `make bench-gemv`; never edit by hand.\n\n" % (meta.get("command"), f(meta.num("elapsed_s"), 0)))
    w("**Machine:** %s\n\n" % machine_line(meta))
    w("**Contenders** (weights N x K, y[j][n] = x[j][:] . W[n][:], j < M):\n\n")
    contender_lines(w, meta, contenders, shapes, "the bench's team, rows split at a multiple of 64")
    if meta.has("no_flashkern"):
        w("- **flashkern**: not in this build (bench/contender_flashkern.c is compiled with "
          "FK_BENCH_WITH_FLASHKERN); the ratio columns are empty.\n")
    w("- **read-bandwidth probe**: %s over %s GiB, 1 thread or 2 (each reads its half); run-wide median: " % (
        meta.get("probe", "kind"), f(meta.num("probe", "bytes") / 2 ** 30, 3)))
    parts = []
    for t in threads:
        per_case = [float(r["probe_gbps_case"]) for rs in cases.values() for r in rs
                    if int(r["threads"]) == t and r["contender"] == "read-bandwidth probe" and r["status"] == "ok"]
        parts.append("%s **%s GB/s** (%s samples; the medians of single cases range from %s to %s)" % (
            plural(t, "thread"), f(meta.num("probe_gbps", str(t)), 1), meta.get("probe_samples", str(t)),
            f(min(per_case), 1), f(max(per_case), 1)))
    w(", ".join(parts))
    w(". Each table's *of probe* column divides by the probe's median in that table's case.\n\n")
    w("**Method.** One process; all contenders see the same weights and activations (uniform in [-1, 1], weights "
      "rounded to bf16). Before timing, every contender's output is checked: bit for bit against the scalar "
      "exact-tier contract model for the exact-tier rows, within 1e-2 of sum |w x| against a float64 reference for "
      "the others; a contender that fails is not timed. Repetitions: %s; in each, the contenders and the probe take "
      "turns round-robin (the first one rotates). A turn: wait until no other thread of the process is runnable "
      "(library workers done spinning), one untimed call, then a batch of timed calls whose mean is one sample (a "
      "batch reads at least 16 MiB of bf16 weights; its size is under each shape's heading; a 2-thread call is "
      "timed from the release to the last thread done). **cold**: every call reads the next of copies that "
      "together exceed %s GiB (the shared bf16 copies for the row-major bf16 contenders, one rotation between them; "
      "oneDNN's packed copies and OpenBLAS's f32 copies rotate on their own), so weights come from DRAM. **hot**: "
      "every call reads copy 0. Memory comes from anonymous mappings with transparent huge pages requested, for "
      "every contender alike. oneDNN: src bf16 (x rounded once, untimed), weights bf16, dst f32; primitives created "
      "for each M and thread count before timing with omp_set_num_threads() (OpenMP runtime), user scratchpad. "
      "OpenBLAS: OPENBLAS_CORETYPE=%s, openblas_set_num_threads().\n\n" % (
          meta.get("reps"), f(meta.num("rotate_bytes") / 2 ** 30, 3), meta.get("env", "OPENBLAS_CORETYPE")))
    w("Environment: OPENBLAS_CORETYPE was %s before the bench set it" % meta.get("env", "OPENBLAS_CORETYPE was"))
    for item, value in meta.items("env"):
        if item not in ("OPENBLAS_CORETYPE", "OPENBLAS_CORETYPE was"):
            w("; `%s=%s`" % (item, value))
    w(".\n\n")
    w("**Columns.** *us*: microseconds per call, median [min, max] over repetitions. *GB/s*: weight bytes one call "
      "reads (bf16: 2 N K; oneDNN prepacked: its padded layout; OpenBLAS: f32, 4 N K) over the median time, 1e9 "
      "bytes. *of probe*: that over the median of the probe turns interleaved with this case (same shape, M, "
      "cold/hot, thread count; hot rows can exceed 1: the weights come from cache). *fk exact / this*, *fk fast / "
      "this*: flashkern's median time (gemv_bf16_rne, exact or fast tier) over this row's; below 1 flashkern is "
      "faster.\n\n")
    noisy = sum(1 for rs in cases.values() if num(rs[0]["others_cpu_share"]) is not None
                and float(rs[0]["others_cpu_share"]) >= NOISY)
    w("**Disturbance.** Waiting for the process's other threads to sleep before turns took %s s in total (longest "
      "%s ms, %s waits cut at 0.5 s). Other processes used %s%% of the CPUs over the run (machine busy time from "
      "/proc/stat minus this process's); %d of %d cases ran while they used %s%% or more and are marked.\n\n" % (
          f(meta.num("quiesce", "total_s"), 1), f(meta.num("quiesce", "max_s") * 1e3, 1), meta.get("quiesce", "timeouts"),
          f(100 * meta.num("others_cpu_share"), 1), noisy, len(cases), f(100 * NOISY, 0)))

    dat = {}
    for m in sorted({1, mmax}):  # one table when the run measured M = 1 only
        w("## Summary: cold, 1 thread, M = %d, fraction of probe bandwidth\n\n| shape |" % m)
        w("".join(" %s |" % c for c in contenders))
        w("\n|---|" + "---:|" * len(contenders) + "\n")
        lines = ['# GB/s over the probe\'s in the same case; cold weights, 1 thread, M = %d\n"shape"' % m
                 + "".join(' "%s"' % c for c in contenders) + "\n"]
        for n, k in shapes:
            w("| %sx%s |" % (n, k))
            cols = []
            for c in contenders:
                r = row_of(n, k, m, "cold", 1, c)
                fr = of_probe(n, k, m, "cold", 1, c)
                w(" - |" if fr is None else " %s |" % f(fr, 2))
                cols.append("-" if fr is None else f(fr, 4))
            w("\n")
            lines.append("%sx%s %s\n" % (n, k, " ".join(cols)))
        w("\n")
        dat["gemv_m%d.dat" % m] = "".join(lines)
    w("![fraction of read bandwidth, cold, 1 thread](gemv.png)\n\n")

    for n, k in shapes:
        batch = int(meta.get("batch", "%sx%s" % (n, k)))
        w("## %s x %s (N x K)\n\nBatch: %d call%s per sample. Shared bf16 copies: %s.\n\n" % (
            n, k, batch, "s" if batch > 1 else "", meta.get("shared_copies", "%sx%s" % (n, k))))
        for m in ms:
            for mode in ("cold", "hot"):
                for t in threads:
                    rs = cases.get((n, k, m, mode, t))
                    if rs is None:
                        continue
                    w("### %sx%s, M = %d, %s, %s\n\n" % (n, k, m, mode, plural(t, "thread")))
                    share = num(rs[0]["others_cpu_share"])
                    if share is not None and share >= NOISY:
                        w("Other processes used %s%% of the CPUs while this case ran: its times are disturbed.\n\n"
                          % f(100 * share, 0))
                    w("| contender | us median [min, max] | GB/s | of probe | fk exact / this | fk fast / this |\n"
                      "|---|---:|---:|---:|---:|---:|\n")
                    for r in rs:
                        if r["status"] != "ok":
                            w("| %s | not timed: %s | | | | |\n" % (r["contender"], r["why"] or "not run"))
                            continue
                        cells = [r[c] if r[c] != "" else None for c in
                                 ("of_probe", "fk_exact_over_this", "fk_fast_over_this")]
                        w("| %s | %s [%s, %s] | %s | %s |\n" % (
                            r["contender"], f(float(r["median_us"]), 1), f(float(r["min_us"]), 1),
                            f(float(r["max_us"]), 1), f(float(r["gbps"]), 1),
                            " | ".join("-" if v is None else f(float(v), 2) for v in cells)))
                    w("\n")
    return {"gemv.md": "".join(md), **dat}, {"m1": "gemv_m1.dat", "m4": "gemv_m4.dat", "out": "gemv.png",
                                            "ncols": len(contenders) + 1,
                                            "probe1": f(meta.num("probe_gbps", "1"), 1)}


# ---- gemm ---------------------------------------------------------------------------------------

def render_gemm(rows, meta):
    """fk_bench_gemv --gemm: M rows per weight matrix, hot weights; each row's share of the f32 FMA
    peak measured in the same case (the FMA peak probe's turns)."""
    shapes = list(OrderedDict.fromkeys((r["n"], r["k"]) for r in rows))
    contenders = [name for name, _ in meta.items("version")]
    threads = sorted({int(r["threads"]) for r in rows})
    ms = sorted({int(r["m"]) for r in rows})
    cases = OrderedDict()
    for r in rows:
        cases.setdefault((r["n"], r["k"], int(r["m"]), int(r["threads"])), []).append(r)

    def row_of(n, k, m, t, name):
        for r in cases.get((n, k, m, t), []):
            if r["contender"] == name and r["status"] == "ok":
                return r
        return None

    md = []
    w = md.append
    w("# GEMM: flashkern and its peers, many activation rows per weight matrix\n\n")
    w("Written by `fk_bench_gemv --gemm` (bench/fk_bench_gemv.c) from one run: `%s`, %s s. "
      "Regenerate with `make bench-gemm`; never edit by hand.\n\n" % (meta.get("command"), f(meta.num("elapsed_s"), 0)))
    w("**Machine:** %s\n\n" % machine_line(meta))
    # the environment the run was given beyond OpenBLAS's core (FK_CPU_MASK, DNNL_MAX_CPU_ISA, ...)
    env = [(item, value) for item, value in meta.items("env")
           if item not in ("OPENBLAS_CORETYPE", "OPENBLAS_CORETYPE was")]
    if env:
        w("**Environment:** %s.\n\n" % ", ".join("`%s=%s`" % iv for iv in env))
    w("**Contenders** (weights N x K, y[j][n] = x[j][:] . W[n][:], j < M; hot weights: every call reads copy 0):\n\n")
    contender_lines(w, meta, contenders, shapes, "the bench's team")
    w("- **FMA peak probe**: %s-lane f32 FMAs, 12 independent chains per thread, its turns interleaved with the "
      "contenders' in every case; run-wide median: %s.\n\n" % (
          meta.get("fma_probe", "lanes"), ", ".join("%s %s G FMA lanes/s" % (plural(t, "thread"),
                                                                           f(meta.num("probe_gbps", str(t)), 1))
                                                   for t in threads)))
    w("**Columns.** *us*: microseconds per call, median [min, max] over %s repetitions. *of FMA peak*: M N K "
      "multiply-adds per second over the FMA lanes per second of the probe's turns in the same case (the exact "
      "tier's f32 FMA bound; the bf16 dot products of oneDNN and flashkern's fast tier can exceed 1). *fk exact / "
      "this*, *fk fast / this*: flashkern's packed median time (exact or fast tier) over this row's; below 1 "
      "flashkern is faster. flashkern calls its packed stamps the way the runtime's GEMV phases do: at most 24 "
      "activation rows per call, over blocks of weight rows that stay in L2.\n\n" % meta.get("reps"))
    fx = "flashkern exact packed"
    for t in threads:
        w("## Summary, %s: flashkern exact packed, share of the FMA peak (and oneDNN prepacked time / flashkern's)\n\n"
          % plural(t, "thread"))
        w("| shape |" + "".join(" M = %d |" % m for m in ms) + "\n|---|" + "---:|" * len(ms) + "\n")
        for n, k in shapes:
            cells = []
            for m in ms:
                r = row_of(n, k, m, t, fx)
                o = row_of(n, k, m, t, "oneDNN prepacked")
                if r is None:
                    cells.append("-")
                    continue
                txt = f(float(r["of_fma_peak"]), 2) if r["of_fma_peak"] else "-"
                if o is not None:
                    txt += " (%s)" % f(float(o["median_us"]) / float(r["median_us"]), 2)
                cells.append(txt)
            w("| %sx%s | %s |\n" % (n, k, " | ".join(cells)))
        w("\n")
    for n, k in shapes:
        w("## %s x %s (N x K)\n\n" % (n, k))
        for m in ms:
            for t in threads:
                rs = cases.get((n, k, m, t))
                if rs is None:
                    continue
                w("### %sx%s, M = %d, %s\n\n" % (n, k, m, plural(t, "thread")))
                share = num(rs[0]["others_cpu_share"])
                if share is not None and share >= NOISY:
                    w("Other processes used %s%% of the CPUs while this case ran: its times are disturbed.\n\n"
                      % f(100 * share, 0))
                w("| contender | us median [min, max] | of FMA peak | fk exact / this | fk fast / this |\n"
                  "|---|---:|---:|---:|---:|\n")
                for r in rs:
                    if r["status"] != "ok":
                        w("| %s | not timed: %s | | | |\n" % (r["contender"], r["why"] or "not run"))
                        continue
                    cells = [r[c] if r[c] != "" else None for c in ("of_fma_peak", "fk_exact_over_this", "fk_fast_over_this")]
                    w("| %s | %s [%s, %s] | %s |\n" % (
                        r["contender"], f(float(r["median_us"]), 1), f(float(r["min_us"]), 1), f(float(r["max_us"]), 1),
                        " | ".join("-" if v is None else f(float(v), 2) for v in cells)))
                w("\n")
    return {"gemm.md": "".join(md)}, None


# ---- state --------------------------------------------------------------------------------------

def render_state(rows, meta):
    fk, vec, scalar, probe = "flashkern exact", "autovec (gcc -O3 -march=native)", "scalar (gcc -O2)", "L2 probe"
    cases = OrderedDict()
    for r in rows:
        cases.setdefault((r["form"], r["model"], r["m"]), {})[r["contender"]] = r
    forms = list(OrderedDict.fromkeys(r["form"] for r in rows))
    pass_kib = int(meta.num("probe", "pass_bytes")) >> 10
    buf_kib = int(meta.num("probe", "buffer_bytes")) >> 10
    probe_case = [float(c[probe]["probe_gbps_case"]) for c in cases.values() if c[probe]["status"] == "ok"]

    md = []
    w = md.append
    w("# State-committing leaves: ShortConv and qkprep, flashkern and its peers\n\n")
    w("Written by `fk_bench_state` (bench/fk_bench_state.c) from one run: `%s`, %s s. Regenerate with "
      "`make bench-state`; never edit by hand.\n\n" % (meta.get("command"), f(meta.num("elapsed_s"), 0)))
    w("**Machine:** %s\n\n" % machine_line(meta))
    w("**Contenders** (each calls the form through a function pointer with the form's argument struct from "
      "fk_leaves.h, as a host calls a stamp):\n\n")
    w("- **flashkern exact**: %s; stamps resolved once by `fk_leaf_resolve(form, FK_TIER_EXACT, "
      "fk_cpu_features())`:" % meta.get("version", fk))
    for i, (form, value) in enumerate(meta.items("stamp")):
        sym, _, variant = value.partition(" ")
        w("%s `%s` -> `%s` (variant %s)" % (";" if i else "", form, sym, variant))
    for form, why in meta.items("not_resolved"):
        w("; `%s`: NOT RESOLVED: %s" % (form, why))
    w(".\n- **autovec (gcc -O3 -march=native)**: %s, `-O3 -march=native -ffp-contract=off` (bench/state_autovec.c): "
      "the contract models' math and order, loops written for the vectorizer (`restrict` pointers, head size a "
      "constant, the 2 x 16 sum-of-squares lanes as one 32-wide array); bit-identical to the model and to "
      "flashkern's exact tier.\n" % meta.get("version", vec))
    w("- **scalar (gcc -O2)**: %s, `-O2 -march=native -ffp-contract=off -fno-tree-vectorize` (bench/state_scalar.c): "
      "the contract models of tests/contract/shortconv.c and qkprep.c as written, copied (not linked); scalar code, "
      "`fmaf` one instruction: the baseline of an engine that writes the math as loops. It is also the reference "
      "every contender is compared with.\n" % meta.get("version", scalar))
    w("- **L2 probe**: %s; two buffers of %d KiB (together %d KiB: inside the 1 MiB L2, far beyond the 48 KiB L1d), "
      "a pass copies A into B and moves 2 x %d KiB (read + written). Run-wide median **%s GB/s** (%s samples; the "
      "medians of single cases range from %s to %s GB/s). Each table's *of L2 bound* divides by the probe's median "
      "in that table's case.\n\n" % (meta.get("probe", "kind"), buf_kib, 2 * buf_kib, buf_kib,
                                     f(meta.num("probe", "gbps"), 1), meta.get("probe", "samples"),
                                     f(min(probe_case), 1), f(max(probe_case), 1)))
    differs = meta.get("selfcheck", "flashkern differs", "")
    w("**Startup self-check:** %s small cases over the four forms (1..1000 channels and 0..5 heads with tails, m = "
      "0..5, padded rows, linear and wrapping K layouts, NaN with payloads, signaling NaN, infinities, signed zeros, "
      "subnormals, overflow, exact rounding ties, random shapes), three consecutive calls each: the autovec peer "
      "matched the scalar contract model bit for bit (the bench stops otherwise); flashkern %s.\n\n" % (
          meta.get("selfcheck", "cases"), "DIFFERED (below)" if differs else "matched it too"))
    if differs:
        w("**flashkern differs from the contract model:** %s\n\n" % differs)
    pinned = meta.get("pinned_cpu", "", "-1")
    w("**Method.** One process, one thread%s. Per case, all contenders get the same inputs (random bf16 with "
      "exponents in [-3, 3]; ShortConv taps in [-3, 0], biases in [-4, 0]; norm weights in [-2, 1]; RoPE tables from "
      "`fk_rope_table`) and the same initial state (a random carry; random q rows and K cache), each in its own "
      "state buffers. **Gate:** three consecutive calls (the K slots and positions advance by m each call), and "
      "after each one every output and state buffer, whole (y and its padding, the carry, the q rows and their "
      "padding, the entire K cache: a write outside the call's slots is caught), is compared bit for bit with the "
      "scalar contract model's; a contender that differs is not timed. **Timing:** %s repetitions; in each, the "
      "contenders and the probe take turns round-robin (the first turn moves one entry on each repetition). A turn "
      "is one untimed call (it brings back this contender's lines, which the probe's and the others' turns evicted "
      "from L1) and a timed batch of calls lasting about %s us whose mean is one sample; the batch size is "
      "calibrated per contender and case. **Hot, L2-resident:** every call of a contender uses the same buffers "
      "(the carry keeps evolving, q and K are transformed in place again each call, at the same slots and "
      "positions), and the bytes the calls of all contenders touch stay under %s KiB (the footprint is under each "
      "case's heading), so the bound of a call is the bytes it must move at the L2's read+write bandwidth. Small "
      "cases fit the 48 KiB L1d as well and can exceed that bound.\n\n" % (
          "" if int(pinned) >= 0 else " (not pinned)", meta.get("reps"), f(meta.num("batch_s") * 1e6, 0),
          f(meta.num("footprint_max_bytes") / 1024, 0)))
    if int(pinned) >= 0:
        w("The process is pinned to CPU %s (the one it started on).\n\n" % pinned)
    w("**Bytes moved** (per call, from each leaf's contract): ShortConv: in m x 3h bf16 read, the 3h taps (+ h "
      "biases) read, the 2h-element carry read and written, y m x h written: 8mh + 14h bytes (+ 2h). qkprep, per "
      "token position: the q heads and the k heads (64 or 32 bf16 each) read and written in place, the norm weights "
      "of q and k, the row's cos and sin (f32, head_dim / 2 each), read by the q call and by the k call.\n\n")
    w("**Columns.** *us/token*: microseconds per token (a call covers m tokens; qkprep: the q call and the k call), "
      "median [min, max] over repetitions. *us/call*: the median per call. *GB/s*: the bytes one call must move over "
      "its median time, 1 GB = 1e9 bytes. *of L2 bound*: that over the L2 probe's median GB/s in the same case. "
      "*fk / this*: flashkern's median time over this row's; below 1 flashkern is faster.\n\n")
    noisy = sum(1 for c in cases.values() if float(c[probe]["others_cpu_share"]) >= NOISY)
    w("**Disturbance.** %d of %d cases ran while other processes used %s%% of the CPUs or more (machine busy time "
      "from /proc/stat minus this process's) and are marked.\n\n" % (noisy, len(cases), f(100 * NOISY, 0)))

    w("## Summary: hidden 2048 (LFM2-1.2B), fraction of the bytes-moved bound\n\n| leaf | m | flashkern us/token | "
      "flashkern GB/s | flashkern of L2 bound | autovec of L2 bound | scalar of L2 bound | fk / autovec | fk / "
      "scalar |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
    frac = lambda r: "-" if r["status"] != "ok" or r["of_l2_bound"] == "" else f(float(r["of_l2_bound"]), 2)
    ratio = lambda r: "-" if r["status"] != "ok" or r["fk_over_this"] == "" else f(float(r["fk_over_this"]), 2)
    below = []
    for (form, model, m), c in cases.items():
        if model != "LFM2-1.2B" or c[fk]["hidden"] != "2048":
            continue
        rf = c[fk]
        if rf["status"] == "ok":
            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
                form, m, f(float(rf["us_token_median"]), 3), f(float(rf["gbps"]), 1), frac(rf), frac(c[vec]),
                frac(c[scalar]), ratio(c[vec]), ratio(c[scalar])))
            if float(rf["of_l2_bound"]) < 0.9:
                below.append("`%s` m = %s: %s (%s GB/s, %s us/token)" % (
                    form, m, frac(rf), f(float(rf["gbps"]), 1), f(float(rf["us_token_median"]), 3)))
        else:
            w("| %s | %s | not timed | | | %s | %s | | |\n" % (form, m, frac(c[vec]), frac(c[scalar])))
    if below:
        w("\nBelow 0.9 of the bound at hidden 2048 (L2 probe %s GB/s run-wide): %s.\n\n" % (
            f(meta.num("probe", "gbps"), 1), "; ".join(below)))
    else:
        w("\nEvery flashkern row at hidden 2048 reaches 0.9 of the bound or more.\n\n")

    for form in forms:
        w("## %s\n\n" % form)
        for (cf, model, m), c in cases.items():
            if cf != form:
                continue
            cid = "%s|%s|%s" % (form, model, m)
            rp = c[probe]
            if meta.has("head_dim", cid):
                w("### %s (hidden %s): %s q heads + %s k heads, head_dim %s, m = %s (%s)\n\n" % (
                    model, rp["hidden"], meta.get("qheads", cid), meta.get("kheads", cid), meta.get("head_dim", cid),
                    m, meta.get("what", cid)))
            else:
                w("### %s: h = %s, m = %s (%s)\n\n" % (model, rp["hidden"], m, meta.get("what", cid)))
            w("Bytes per call: %s = %s. Footprint: %s KiB shared inputs + 3 x %s KiB per contender. Batches (calls per "
              "sample): flashkern %s, autovec %s, scalar %s; probe %s passes.\n\n" % (
                  f(float(c[fk]["bytes_call"]), 0), meta.get("bytes_detail", cid),
                  f(meta.num("footprint_shared", cid) / 1024, 1), f(meta.num("footprint_own", cid) / 1024, 1),
                  c[fk]["batch"] or "0", c[vec]["batch"] or "0", c[scalar]["batch"] or "0", rp["batch"] or "0"))
            share = float(rp["others_cpu_share"])
            if share >= NOISY:
                w("Other processes used %s%% of the CPUs while this case ran: its times are disturbed.\n\n"
                  % f(100 * share, 0))
            w("| contender | us/token median [min, max] | us/call | GB/s | of L2 bound | fk / this |\n"
              "|---|---:|---:|---:|---:|---:|\n")
            for name in (fk, vec, scalar, probe):
                r = c[name]
                if r["status"] != "ok":
                    w("| %s | not timed: %s | | | | |\n" % (name, r["why"] or "not run"))
                elif name == probe:
                    w("| %s (us per pass of %d KiB) | %s [%s, %s] | | %s | 1.00 | |\n" % (
                        name, pass_kib, f(float(r["us_call_median"]), 2), f(float(r["us_call_min"]), 2),
                        f(float(r["us_call_max"]), 2), f(float(r["gbps"]), 1)))
                else:
                    w("| %s | %s [%s, %s] | %s | %s | %s | %s |\n" % (
                        name, f(float(r["us_token_median"]), 3), f(float(r["us_token_min"]), 3),
                        f(float(r["us_token_max"]), 3), f(float(r["us_call_median"]), 3), f(float(r["gbps"]), 1),
                        frac(r), ratio(r)))
            w("\n")
    return {"state.md": "".join(md)}, None


# ---- fft ----------------------------------------------------------------------------------------

FFT_TRANSFORMS = ["flashkern exact", "FFTW MEASURE", "FFTW MEASURE + 1/N pass", "FFTW MEASURE, input preserved",
                  "OpenBLAS dense sgemv"]
FFT_FRAMES = ["flashkern istft_frame", "user frame (libm + FFTW + C -O2)"]
FRAME_N, FRAME_AUDIO_US = 1280, 1e6 * 320 / 24000.0


def render_fft(rows, meta):
    sizes = list(OrderedDict.fromkeys(int(r["n"]) for r in rows))
    by = {(int(r["n"]), r["contender"]): r for r in rows}
    ok = lambda r: r is not None and r["status"] == "ok"
    med = lambda r: "%s [%s, %s]" % (f(float(r["median_us"]), 3), f(float(r["min_us"]), 3), f(float(r["max_us"]), 3)) \
        if ok(r) else "not timed"
    ratio = lambda r, col: f(float(r[col]), 2) if ok(r) and r[col] != "" else "-"
    verdict = lambda v, target: "**met**" if v is not None and 0 < v <= target else "**missed**"

    md = []
    w = md.append
    w("# Inverse real FFT and the detokenizer frame: flashkern and its peers\n\n")
    w("Written by `fk_bench_fft` (bench/fk_bench_fft.c) from one run: `%s`, %s s. Regenerate with `make bench-fft`; "
      "never edit by hand.\n\n" % (meta.get("command"), f(meta.num("elapsed_s"), 0)))
    w("**Machine:** %s\n\n" % machine_line(meta))
    w("## Targets\n\n")
    frames = FRAME_N in sizes
    if frames:
        fk, fw, fs, fr = (by.get((FRAME_N, c)) for c in (FFT_TRANSFORMS[0], FFT_TRANSFORMS[1], FFT_TRANSFORMS[2],
                                                          FFT_FRAMES[0]))
        us = lambda r: "%s us" % f(float(r["median_us"]), 3) if ok(r) else "- us"
        rv = lambda r, col: float(r[col]) if ok(r) and r[col] != "" else None
        rx = lambda v: "%sx" % f(v, 2) if v is not None else "-1.00x"
        targets = [("iFFT N = 1280 <= 1.0x FFTW MEASURE (same output: FFTW c2r + 1/N pass)", fk, fs,
                    rv(fk, "over_fftw_scaled"), 1.0),
                   ("iFFT N = 1280 <= 1.0x FFTW MEASURE (bare c2r, unnormalized: less work than flashkern's)", fk, fw,
                    rv(fk, "over_fftw"), 1.0),
                   ("whole frame (istft_frame) <= 2x FFTW's transform (bare c2r N = 1280)", fr, fw,
                    rv(fr, "over_fftw"), 2.0),
                   ("whole frame (istft_frame) <= 2x FFTW's transform (c2r + 1/N, N = 1280)", fr, fs,
                    rv(fr, "over_fftw_scaled"), 2.0)]
        w("| target | flashkern | FFTW MEASURE | ratio | verdict |\n|---|---:|---:|---:|---|\n")
        for label, a, b, v, target in targets:
            w("| %s | %s | %s | %s | %s |\n" % (label, us(a), us(b), rx(v), verdict(v, target)))
        w("\nTimes are medians over the repetitions (min/max in the tables below). The bare c2r row is the stricter "
          "comparison: FFTW's c2r leaves the 1/N scaling to the caller, flashkern's leaf includes it.\n\n")
    else:
        w("N = 1280 was not run (`--sizes`): no targets.\n\n")

    w("## Summary: microseconds per transform, median [min, max]\n\n| N |")
    w("".join(" %s |" % c for c in FFT_TRANSFORMS))
    w(" fk / FFTW | fk / (FFTW + 1/N) | fk / OpenBLAS |\n|---:|" + "---:|" * (len(FFT_TRANSFORMS) + 3) + "\n")
    for n in sizes:
        fk = by.get((n, FFT_TRANSFORMS[0]))
        w("| %d |%s %s | %s | %s |\n" % (n, "".join(" %s |" % med(by.get((n, c))) for c in FFT_TRANSFORMS),
                                         ratio(fk, "over_fftw"), ratio(fk, "over_fftw_scaled"),
                                         ratio(by.get((n, FFT_TRANSFORMS[4])), "fk_over_this")))
    w("\n*fk / X*: flashkern's median over X's; below 1 flashkern is faster.\n\n")
    if frames:
        w("## Summary: one detokenizer frame (320 samples = %s ms of 24 kHz audio)\n\n" % f(FRAME_AUDIO_US / 1e3, 2))
        w("| contender | us per frame median [min, max] | / FFTW c2r 1280 | / (FFTW c2r + 1/N) | real-time factor | "
          "share of one core | fk frame / this |\n|---|---:|---:|---:|---:|---:|---:|\n")
        for c in FFT_FRAMES:
            r = by.get((FRAME_N, c))
            if not ok(r):
                w("| %s | not timed: %s | | | | | |\n" % (c, r["why"] if r else "not run"))
                continue
            w("| %s | %s | %s | %s | %s | %s%% | %s |\n" % (
                c, med(r), ratio(r, "over_fftw"), ratio(r, "over_fftw_scaled"), f(float(r["rtf"]), 0),
                f(100.0 * float(r["median_us"]) / FRAME_AUDIO_US, 4), ratio(r, "fk_over_this")))
        w("\n*Real-time factor*: the audio one frame produces, 320 samples at 24 kHz = %s ms = %s us, over the median "
          "frame time on one thread (above 1: faster than real time); *share of one core*: its inverse, the fraction "
          "of a core the spectral tail of one real-time stream takes. Only the spectral tail (the 641 log-magnitudes "
          "and phases in, PCM out), not the network that produces the frames.\n\n" % (
              f(FRAME_AUDIO_US / 1e3, 2), f(FRAME_AUDIO_US, 0)))
    w("![time per transform vs N](fft.png)\n\n")

    w("## Contenders\n\n")
    w("- **flashkern exact**: %s; the stamp `fk_leaf_resolve(\"irfft_nN\", FK_TIER_EXACT, fk_cpu_features())` picks "
      "for this CPU, called as `fn(&args)` with `fk_irfft_nN_args` (re, im, y, work: 2N floats of scratch); output "
      "scaled by 1/N (numpy's irfft):" % meta.get("version", "flashkern"))
    for i, n in enumerate(sizes):
        if meta.has("stamp", str(n)):
            sym, _, variant = meta.get("stamp", str(n)).partition(" ")
            w("%s N = %d `%s` (variant %s)" % (";" if i else "", n, sym, variant))
        else:
            w("%s N = %d NOT RESOLVED: %s" % (";" if i else "", n, meta.get("not_resolved", str(n))))
    w(".\n- **FFTW MEASURE**: %s (`fftwf_version`; built by `%s`), `fftwf_plan_dft_c2r_1d(N, in, out, FFTW_MEASURE)` "
      "planned before any input is written, one thread. FFTW's c2r is unnormalized (N times irfft) and, by default, "
      "destroys its input: this row is the bare transform, each call on its own copy of the spectrum (a rotation of "
      "copies, rewritten untimed before each timed batch, `fftwf_execute_dft_c2r` on the next copy), so it is timed "
      "on valid input without paying for a copy. The plans are listed under each size. This is Debian 12's "
      "libfftw3-single3, configured with SSE2 and AVX codelets only (the version string says so): no AVX2/FMA or "
      "AVX-512 codelets, which upstream FFTW 3.3.10 can be built with (`--enable-avx2 --enable-avx512`); flashkern's "
      "stamp here is its AVX-512 variant. Plans are made one after the other in this process, so later plans reuse "
      "the wisdom of earlier ones (the user frame's 1280-point plan is made first: hence a planning time near 0 s at "
      "N = 1280).\n" % (meta.get("version", "FFTW"), meta.get("build", "FFTW")))
    w("- **FFTW MEASURE + 1/N pass**: the same plan and calls, each followed by `y[i] *= 1.0f / N` (bench/fft_scale.c, "
      "%s: vectorized by the compiler): the same output as flashkern's.\n" % meta.get("build", "fft_scale.c"))
    w("- **FFTW MEASURE, input preserved**: `FFTW_MEASURE | FFTW_PRESERVE_INPUT`, the contract flashkern's leaf has "
      "(its input is const): FFTW then plans a buffered transform (it copies the input itself). Bare transform, "
      "unnormalized. For reference.\n")
    w("- **OpenBLAS dense sgemv**: %s, `OPENBLAS_CORETYPE=%s` (was %s before the bench set it), "
      "`openblas_get_corename()` = %s, 1 thread (`openblas_set_num_threads(1)`): the inverse DFT as a precomputed N x "
      "(N + 2) f32 matrix (the 1/N, the factor 2 of the inner bins and the signs in it, rounded once from double) "
      "times [re; im], `cblas_sgemv` row-major. Its matrix is 4 N (N + 2) bytes: L2-resident at N = 256 only, from "
      "the L3 above (the dense method's own cost).\n" % (
          meta.get("version", "OpenBLAS"), meta.get("env", "OPENBLAS_CORETYPE"), meta.get("env", "OPENBLAS_CORETYPE was"),
          meta.get("openblas_corename")))
    if frames:
        w("- **flashkern istft_frame**: ")
        if meta.has("stamp", "istft_frame"):
            sym, _, variant = meta.get("stamp", "istft_frame").partition(" ")
            w("`%s` (variant %s)" % (sym, variant))
        else:
            w("NOT RESOLVED: %s" % meta.get("not_resolved", "istft_frame"))
        w(", `fk_istft_frame_args` (x: 641 log-magnitudes + 641 phases, the caller's 1280-sample ring, y, work of 3888 "
          "floats, frame t, clip = +inf as LFM2.5): polar (its own exp and sincos), the unscaled 1280-point iFFT, the "
          "Hann window with 1/N folded in, overlap-add into the ring, the envelope divide of the 320 final samples "
          "(templates/istft.lua).\n")
        w("- **user frame (libm + FFTW + C -O2)**: bench/fft_peer_frame.c, %s: the same frame as a user writes it: "
          "`expf`, `cosf`, `sinf` from glibc %s (gcc may fuse the cosf/sinf pair into one sincosf call), `min(mag, "
          "clip)`, FFTW's c2r 1280 (FFTW_MEASURE, input destroyed: the polar step rewrites it each frame; plan: `%s`, "
          "planned in %s s), then `ola[n] += frame[n] * win[n]` with the 1/N folded into the Hann table, `y[i] = "
          "ola[i] / env[i]` (envelope tables computed once in double), a 960-sample `memmove` of the overlap-add buffer "
          "and zeroing of its newest 320.\n" % (
              meta.get("build", "fft_peer_frame.c"), meta.get("version", "glibc"), meta.get("plan", "user frame"),
              f(meta.num("plan_s", "user frame"), 2)))
    pinned = int(meta.get("pinned_cpu", "", "-1"))
    w("\n## Method\n\n")
    w("- **One process, one thread%s.** Per size, all transform contenders get the same spectrum (re, im uniform in "
      "[-1, 1], the imaginary parts of X[0] and X[N/2] zero), each in its own layout (split re/im for flashkern, "
      "interleaved complex for FFTW, [re; im] for OpenBLAS), converted untimed. At N = 1280 the two frame contenders "
      "join the same round-robin.\n" % (", pinned" if pinned >= 0 else " (not pinned)"))
    if pinned >= 0:
        w("  The process is pinned to CPU %d (the one it started on).\n" % pinned)
    w("- **Timing.** %s repetitions; in each, the contenders take turns round-robin (the first turn moves one "
      "contender each repetition). A turn is one untimed call (it brings the contender's lines back after the "
      "others' turns; for the input-destroying FFTW rows followed by the untimed rewrite of the copies) and a timed "
      "batch whose mean is one sample. A transform batch is the same number of calls for every transform contender "
      "of a size: the number of FFTW input copies that fit %d KiB (under each size's heading; 4 to 4.5 us of FFTW's "
      "time), so the timer's cost (about 25 ns per batch, `clock_gettime`) is the same per call for all of them. A "
      "frame batch lasts about %s us.\n" % (meta.get("reps"), int(meta.num("copy_bytes")) >> 10,
                                            f(meta.num("frame_batch_s") * 1e6, 0)))
    w("- **Hot.** Every call of a contender uses the same buffers (FFTW's destroying rows: the same rotation of "
      "copies); flashkern's and FFTW's buffers, twiddles and scratch stay in the L1/L2 (footprints under each "
      "heading). The frames keep streaming: the frame index advances every call, the overlap-add state evolves, the "
      "input frame is the same (after four untimed frames, steady state: every call writes 320 samples).\n")
    bound = meta.num("bound_factor", str(FRAME_N))
    w("- **Correctness gate (transforms).** Before timing, each transform runs on four spectra (the timed one; "
      "magnitudes 2^[-3, 3] and 2^[-43, -37] with random signs; a sparse one) and is compared with a float64 inverse "
      "DFT (direct sum, exact phase reduction): the FFT contenders by tests/test_irfft.c's normwise bound, max_n "
      "|y[n] - x[n]| <= bound_factor(N) ||x||_2 (Higham's stage-by-stage bound of flashkern's radix-2/5 algorithm: "
      "%.2e ||x||_2 at N = 1280; FFTW's outputs divided by N in double first); the dense DFT by the componentwise "
      "dot-product bound |y[t] - x[t]| <= gamma(N + 3) sum_k |A[t][k] v[k]|. The *gate* column is the worst error "
      "over its bound (at most 1 to be timed).\n" % bound)
    w("- **Correctness gate (frames).** Both frame contenders run a stream of %s frames of random input "
      "(log-magnitudes uniform in [-6, 2], phases in [-pi, pi]); every output frame (none at t = 0, 160 samples at "
      "t = 1, then 320) is compared with a float64 ISTFT of the same stream (exp, cos, sin, the inverse DFT, the Hann "
      "window, overlap-add and the envelope all in double): each within ||y - ref||_2 <= %.0e ||ref||_2, and the two "
      "against each other within ||fk - user||_2 <= %.0e ||ref||_2 (they differ only by rounding: libm's and "
      "flashkern's exp and sincos, FFTW's and flashkern's FFT orders; the iFFT bound alone is %.1e). The timed frames "
      "then restart from an empty stream on the first frame's input.\n" % (
          meta.get("gate_frames"), meta.num("frame_tol"), meta.num("frame_tol_pair"), bound))
    w("- **Other processes.** The machine's busy time (/proc/stat) minus this process's (getrusage) is recorded per "
      "size; a size during which other processes used %s%% of the CPUs or more is marked.\n\n" % f(100 * NOISY, 0))
    w("**Columns.** *us*: microseconds per call, median [min, max] over the repetitions. *MFLOPS*: benchFFT's "
      "convention for a real transform, 2.5 N log2 N / time (the same count for every contender, whatever it "
      "computes). */ FFTW*: this row's median over FFTW MEASURE's (bare c2r). *fk / this*: flashkern's median over "
      "this row's; below 1 flashkern is faster. *gate*: the worst error over its bound in the correctness gate "
      "(frames: ||y - ref||_2 / ||ref||_2). *footprint*: the bytes of the buffers the bench gives the contender "
      "(inputs, copies, outputs, scratch, the dense matrix), not the libraries' own tables (FFTW's and flashkern's "
      "twiddles, FFTW's internal buffer when it preserves the input).\n\n")

    dat = ["# written by fk_bench_fft: microseconds per call, median min max per contender; '-': not run\n\"N\""
           + "".join(' "%s" "min" "max"' % c for c in FFT_TRANSFORMS + FFT_FRAMES) + "\n"]
    for n in sizes:
        sz = str(n)
        w("## N = %d\n\n" % n)
        w("Batch: %s calls per sample (FFTW input copies: %s x %s bytes). FFTW MEASURE plan (planned in %s s): `%s`. "
          "Input preserved (%s s): `%s`.\n\n" % (
              meta.get("copies", sz), meta.get("copies", sz), meta.get("copy_bytes", sz), f(meta.num("plan_s", sz), 2),
              meta.get("plan", sz), f(meta.num("plan_s", sz + " preserve"), 2), meta.get("plan", sz + " preserve")))
        share = float(by[(n, FFT_TRANSFORMS[0])]["others_cpu_share"])
        if share >= NOISY:
            w("Other processes used %s%% of the CPUs while this size ran: its times are disturbed.\n\n"
              % f(100 * share, 0))
        w("| contender | us median [min, max] | MFLOPS | / FFTW | fk / this | gate | footprint KiB |\n"
          "|---|---:|---:|---:|---:|---:|---:|\n")
        line = "%d" % n
        for c in FFT_TRANSFORMS + FFT_FRAMES:
            r = by.get((n, c))
            if r is None:
                line += " - - -"
                continue
            gate = ("%.3f" if c in FFT_TRANSFORMS else "%.2e") % float(r["gate"])
            kib = f(float(r["footprint_bytes"]) / 1024, 1)
            if not ok(r):
                w("| %s | not timed: %s | | | | %s | %s |\n" % (c, r["why"] or "not run", gate, kib))
                line += " - - -"
                continue
            w("| %s | %s | %s | %s | %s | %s | %s |\n" % (
                c, med(r), f(float(r["mflops"]), 0) if c in FFT_TRANSFORMS else "-", ratio(r, "over_fftw"),
                ratio(r, "fk_over_this"), gate, kib))
            line += " %s %s %s" % (f(float(r["median_us"]), 4), f(float(r["min_us"]), 4), f(float(r["max_us"]), 4))
        dat.append(line + "\n")
        if (n, FFT_FRAMES[0]) in by:
            w("\nFrames: *fk / this* is flashkern's frame over this row's; *gate* is the worst ||y - ref||_2 / "
              "||ref||_2 over the gate's frames; the two frames differ from each other by at most %.2e ||ref||_2. "
              "Batches: flashkern frame %s, user frame %s calls.\n" % (
                  meta.num("frames_differ"), by[(n, FFT_FRAMES[0])]["batch"] or "0",
                  by[(n, FFT_FRAMES[1])]["batch"] or "0"))
        w("\n")
    w("Versions: %s; FFTW %s; %s; glibc %s; the driver and the user frame built by %s.\n" % (
        meta.get("version", "flashkern"), meta.get("version", "FFTW"), meta.get("version", "OpenBLAS"),
        meta.get("version", "glibc"), meta.get("machine", "compiler")))
    return {"fft.md": "".join(md), "fft.dat": "".join(dat)}, {"dat": "fft.dat", "out": "fft.png"}


# ---- runtime ------------------------------------------------------------------------------------

RUNTIME_STEP = ["plan 1T", "direct 1T", "plan 2T", "OpenMP 2T"]
RUNTIME_EMPTY = ["plan (fk_plan_run_empty)", "OpenMP region + barriers"]


def render_runtime(rows, meta):
    val = {(r["table"], r["contender"], r["threads"], r["case"]): r for r in rows}
    get = lambda table, who, t, case, col="median": float(val[(table, who, str(t), case)][col])
    step = lambda who, case, col="median": get("step", who, 2 if "2T" in who else 1, case, col)
    wbytes = meta.num("weight_bytes")
    layers = int(meta.get("layers"))
    md = []
    w = md.append
    w("# Runtime: the 2048-wide ShortConv block decode step\n\n")
    w("Written by `fk_bench_runtime` (bench/README.md) from a real run: `%s`, %s repetitions, %s s.\n\n" % (
        meta.get("command"), meta.get("reps"), f(meta.num("elapsed_s"), 0)))
    w("**Machine:** %s\n\n" % machine_line(meta))
    w("**Versions:** %s; peer %s. Stamps: %s.\n\n" % (
        meta.get("version", "flashkern"), meta.get("version", "OpenMP"),
        ", ".join("`%s`" % sym for _, sym in meta.items("stamp"))))
    w("**Step:** RMSNorm -> in_proj (6144 x 2048) -> conv -> out_proj (2048 x 2048) + residual, one token; %s MB of "
      "packed bf16 weights. Hot: one copy, %s steps per sample. Cold: %d copies (%s GiB, like a model's layers: one "
      "plan per layer, all on one team through `desc.team_of`), one step on each per sample. Every contender runs "
      "the same stamps on the same layouts; before timing, their outputs and carries are compared bit for bit "
      "(equal).\n\n" % (f(wbytes / 1e6, 1), meta.get("hot_batch"), layers, f(wbytes * layers / 2 ** 30, 2)))
    w("## Decode step, us (median [min, max])\n\n| contender | hot | cold |\n|---|---|---|\n")
    rng = lambda v, lo, hi, d: "%s [%s, %s]" % (f(v, d), f(lo, d), f(hi, d))
    for c in RUNTIME_STEP:
        w("| %s | %s | %s |\n" % (c, *(rng(step(c, k), step(c, k, "min"), step(c, k, "max"), 1) for k in ("hot", "cold"))))
    w("\n## What the runtime costs, what the team buys\n\n| measure | hot | cold |\n|---|---|---|\n")
    K = ("hot", "cold")
    ov = [get("derived", "plan", 1, "overhead_" + k) for k in K]
    w("| plan 1T - direct 1T (the runtime's cost on one thread), ns | %s | %s |\n" % tuple(f(v, 0) for v in ov))
    w("| the same, share of the plan 1T step | %s%% | %s%% |\n" % tuple(
        f(100 * ov[i] / (1e3 * step("plan 1T", k)), 2) for i, k in enumerate(K)))
    w("| 2-thread scaling: plan 1T / plan 2T | %sx | %sx |\n" % tuple(
        f(get("derived", "plan", 2, "scaling_" + k), 2) for k in K))
    w("| OpenMP 2T / plan 2T (> 1: the plan is faster) | %s | %s |\n" % tuple(
        f(step("OpenMP 2T", k) / step("plan 2T", k), 3) for k in K))
    w("| weight stream, plan 1T / 2T, GB/s | %s / %s | %s / %s |\n" % tuple(
        f(wbytes / step(c, k) / 1e3, 1) for k in K for c in ("plan 1T", "plan 2T")))
    p1, p2 = get("probe", "read", 1, "cold"), get("probe", "read", 2, "cold")
    w("| read probe (%s, %s GiB, OpenMP), 1T / 2T, GB/s | | %s / %s |\n" % (
        meta.get("probe", "kind"), f(meta.num("probe", "bytes") / 2 ** 30, 2), f(p1, 1), f(p2, 1)))
    w("| the probe's 2-thread scaling: the ceiling for a step that streams its weights from DRAM | | %sx |\n"
      % f(p2 / p1, 2))
    w("\n## Empty programs: dispatch + barriers, no leaf, ns per run\n\nEach sample is the median of %s runs timed one "
      "by one (the clock's own %s ns subtracted) after a 20 ms idle gap; the table gives the median [min, max] of "
      "those samples over the repetitions, and the first run after the gap, which wakes members that went to sleep, "
      "separately.\n\n" % (meta.get("empty_batch"), f(meta.num("clock_ns"), 0)))
    w("| contender | threads | 1 phase | 4 phases | per phase (4 - 1) / 3 | first run of 4 after the gap |\n"
      "|---|---|---|---|---|---|\n")
    e = lambda who, t, case, col="median": get("empty", who, t, case, col)
    for who in RUNTIME_EMPTY:
        for t in (1, 2):
            a, b = e(who, t, "1phase"), e(who, t, "4phases")
            w("| %s | %d | %s | %s | %s | %s |\n" % (
                who, t, rng(a, e(who, t, "1phase", "min"), e(who, t, "1phase", "max"), 0),
                rng(b, e(who, t, "4phases", "min"), e(who, t, "4phases", "max"), 0), f((b - a) / 3, 0),
                rng(e(who, t, "first4_after_gap"), e(who, t, "first4_after_gap", "min"),
                    e(who, t, "first4_after_gap", "max"), 0)))
    a2, b2 = e(RUNTIME_EMPTY[0], 2, "1phase"), e(RUNTIME_EMPTY[0], 2, "4phases")
    hot2, cold2 = step("plan 2T", "hot"), step("plan 2T", "cold")
    w("\nThe decode program has 4 phases: on 2 threads its dispatch + barriers cost %s ns, %s%% of the hot step (%s "
      "us) and %s%% of the cold step (%s us); per phase %s ns.\n" % (
          f(b2, 0), f(100 * get("derived", "plan", 2, "empty4_share_hot"), 2), f(hot2, 1),
          f(100 * b2 / (1e3 * cold2), 2), f(cold2, 1), f((b2 - a2) / 3, 0)))
    wake = e(RUNTIME_EMPTY[0], 2, "first4_after_gap")
    w("After an idle gap the first run also wakes the sleeping members: %s us on 2 threads (%s%% of the hot step).\n"
      % (f(wake / 1e3, 1), f(100 * wake / (1e3 * hot2), 2)))
    w("\n## Per phase, hot, `FK_PLAN_TIMING` (member 0's clock at each barrier), us\n\n")
    w("| phase | 1 thread | 2 threads |\n|---|---|---|\n")
    for ph in OrderedDict.fromkeys(r["contender"] for r in rows if r["table"] == "phase"):
        w("| %s | %s | %s |\n" % (ph, f(get("phase", ph, 1, "hot") / 1e3, 2), f(get("phase", ph, 2, "hot") / 1e3, 2)))
    return {"runtime.md": "".join(md)}, None


# ---- model: bench/run_model.sh's rounds of fk_bench_model and torch_peer.py --------------------------

MODEL_TARGET = 3.0

# "What is measured", the prefill bullet (a run with prefill<P>_tok_s metrics)
MODEL_PREFILL_TEXT = """- **LM prefill** (same models): one call over a P-token prompt (P = 64 and 512) from a fresh state,
  timed alone, tokens/s = P / time. flashkern: `fk_state_reset`, then one `fk_run(FK_PROG_LM_PREFILL)`
  of P rows (embedding gather, every layer, the final norm, the last row's logits and its argmax; the
  plans' `lm.max_rows` is 512). PyTorch: `model(input_ids, use_cache=True, logits_to_keep=1)`, the
  cache made inside the call, one untimed warm-up call per configuration. llama.cpp (`--llama-bench`,
  bench/llama_peer.py, third in each round): `llama-bench -m FILE -p 64,512 -n 0 -t T -r N` on a GGUF
  of the same shapes with BF16 weights (llama.cpp's own warm-up run, then N runs, the memory cleared
  before each), the median, min and max of its per-run samples. llama.cpp multiplies BF16 weights by
  activations it rounds to BF16, accumulating in f32 (AVX512-BF16 dot products where the CPU has
  them); flashkern's exact tier keeps f32 activations against bf16 weights with one FMA order on every
  ISA, its fast tier rounds activations to bf16 for the CPU's bf16 dot products, as llama.cpp does.
"""


def model_load(lines):
    rows = defaultdict(list)     # key -> [(value, reps)]
    text = {}
    for r in lines:
        key = (r["peer"], r["model"], r["dtype"], int(r["threads"]), r["metric"])
        try:
            v = float(r["value"])
        except ValueError:
            text[key] = r["value"]
            continue
        rows[key].append((v, int(r["reps"])))
    return rows, text


def model_merge(rows):
    out = OrderedDict()
    for key in sorted(rows):
        vals = [v for v, _ in rows[key]]
        reps = sum(n for _, n in rows[key])
        m = key[4]
        if m.endswith("_min"):
            out[key] = (min(vals), reps)
        elif m.endswith("_max"):
            out[key] = (max(vals), reps)
        else:
            out[key] = (statistics.median(vals), reps)
    return out


def fmt_or_dash(v, d=1):
    """v to d decimals, "-" for None."""
    return "-" if v is None else f(v, d)


class MergedRounds:
    """A run's rounds (model_load) merged per (peer, model, dtype, threads, metric) (model_merge): the merged
    CSV (csv; text metrics with reps 0), get (the value or None), rng ("median [min, max]"), the thread counts
    and the LM shapes present. render_model and render_decode read their runs through it."""

    def __init__(self, lines):
        rows, self.text = model_load(lines)
        self.m = model_merge(rows)
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["peer", "model", "dtype", "threads", "metric", "value", "reps"])
        for (peer, model, dtype, t, metric), (v, n) in self.m.items():
            w.writerow([peer, model, dtype, t, metric, "%.6g" % v, n])
        for (peer, model, dtype, t, metric), v in sorted(self.text.items()):
            w.writerow([peer, model, dtype, t, metric, v, 0])
        self.csv = out.getvalue()
        self.threads = sorted({k[3] for k in self.m if k[3] > 0})
        self.models = [x for x in ("lm", "lm_350m", "lm_1_2b") if any(k[1] == x for k in self.m)]

    def get(self, peer, model, dtype, t, metric):
        v = self.m.get((peer, model, dtype, t, metric))
        return None if v is None else v[0]

    def rng(self, peer, model, dtype, t, metric, d=1):
        v = self.get(peer, model, dtype, t, metric)
        if v is None:
            return "-"
        lo, hi = self.get(peer, model, dtype, t, metric + "_min"), self.get(peer, model, dtype, t, metric + "_max")
        return "%s [%s, %s]" % (fmt_or_dash(v, d), fmt_or_dash(lo, d), fmt_or_dash(hi, d))


def render_model(lines, meta):
    """The rounds (model-rounds.csv) merged per (peer, model, dtype, threads, metric): the value is the median
    over rounds of the round's median, <metric>_min the least of the rounds' minima, <metric>_max the greatest
    of their maxima, reps the sum; meta holds run_model.sh's facts (command, rounds, start and end, machine)."""
    facts = {k: v for k, _, v in meta.rows}
    r = MergedRounds(lines)
    m, text, get, rng, threads, models = r.m, r.text, r.get, r.rng, r.threads, r.models
    fmt = fmt_or_dash
    fk_ran = any(k[0] == "flashkern" for k in m)
    fast_ran = any(k[0] == "flashkern" and k[2] == "fast" for k in m)
    skipped = sorted({(k[1], k[3]) for k in m if k[0] == "flashkern" and k[4] == "skipped"})
    # the LM prefill measure (prefill<P>_tok_s) and its llama.cpp peer: rows only where a run has them
    prefills = sorted({int(k[4][len("prefill"):-len("_tok_s")]) for k in m
                       if k[4].startswith("prefill") and k[4].endswith("_tok_s") and k[4][7:-6].isdigit()})
    llama_ran = any(k[0] == "llama.cpp" for k in m)

    # (model, flashkern's metric, torch's metric, label, plot label)
    metrics = [(mo, "decode_tok_s", "decode_tok_s", "%s decode, tokens/s" % mo, "%s decode tok/s" % mo)
               for mo in models]
    metrics += [("detok", "full_frames_s", "full_frames_s", "detok, 50 code frames in one call, frames/s",
                 "detok 50-frame call frames/s"),
                ("detok", "stream_frames_s", "stream_cached_frames_s",
                 "detok streaming, frames/s (torch: cached streamer)", "detok stream frames/s (torch cached)"),
                ("detok", "stream_frames_s", "stream_frames_s",
                 "detok streaming, frames/s (torch: forward over 17 + 1 frames per frame)",
                 "detok stream frames/s (torch recompute)")]

    md = []
    md.append("# Whole models: flashkern's runtime against PyTorch CPU\n")
    md.append("Written by `bench/run_model.sh` (bench/README.md, \"Whole models\") from a real run: `%s`, "
              "%s round(s), started %s, finished %s.\n" % (facts.get("command", "?"), facts.get("rounds", "?"),
                                                        facts.get("started", "?"), facts.get("finished", "?")))
    versions = "; ".join(v for (p, mo, *_), v in sorted(text.items()) if mo == "info")
    md.append("**Machine:** %s, %s CPUs online (%s), %s; load average at start %s, at end %s (the machine "
              "was shared with other jobs).\n" % (facts.get("cpu", "?"), facts.get("cpus", "?"),
                                                  facts.get("flags_hint", "").strip(), facts.get("kernel", "?"),
                                                  facts.get("loadavg_start", "?"), facts.get("loadavg_end", "?")))
    md.append("**Versions:** %s.\n" % (versions or "?"))
    if not fk_ran:
        md.append("**flashkern did not run** (%s): the tables give the PyTorch side only.\n"
                  % facts.get("fk_status", "?"))
    if skipped:
        md.append("flashkern's fast tier did not resolve on this CPU for: %s.\n"
                  % ", ".join("%s %dT" % s for s in skipped))

    md.append("## Against the target (>= %gx the faster PyTorch dtype)\n" % MODEL_TARGET)
    md.append("Medians over every repetition of every round (a round's median, then the median over rounds). "
              "flashkern: bf16 weights, exact and fast tiers; PyTorch: the same model in float32 and bfloat16.\n")
    md.append("| metric | threads | flashkern exact | flashkern fast | torch f32 | torch bf16 | exact / faster torch "
              "| fast / faster torch | target met? |")
    md.append("|---|---|---|---|---|---|---|---|---|")
    dat = []
    for mo, metric, tmetric, label, plabel in metrics:
        for t in threads:
            ex, fa = get("flashkern", mo, "exact", t, metric), get("flashkern", mo, "fast", t, metric)
            tf, tb = get("torch", mo, "f32", t, tmetric), get("torch", mo, "bf16", t, tmetric)
            best = max([v for v in (tf, tb) if v is not None], default=None)
            rex = ex / best if ex is not None and best else None
            rfa = fa / best if fa is not None and best else None
            if rex is None and rfa is None:
                met = "not measured"
            elif rex is not None and rex >= MODEL_TARGET:
                met = "yes"
            elif rfa is not None and rfa >= MODEL_TARGET:
                met = "fast tier only"
            else:
                met = "**no**"
            md.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                label, t, fmt(ex), fmt(fa), fmt(tf), fmt(tb),
                "-" if rex is None else "%.2fx" % rex, "-" if rfa is None else "%.2fx" % rfa, met))
            dat.append((plabel, t, ex, fa, tf, tb, None))

    if prefills:
        md.append("\n## LM prefill, tokens/s (issue 19: the fast tier at least on par with llama.cpp's BF16)\n")
        md.append("One call over a P-token prompt from a fresh state, timed alone: tokens/s = P / time; medians as "
                  "above. flashkern: one `fk_run(FK_PROG_LM_PREFILL)` of P rows; PyTorch: `model(input_ids, "
                  "use_cache=True, logits_to_keep=1)`; llama.cpp: `llama-bench -p P -n 0` on a BF16 GGUF of the "
                  "same shapes. All three compute the last position's logits only.\n")
        if not llama_ran:
            md.append("**The llama.cpp peer was not run** (%s): its column is empty.\n"
                      % facts.get("llama_status", "no --llama-bench"))
        md.append("| model | prompt | threads | flashkern exact | flashkern fast | torch f32 | torch bf16 "
                  "| llama.cpp bf16 | exact / faster torch | fast / faster torch | fast / llama.cpp "
                  "| fast on par with llama.cpp? |")
        md.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for mo in models:
            for n in prefills:
                metric = "prefill%d_tok_s" % n
                for t in threads:
                    ex, fa = get("flashkern", mo, "exact", t, metric), get("flashkern", mo, "fast", t, metric)
                    tf, tb = get("torch", mo, "f32", t, metric), get("torch", mo, "bf16", t, metric)
                    lc = get("llama.cpp", mo, "bf16", t, metric)
                    if all(v is None for v in (ex, fa, tf, tb, lc)):
                        continue
                    best = max([v for v in (tf, tb) if v is not None], default=None)

                    def ratio(a, b):
                        return "-" if a is None or not b else "%.2fx" % (a / b)
                    par = ("not measured" if fa is None or lc is None else
                           "yes" if fa >= lc else "**no**")
                    md.append("| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                        mo, n, t, fmt(ex), fmt(fa), fmt(tf), fmt(tb), fmt(lc), ratio(ex, best), ratio(fa, best),
                        ratio(fa, lc), par))
                    dat.append(("%s prefill %d tok/s" % (mo, n), t, ex, fa, tf, tb, lc))

    md.append("\n## Real-time factor of the detokenizer at 24 kHz\n")
    md.append("RTF = wall time / audio time; a code frame is 1920 samples = 80 ms of audio. Below 1 is faster "
              "than real time; 1 / RTF is how many streams one such team could keep up with.\n")
    md.append("| peer | dtype / tier | threads | RTF, 50 frames in one call "
              "| RTF, streaming one frame per call (torch: forward over 18 frames) "
              "| RTF, torch's cached streamer |")
    md.append("|---|---|---|---|---|---|")
    for peer, dts in (("flashkern", ("exact", "fast")), ("torch", ("f32", "bf16"))):
        for dt in dts:
            for t in threads:
                if get(peer, "detok", dt, t, "full_rtf") is None:
                    continue
                md.append("| %s | %s | %d | %s | %s | %s |" % (
                    peer, dt, t, rng(peer, "detok", dt, t, "full_rtf", 4), rng(peer, "detok", dt, t, "stream_rtf", 4),
                    rng(peer, "detok", dt, t, "stream_cached_rtf", 4)))

    md.append("\n## Every figure, median [min, max]\n")
    md.append("| model | metric | threads | peer | dtype / tier | value | reps |")
    md.append("|---|---|---|---|---|---|---|")
    for (peer, mo, dt, t, metric), (v, n) in m.items():
        if metric.endswith("_min") or metric.endswith("_max") or metric in ("skipped", "others_cpu", "bytes_per_token"):
            continue
        d = 4 if metric.endswith("rtf") else 1
        md.append("| %s | %s | %d | %s | %s | %s | %d |"
                  % (mo, metric, t, peer, dt, rng(peer, mo, dt, t, metric, d), n))
    md.append("\n## Other processes during the measures\n")
    md.append("The machine's busy CPU time (/proc/stat) minus the peer's own (getrusage), over wall time x CPUs, "
              "during each peer's repetitions (PyTorch: per configuration; flashkern: over all its interleaved "
              "configurations), the median over rounds. Figures measured while others held a large share are "
              "slower than on an idle machine, PyTorch's 2-thread rows most (its workers wait for a CPU at "
              "every parallel region).\n")
    md.append("| peer | model | dtype / tier | threads | other processes' share of the CPUs |")
    md.append("|---|---|---|---|---|")
    for (peer, mo, dt, t, metric), (v, n) in m.items():
        if metric == "others_cpu":
            md.append("| %s | %s | %s | %d | %.0f%% |" % (peer, mo, dt, t, 100 * v))
    notes = [(k, v) for k, v in text.items() if k[4] == "note"]
    for (peer, mo, dt, t, metric), v in notes:
        md.append("\n%s %s %s: %s." % (peer, mo, dt, v))

    md.append("""
## What is measured

- **LM decode** (`lm`: vocab 1024, hidden 256, ffn 768, 6 layers conv conv attn conv attn conv, 4 / 2
  heads of 64, tied embeddings%s): a 12-token prompt is prefilled (untimed), then N greedy decode steps
  of one token each, the next token fed back; only the decode steps are timed, tokens/s = N / time.
  flashkern: `fk_run(FK_PROG_LM_PREFILL)`, then `fk_run(FK_PROG_LM_DECODE)` with `io.next` fed back.
  PyTorch: `Lfm2ForCausalLM(input_ids=[[t]], past_key_values=cache, use_cache=True)`, argmax of the
  last logits, under `torch.inference_mode()`.
%s- **Detokenizer** (LFM2.5's: codebooks 8 x 2048 x 512, LFM2 stack hidden 512, ffn 1536, 8 layers conv
  conv attn conv attn conv attn conv, 8 / 8 heads of 64, sliding window 30, 512 -> 1282 head, ISTFT
  n_fft 1280 hop 320). *50 frames in one call*: a fresh stream of 50 code frames in one
  `fk_run(FK_PROG_DETOK)` / one `LFM2AudioDetokenizer.forward` on codes (1, 8, 50); frames/s = 50 / time.
  *Streaming*: flashkern runs one code frame per `fk_run(FK_PROG_DETOK)` on its carried state (after 17
  untimed frames). The reference has no streaming form (no state between calls), so a host streaming
  with it pays one forward per new code frame over that frame and its 17 frames of left context
  (codes (1, 8, 18)) and keeps the new frame's samples: 17 frames is the stack's exact receptive field
  (5 conv layers x 2 positions + 3 sliding-window attention layers x 29 positions = 97 positions, 17
  code frames, which also covers the 2 spectral frames of the previous code frame that overlap-add
  into the new frame's samples). frames/s = 1 / time per call. *Torch's cached streamer*
  (`CachedStreamer` in torch_peer.py) is what a host can write from the reference's parts instead:
  per code frame the embedding, the x6 repeat, the LFM2 stack on the 6 new positions through
  transformers' own cache (conv states, KV, the sliding window as a 4-D boolean mask), the head,
  polar, irfft, window and an overlap-add carried across calls; before timing its output is checked
  equal to the module's forward on 24 frames (within 1e-4 of the peak). After 17 untimed frames,
  32 frames are timed. It is the fair streaming peer; the recompute row is what calling the module
  as it is costs.
- **dtypes.** flashkern's weights are bf16; the exact tier's results are bit-identical on every ISA,
  the fast tier uses the CPU's bf16 dot instructions. PyTorch runs the models in float32 and in
  bfloat16 (`model.to(dtype)`). The detokenizer's bf16 row: torch's CPU irfft has no bf16 kernel, so
  the module's forward fails in bf16; that row runs the embedding, the stack and the head in bf16 and
  the ISTFT in f32 (the note above says which ran).
- **Threads.** flashkern: `desc.threads` 1 and 2 (one plan each). PyTorch: `torch.set_num_threads(T)`.
- **Weights** are seeded uniform(-1/sqrt(fan_in), +1/sqrt(fan_in)) rounded to bf16, norms 1 + U(-0.1,
  0.1) (different generators on the two sides: the speed does not depend on the values).
- **Schedule.** Each round runs flashkern's bench, then PyTorch's, each with its repetitions (one
  sample per configuration per repetition, configurations interleaved); the tables merge the rounds.
  flashkern leaves 20 ms idle before each timed sample; PyTorch gets one untimed warm-up per
  configuration. The machine has 2 vCPUs and was shared: see the load averages above.
""" % (", and `lm_350m` at LFM2-350M's shapes: vocab 65536, hidden 1024, ffn 4608, 16 layers, 16 / 8 heads"
       if "lm_350m" in models else "", MODEL_PREFILL_TEXT if prefills else ""))
    # a llama.cpp column only in a run that has one: a run without it renders as before
    names = ["flashkern exact", "flashkern fast", "torch f32", "torch bf16"] + (["llama.cpp bf16"] if llama_ran else [])
    dat_lines = [" ".join('"%s"' % x for x in ["case"] + names) + "\n"]
    for short, t, *vals in dat:
        cols = ["-" if v is None else "%.6g" % v for v in vals[:len(names)]]
        dat_lines.append('"%s, %dT" %s\n' % (short, t, " ".join(cols)))
    return ({"model.md": "\n".join(md) + "\n", "model.csv": r.csv, "model.dat": "".join(dat_lines)},
            {"dat": "model.dat", "out": "model.png", "cols": len(names), "prefill": int(bool(prefills))})



# ---- decode: bench/run_decode_quant.sh's rounds of fk_bench_model and llama_peer.py ----------------

DECODE_TARGET = 1.1
# (flashkern's dtype, the format column, llama.cpp's dtype, a target row)
DECODE_ROWS = (("exact", "bf16, exact tier", "bf16", False), ("fast", "bf16, fast tier", "bf16", False),
               ("exact-q8", "q8 / Q8_0", "q8_0", True), ("exact-q4", "q4 / Q4_0", "q4_0", True),
               ("fast-q8", "q8 / Q8_0, fast tier", "q8_0", True), ("fast-q4", "q4 / Q4_0, fast tier", "q4_0", True))


def cache_bytes(text):
    """lscpu's "32 MiB (1 instance)" -> bytes, or None"""
    try:
        v, unit = text.split()[:2]
        return float(v) * {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
    except (ValueError, KeyError):
        return None


def render_decode(lines, meta):
    """The rounds (decode-rounds.csv) merged as model's are; the table of issue 20: per model, format and
    thread count, flashkern's and llama.cpp's decode tokens/s, their ratio, the weight bytes per token,
    GB/s and its share of the read probe's median at that thread count."""
    facts = {k: v for k, _, v in meta.rows}
    r = MergedRounds(lines)
    m, text, get, rng, threads, models = r.m, r.text, r.get, r.rng, r.threads, r.models
    fmt = fmt_or_dash
    l3 = cache_bytes(facts.get("l3", ""))
    versions = "; ".join(v for (p, mo, *_), v in sorted(text.items()) if mo == "info")

    md = []
    md.append("# LM decode: flashkern's bf16, q8 and q4 against llama.cpp's BF16, Q8_0 and Q4_0\n")
    md.append("Written by `bench/run_decode_quant.sh` (bench/README.md, \"Quantized decode against llama.cpp\") "
              "from a real run: `%s`, %s round(s), %s decode steps per sample, started %s, finished %s.\n" % (
                  facts.get("command", "?"), facts.get("rounds", "?"), facts.get("steps", "?"),
                  facts.get("started", "?"), facts.get("finished", "?")))
    md.append("**Machine:** %s, %s CPUs online (%s), L3 %s, memory %s, %s; load average at start %s, at end %s.\n" % (
        facts.get("cpu", "?"), facts.get("cpus", "?"), facts.get("flags_hint", "").strip(), facts.get("l3", "?"),
        facts.get("memory", "?"), facts.get("kernel", "?"), facts.get("loadavg_start", "?"),
        facts.get("loadavg_end", "?")))
    md.append("**Versions:** %s.\n" % (versions or "?"))
    if facts.get("fk_cpu_mask", "unset") != "unset":
        md.append("**Features:** `FK_CPU_MASK=%s` (hex: the CPU features flashkern may use); llama-bench `%s`.\n"
                  % (facts["fk_cpu_mask"], facts.get("llama_bench", "?")))

    md.append("## Decode tokens/s against llama.cpp (issue 20: q8 and q4 >= %gx llama.cpp's Q8_0 and Q4_0)\n"
              % DECODE_TARGET)
    md.append("Medians over every repetition of every round (a round's median, then the median over rounds), "
              "[least, greatest] sample. MB / token: the weight bytes one decode step reads (every GEMV matrix in "
              "the format's layout, the tied head included, and one embedding row; flashkern's packed layout, "
              "llama.cpp's GGUF tensors). GB/s = MB / token x tokens/s; *of probe*: over the read probe's median at "
              "the same thread count (below).\n")
    md.append("| model | format | threads | flashkern tok/s | llama.cpp tok/s | flashkern / llama.cpp | target met? "
              "| MB / token (flashkern, llama.cpp) | flashkern GB/s | of probe | llama.cpp GB/s | of probe |")
    md.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    in_l3 = False
    for mo in models:
        for fd, label, ld, target in DECODE_ROWS:
            for t in threads:
                fv, lv = get("flashkern", mo, fd, t, "decode_tok_s"), get("llama.cpp", mo, ld, t, "decode_tok_s")
                # (the quantized fast tier's rows only in a run that measured it)
                if (fv is None and lv is None) or (fv is None and fd.startswith("fast-")):
                    continue
                fb, lb = get("flashkern", mo, fd, t, "bytes_per_token"), get("llama.cpp", mo, ld, t, "bytes_per_token")
                probe = get("flashkern", "probe", "read", t, "probe_gbps")
                ratio = fv / lv if fv is not None and lv else None
                met = ("-" if not target else "not measured" if ratio is None else
                       "yes" if ratio >= DECODE_TARGET else "**no**")

                def gbs(b, v):
                    return None if b is None or v is None else b * v / 1e9

                fg, lg = gbs(fb, fv), gbs(lb, lv)
                mark = ""
                if l3 is not None and fb is not None and fb <= l3:
                    mark, in_l3 = " (in L3)", True
                md.append("| %s | %s%s | %d | %s | %s | %s | %s | %s, %s | %s | %s | %s | %s |" % (
                    mo, label, mark, t, rng("flashkern", mo, fd, t, "decode_tok_s"),
                    rng("llama.cpp", mo, ld, t, "decode_tok_s"), "-" if ratio is None else "%.2fx" % ratio, met,
                    fmt(None if fb is None else fb / 1e6), fmt(None if lb is None else lb / 1e6), fmt(fg),
                    "-" if fg is None or not probe else "%.2f" % (fg / probe), fmt(lg),
                    "-" if lg is None or not probe else "%.2f" % (lg / probe)))
    if in_l3:
        md.append("\n*in L3*: one token's weights fit in the L3 (%s): that row is not DRAM-bound, and its share "
                  "of the probe may exceed 1.\n" % facts.get("l3", "?"))

    md.append("\n## The read-bandwidth probe\n")
    md.append("bw_probe.c: a streaming read of 1.125 GiB (one untimed pass, then a timed one), a turn per thread "
              "count in every repetition of every flashkern turn, interleaved with its configurations; median "
              "[least, greatest] over rounds as above.\n")
    md.append("| threads | probe GB/s |")
    md.append("|---|---|")
    for t in threads:
        if get("flashkern", "probe", "read", t, "probe_gbps") is not None:
            md.append("| %d | %s |" % (t, rng("flashkern", "probe", "read", t, "probe_gbps")))

    md.append("\n## Other processes during the measures\n")
    md.append("The machine's busy CPU time (/proc/stat) minus the peer's own (getrusage), over wall time x CPUs "
              "(flashkern: over all the configurations of a turn; llama.cpp: per llama-bench run), the median over "
              "rounds.\n")
    md.append("| peer | model | dtype / tier | threads | other processes' share of the CPUs |")
    md.append("|---|---|---|---|---|")
    for (peer, mo, dt, t, metric), (v, n) in m.items():
        if metric == "others_cpu":
            md.append("| %s | %s | %s | %d | %.0f%% |" % (peer, mo, dt, t, 100 * v))

    md.append("""
## What is measured

- **Models** (synthetic weights, the same shapes on both sides): `lm_350m`, LFM2-350M's shapes (vocab
  65536, hidden 1024, ffn 4608, 16 layers with attention at 2, 5, 8, 10, 12, 14, 16 / 8 heads of 64);
  `lm_1_2b`, LFM2-1.2B's (vocab 65536, hidden 2048, ffn 8192, the same 16 layers, 32 / 8 heads of 64);
  tied embeddings.
- **flashkern** (`fk_bench_model --quantize bf16,q8,q4 --probe`): a 12-token prompt prefilled
  (untimed), then N `fk_run(FK_PROG_LM_DECODE)` calls with `io.next` fed back; tokens/s = N / time.
  bf16: the exact and the fast tier; q8 / q4: `desc.quantize` FK_Q8 / FK_Q4, every GEMV matrix (the
  head too) quantized at readiness into Q8_0 / Q4_0-equivalent blocks, exact tier (the embedding
  gather stays bf16).
- **llama.cpp** (`llama_peer.py run --decode N`): `llama-bench -m FILE -p 0 -n N -t T -r R` on GGUFs of
  the same shapes whose matrices (token_embd, which is the tied head, ffn_*, shortconv in / out_proj,
  attn_q / k / v / output) are BF16, Q8_0 or Q4_0 (gguf.quants.quantize from the same bf16 values);
  N tokens one at a time from an empty context (llama-bench's tg test, random token ids), after its
  own warm-up run; the median, least and greatest of its per-run samples.
- **Schedule.** Per round, per model and thread count: flashkern's turn (its configurations and the
  probe interleaved, 20 ms idle before each sample), then llama.cpp's.
""")
    return ({"decode.md": "\n".join(md) + "\n", "decode.csv": r.csv}, None)


# ---- ckpt: fk_bench_ckpt, a checkpoint's readiness and flashkern-run's tokens/s ------------------

CKPT_NAMES = (("bf16", "bf16, one model.safetensors, transformers 5's config"),
              ("f32", "f32, 3 shards + index, the released config style (converted to bf16 at readiness)"))


def render_ckpt(rows, meta):
    val = {(r["table"], r["case"], r["threads"], r["tier"], r["metric"]): r for r in rows}
    get = lambda table, case, t, tier, metric, col="median": float(val[(table, case, str(t), tier, metric)][col])
    has = lambda table, case, t, tier, metric: (table, case, str(t), tier, metric) in val
    rng = lambda table, case, t, tier, metric, d: "%s [%s, %s]" % tuple(
        f(get(table, case, t, tier, metric, c), d) for c in ("median", "min", "max"))
    step_bytes = meta.num("step_bytes")
    md = []
    w = md.append
    w("# Checkpoints: readiness, and flashkern-run's tokens/s against the bench's\n\n")
    w("Written by `fk_bench_ckpt` (bench/README.md, \"Checkpoints\") from a real run: `%s`, %s, %s s.\n\n" % (
        meta.get("command"), plural(int(meta.get("rounds")), "round"), f(meta.num("elapsed_s"), 0)))
    w("**Machine:** %s\n\n" % machine_line(meta))
    # the meter counts the commands the bench ran (its children) as other processes: their CPU time is subtracted
    share = meta.num("others_cpu_share") - meta.num("children_cpu_s") / (
        float(meta.get("machine", "cpus")) * meta.num("elapsed_s"))
    w("**Noise:** processes other than the bench and the commands it ran used %s%% of the CPUs during the run%s.\n\n"
      % (f(100 * max(share, 0.0), 1), " (above %d%%: noisy)" % int(100 * NOISY) if share > NOISY else ""))
    w("**Version:** %s.\n\n" % meta.get("version", "flashkern"))
    w("**Model:** LFM2-350M's shapes (%s), synthetic bf16 weights, written as transformers lays a checkpoint out "
      "(tests/ckpt/ckpt_write.c):\n\n" % meta.get("shape"))
    w("| checkpoint | files | safetensors files | tensors | size, GB | converted at readiness, GB | written in, s |\n"
      "|---|---|---|---|---|---|---|\n")
    for c, what in CKPT_NAMES:
        w("| %s | %s | %s | %s | %s | %s | %s |\n" % (
            what, meta.get("ckpt_files", c), meta.get("ckpt_safetensors", c), meta.get("ckpt_tensors", c),
            f(meta.num("ckpt_bytes", c) / 1e9, 3), f(meta.num("ckpt_owned_bytes", c) / 1e9, 3),
            f(meta.num("ckpt_write_s", c), 1)))
    w("\n## Readiness: open + pack, ms (median [min, max] over the rounds)\n\n"
      "`fk_model_open`, then `fk_model_describe` + `fk_plan_create` (the language model's programs, 2 threads, exact "
      "tier: the plan copies and packs every weight). Cold: the files' pages dropped from the page cache first "
      "(`posix_fadvise(DONTNEED)`; `mincore` counted none resident), so the bytes come from the disk; warm: the "
      "same again at once.\n\n")
    w("| checkpoint | cache | fk_model_open | describe + fk_plan_create | readiness | checkpoint GB / readiness s |\n"
      "|---|---|---|---|---|---|\n")
    for c, _ in CKPT_NAMES:
        for cache in ("cold", "warm"):
            case = "%s %s" % (c, cache)
            w("| %s | %s | %s | %s | %s | %s |\n" % (
                c, cache, rng("ready", case, 2, "exact", "open_ms", 0), rng("ready", case, 2, "exact", "plan_ms", 0),
                rng("ready", case, 2, "exact", "ready_ms", 0),
                f(meta.num("ckpt_bytes", c) / 1e9 / (get("ready", case, 2, "exact", "ready_ms") / 1e3), 2)))
    w("\n## Decode tokens/s: flashkern-run on the checkpoint, fk_bench_model on the same shapes\n\n"
      "Both a 12-token prompt, then %s timed decode steps, greedy; `fk_bench_model --only lm_350m` builds its "
      "weights in memory, `flashkern-run` opens the checkpoint directory (its own readiness is not in the figure). "
      "Median [min, max] over the rounds, the two commands taking turns. A decode step streams the plan's %s MB of "
      "packed bf16 weights from DRAM (more than the L3 holds): GB/s = tokens/s x %s MB, beside the read probe "
      "(%s, %s GiB) measured in the same rounds.\n\n" % (
          meta.get("steps"), f(step_bytes / 1e6, 0), f(step_bytes / 1e6, 0), meta.get("probe", "kind"),
          f(meta.num("probe", "bytes") / 2 ** 30, 3)))
    w("| threads | tier | fk_bench_model | flashkern-run, bf16 checkpoint | flashkern-run, f32 checkpoint | "
      "run bf16 / bench | run f32 / bench | run's median inside the bench's [min, max]? (bf16 / f32) | weights GB/s (bench) | "
      "read probe GB/s | bench / probe |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
    keys = OrderedDict.fromkeys((r["threads"], r["tier"]) for r in rows if r["table"] == "decode")
    ratios = []
    for t, tier in keys:
        if not has("decode", "fk_bench_model", t, tier, "tok_s"):
            continue
        b = get("decode", "fk_bench_model", t, tier, "tok_s")
        lo, hi = get("decode", "fk_bench_model", t, tier, "tok_s", "min"), get("decode", "fk_bench_model", t, tier,
                                                                               "tok_s", "max")
        runs = [get("decode", "flashkern-run " + c, t, tier, "tok_s") for c, _ in CKPT_NAMES]
        inside = " / ".join("yes" if lo <= v <= hi else "no" for v in runs)
        ratios += [v / b for v in runs]
        probe = get("probe", "read", t, "-", "gbps")
        w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
            t, tier, rng("decode", "fk_bench_model", t, tier, "tok_s", 1),
            *(rng("decode", "flashkern-run " + c, t, tier, "tok_s", 1) for c, _ in CKPT_NAMES),
            *(f(v / b, 3) for v in runs), inside, f(b * step_bytes / 1e9, 1),
            rng("probe", "read", t, "-", "gbps", 1), f(b * step_bytes / 1e9 / probe, 2)))
    if ratios:
        w("\nflashkern-run / fk_bench_model over every row: %s .. %s.\n" % (f(min(ratios), 3), f(max(ratios), 3)))
    return {"ckpt.md": "".join(md)}, None


# ---- audio --------------------------------------------------------------------------------------

AUDIO_FRAME_S = 1920 / 24000.0   # a code frame: 1920 samples at 24 kHz, 80 ms
AUDIO_TABLES = (("depth", "Depthformer alone (depth_linear + 8 codebooks)"),
                ("steps", "backbone + Depthformer: audio steps"),
                ("e2e", "end to end to PCM: audio steps + detokenizer"))
AUDIO_SPLIT = (("backbone", "backbone (16 layers)"), ("depth_linear", "depth_linear"),
               ("depthformer", "Depthformer layers, 8 codebooks"), ("heads", "codebook heads and draws"),
               ("feedback", "codebook feedback embeddings"), ("detok", "detokenizer (1 frame)"))


def render_audio(rows, meta):
    val = {(r["table"], r["case"], r["threads"], r["tier"], r["metric"]): r for r in rows}
    get = lambda table, case, t, tier, metric, col="median": float(val[(table, case, str(t), tier, metric)][col])
    has = lambda table, case, t, tier, metric: (table, case, str(t), tier, metric) in val
    rng = lambda table, case, t, tier, metric, d: "%s [%s, %s]" % tuple(
        f(get(table, case, t, tier, metric, c), d) for c in ("median", "min", "max"))
    b = lambda k: meta.num("bytes", k)
    per_cb = b("depthformer") + b("depth_tables") / 8        # the layers and one codebook's tied head, per codebook
    depth_bytes = b("depth_linear") + 8 * per_cb
    backbone_bytes = b("backbone_layers")
    nbytes = {"depth": depth_bytes, "steps": backbone_bytes + depth_bytes,
              "e2e": backbone_bytes + depth_bytes + b("detok_step")}
    threads = sorted({int(r["threads"]) for r in rows if r["table"] == "probe"})
    tiers = list(OrderedDict.fromkeys(r["tier"] for r in rows if r["table"] == "steps" and r["case"] == "flashkern"))
    md = []
    w = md.append
    w("# LFM2.5-Audio: flashkern's audio steps and PCM against liquid-audio on PyTorch\n\n")
    w("Written by `fk_bench_audio` (bench/README.md, \"Audio\") from a real run: `%s`, %s of %s frames, %s s.\n\n" % (
        meta.get("command"), plural(int(meta.get("rounds")), "round"), meta.get("frames"), f(meta.num("elapsed_s"), 0)))
    w("**Machine:** %s\n\n" % machine_line(meta))
    share = meta.num("others_cpu_share") - meta.num("children_cpu_s") / (
        float(meta.get("machine", "cpus")) * meta.num("elapsed_s"))
    w("**Noise:** processes other than the bench and its PyTorch peer used %s%% of the CPUs during the run%s.\n\n"
      % (f(100 * max(share, 0.0), 1), " (above %d%%: noisy)" % int(100 * NOISY) if share > NOISY else ""))
    w("**Versions:** %s; PyTorch peer (bench/audio_peer.py): %s.\n\n" % (
        meta.get("version", "flashkern"), meta.get("version", "pytorch")))
    w("**Model:** LFM2.5-Audio's shapes, synthetic bf16 weights, one checkpoint directory in liquid-audio's layout "
      "(written by `audio_peer.py write`: %s tensors, %s GB of safetensors) that flashkern opens with "
      "`fk_model_open` and PyTorch loads as `LFM2AudioModel.from_pretrained` does. Backbone: %s. Depthformer: dim "
      "1024, 6 layers, 32 heads of 32 (8 kv), GLU 2816; 8 codebooks of 2049, tied heads. Detokenizer: LFM2.5's "
      "(hidden 512, 8 layers, window 30).\n\n" % (
          meta.get("ckpt_tensors"), f(meta.num("ckpt_bytes") / 1e9, 2), meta.get("shape", "backbone")))
    w("**Bytes a frame reads** (bf16 weights it touches): backbone layers %s MB once; depth_linear %s MB once; "
      "Depthformer %s MB + one codebook head %s MB once per codebook, 8 x %s = %s MB; detokenizer %s MB once. "
      "Depthformer alone %s MB, audio step %s MB, end to end %s MB. *floor* = the read probe's time for those bytes "
      "(probe GB/s / bytes: the most frames/s this machine's DRAM allows), *of probe* = frames/s x bytes / probe GB/s. "
      "RTF = wall time / audio time (a frame is 80 ms).\n\n" % (
          f(backbone_bytes / 1e6, 0), f(b("depth_linear") / 1e6, 1), f(b("depthformer") / 1e6, 1),
          f(b("depth_tables") / 8e6, 1), f(per_cb / 1e6, 1), f(8 * per_cb / 1e6, 0), f(b("detok_step") / 1e6, 1),
          f(nbytes["depth"] / 1e6, 0), f(nbytes["steps"] / 1e6, 0), f(nbytes["e2e"] / 1e6, 0)))
    w("## Read probe, GB/s (median [min, max] over the rounds)\n\n%s, %s GiB, at the start of every round.\n\n"
      "| threads | GB/s |\n|---|---|\n" % (meta.get("probe", "kind"), f(meta.num("probe", "bytes") / 2 ** 30, 3)))
    for t in threads:
        w("| %d | %s |\n" % (t, rng("probe", "read", t, "-", "gbps", 1)))
    for table, title in AUDIO_TABLES:
        w("\n## %s\n\n" % title)
        w("| threads | contender | frames/s | RTF | GB/s | read probe GB/s | floor frames/s | floor RTF | of probe | "
          "flashkern / pytorch |\n|---|---|---|---|---|---|---|---|---|---|\n")
        for t in threads:
            probe = get("probe", "read", t, "-", "gbps")
            floor = probe * 1e9 / nbytes[table]
            base = get(table, "pytorch", t, "-", "frames_s") if has(table, "pytorch", t, "-", "frames_s") else None
            for case, tier in [("flashkern", x) for x in tiers] + [("pytorch", "-")]:
                if not has(table, case, t, tier, "frames_s"):
                    continue
                v = get(table, case, t, tier, "frames_s")
                w("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
                    t, case if case == "pytorch" else "%s %s" % (case, tier), rng(table, case, t, tier, "frames_s", 2),
                    f(1 / (v * AUDIO_FRAME_S), 2), f(v * nbytes[table] / 1e9, 1), f(probe, 1), f(floor, 2),
                    f(1 / (floor * AUDIO_FRAME_S), 2), f(v * nbytes[table] / 1e9 / probe, 2),
                    f(v / base, 2) if base and case != "pytorch" else "-"))
    w("\n## Where a flashkern audio frame's time goes, ms per frame (median [min, max])\n\n"
      "From the plan's phase timings (FK_PLAN_TIMING) of FK_PROG_AUDIO_STEP over each turn's frames (barriers "
      "included), the detokenizer timed per call; GB/s = the part's bytes / its median time.\n\n")
    w("| threads | tier | %s | backbone of probe | Depthformer + heads of probe |\n|%s\n" % (
        " | ".join(name for _, name in AUDIO_SPLIT), "---|" * (len(AUDIO_SPLIT) + 4)))
    for t in threads:
        probe = get("probe", "read", t, "-", "gbps")
        for tier in tiers:
            bb = get("split", "backbone", t, tier, "ms")
            dd = sum(get("split", k, t, tier, "ms") for k in ("depth_linear", "depthformer", "heads", "feedback"))
            w("| %d | %s | %s | %s | %s |\n" % (t, tier, " | ".join(rng("split", k, t, tier, "ms", 2)
                                                                   for k, _ in AUDIO_SPLIT),
                                               f(backbone_bytes / (bb * 1e-3) / 1e9 / probe, 2),
                                               f(depth_bytes / (dd * 1e-3) / 1e9 / probe, 2)))
        if has("split", "detok", t, "pytorch", "ms"):
            w("| %d | pytorch detokenizer, whole turn in one call, per frame | | | | | | %s | | |\n" % (
                t, rng("split", "detok", t, "pytorch", "ms", 2)))
    w("\n## Targets (issue 17)\n\n| threads | tier | audio step of probe (>= 0.85) | end to end / pytorch (>= 1.5) |\n"
      "|---|---|---|---|\n")
    for t in threads:
        probe = get("probe", "read", t, "-", "gbps")
        for tier in tiers:
            st = get("steps", "flashkern", t, tier, "frames_s") * nbytes["steps"] / 1e9 / probe
            e = get("e2e", "flashkern", t, tier, "frames_s") / get("e2e", "pytorch", t, "-", "frames_s")
            w("| %d | %s | %s (%s) | %s (%s) |\n" % (t, tier, f(st, 2), "met" if st >= 0.85 else "not met",
                                                    f(e, 2), "met" if e >= 1.5 else "not met"))
    return {"audio.md": "".join(md)}, None


# ---- main ---------------------------------------------------------------------------------------

RENDERERS = {"gemv": render_gemv, "gemm": render_gemm, "state": render_state, "fft": render_fft, "runtime": render_runtime, "model": render_model,
             "decode": render_decode, "ckpt": render_ckpt, "audio": render_audio}
ROUNDS = ("model", "decode")   # the benches whose script writes <bench>-rounds.csv


def render(bench, results):
    meta = Meta(os.path.join(results, bench + "-meta.csv"))
    rows = read_rows(os.path.join(results, bench + ("-rounds.csv" if bench in ROUNDS else ".csv")))
    return RENDERERS[bench](rows, meta)


def plot(bench, out, params):
    script = os.path.join(HERE, "plot_%s.gp" % bench)
    assign = "; ".join("%s=%s" % (k, v if isinstance(v, int) else "'%s'" % (
        os.path.join(out, v) if k in ("m1", "m4", "dat", "out") else v)) for k, v in params.items())
    r = subprocess.run(["gnuplot", "-e", assign, script])
    if r.returncode != 0:
        print("report.py: gnuplot %s failed: %s.png not written (the tables are complete)" % (script, bench),
              file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("benches", nargs="*", metavar="BENCH")
    ap.add_argument("--all", action="store_true", help="every bench whose CSV is in --results")
    ap.add_argument("--results", default=os.path.join(HERE, "results"), help="where the CSV files are")
    ap.add_argument("--out", help="where the reports go (default: --results)")
    ap.add_argument("--plot", dest="plot", action="store_true", default=None, help="run gnuplot")
    ap.add_argument("--no-plot", dest="plot", action="store_false")
    ap.add_argument("--check", action="store_true",
                    help="write nothing: compare what would be written with the files in --results, exit 1 if any differs")
    a = ap.parse_args()
    out = a.out or a.results
    benches = list(a.benches)
    if a.all:
        benches += [b for b in RENDERERS if b not in benches and os.path.exists(
            os.path.join(a.results, (b + "-rounds.csv") if b in ROUNDS else (b + ".csv")))]
    if not benches:
        ap.error("name a bench (%s) or --all" % ", ".join(RENDERERS))
    do_plot = a.plot if a.plot is not None else shutil.which("gnuplot") is not None
    if not a.check:
        os.makedirs(out, exist_ok=True)
    differ = 0
    for b in benches:
        if b not in RENDERERS:
            ap.error("unknown bench %s (%s)" % (b, ", ".join(RENDERERS)))
        files, params = render(b, a.results)
        if a.check:
            for name, text in files.items():
                path = os.path.join(a.results, name)
                have = open(path).read() if os.path.exists(path) else ""
                if have != text:
                    differ += 1
                    sys.stderr.writelines(list(difflib.unified_diff(
                        have.splitlines(True), text.splitlines(True), path, "rendered from the CSV"))[:40])
                else:
                    print("report.py: %s is what its CSV renders" % path, file=sys.stderr)
            continue
        for name, text in files.items():
            with open(os.path.join(out, name), "w") as fo:
                fo.write(text)
        print("report.py: wrote %s" % ", ".join(os.path.join(out, n) for n in files), file=sys.stderr)
        if do_plot and params:
            plot(b, out, params)


    if differ:
        print("report.py: %d file(s) differ from what their CSV renders" % differ, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
