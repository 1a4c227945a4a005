#!/usr/bin/env python3
"""bench/ab_compare.py: flashkern before and after a change, each as a ratio to the peers measured
in the same run (so that the machine's drift between runs cancels).

    ab_compare.py --before DIR [DIR...] --after DIR [DIR...] [--title TEXT] > OUT.md

Each DIR holds one run's CSVs (gemv.csv, state.csv, fft.csv, each possibly gzipped: whichever
exist), written by the bench binaries of one build with --out DIR; run the two builds in alternation. For every case the
ratio is peer time / flashkern time (above 1: flashkern is faster), its median over the runs of
each build, and after / before. Cases: GEMV (each flashkern contender against oneDNN prepacked, hot
and cold; the N x K shapes pooled by their median, with the worst shape's after / before), ShortConv and qkprep (against the compiler's vectorization of the contract), the irfft
and the ISTFT frame (against FFTW).
"""
import argparse
import csv
import gzip
import os
import statistics
import sys


def rows(d, name):
    """The ok rows of DIR/NAME, or of DIR/NAME.gz (the committed runs are gzipped)."""
    p = os.path.join(d, name)
    if os.path.exists(p):
        f = open(p, newline="")
    elif os.path.exists(p + ".gz"):
        f = gzip.open(p + ".gz", "rt", newline="")
    else:
        return None
    with f:
        return [r for r in csv.DictReader(f) if r.get("status") == "ok"]


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def gemv_ratios(d):
    """(case, contender) -> oneDNN prepacked median / contender median, hot and cold."""
    rs = rows(d, "gemv.csv")
    if rs is None:
        return {}
    peer, fk = {}, {}
    for r in rs:
        key = (int(r["n"]), int(r["k"]), int(r["m"]), r["mode"], int(r["threads"]))
        t = num(r["median_us"])
        if r["contender"] == "oneDNN prepacked":
            peer[key] = t
        elif r["contender"].startswith("flashkern"):
            fk[(key, r["contender"])] = t
    out = {}
    for (key, c), t in fk.items():
        if key in peer and t:
            n, k, m, mode, th = key
            out[("gemv", f"m={m} {mode} {th}T", c + " / oneDNN prepacked", f"{n}x{k}")] = peer[key] / t
    return out


def state_ratios(d):
    rs = rows(d, "state.csv")
    if rs is None:
        return {}
    by = {}
    for r in rs:
        by[(r["form"], r["model"], r["hidden"], r["m"], r["contender"])] = num(r["us_call_median"])
    out = {}
    for (form, model, hidden, m, c), t in by.items():
        if c != "flashkern exact" or not t:
            continue
        peer = by.get((form, model, hidden, m, "autovec (gcc -O3 -march=native)"))
        if peer:
            out[("state", f"{form} {model} h={hidden} m={m}", "flashkern exact / autovec", "")] = peer / t
    return out


def fft_ratios(d):
    rs = rows(d, "fft.csv")
    if rs is None:
        return {}
    by = {(r["n"], r["contender"]): num(r["median_us"]) for r in rs}
    out = {}
    for (n, c), t in by.items():
        if not c.startswith("flashkern") or not t:
            continue
        peer = by.get((n, "FFTW MEASURE"))
        if peer:
            out[("fft", f"n={n}", c + " / FFTW MEASURE", "")] = peer / t
    return out


def collect(dirs):
    acc = {}
    for d in dirs:
        for f in (gemv_ratios, state_ratios, fft_ratios):
            for k, v in f(d).items():
                acc.setdefault(k, []).append(v)
    return {k: statistics.median(v) for k, v in acc.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", nargs="+", required=True)
    ap.add_argument("--after", nargs="+", required=True)
    ap.add_argument("--title", default="flashkern before and after")
    a = ap.parse_args()
    for d in a.before + a.after:
        if not os.path.isdir(d):
            sys.exit(f"ab_compare.py: {d} is not a directory")
    b, f = collect(a.before), collect(a.after)
    keys = sorted(set(b) & set(f))
    if not keys:
        sys.exit("ab_compare.py: no case measured in both builds")
    print(f"# {a.title}\n")
    print(f"Ratios are peer time / flashkern time in the same run (above 1: flashkern faster), the median over "
          f"{len(a.before)} run(s) before and {len(a.after)} after; `after / before` above 1: the change is faster.\n")
    for bench in ("gemv", "state", "fft"):
        ks = [k for k in keys if k[0] == bench]
        if not ks:
            continue
        ch = [f[k] / b[k] for k in ks]
        print(f"## {bench}\n")
        print(f"{len(ks)} cases; after / before: median {statistics.median(ch):.3f}, min {min(ch):.3f}, "
              f"max {max(ch):.3f}\n")
        # rows: (case, ratio) with the shapes (GEMV: every N x K) pooled by their median
        groups = {}
        for k in ks:
            groups.setdefault((k[1], k[2]), []).append(k)
        pooled = bench == "gemv"
        print("| case | ratio |" + (" shapes |" if pooled else "") + " before | after | after / before |" +
              (" worst shape |" if pooled else ""))
        print("|---|---|" + ("---:|" if pooled else "") + "---:|---:|---:|" + ("---|" if pooled else ""))
        for (case, ratio), g in sorted(groups.items()):
            bb = statistics.median(b[k] for k in g)
            aa = statistics.median(f[k] for k in g)
            cc = statistics.median(f[k] / b[k] for k in g)
            if pooled:
                w = min(g, key=lambda k: f[k] / b[k])
                print(f"| {case} | {ratio} | {len(g)} | {bb:.3f} | {aa:.3f} | {cc:.3f} | {w[3]}: {f[w] / b[w]:.3f} |")
            else:
                print(f"| {case} | {ratio} | {bb:.3f} | {aa:.3f} | {cc:.3f} |")
        print()

if __name__ == "__main__":
    main()
