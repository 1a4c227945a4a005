#!/usr/bin/env bash
# bench/run_decode_quant.sh: issue 20's decode measure: LM decode tokens/s of flashkern's runtime
# (fk_bench_model, desc.quantize bf16 / FK_Q8 / FK_Q4) against llama.cpp's llama-bench (llama_peer.py:
# BF16, Q8_0, Q4_0 GGUFs of the same shapes), LFM2-350M and LFM2-1.2B shapes, 1 and 2 threads, with
# the read-bandwidth probe beside every figure (bench/README.md, "Quantized decode against llama.cpp").
# Round by round, per model and thread count: flashkern, then llama.cpp.
#
#   bench/run_decode_quant.sh --out DIR [--fk PATH] [--llama-bench PATH] [--python PATH] [--rounds R]
#                             [--reps N] [--steps N] [--threads 1,2] [--models lm_350m,lm_1_2b]
#                             [--formats bf16,q8,q4] [--tiers exact,fast] [--quick]
#
# One turn of flashkern: fk_bench_model --only MODEL --threads T --quantize FORMATS --tiers TIERS
# --prefill none --probe --reps N --steps S (its plans, at most 4, alive together: about 11 GB for
# lm_1_2b with the probe); of llama.cpp: llama_peer.py run --only MODEL --threads T --dtypes (bf16,
# q8_0, q4_0) --prefill none --decode S --reps N. The GGUF files are written before the first round
# (llama_peer.py gguf: minutes for lm_1_2b the first time, then reused from /tmp/fk_llama_peer).
# Writes DIR/decode-rounds.csv (every turn's lines, the round first) and DIR/decode-meta.csv (the
# run's facts), then bench/report.py decode renders DIR/decode.md and DIR/decode.csv (the rounds
# merged). Builds nothing: --fk defaults to build/fk_bench_model, --llama-bench to
# /work/peers/llama-bench-0.3.36/bin/llama-bench (llama_peer.py build makes it). Any failure stops
# the run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
fk="$root/build/fk_bench_model"
llama=/work/peers/llama-bench-0.3.36/bin/llama-bench
py=/opt/fkref/bin/python
rounds=3
reps=5
steps=64
threads=1,2
models=lm_350m,lm_1_2b
formats=bf16,q8,q4
tiers=exact,fast
out=""
argv_line="bench/run_decode_quant.sh $*"

while [ $# -gt 0 ]; do
  case "$1" in
    --fk) fk=$2; shift 2 ;;
    --llama-bench) llama=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --formats) formats=$2; shift 2 ;;
    --tiers) tiers=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) rounds=1; reps=2; steps=16; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "run_decode_quant.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "run_decode_quant.sh: --out DIR is required" >&2; exit 2; }
[ -x "$fk" ] || { echo "run_decode_quant.sh: no fk_bench_model at $fk" >&2; exit 1; }
[ -x "$llama" ] || { echo "run_decode_quant.sh: no llama-bench at $llama" >&2; exit 1; }
# flashkern's formats and llama.cpp's types of the same weights
dtypes=$(echo "$formats" | sed 's/q8/q8_0/; s/q4/q4_0/')

mkdir -p "$out"
[ -w "$out" ] || { echo "run_decode_quant.sh: $out is not writable" >&2; exit 1; }
tmp=$(mktemp -d /tmp/fk_run_decode.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "run_decode_quant.sh: the GGUF files ($models; $dtypes)" >&2
"$py" "$here/llama_peer.py" gguf --only "$models" --dtypes "$dtypes" > /dev/null

fact() { local v=${2//\"/\"\"}; printf '%s,,"%s"\n' "$1" "$v"; }
{
  echo "key,item,value"
  fact started "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  fact loadavg_start "$(cut -d' ' -f1-3 /proc/loadavg)"
} > "$tmp/meta.csv"

echo "round,peer,model,dtype,threads,metric,value,reps" > "$tmp/rounds.csv"
for r in $(seq 1 "$rounds"); do
  for model in ${models//,/ }; do
    for t in ${threads//,/ }; do
      echo "run_decode_quant.sh: round $r of $rounds: $model ${t}T: flashkern" >&2
      if ! "$fk" --only "$model" --threads "$t" --quantize "$formats" --tiers "$tiers" --prefill none --probe \
          --reps "$reps" --steps "$steps" > "$tmp/fk" 2> "$tmp/fk.err"; then
        tail -n 5 "$tmp/fk.err" >&2; echo "run_decode_quant.sh: fk_bench_model failed" >&2; exit 1
      fi
      grep 'decode .* tokens/s\|read probe' "$tmp/fk.err" >&2 || true
      sed "s/^/$r,/" "$tmp/fk" >> "$tmp/rounds.csv"
      echo "run_decode_quant.sh: round $r of $rounds: $model ${t}T: llama.cpp" >&2
      if ! "$py" "$here/llama_peer.py" run --llama-bench "$llama" --only "$model" --threads "$t" --dtypes "$dtypes" \
          --prefill none --decode "$steps" --reps "$reps" > "$tmp/ll" 2> "$tmp/ll.err"; then
        tail -n 5 "$tmp/ll.err" >&2; echo "run_decode_quant.sh: llama_peer.py failed" >&2; exit 1
      fi
      grep '^llama_peer: lm' "$tmp/ll.err" >&2 || true
      sed "s/^/$r,/" "$tmp/ll" >> "$tmp/rounds.csv"
    done
  done
done

{
  fact finished "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  fact loadavg_end "$(cut -d' ' -f1-3 /proc/loadavg)"
  fact cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  fact flags_hint "$(grep -m1 '^flags' /proc/cpuinfo | grep -ow "avx512_bf16\|avx512f\|avx512_vnni\|amx_bf16\|hypervisor" |
    sort -u | tr '\n' ' ')"
  fact cpus "$(nproc)"
  fact l3 "$(lscpu | sed -n 's/^L3 cache: *//p')"
  fact memory "$(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
  fact kernel "$(uname -sr)"
  fact command "$argv_line"
  fact fk_cpu_mask "${FK_CPU_MASK:-unset}"
  fact llama_bench "$llama"
  fact rounds "$rounds"
  fact steps "$steps"
} >> "$tmp/meta.csv"

cp "$tmp/rounds.csv" "$out/decode-rounds.csv"
cp "$tmp/meta.csv" "$out/decode-meta.csv"
python3 "$here/report.py" decode --results "$out" --no-plot
echo "run_decode_quant.sh: wrote $out/decode.md, decode.csv, decode-rounds.csv, decode-meta.csv" >&2
