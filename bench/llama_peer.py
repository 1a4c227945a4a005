#!/usr/bin/env python3
"""bench/llama_peer.py: the llama.cpp peer of fk_bench_model's LM prefill and decode measures
(bench/README.md, "Whole models" and "Quantized decode").

llama.cpp's `llama-bench` on the same LFM2 shapes as fk_bench_model's `lm`, `lm_350m` and `lm_1_2b`,
BF16, Q8_0 or Q4_0 weights (and Q4_1, Q4_K: the 4-bit types with a minimum), CPU. Nothing of llama.cpp
is in this repository: `build` fetches PyPI's llama-cpp-python source distribution (which vendors
llama.cpp) into a directory outside it and builds two tools, llama-bench and llama-quantize.

  llama_peer.py build [--dir /work/peers] [--version 0.3.36] [--jobs 2] [--isa native|avxvnni|avx2]
      pip download --no-binary :all: --no-deps llama-cpp-python==VERSION into DIR, unpack it, and
      build only the llama-bench and llama-quantize targets of its vendor/llama.cpp with CMake under
      nice: Release,
      GGML_NATIVE (this CPU's flags; --isa avxvnni: not native but AVX, AVX2, FMA, F16C and AVX-VNNI
      without AVX-512, what an Intel client core has, into llama-bench-VERSION-avxvnni: the peer of
      flashkern under FK_CPU_MASK=303; --isa avx2: AVX, AVX2, FMA and F16C only, no VNNI of either
      width, what Haswell to Comet Lake and Zen 1-3 have, into llama-bench-VERSION-avx2: the peer of
      flashkern under FK_CPU_MASK=203, its avx2madd stamps), no CUDA, no BLAS, no OpenSSL, no tests /
      examples / server;
      the vendored commit (the sdist's CHANGELOG names it) is passed as LLAMA_BUILD_COMMIT, so
      llama-bench reports it. Writes DIR/llama-bench-VERSION/fk_peer.txt (what was built) and
      prints the binary's path.
  llama_peer.py gguf [--dir /tmp/fk_llama_peer] [--only lm,lm_350m,lm_1_2b] [--dtypes bf16,q8_0,q4_0]
                     [--llama-quantize PATH]
      writes the GGUF files (below), one per model and weight type; they are kept and reused. q4_k
      (which the gguf package cannot quantize) is `llama-quantize --pure` of the bf16 file (PATH:
      beside --llama-bench in run, else the default build's).
  llama_peer.py run --llama-bench PATH [--threads 1,2] [--reps 5] [--prefill 64,512|none] [--decode N]
                    [--dtypes bf16] [--only lm] [--lm-350m] [--lm-1-2b] [--dir /tmp/fk_llama_peer]
      per model, weight type and thread count T: `llama-bench -m FILE -p 64,512 -n 0 -t T -r N -o jsonl`
      (with --decode N: `-n N`, and `-p 0` with --prefill none); CSV on stdout, as the other peers
      print it: peer,model,dtype,threads,metric,value,reps (dtype bf16, q8_0 or q4_0) with metric
      prefill<P>_tok_s (llama-bench's pp<P> test) and decode_tok_s (its tg<N> test: N tokens one at a
      time from an empty context, N / time) and their _min / _max, from llama-bench's per-repetition
      samples_ns (median, min, max: the same statistics as the other peers; llama-bench's own avg_ts
      and stddev_ts are printed on stderr); bytes_per_token (the weight bytes one decode step reads:
      every matrix llama.cpp multiplies, in the file's type, plus one token_embd row), and others_cpu
      (other processes' share of the CPUs meanwhile: /proc/stat busy time minus llama-bench's
      getrusage, over wall time x CPUs).

The GGUF files (architecture `lfm2`, written with the `gguf` package, as llama.cpp's
convert_hf_to_gguf.py lays an Lfm2ForCausalLM out): the keys lfm2.context_length (4096),
embedding_length, block_count, feed_forward_length, attention.head_count, attention.head_count_kv
as a per-layer array (0 on the ShortConv layers: that is how llama.cpp's LFM2 tells a conv layer from
an attention layer), rope.freq_base 1e6, attention.layer_norm_rms_epsilon 1e-5, vocab_size,
shortconv.l_cache 3, general.file_type MOSTLY_BF16 (MOSTLY_Q8_0, MOSTLY_Q4_0); tensors token_embd
(tied: no output tensor), token_embd_norm (the final norm: LFM2's GGUF name for it), per layer
attn_norm (the operator norm), ffn_norm, ffn_gate / ffn_up / ffn_down, and either shortconv.in_proj /
out_proj and shortconv.conv (F32, L_cache x hidden: llama.cpp's ssm_conv takes F32) or attn_q /
attn_k / attn_v / attn_output and attn_q_norm / attn_k_norm; norms F32 (as the converter writes
them). The matrices (token_embd, which is also the head, and every ffn_*, shortconv in / out_proj
and attn_q / k / v / output) are BF16, or the same bf16 values quantized by
gguf.quants.quantize(..., Q8_0 / Q4_0 / Q4_1) (ggml's reference quantizer): what flashkern's
desc.quantize FK_Q8 / FK_Q4 quantizes too, the head included; or (q4_k) llama-quantize's Q4_K of the
bf16 file's matrices, every one of them (--pure: no Q6_K mixture), norms and conv taps F32 as written. The vocabulary is
tokenizer.ggml.model = "none": llama.cpp fills in vocab_size placeholder tokens, and llama-bench draws its prompt as random ids (rand() % n_vocab, no
BOS for this vocabulary), so no tokenizer is needed. Weight values are seeded uniform(-1/sqrt(fan_in),
+1/sqrt(fan_in)) rounded to bf16 (norms 1 + U(-0.1, 0.1), the embedding U(-1, 1)), like
fk_bench_model's, from another generator (seeded per model: a model's three files hold the same
values): the speed does not depend on the values.

Needs the `gguf` package (in /opt/fkref) for `gguf` and `run`; `build` needs pip, cmake and a C++
compiler. A bench peer only: never in tests or CI.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SDIST_VERSION = "0.3.36"
GGUF_DIR = "/tmp/fk_llama_peer"
GGUF_FORMAT = 1          # in the file name: a change of what is written makes new files

# fk_bench_model's SHAPE_LM, SHAPE_LM350 and SHAPE_LM12 (and torch_peer.py's lm_config): 'c' ShortConv,
# 'a' attention; the seed of a model's weights is its place here
SHAPES = {
    "lm": dict(vocab=1024, hidden=256, ffn=768, heads=4, kv_heads=2, kinds="ccacac"),
    "lm_350m": dict(vocab=65536, hidden=1024, ffn=4608, heads=16, kv_heads=8, kinds="ccaccaccacacacac"),
    "lm_1_2b": dict(vocab=65536, hidden=2048, ffn=8192, heads=32, kv_heads=8, kinds="ccaccaccacacacac"),
}
# the weight types of the matrices: (GGMLQuantizationType name, LlamaFileType name, bytes per 32 weights)
DTYPES = {"bf16": ("BF16", "MOSTLY_BF16", 64), "q8_0": ("Q8_0", "MOSTLY_Q8_0", 34), "q4_0": ("Q4_0", "MOSTLY_Q4_0", 18),
          "q4_1": ("Q4_1", "MOSTLY_Q4_1", 20), "q4_k": ("Q4_K", "MOSTLY_Q4_K_M", 18)}
QUANTIZE_TOOL = {"q4_k": "Q4_K"}   # written by llama-quantize from the bf16 file, not by the gguf package
HEAD_DIM = 64
# build --isa: not native but these x86 features, none of AVX-512 (the peer of flashkern under an FK_CPU_MASK)
ISAS = {"avxvnni": "AVX2 + FMA + F16C + AVX-VNNI, no AVX-512", "avx2": "AVX2 + FMA + F16C, no VNNI, no AVX-512"}
L_CACHE = 3


def log(*a):
    print("llama_peer:", *a, file=sys.stderr, flush=True)


# ---- build: llama-bench from the llama-cpp-python sdist ----------------------------------------

def vendored_commit(src):
    """The llama.cpp commit the sdist vendors: its CHANGELOG's first "update llama.cpp to ...@HASH"."""
    try:
        with open(os.path.join(src, "CHANGELOG.md"), encoding="utf-8") as f:
            m = re.search(r"llama\.cpp@([0-9a-f]{7,40})", f.read())
        return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"


def cmd_build(a):
    os.makedirs(a.dir, exist_ok=True)
    tarball = os.path.join(a.dir, "llama_cpp_python-%s.tar.gz" % a.version)
    if not os.path.exists(tarball):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                        "--dest", a.dir, "llama-cpp-python==%s" % a.version], check=True)
    src = os.path.join(a.dir, "llama_cpp_python-%s" % a.version)
    if not os.path.isdir(src):
        with tarfile.open(tarball) as t:
            t.extractall(a.dir, filter="data")
    commit = vendored_commit(src)
    llama = os.path.join(src, "vendor", "llama.cpp")
    build = os.path.join(a.dir, "llama-bench-%s" % a.version + ("" if a.isa == "native" else "-" + a.isa))
    isa = ["-DGGML_NATIVE=ON"]
    if a.isa in ISAS:
        isa = ["-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON",
               "-DGGML_AVX_VNNI=%s" % ("ON" if a.isa == "avxvnni" else "OFF"), "-DGGML_AVX512=OFF",
               "-DGGML_AVX512_VNNI=OFF", "-DGGML_AVX512_BF16=OFF"]
    configure = ["cmake", "-S", llama, "-B", build, "-DCMAKE_BUILD_TYPE=Release"] + isa + [
                 "-DGGML_CUDA=OFF", "-DGGML_BLAS=OFF", "-DGGML_METAL=OFF", "-DGGML_VULKAN=OFF",
                 "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
                 "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_APP=OFF", "-DLLAMA_BUILD_UI=OFF",
                 "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_BUILD_TOOLS=ON", "-DBUILD_SHARED_LIBS=OFF",
                 "-DLLAMA_BUILD_COMMIT=%s" % commit, "-DLLAMA_BUILD_NUMBER=0"]
    compile_ = ["nice", "-n", "10", "cmake", "--build", build, "--target", "llama-bench", "llama-quantize",
                "-j", str(a.jobs)]
    for c in (configure, compile_):
        log(" ".join(c))
        subprocess.run(c, check=True)
    binary = os.path.join(build, "bin", "llama-bench")
    if not os.access(binary, os.X_OK):
        raise SystemExit("llama_peer: no %s after the build" % binary)
    with open(os.path.join(build, "fk_peer.txt"), "w", encoding="utf-8") as f:
        # the first line: what run's version line names
        f.write("the llama-cpp-python %s sdist%s\n" % (a.version, " (%s)" % ISAS[a.isa] if a.isa in ISAS else ""))
        f.write("configure: %s\nbuild: %s\n" % (" ".join(configure), " ".join(compile_)))
    print(binary)


def built_from(binary):
    """What fk_peer.txt beside the build says the binary was built from (first line), or None."""
    d = os.path.dirname(os.path.abspath(binary))
    for p in (os.path.join(d, "fk_peer.txt"), os.path.join(os.path.dirname(d), "fk_peer.txt")):
        if os.path.exists(p):
            with open(p, encoding="utf-8") as f:
                return f.readline().strip()
    return None


# ---- gguf: the models ----------------------------------------------------------------------------

def gguf_path(d, name, dtype):
    return os.path.join(d, "fk-%s-%s-v%d.gguf" % (name, dtype, GGUF_FORMAT))


def matrices(name):
    """(rows, cols) of every matrix llama.cpp multiplies in a decode step: the layers' and the tied head."""
    s = SHAPES[name]
    h, f, q, kv = s["hidden"], s["ffn"], s["heads"] * HEAD_DIM, s["kv_heads"] * HEAD_DIM
    m = [(s["vocab"], h)]
    for k in s["kinds"]:
        m += [(3 * h, h), (h, h)] if k == "c" else [(q, h), (kv, h), (kv, h), (h, q)]
        m += [(f, h), (f, h), (h, f)]
    return m


def bytes_per_token(name, dtype):
    """The weight bytes one decode step reads: every matrix in the file's type, and one token_embd row."""
    per32 = DTYPES[dtype][2]
    return sum(n * k // 32 * per32 for n, k in matrices(name)) + SHAPES[name]["hidden"] // 32 * per32


def write_gguf(path, name, seed, dtype):
    import numpy as np
    import gguf

    s = SHAPES[name]
    h, f, kinds = s["hidden"], s["ffn"], s["kinds"]
    rng = np.random.default_rng(seed)

    def bf16(x):
        """float32 -> bf16 bits, round to nearest even (the values are finite)."""
        b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
        return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)

    qtype = getattr(gguf.GGMLQuantizationType, DTYPES[dtype][0])

    def dense(rows, cols, scale=None):
        """a matrix: bf16 values, in the file's type (quantized from them: exact in f32)"""
        scale = 1.0 / np.sqrt(cols) if scale is None else scale
        b = bf16(rng.uniform(-scale, scale, size=(rows, cols)).astype(np.float32))
        if dtype == "bf16":
            return b
        return gguf.quants.quantize((b.astype(np.uint32) << 16).view(np.float32), qtype)

    def norm(n):   # rounded through bf16, as fk_bench_model's norms are
        v = bf16(1.0 + rng.uniform(-0.1, 0.1, size=n).astype(np.float32))
        return (v.astype(np.uint32) << 16).view(np.float32)

    w = gguf.GGUFWriter(path + ".part", "lfm2")
    w.add_name("flashkern bench synthetic LFM2 (%s)" % name)
    w.add_context_length(4096)
    w.add_embedding_length(h)
    w.add_block_count(len(kinds))
    w.add_feed_forward_length(f)
    w.add_head_count(s["heads"])
    w.add_head_count_kv([s["kv_heads"] if k == "a" else 0 for k in kinds])
    w.add_rope_freq_base(1e6)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(s["vocab"])
    w.add_shortconv_l_cache(L_CACHE)
    w.add_file_type(getattr(gguf.LlamaFileType, DTYPES[dtype][1]))
    w.add_tokenizer_model("none")

    w.add_tensor("token_embd.weight", dense(s["vocab"], h, 1.0), raw_dtype=qtype)
    for i, k in enumerate(kinds):
        p = "blk.%d." % i
        w.add_tensor(p + "attn_norm.weight", norm(h))
        if k == "c":
            w.add_tensor(p + "shortconv.in_proj.weight", dense(3 * h, h), raw_dtype=qtype)
            conv = bf16(rng.uniform(-1 / np.sqrt(L_CACHE), 1 / np.sqrt(L_CACHE), size=(h, L_CACHE)))
            w.add_tensor(p + "shortconv.conv.weight", (conv.astype(np.uint32) << 16).view(np.float32))
            w.add_tensor(p + "shortconv.out_proj.weight", dense(h, h), raw_dtype=qtype)
        else:
            q, kv = s["heads"] * HEAD_DIM, s["kv_heads"] * HEAD_DIM
            w.add_tensor(p + "attn_q.weight", dense(q, h), raw_dtype=qtype)
            w.add_tensor(p + "attn_k.weight", dense(kv, h), raw_dtype=qtype)
            w.add_tensor(p + "attn_v.weight", dense(kv, h), raw_dtype=qtype)
            w.add_tensor(p + "attn_q_norm.weight", norm(HEAD_DIM))
            w.add_tensor(p + "attn_k_norm.weight", norm(HEAD_DIM))
            w.add_tensor(p + "attn_output.weight", dense(h, q), raw_dtype=qtype)
        w.add_tensor(p + "ffn_norm.weight", norm(h))
        w.add_tensor(p + "ffn_gate.weight", dense(f, h), raw_dtype=qtype)
        w.add_tensor(p + "ffn_up.weight", dense(f, h), raw_dtype=qtype)
        w.add_tensor(p + "ffn_down.weight", dense(h, f), raw_dtype=qtype)
    w.add_tensor("token_embd_norm.weight", norm(h))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    os.replace(path + ".part", path)


def default_quantize():
    return os.path.join("/work/peers", "llama-bench-%s" % SDIST_VERSION, "bin", "llama-quantize")


def ensure_gguf(d, names, dtypes, quantize=None):
    """{(model, dtype): path}, writing the files that are missing (QUANTIZE_TOOL's types by the
    llama-quantize at quantize from the bf16 file, which is written first if missing)"""
    os.makedirs(d, exist_ok=True)
    paths = {}
    for name in names:
        for dtype in dtypes:
            p = gguf_path(d, name, dtype)
            if not os.path.exists(p):
                t0 = time.perf_counter()
                if dtype in QUANTIZE_TOOL:
                    tool = quantize or default_quantize()
                    if not os.access(tool, os.X_OK):
                        raise SystemExit("llama_peer: %s needs llama-quantize, and %s is not an executable "
                                         "(llama_peer.py build makes it)" % (dtype, tool))
                    src = ensure_gguf(d, [name], ["bf16"])[name, "bf16"]
                    r = subprocess.run([tool, "--pure", src, p + ".part", QUANTIZE_TOOL[dtype], "1"],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                    if r.returncode != 0:
                        sys.stderr.write(r.stdout[-3000:])
                        raise SystemExit("llama_peer: %s failed (%d)" % (tool, r.returncode))
                    os.replace(p + ".part", p)
                else:
                    write_gguf(p, name, list(SHAPES).index(name) + 1, dtype)
                log("wrote %s (%.0f MB, %.1f s)" % (p, os.path.getsize(p) / 1e6, time.perf_counter() - t0))
            paths[name, dtype] = p
    return paths


def cmd_gguf(a):
    for p in ensure_gguf(a.dir, models_of(a), dtypes_of(a), a.llama_quantize).values():
        print(p)


# ---- run: llama-bench per model and thread count -------------------------------------------------

def _busy_s():
    """The machine's busy CPU time (all CPUs, /proc/stat), seconds."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def _children_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def row(model, dtype, threads, metric, value, reps):
    print("llama.cpp,%s,%s,%d,%s,%s,%d" % (model, dtype, threads, metric,
                                          value if isinstance(value, str) else "%.6g" % value, reps), flush=True)


def models_of(a):
    names = [x for x in a.only.split(",") if x]
    if getattr(a, "lm_350m", False) and "lm_350m" not in names:
        names.append("lm_350m")
    if getattr(a, "lm_1_2b", False) and "lm_1_2b" not in names:
        names.append("lm_1_2b")
    for n in names:
        if n not in SHAPES:
            raise SystemExit("llama_peer: unknown model %s (%s)" % (n, ", ".join(SHAPES)))
    return names


def dtypes_of(a):
    dtypes = [x for x in a.dtypes.split(",") if x]
    for x in dtypes:
        if x not in DTYPES:
            raise SystemExit("llama_peer: unknown weight type %s (%s)" % (x, ", ".join(DTYPES)))
    if not dtypes:
        raise SystemExit("llama_peer: --dtypes names no weight type")
    return dtypes


def stats_rows(name, dtype, t, metric, n, x):
    """median, min and max of n / time over llama-bench's per-run samples_ns"""
    tok_s = [n / (ns * 1e-9) for ns in x["samples_ns"]]
    med = statistics.median(tok_s)
    row(name, dtype, t, metric, med, len(tok_s))
    row(name, dtype, t, metric + "_min", min(tok_s), len(tok_s))
    row(name, dtype, t, metric + "_max", max(tok_s), len(tok_s))
    return med


def cmd_run(a):
    if not os.access(a.llama_bench, os.X_OK):
        raise SystemExit("llama_peer: %s is not an executable" % a.llama_bench)
    prefills = [] if a.prefill == "none" else [int(x) for x in a.prefill.split(",") if x]
    threads = [int(x) for x in a.threads.split(",") if x]
    if not prefills and a.decode < 1:
        raise SystemExit("llama_peer: nothing to measure (--prefill none and no --decode)")
    quantize = a.llama_quantize or os.path.join(os.path.dirname(os.path.abspath(a.llama_bench)), "llama-quantize")
    paths = ensure_gguf(a.dir, models_of(a), dtypes_of(a), quantize)
    version = None
    for (name, dtype), path in paths.items():
        for t in threads:
            cmd = [a.llama_bench, "-m", path, "-p", ",".join(map(str, prefills)) or "0", "-n", str(max(a.decode, 0)),
                   "-t", str(t), "-r", str(a.reps), "-o", "jsonl"]
            b0, c0, w0 = _busy_s(), _children_s(), time.perf_counter()
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            wall = time.perf_counter() - w0
            others = max(0.0, (_busy_s() - b0) - (_children_s() - c0)) / (wall * os.cpu_count())
            if r.returncode != 0:
                sys.stderr.write(r.stderr[-3000:])
                raise SystemExit("llama_peer: %s failed (%d)" % (" ".join(cmd), r.returncode))
            tests = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
            if version is None and tests:
                x = tests[0]
                fa = {-1: "auto", 0: "off", 1: "on"}.get(x["flash_attn"], x["flash_attn"])
                version = "llama.cpp %s (llama-bench%s); backends %s; flash attention %s; KV %s; n_ubatch %s" % (
                    x["build_commit"], " from " + built_from(a.llama_bench) if built_from(a.llama_bench) else "",
                    x["backends"], fa, x["type_k"], x["n_ubatch"])
                row("info", "-", 0, "version", version.replace(",", ";"), 0)
                log("%s; model_type %s, %s parameters" % (version, x["model_type"], x["model_n_params"]))
            row(name, dtype, t, "others_cpu", others, a.reps)
            if a.decode > 0:
                row(name, dtype, t, "bytes_per_token", "%d" % bytes_per_token(name, dtype), 1)
            for x in tests:
                n, g = int(x["n_prompt"]), int(x["n_gen"])
                if int(x["n_threads"]) != t:
                    continue
                if n in prefills and g == 0:
                    med = stats_rows(name, dtype, t, "prefill%d_tok_s" % n, n, x)
                    what = "prefill of %d tokens" % n
                elif n == 0 and a.decode > 0 and g == a.decode:
                    med = stats_rows(name, dtype, t, "decode_tok_s", g, x)
                    what = "decode of %d tokens" % g
                else:
                    continue
                log("%s %s %dT: %s %.1f tokens/s (llama-bench avg %.1f, stddev %.1f); "
                    "other processes %.0f%% of the CPUs" % (name, dtype, t, what, med, x["avg_ts"], x["stddev_ts"],
                                                           100 * others))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build llama-bench from the llama-cpp-python sdist")
    b.add_argument("--dir", default="/work/peers", help="where the sdist and the build go (outside the repo)")
    b.add_argument("--version", default=SDIST_VERSION, help="llama-cpp-python's version")
    b.add_argument("--jobs", type=int, default=2)
    b.add_argument("--isa", choices=("native",) + tuple(sorted(ISAS)), default="native",
                   help="native: GGML_NATIVE; " + "; ".join("%s: %s" % (k, ISAS[k]) for k in sorted(ISAS)))
    g = sub.add_parser("gguf", help="write the GGUF files")
    r = sub.add_parser("run", help="run llama-bench on them; CSV on stdout")
    r.add_argument("--llama-bench", required=True, help="the llama-bench binary")
    r.add_argument("--threads", default="1,2")
    r.add_argument("--reps", type=int, default=5, help="llama-bench -r")
    r.add_argument("--prefill", default="64,512", help="llama-bench -p: prompt lengths, or none")
    r.add_argument("--decode", type=int, default=0, help="llama-bench -n N: the decode measure (0: none)")
    for p in (g, r):
        p.add_argument("--dir", default=GGUF_DIR, help="where the GGUF files are kept")
        p.add_argument("--only", default="lm", help="lm, lm_350m, lm_1_2b (comma-separated)")
        p.add_argument("--lm-350m", action="store_true", help="also the LFM2-350M-shaped point")
        p.add_argument("--lm-1-2b", action="store_true", help="also the LFM2-1.2B-shaped point")
        p.add_argument("--dtypes", default="bf16",
                       help="bf16, q8_0, q4_0, q4_1, q4_k (comma-separated): the matrices' type")
        p.add_argument("--llama-quantize", default=None,
                       help="llama-quantize, for q4_k (run: beside --llama-bench; gguf: the default build's)")
    a = ap.parse_args()
    {"build": cmd_build, "gguf": cmd_gguf, "run": cmd_run}[a.cmd](a)


if __name__ == "__main__":
    main()
