#!/usr/bin/env bash
# bench/run_model.sh: whole LFM2 model steps, flashkern's runtime (fk_bench_model) against the same
# models in transformers / liquid-audio on PyTorch CPU (bench/torch_peer.py), same machine, same run:
# the peers take turns, round by round (flashkern, then PyTorch, then llama.cpp when it is given,
# then flashkern, ...). llama.cpp (bench/llama_peer.py: `llama-bench -p` on GGUF files of the same LM
# shapes) has the LM prefill measure only.
#
#   bench/run_model.sh [--fk PATH] [--python PATH] [--rounds R] [--reps N] [--threads 1,2]
#                      [--lm-350m] [--quick] [--torch-only] [--llama-bench PATH] [--out DIR]
#
# Writes DIR/model-rounds.csv (every round's lines) and DIR/model-meta.csv (the run's facts: command,
# rounds, start and end, load averages, machine), then bench/report.py renders them: DIR/model.csv
# (merged: the median over rounds of each round's median, the min of the mins, the max of the maxes,
# reps summed), DIR/model.md (the tables, RTF, machine), DIR/model.dat and DIR/model.png. Builds nothing: --fk names
# the fk_bench_model binary (default: build/fk_bench_model; `make -C build bench-model` passes it).
# Without a runnable fk_bench_model (or with --torch-only) only the PyTorch side runs and model.md
# says so. --llama-bench names a llama-bench binary (`bench/llama_peer.py build` makes one from the
# llama-cpp-python sdist, outside the repo); without it model.md says the llama.cpp peer was not run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
fk="$root/build/fk_bench_model"
py=/opt/fkref/bin/python
rounds=3
reps=5
threads=1,2
out="$root/bench/results"
extra_models=""
quick=0
torch_only=0
llama=""
argv_line="bench/run_model.sh $*"

while [ $# -gt 0 ]; do
  case "$1" in
    --fk) fk=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --lm-350m) extra_models=",lm_350m"; shift ;;
    --quick) quick=1; shift ;;
    --torch-only) torch_only=1; shift ;;
    --llama-bench) llama=$2; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "run_model.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

mkdir -p "$out"
[ -w "$out" ] || { echo "run_model.sh: $out is not writable" >&2; exit 1; }
tmp=$(mktemp -d /tmp/fk_run_model.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

fk_args=(--reps "$reps" --threads "$threads" --only "lm${extra_models},detok")
py_args=(--reps "$reps" --threads "$threads" --only "lm${extra_models},detok")
llama_args=(--llama-bench "$llama" --reps "$reps" --threads "$threads" --only "lm${extra_models}")
if [ "$quick" = 1 ]; then
  fk_args=(--quick --threads "$threads" --only "lm${extra_models},detok")
  py_args=(--quick --threads "$threads" --only "lm${extra_models},detok")
  llama_args=(--llama-bench "$llama" --reps 3 --threads "$threads" --only "lm${extra_models}")
fi

have_fk=0
fk_why=""
if [ "$torch_only" = 1 ]; then
  fk_why="--torch-only"
elif [ ! -x "$fk" ]; then
  fk_why="no fk_bench_model at $fk"
else
  have_fk=1
fi

have_llama=0
llama_why=""
if [ -z "$llama" ]; then
  llama_why="no --llama-bench"
elif [ ! -x "$llama" ]; then
  llama_why="no llama-bench at $llama"
elif ! "$py" "$here/llama_peer.py" gguf --only "lm${extra_models}" > /dev/null; then
  llama_why="llama_peer.py could not write the GGUF files"    # before the rounds: not in a timed turn
else
  have_llama=1
fi
[ "$have_llama" = 1 ] || echo "run_model.sh: the llama.cpp peer is not run ($llama_why)" >&2

# the run's facts, as bench/report.py reads them: key,item,value (the item is empty here)
fact() { local v=${2//\"/\"\"}; printf '%s,,"%s"\n' "$1" "$v"; }
{
  echo "key,item,value"
  fact started "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  fact loadavg_start "$(cut -d' ' -f1-3 /proc/loadavg)"
} > "$tmp/meta.csv"

echo "round,peer,model,dtype,threads,metric,value,reps" > "$tmp/rounds.csv"
for r in $(seq 1 "$rounds"); do
  if [ "$have_fk" = 1 ]; then
    echo "run_model.sh: round $r of $rounds: flashkern" >&2
    if "$fk" "${fk_args[@]}" > "$tmp/fk.$r" 2> "$tmp/fk.$r.err"; then
      sed "s/^/$r,/" "$tmp/fk.$r" >> "$tmp/rounds.csv"
    else
      have_fk=0
      fk_why="fk_bench_model failed: $(tail -n 1 "$tmp/fk.$r.err")"
      echo "run_model.sh: $fk_why; PyTorch only from here" >&2
    fi
    tail -n 4 "$tmp/fk.$r.err" >&2 || true
  fi
  echo "run_model.sh: round $r of $rounds: PyTorch" >&2
  "$py" "$here/torch_peer.py" "${py_args[@]}" > "$tmp/py.$r" 2> "$tmp/py.$r.err" || {
    cat "$tmp/py.$r.err" >&2; echo "run_model.sh: torch_peer.py failed" >&2; exit 1; }
  sed "s/^/$r,/" "$tmp/py.$r" >> "$tmp/rounds.csv"
  grep '^torch_peer: \(lm\|detok\)' "$tmp/py.$r.err" >&2 || true
  if [ "$have_llama" = 1 ]; then
    echo "run_model.sh: round $r of $rounds: llama.cpp" >&2
    if "$py" "$here/llama_peer.py" run "${llama_args[@]}" > "$tmp/ll.$r" 2> "$tmp/ll.$r.err"; then
      sed "s/^/$r,/" "$tmp/ll.$r" >> "$tmp/rounds.csv"
      grep '^llama_peer: lm' "$tmp/ll.$r.err" >&2 || true
    else
      have_llama=0
      llama_why="llama_peer.py failed: $(tail -n 1 "$tmp/ll.$r.err")"
      echo "run_model.sh: $llama_why; without llama.cpp from here" >&2
    fi
  fi
done
# a flashkern or llama.cpp run that failed in a later round: keep none of its rounds (the tables would mix)
if [ "$have_fk" = 0 ] && [ -n "$fk_why" ]; then
  grep -v '^[0-9]*,flashkern,' "$tmp/rounds.csv" > "$tmp/rounds2.csv" || true
  mv "$tmp/rounds2.csv" "$tmp/rounds.csv"
fi
if [ "$have_llama" = 0 ]; then
  grep -v '^[0-9]*,llama\.cpp,' "$tmp/rounds.csv" > "$tmp/rounds2.csv" || true
  mv "$tmp/rounds2.csv" "$tmp/rounds.csv"
fi

{
  fact finished "$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  fact loadavg_end "$(cut -d' ' -f1-3 /proc/loadavg)"
  fact cpu "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  fact flags_hint "$(grep -m1 '^flags' /proc/cpuinfo | grep -ow "avx512_bf16\|avx512f\|amx_bf16\|hypervisor" | sort -u | tr '\n' ' ')"
  fact cpus "$(nproc)"
  fact kernel "$(uname -sr)"
  fact fk_status "${fk_why:-ran}"
  fact llama_status "${llama_why:-ran}"
  fact command "$argv_line"
  fact rounds "$rounds"
} >> "$tmp/meta.csv"

cp "$tmp/rounds.csv" "$out/model-rounds.csv"
cp "$tmp/meta.csv" "$out/model-meta.csv"
python3 "$here/report.py" model --results "$out"
echo "run_model.sh: wrote $out/model.md, model.csv, model-rounds.csv, model-meta.csv, model.dat, model.png" >&2
