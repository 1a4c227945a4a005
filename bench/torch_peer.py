#!/usr/bin/env python3
"""bench/torch_peer.py: the PyTorch CPU peer of fk_bench_model (bench/README.md, "Whole models").

The same synthetic models as fk_bench_model, in transformers 5.24 and liquid-audio 1.3.0 on PyTorch's
CPU backend, timed the way a host would call them:

  lm      transformers Lfm2ForCausalLM (vocab 1024, hidden 256, ffn 768, 6 layers conv conv attn conv
          attn conv, 4 heads / 2 kv heads of 64, tied embeddings). Decode: a 12-token prompt is
          prefilled (untimed), then N greedy decode steps, one token each, through the model's own
          cache (model(input_ids=[[t]], past_key_values=cache, use_cache=True), argmax of the last
          logits fed back). Only the decode steps are timed. tokens/s = N / time.
          Prefill: one forward over input_ids of P prompt tokens (--prefill, default 64 and 512)
          with a fresh cache (model(input_ids, use_cache=True, logits_to_keep=1): the cache is
          made inside the call, and only the last position's logits are computed, as generate()
          asks at a prompt and as flashkern and llama.cpp do), timed alone: tokens/s = P / time.
  lm_350m (--lm-350m) the same at LFM2-350M's shapes (vocab 65536, hidden 1024, ffn 4608, 16 layers,
          16 / 8 heads): an optional second point.
  detok   liquid-audio's LFM2AudioDetokenizer (liquid_audio/detokenizer.py compiled from the installed
          wheel: the package's __init__ does not import here) over Lfm2Config(hidden 512, ffn 1536,
          8 layers conv conv attn conv attn conv attn conv, 8 / 8 heads of 64, sliding window 30).
          (i)  full: one forward over codes (1, 8, 50): frames/s = 50 / time.
          (ii) stream: what a host pays to stream with the reference, which has no streaming form:
               per new code frame, one forward over that frame and the 17 code frames before it
               (codes (1, 8, 18)), keeping the samples of the new frame. 17 frames (102 positions)
               is the stack's exact receptive field: 5 conv layers x 2 positions + 3 sliding-window
               attention layers x 29 positions = 97 positions back, plus the 2 spectral frames of
               the previous code frame that overlap-add into the new frame's samples (those need
               the same 97 positions behind them). frames/s = 1 / time per call.
          (iii) stream_cached: what a host can write with the reference's parts to stream without
               recomputing (CachedStreamer): per code frame, the embedding, the stack on its 6 new
               positions through transformers' cache with the sliding-window mask, the head, the
               irfft and an overlap-add carried between calls; equal to the module's forward (checked
               before timing). 17 frames untimed, then --cached-frames frames timed.
          RTF = wall time / audio time, a code frame being 1920 samples at 24 kHz = 80 ms.

Every measure runs in float32 and in bfloat16 (model.to(dtype); inputs in that dtype). The
detokenizer's bf16 form: the module's own forward is tried first; torch's CPU irfft has no bf16
kernel, so when the module's forward fails in bf16 the bf16 row runs the embedding, the LFM2 stack
and the head in bf16 and the ISTFT in f32 (the head output cast to f32; stated in the "note" metric).

Output: CSV lines on stdout, no header unless --header:
  peer,model,dtype,threads,metric,value,reps
with metric one of decode_tok_s, prefill<P>_tok_s (prefill64_tok_s, prefill512_tok_s), full_frames_s,
stream_frames_s, stream_cached_frames_s, full_rtf, stream_rtf, stream_cached_rtf, plus *_min / *_max
companions, and others_cpu (other processes' share of the CPUs during the configuration's
repetitions, the LM's decode and prefill under one meter: /proc/stat busy time minus this process's
getrusage, over wall time x CPUs); progress on stderr. torch.set_num_threads(T) per thread count, everything
under torch.inference_mode(); weights are seeded uniform(-1/sqrt(fan_in), +) rounded to bf16 (norms
1 + U(-0.1, 0.1)), so both dtypes see the same values. Timing: time.perf_counter around the timed
calls; one untimed warm-up call (or decode sequence) per configuration; median over --reps.

Run: /opt/fkref/bin/python bench/torch_peer.py [--threads 1,2] [--reps 7] [--steps 64] [--prefill 64,512]
     [--quick]
"""
import argparse
import importlib.util
import math
import os
import resource
import statistics
import sys
import time
import types

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.dont_write_bytecode = True

import warnings  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402

# transformers 5.24 names the kwarg `cache` and warns once per call about `past_key_values`, which
# the brief's call form uses (both reach the same code)
warnings.filterwarnings("ignore", message=".*past_key_values.*deprecated.*")

PROMPT = 12
DETOK_FULL_FRAMES = 50
DETOK_CONTEXT = 17          # code frames of left context per streamed frame (the receptive field)
SAMPLES_PER_CODE = 1920     # 6 spectral frames x hop 320
RATE = 24000.0
AUDIO_S_PER_CODE = SAMPLES_PER_CODE / RATE


def log(*a):
    print("torch_peer:", *a, file=sys.stderr, flush=True)


def rope(theta):
    return {"rope_type": "default", "rope_theta": theta}


def lm_config(big=False):
    if big:   # LFM2-350M's shapes
        types_ = ["conv", "conv", "full_attention", "conv", "conv", "full_attention", "conv", "conv",
                  "full_attention", "conv", "full_attention", "conv", "full_attention", "conv",
                  "full_attention", "conv"]
        return transformers.Lfm2Config(vocab_size=65536, hidden_size=1024, intermediate_size=4608,
                                       block_auto_adjust_ff_dim=False, num_hidden_layers=len(types_),
                                       layer_types=types_, num_attention_heads=16, num_key_value_heads=8,
                                       rope_parameters=rope(1e6), norm_eps=1e-5, max_position_embeddings=4096,
                                       conv_L_cache=3, conv_bias=False, tie_word_embeddings=True)
    types_ = ["conv", "conv", "full_attention", "conv", "full_attention", "conv"]
    return transformers.Lfm2Config(vocab_size=1024, hidden_size=256, intermediate_size=768,
                                   block_auto_adjust_ff_dim=False, num_hidden_layers=len(types_),
                                   layer_types=types_, num_attention_heads=4, num_key_value_heads=2,
                                   rope_parameters=rope(1e6), norm_eps=1e-5, max_position_embeddings=4096,
                                   conv_L_cache=3, conv_bias=False, tie_word_embeddings=True)


def detok_config():
    types_ = ["conv", "conv", "full_attention", "conv", "full_attention", "conv", "full_attention", "conv"]
    kw = dict(vocab_size=16, hidden_size=512, intermediate_size=1536, block_auto_adjust_ff_dim=False,
              num_hidden_layers=len(types_), layer_types=types_, num_attention_heads=8, num_key_value_heads=8,
              rope_parameters=rope(1e6), norm_eps=1e-5, max_position_embeddings=4096, conv_L_cache=3,
              conv_bias=False)
    cfg = transformers.Lfm2Config(**kw)
    cfg.sliding_window = 30
    return cfg


def load_liquid_detokenizer():
    spec = importlib.util.find_spec("liquid_audio")     # locates the package without importing it
    path = os.path.join(list(spec.submodule_search_locations)[0], "detokenizer.py")
    with open(path, encoding="utf-8") as f:
        src = f.read()
    mod = types.ModuleType("liquid_audio.detokenizer")
    mod.__file__ = path
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


def fill_weights(model, seed):
    """Deterministic values of sensible scale, rounded to bf16 (so f32 and bf16 runs hold the same)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                if "norm" in name or "layernorm" in name:
                    v = 1.0 + 0.1 * (torch.rand(p.shape, generator=g) * 2 - 1)
                else:   # biases
                    v = 0.02 * (torch.rand(p.shape, generator=g) * 2 - 1)
            else:
                fan_in = p.shape[-1] if p.dim() == 2 else int(p[0].numel())
                b = 1.0 / math.sqrt(fan_in)
                v = b * (torch.rand(p.shape, generator=g) * 2 - 1)
            p.copy_(v.to(torch.bfloat16).to(p.dtype))


def _busy_s():
    """The machine's busy CPU time (all CPUs, /proc/stat), seconds."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


class Others:
    """Other processes' share of the CPUs over a measure: (machine busy - this process) / (wall x CPUs)."""

    def __enter__(self):
        self.b, self.r, self.w = _busy_s(), _self_s(), time.perf_counter()
        return self

    def __exit__(self, *a):
        wall = time.perf_counter() - self.w
        self.share = max(0.0, (_busy_s() - self.b) - (_self_s() - self.r)) / (wall * os.cpu_count())


def _self_s():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def median_min_max(v):
    return statistics.median(v), min(v), max(v)


class Out:
    def __init__(self):
        self.lines = []

    def row(self, model, dtype, threads, metric, value, reps):
        line = "torch,%s,%s,%d,%s,%.6g,%d" % (model, dtype, threads, metric, value, reps)
        print(line, flush=True)

    def series(self, model, dtype, threads, metric, values):
        med, lo, hi = median_min_max(values)
        self.row(model, dtype, threads, metric, med, len(values))
        self.row(model, dtype, threads, metric + "_min", lo, len(values))
        self.row(model, dtype, threads, metric + "_max", hi, len(values))
        return med


# ---- LM decode ----------------------------------------------------------------------------------

def lm_decode_once(model, prompt, steps):
    """Prefill the prompt (untimed), then `steps` greedy decode steps; returns their wall time."""
    out = model(input_ids=prompt, use_cache=True)
    cache = out.past_key_values
    nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    t0 = time.perf_counter()
    for _ in range(steps):
        out = model(input_ids=nxt, past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    return time.perf_counter() - t0


def lm_prefill_once(model, ids):
    """One forward over the prompt from a fresh cache (made inside the call), the last position's logits
    only; returns its wall time."""
    t0 = time.perf_counter()
    out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
    out.logits[:, -1].argmax(-1)
    return time.perf_counter() - t0


def bench_lm(out, name, big, dtypes, threads_list, reps, steps, prefills):
    model = transformers.Lfm2ForCausalLM(lm_config(big)).eval()   # transformers' default attention (sdpa)
    fill_weights(model, 1)
    g = torch.Generator().manual_seed(7)
    prompt = torch.randint(0, model.config.vocab_size, (1, PROMPT), generator=g)
    # drawn after the decode prompt, so that prompt stays what it was
    long_prompt = torch.randint(0, model.config.vocab_size, (1, max(prefills, default=1)), generator=g)
    for dt_name in dtypes:
        m = model.to(torch.float32 if dt_name == "f32" else torch.bfloat16)
        for t in threads_list:
            torch.set_num_threads(t)
            lm_decode_once(m, prompt, min(steps, 8))   # warm-up
            pre = {}
            # one meter over the decode and the prefill measures: others_cpu is the configuration's
            with Others() as oth:
                times = [lm_decode_once(m, prompt, steps) for _ in range(reps)]
                for n in prefills:
                    ids = long_prompt[:, :n]
                    lm_prefill_once(m, ids)   # warm-up (oneDNN's kernels for this shape)
                    pre[n] = [lm_prefill_once(m, ids) for _ in range(reps)]
            out.row(name, dt_name, t, "others_cpu", oth.share, reps)
            med = out.series(name, dt_name, t, "decode_tok_s", [steps / x for x in times])
            log("%s %s %dT: decode %.1f tokens/s (%.3f ms/token); other processes %.0f%% of the CPUs"
                % (name, dt_name, t, med, 1e3 / med, 100 * oth.share))
            for n in prefills:
                med = out.series(name, dt_name, t, "prefill%d_tok_s" % n, [n / x for x in pre[n]])
                log("%s %s %dT: prefill of %d tokens %.1f tokens/s" % (name, dt_name, t, n, med))

# ---- detokenizer ----------------------------------------------------------------------------------

def detok_forward_mixed(det, codes):
    """LFM2AudioDetokenizer.forward with the stack and head in the module's dtype and the ISTFT in f32
    (torch's CPU irfft has no bf16 kernel): the same lines otherwise."""
    x = det.emb(codes)
    upsample_size = 6 * x.shape[1]
    x = torch.nn.functional.interpolate(x.mT, upsample_size, mode="nearest-exact").mT
    idx = torch.arange(x.shape[1], device=x.device)
    d_idx = idx - idx[:, None]
    mask = torch.logical_and(d_idx <= 0, d_idx > -det.sliding_window_size)[None, None, ...]
    x = det.lfm(inputs_embeds=x, attention_mask=mask, use_cache=False).last_hidden_state
    x = det.lin(x).float()
    log_abs, angle = torch.chunk(x.mT.contiguous(), 2, 1)
    y = torch.polar(log_abs.exp(), angle)
    return det.istft.float()(y)


class CachedStreamer:
    """What a host can write to stream with the reference's parts: per code frame, FusedEmbedding, the
    x6 repeat (interpolate nearest-exact of one frame), the LFM2 stack on 6 new positions through
    transformers' own cache (conv states and KV, the sliding-window mask as a 4-D boolean mask over the
    cached positions), the head, polar, irfft and window in f32, and an overlap-add carried between
    calls with the steady-state window envelope. Its output equals the module's forward on the whole
    stream (checked before timing); the first code frame gives 1440 samples, the next ones 1920."""

    def __init__(self, det):
        self.det = det
        self.cache, self.pos, self.tail, self.first = None, 0, None, True
        w = det.istft.window.float()
        self.win = w
        n = 12
        env = torch.nn.functional.fold(w.square().expand(1, n, -1).transpose(1, 2),
                                       output_size=(1, (n - 1) * 320 + 1280), kernel_size=(1, 1280),
                                       stride=(1, 320)).squeeze()
        self.env = env[1280:1280 + SAMPLES_PER_CODE].clone()       # interior: every sample under 4 frames
        self.env_first = env[480:1920].clone()                       # the stream's first 1440 samples

    def step(self, code):   # code (1, 8, 1)
        d = self.det
        x = d.emb(code)
        x = torch.nn.functional.interpolate(x.mT, 6, mode="nearest-exact").mT
        past, n = self.pos, 6
        q = torch.arange(past, past + n)[:, None]
        k = torch.arange(0, past + n)[None, :]
        mask = ((k <= q) & (k > q - d.sliding_window_size))[None, None]
        o = d.lfm(inputs_embeds=x, attention_mask=mask, past_key_values=self.cache, use_cache=True,
                  position_ids=torch.arange(past, past + n)[None])
        self.cache, self.pos = o.past_key_values, past + n
        h = d.lin(o.last_hidden_state).float()
        log_abs, angle = torch.chunk(h.mT.contiguous(), 2, 1)
        spec = torch.polar(log_abs.exp(), angle)
        fr = torch.fft.irfft(spec, 1280, dim=1, norm="backward") * self.win[None, :, None]
        y = torch.nn.functional.fold(fr, output_size=(1, 5 * 320 + 1280), kernel_size=(1, 1280),
                                     stride=(1, 320))[0, 0, 0]
        if self.tail is not None:
            y[:960] += self.tail
        self.tail = y[SAMPLES_PER_CODE:].clone()
        if self.first:
            self.first = False
            return y[480:1920] / self.env_first
        return y[:SAMPLES_PER_CODE] / self.env


def check_streamer(det, codes):
    """The cached streamer against the module's forward (f32), on 24 code frames."""
    with torch.inference_mode():
        ref = det(codes)[0]
        s = CachedStreamer(det)
        got = torch.cat([s.step(codes[:, :, f:f + 1]) for f in range(codes.shape[-1])])
    err = (got - ref[:got.shape[0]]).abs().max().item()
    scale = ref.abs().max().item()
    if not err <= 1e-4 * scale:
        raise SystemExit("torch_peer: the cached streamer differs from the module's forward: %g (scale %g)"
                         % (err, scale))
    log("detok: cached streamer == module forward on %d frames within %.2g (max |y| %.3g)"
        % (codes.shape[-1], err, scale))


def bench_detok(out, dtypes, threads_list, reps, stream_frames, cached_frames):
    LA = load_liquid_detokenizer()
    det = LA.LFM2AudioDetokenizer(detok_config()).eval()
    fill_weights(det, 2)
    g = torch.Generator().manual_seed(11)
    total = DETOK_CONTEXT + max(stream_frames, cached_frames)
    codes_all = torch.randint(0, 2048, (1, 8, max(DETOK_FULL_FRAMES, total)), generator=g)
    codes_full = codes_all[:, :, :DETOK_FULL_FRAMES].contiguous()
    check_streamer(det, codes_all[:, :, :24])
    for dt_name in dtypes:
        dt = torch.float32 if dt_name == "f32" else torch.bfloat16
        d = det.to(dt)
        d.istft.float()   # the window buffer stays f32 (an ISTFT in bf16 has no CPU kernel)
        fwd = d.forward
        note = "module forward"
        if dt is torch.bfloat16:
            try:
                with torch.inference_mode():
                    fwd(codes_full[:, :, :2])
            except Exception as e:  # noqa: BLE001
                log("detok bf16: the module's forward fails (%s: %s); the bf16 row runs the stack and head "
                    "in bf16, the ISTFT in f32" % (type(e).__name__, str(e).splitlines()[0][:120]))
                fwd = lambda c: detok_forward_mixed(d, c)  # noqa: E731
                note = "stack+head bf16; ISTFT f32"
        with torch.inference_mode():
            y = fwd(codes_full)
            assert y.shape[-1] == DETOK_FULL_FRAMES * SAMPLES_PER_CODE, y.shape
            assert torch.isfinite(y).all()
        for t in threads_list:
            torch.set_num_threads(t)
            with torch.inference_mode(), Others() as oth:
                fwd(codes_full)   # warm-up
                full = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    fwd(codes_full)
                    full.append(time.perf_counter() - t0)
                fps = out.series("detok", dt_name, t, "full_frames_s", [DETOK_FULL_FRAMES / x for x in full])
                out.series("detok", dt_name, t, "full_rtf",
                           [x / (DETOK_FULL_FRAMES * AUDIO_S_PER_CODE) for x in full])
                # streaming: per new code frame, a forward over it and its 17 frames of left context
                win = DETOK_CONTEXT + 1
                fwd(codes_all[:, :, :win])   # warm-up
                stream = []
                for _ in range(reps):
                    t0 = time.perf_counter()
                    for f in range(stream_frames):
                        y = fwd(codes_all[:, :, f:f + win])
                        # the host keeps the new frame's complete samples (the last 480 wait for
                        # the next frame's spectra, as in flashkern's stream)
                        _new = y[..., -SAMPLES_PER_CODE - 480:-480]
                    stream.append((time.perf_counter() - t0) / stream_frames)
                sfps = out.series("detok", dt_name, t, "stream_frames_s", [1 / x for x in stream])
                out.series("detok", dt_name, t, "stream_rtf", [x / AUDIO_S_PER_CODE for x in stream])
                # streaming with the cache: 17 frames untimed, then cached_frames frames timed
                cached = []
                for _ in range(reps + 1):
                    s = CachedStreamer(d)
                    for f in range(DETOK_CONTEXT):
                        s.step(codes_all[:, :, f:f + 1])
                    t0 = time.perf_counter()
                    for f in range(DETOK_CONTEXT, DETOK_CONTEXT + cached_frames):
                        s.step(codes_all[:, :, f:f + 1])
                    cached.append((time.perf_counter() - t0) / cached_frames)
                cached = cached[1:]   # the first sequence is the warm-up
                cfps = out.series("detok", dt_name, t, "stream_cached_frames_s", [1 / x for x in cached])
                out.series("detok", dt_name, t, "stream_cached_rtf", [x / AUDIO_S_PER_CODE for x in cached])
            out.row("detok", dt_name, t, "others_cpu", oth.share, reps)
            log("detok %s %dT (%s): full %.1f frames/s (RTF %.4f), stream (recompute) %.1f frames/s (RTF %.4f), "
                "stream (cached) %.1f frames/s (RTF %.4f); other processes %.0f%% of the CPUs"
                % (dt_name, t, note, fps, 1 / (fps * AUDIO_S_PER_CODE), sfps, 1 / (sfps * AUDIO_S_PER_CODE),
                   cfps, 1 / (cfps * AUDIO_S_PER_CODE), 100 * oth.share))
        print("torch,detok,%s,0,note,%s,0" % (dt_name, note), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=64, help="decode steps per repetition")
    ap.add_argument("--stream-frames", type=int, default=8, help="streamed code frames per repetition")
    ap.add_argument("--cached-frames", type=int, default=32,
                    help="code frames per repetition of the cached stream (after 17 untimed)")
    ap.add_argument("--prefill", default="64,512",
                    help="prompt lengths of the LM prefill measure (comma-separated), or none")
    ap.add_argument("--only", default="lm,detok", help="lm, lm_350m, detok (comma-separated)")
    ap.add_argument("--lm-350m", action="store_true", help="also the LFM2-350M-shaped point")
    ap.add_argument("--quick", action="store_true", help="3 repetitions, 16 steps, 2 streamed frames")
    ap.add_argument("--header", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.reps, a.steps, a.stream_frames, a.cached_frames = 3, 16, 2, 8
    threads = [int(x) for x in a.threads.split(",") if x]
    dtypes = [x for x in a.dtypes.split(",") if x]
    only = set(a.only.split(","))
    prefills = [] if a.prefill == "none" else [int(x) for x in a.prefill.split(",") if x]
    if a.lm_350m:
        only.add("lm_350m")
    out = Out()
    if a.header:
        print("peer,model,dtype,threads,metric,value,reps")
    log("torch %s, transformers %s, %d interop / %d intra threads at start, MKLDNN %s, bf16 matmul %s"
        % (torch.__version__, transformers.__version__, torch.get_num_interop_threads(), torch.get_num_threads(),
           torch.backends.mkldnn.is_available(), torch.backends.cpu.get_cpu_capability()))
    print("torch,info,-,0,version,torch %s transformers %s cpu_capability %s,0"
          % (torch.__version__, transformers.__version__, torch.backends.cpu.get_cpu_capability()), flush=True)
    with torch.inference_mode():
        if "lm" in only:
            bench_lm(out, "lm", False, dtypes, threads, a.reps, a.steps, prefills)
        if "lm_350m" in only:
            bench_lm(out, "lm_350m", True, dtypes, threads, a.reps, a.steps, prefills)
    if "detok" in only:
        bench_detok(out, dtypes, threads, a.reps, a.stream_frames, a.cached_frames)


if __name__ == "__main__":
    main()
