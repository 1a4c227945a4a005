#!/usr/bin/env python3
"""bench/model_report.py: merges bench/run_model.sh's rounds and writes model.csv, model.md, model.dat.

  model_report.py ROUNDS_CSV FACTS OUTDIR

ROUNDS_CSV: round,peer,model,dtype,threads,metric,value,reps (every line fk_bench_model and
torch_peer.py printed, per round). Per (peer, model, dtype, threads, metric): the value is the median
over rounds of the round's median, <metric>_min the least of the rounds' minima, <metric>_max the
greatest of their maxima, reps the sum. Standard library only (runs with the system python3)."""
import csv
import statistics
import sys
from collections import OrderedDict, defaultdict

TARGET = 3.0
AUDIO_S_PER_CODE = 1920 / 24000.0


def load(path):
    rows = defaultdict(list)     # key -> [(value, reps)]
    text = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            key = (r["peer"], r["model"], r["dtype"], int(r["threads"]), r["metric"])
            try:
                v = float(r["value"])
            except ValueError:
                text[key] = r["value"]
                continue
            rows[key].append((v, int(r["reps"])))
    return rows, text


def merge(rows):
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


def facts_of(path):
    d = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(" ")
            d[k] = v
    return d


def main():
    rows, text = load(sys.argv[1])
    facts = facts_of(sys.argv[2])
    outdir = sys.argv[3]
    m = merge(rows)

    with open(outdir + "/model.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["peer", "model", "dtype", "threads", "metric", "value", "reps"])
        for (peer, model, dtype, t, metric), (v, n) in m.items():
            w.writerow([peer, model, dtype, t, metric, "%.6g" % v, n])
        for (peer, model, dtype, t, metric), v in sorted(text.items()):
            w.writerow([peer, model, dtype, t, metric, v, 0])

    def get(peer, model, dtype, t, metric):
        v = m.get((peer, model, dtype, t, metric))
        return None if v is None else v[0]

    def fmt(v, d=1):
        return "-" if v is None else ("%.*f" % (d, v))

    def rng(peer, model, dtype, t, metric, d=1):
        v = get(peer, model, dtype, t, metric)
        if v is None:
            return "-"
        lo, hi = get(peer, model, dtype, t, metric + "_min"), get(peer, model, dtype, t, metric + "_max")
        return "%s [%s, %s]" % (fmt(v, d), fmt(lo, d), fmt(hi, d))

    threads = sorted({k[3] for k in m if k[3] > 0})
    models = [x for x in ("lm", "lm_350m") if any(k[1] == x for k in m)]
    fk_ran = any(k[0] == "flashkern" for k in m)
    fast_ran = any(k[0] == "flashkern" and k[2] == "fast" for k in m)
    skipped = sorted({(k[1], k[3]) for k in m if k[0] == "flashkern" and k[4] == "skipped"})

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

    md.append("## Against the target (>= %gx the faster PyTorch dtype)\n" % TARGET)
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
            elif rex is not None and rex >= TARGET:
                met = "yes"
            elif rfa is not None and rfa >= TARGET:
                met = "fast tier only"
            else:
                met = "**no**"
            md.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                label, t, fmt(ex), fmt(fa), fmt(tf), fmt(tb),
                "-" if rex is None else "%.2fx" % rex, "-" if rfa is None else "%.2fx" % rfa, met))
            dat.append((plabel, t, ex, fa, tf, tb))

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
        if metric.endswith("_min") or metric.endswith("_max") or metric in ("skipped", "others_cpu"):
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
- **Detokenizer** (LFM2.5's: codebooks 8 x 2048 x 512, LFM2 stack hidden 512, ffn 1536, 8 layers conv
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
       if "lm_350m" in models else ""))
    with open(outdir + "/model.md", "w") as f:
        f.write("\n".join(md) + "\n")

    # plot data: one row per (metric, threads): label, flashkern exact, fast, torch f32, torch bf16
    with open(outdir + "/model.dat", "w") as f:
        f.write('"case" "flashkern exact" "flashkern fast" "torch f32" "torch bf16"\n')
        for short, t, ex, fa, tf, tb in dat:
            cols = ("-" if v is None else "%.6g" % v for v in (ex, fa, tf, tb))
            f.write('"%s, %dT" %s %s %s %s\n' % (short, t, *cols))


if __name__ == "__main__":
    main()
