#!/usr/bin/env python3
"""bench/audio_peer.py - the PyTorch side of fk_bench_audio (bench/README.md, "Audio"): liquid-audio 1.3.0's
LFM2AudioModel and LFM2AudioDetokenizer at LFM2.5-Audio's shapes, on synthetic weights.

  audio_peer.py write DIR    builds the model (torch.manual_seed(0), the modules' own initialisation), rounds it
                             to bf16 and writes ONE checkpoint directory in liquid-audio's layout: config.json,
                             model.safetensors (LFM2AudioModel's bf16 state: parameters once, persistent buffers)
                             and audio_detokenizer/ (config.json, model.safetensors: bf16, lin.bias and
                             istft.window f32), as fixtures/ref/gen_ckpt.py writes its small one. Then
                             DIR/bench_bytes.json: the bytes of every tensor group a step reads.
  audio_peer.py serve DIR    loads DIR as LFM2AudioModel.from_pretrained(dtype=bfloat16) does on CPU (sdpa in the
                             lfm) and the detokenizer as LFM2AudioProcessor.audio_detokenizer does, then answers
                             commands on stdin, one line each, one line on stdout:
                               versions                      -> "versions key=value ..."
                               run THREADS FRAMES            -> "ok depth_s steps_s detok_s total_s"
                             run: torch.set_num_threads(THREADS); (1) depth alone: FRAMES calls of
                             _sample_audio_frame (greedy) on one backbone output; (2) a turn: a prompt of 8 ids
                             through the lfm (untimed), then one untimed and FRAMES timed audio steps of generate_sequential's audio
                             branch (lfm on the last input with the cache, _sample_audio_frame, audio_embedding
                             (codes + offsets).sum(0) fed back; the fed codes are the bench's forced frames, the same
                             as flashkern's), then the detokenizer on the turn's FRAMES frames in one call, as
                             LFM2AudioProcessor.decode does (liquid-audio's detokenizer has no streaming state:
                             per-frame calls would rerun the whole prefix). steps_s: the steps; total_s: steps +
                             detokenizer.
The model classes are loaded as fixtures/ref/gen_ckpt.py loads them (its rewrites for Python 3.11).
Run with /opt/fkref/bin/python (torch 2.15, transformers 5.24, liquid-audio 1.3.0)."""
import copy
import json
import os
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures", "ref"))

import torch  # noqa: E402
import transformers  # noqa: E402
import safetensors  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

import gen_ckpt as G  # noqa: E402

# LFM2-1.2B's backbone (its released config: block_ff_dim = intermediate_size 12288, auto-adjusted:
# int(2 * 12288 / 3) = 8192, x 1.0, multiple of 256 -> 8192), its conv / attention pattern
LFM_LAYERS = ["conv", "conv", "full_attention", "conv", "conv", "full_attention", "conv", "conv", "full_attention",
              "conv", "full_attention", "conv", "full_attention", "conv", "full_attention", "conv"]
CONFIG = copy.deepcopy(G.AUDIO_CONFIG)
CONFIG["depthformer"] = {"dim": 1024, "layers": 6, "tie": True}
CONFIG["interleaved_n_text"] = 6
CONFIG["interleaved_n_audio"] = 12
CONFIG["lfm"].update({
    "block_auto_adjust_ff_dim": True, "block_dim": 2048, "block_ff_dim": 12288, "block_ffn_dim_multiplier": 1.0,
    "block_multiple_of": 256, "hidden_size": 2048, "intermediate_size": 12288, "layer_types": LFM_LAYERS,
    "max_position_embeddings": 128000, "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8,
    "vocab_size": 65536,
})
DT_LAYERS = ["conv", "conv", "sliding_attention", "conv", "sliding_attention", "conv", "sliding_attention", "conv"]
DETOK_CONFIG = copy.deepcopy(G.DETOK_CONFIG)
DETOK_CONFIG.update({"block_auto_adjust_ff_dim": False, "hidden_size": 512, "intermediate_size": 1536,
                     "layer_types": DT_LAYERS, "num_attention_heads": 8, "num_hidden_layers": 8,
                     "num_key_value_heads": 8, "sliding_window": 30})
PROMPT = [1, 6, 17, 42, 99, 1000, 4242, 65000]


def frame_codes(f):
    """The bench's forced frame f (fk_bench_audio.c computes the same): code 0 never 2048, so audio continues."""
    return [(17 * f + 101 * c + 5) % 2048 for c in range(8)]


def write(d):
    t0 = time.time()
    os.makedirs(os.path.join(d, "audio_detokenizer"), exist_ok=True)
    torch.manual_seed(0)
    model = G.LA2.LFM2AudioModel(G.audio_conf(CONFIG)).eval()
    m16 = model.to(torch.bfloat16)
    assert m16.audio_embedding.to_logits.weight is m16.audio_embedding.embedding.weight
    sd = G.module_state(m16)
    G.write_json(os.path.join(d, "config.json"), CONFIG)
    save_file(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    groups = {"backbone_layers": 0, "embed_tokens": 0, "depth_linear": 0, "depthformer": 0, "depth_tables": 0,
              "audio_embedding": 0, "other": 0}
    for n, t in sd.items():
        b = t.numel() * t.element_size()
        g = ("backbone_layers" if n.startswith("lfm.layers.") or n.startswith("lfm.embedding_norm") else
             "embed_tokens" if n.startswith("lfm.embed_tokens") else
             "depth_linear" if n.startswith("depth_linear") else
             "depthformer" if n.startswith("depthformer.") else
             "depth_tables" if n.startswith("depth_embeddings.") else
             "audio_embedding" if n.startswith("audio_embedding.") else "other")
        groups[g] += b
    del model, m16, sd
    dd = os.path.join(d, "audio_detokenizer")
    G.write_json(os.path.join(dd, "config.json"), DETOK_CONFIG)
    torch.manual_seed(1)
    det = G.detok_module(os.path.join(dd, "config.json"))
    dsd = {}
    for n, t in det.state_dict().items():
        dsd[n] = (t if n in G.DT_F32 else t.to(torch.bfloat16)).contiguous()
    save_file(dsd, os.path.join(dd, "model.safetensors"), metadata={"format": "pt"})
    groups["detok_all"] = sum(t.numel() * t.element_size() for t in dsd.values())
    # what one detokenizer frame reads: the stack (not its unused vocab-16 embed_tokens), the head; the codebook
    # table gives 8 rows
    groups["detok_step"] = sum(t.numel() * t.element_size() for n, t in dsd.items()
                               if n.startswith("lfm.layers.") or n.startswith("lfm.norm") or n.startswith("lin."))
    groups["write_s"] = time.time() - t0
    with open(os.path.join(d, "bench_bytes.json"), "w", encoding="utf-8") as f:
        json.dump(groups, f, indent=1, sort_keys=True)
    print("audio_peer: wrote %s in %.0f s: %s" % (d, time.time() - t0, groups), file=sys.stderr)


def load(d):
    """LFM2AudioModel.from_pretrained(d, dtype=bfloat16, device cpu): cls(conf).to(dtype), sdpa, the file's
    tensors copied in (accelerate's load_checkpoint_in_model); the detokenizer as the processor builds it."""
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        conf = G.audio_conf(json.load(f))
    model = G.LA2.LFM2AudioModel(conf).to(dtype=torch.bfloat16)
    model.lfm.set_attn_implementation("sdpa")
    target = model.state_dict(keep_vars=True)
    loaded = load_file(os.path.join(d, "model.safetensors"))
    with torch.no_grad():
        for name, t in loaded.items():
            assert name in target and tuple(target[name].shape) == tuple(t.shape), name
            target[name].copy_(t)
    del loaded
    # the processor builds the module (f32 parameters) and load_state_dict's the file into it: it runs in f32
    det = G.load_detok(d)
    return model.eval(), det.eval()


def serve(d):
    t0 = time.time()
    model, det = load(d)
    print("audio_peer: loaded in %.1f s" % (time.time() - t0), file=sys.stderr)
    offsets = model.codebook_offsets
    with torch.no_grad():
        for line in sys.stdin:
            a = line.split()
            if not a:
                continue
            if a[0] == "versions":
                import importlib.metadata as md
                print("versions python=%s torch=%s transformers=%s safetensors=%s liquid-audio=%s numpy=%s "
                      "torch_parallel=%s" % (sys.version.split()[0], torch.__version__, transformers.__version__,
                                            safetensors.__version__, md.version("liquid-audio"), md.version("numpy"),
                                            next((l.split(":", 1)[1].strip().replace(" ", "_") for l in torch.__config__.parallel_info().splitlines()
                                             if "parallel backend" in l), "?")),
                      flush=True)
                continue
            if a[0] != "run":
                print("error unknown command", flush=True)
                continue
            threads, frames = int(a[1]), int(a[2])
            torch.set_num_threads(threads)
            # the turn: prompt (untimed), then the audio steps
            out = model.lfm(inputs_embeds=model.lfm.embed_tokens(torch.tensor([PROMPT])), past_key_values=None,
                            use_cache=True)
            cache = out.past_key_values
            h = out.last_hidden_state[0, -1]
            # (1) the Depthformer alone, on the prompt's last output
            model._sample_audio_frame(h)      # untimed warm-up
            t = time.perf_counter()
            for _ in range(frames):
                model._sample_audio_frame(h)
            depth_s = time.perf_counter() - t
            # (2) the audio steps: in_emb after a forced frame (generate_sequential's audio branch)
            fed = []
            in_emb = model.audio_embedding(torch.tensor(frame_codes(0)) + offsets).sum(0)[None, None, :]
            for f in range(-1, frames):   # step -1: untimed (as flashkern's first step)
                if f == 0:
                    t = time.perf_counter()
                lfm_out = model.lfm(inputs_embeds=in_emb, past_key_values=cache, use_cache=True)
                cache = lfm_out.past_key_values
                drawn = model._sample_audio_frame(lfm_out.last_hidden_state[0, -1])
                assert drawn.shape == (8,)
                codes = torch.tensor(frame_codes(f + 1))
                if f >= 0:
                    fed.append(codes)
                in_emb = model.audio_embedding(codes + offsets).sum(0)[None, None, :]
            steps_s = time.perf_counter() - t
            t = time.perf_counter()
            pcm = det(torch.stack(fed, 1)[None])
            detok_s = time.perf_counter() - t
            assert pcm.shape[-1] >= 1920 * (frames - 1), pcm.shape
            print("ok %.9f %.9f %.9f %.9f" % (depth_s, steps_s, detok_s, steps_s + detok_s), flush=True)


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "serve"):
        sys.exit("usage: audio_peer.py write|serve DIR")
    (write if sys.argv[1] == "write" else serve)(sys.argv[2])


if __name__ == "__main__":
    main()
