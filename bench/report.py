#!/usr/bin/env python3
"""bench/report.py: renders every bench's results from its CSV (bench/README.md, "Results").

  report.py [--results DIR] [--out DIR] [--plot | --no-plot] (--all | BENCH ...)

BENCH is gemv, state, fft, runtime or model. For each, reads DIR/<bench>.csv (the rows),
DIR/<bench>-meta.csv (key,item,value: the machine, versions, noise, probe and the run's facts; the
bench's C harness writes both) and writes OUT/<bench>.md and the gnuplot data (OUT/<bench>*.dat),
then, with --plot, runs gnuplot on bench/plot_<bench>.gp for OUT/<bench>.png. model reads
DIR/model-rounds.csv instead (every round's lines, run_model.sh) and also writes OUT/model.csv (the
rounds merged). DIR and OUT default to bench/results; --plot is the default when gnuplot is on the
PATH. Standard library only (runs with the system python3)."""
import argparse
import csv
import math
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
    for name in contenders:
        team = meta.get("threading", name) == "team"
        w("- **%s**: %s; %s-byte weights; threads: %s." % (
            name, meta.get("version", name), meta.get("bytes_per_weight", name),
            "the bench's team, rows split at a multiple of 64" if team else "the library's own"))
        # what prepare() reported, shapes with the same text grouped
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
    for m in (1, mmax):
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


# ---- main ---------------------------------------------------------------------------------------

RENDERERS = {"gemv": render_gemv, "state": render_state}


def render(bench, results):
    meta = Meta(os.path.join(results, bench + "-meta.csv"))
    rows = read_rows(os.path.join(results, bench + ".csv"))
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
    a = ap.parse_args()
    out = a.out or a.results
    benches = list(a.benches)
    if a.all:
        benches += [b for b in RENDERERS if b not in benches and os.path.exists(
            os.path.join(a.results, (b + "-rounds.csv") if b == "model" else (b + ".csv")))]
    if not benches:
        ap.error("name a bench (%s) or --all" % ", ".join(RENDERERS))
    do_plot = a.plot if a.plot is not None else shutil.which("gnuplot") is not None
    os.makedirs(out, exist_ok=True)
    for b in benches:
        if b not in RENDERERS:
            ap.error("unknown bench %s (%s)" % (b, ", ".join(RENDERERS)))
        files, params = render(b, a.results)
        for name, text in files.items():
            with open(os.path.join(out, name), "w") as fo:
                fo.write(text)
        print("report.py: wrote %s" % ", ".join(os.path.join(out, n) for n in files), file=sys.stderr)
        if do_plot and params:
            plot(b, out, params)


if __name__ == "__main__":
    main()
