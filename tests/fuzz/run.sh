#!/bin/sh
# tests/fuzz/run.sh [seconds] [target...]: fuzz each target (default: all) for `seconds` (default 60)
# from a temporary copy of its seed corpus and regression inputs; builds nothing (the binaries come
# from `cmake --build <build> --target fuzz`). Prints per target the executions, the coverage
# (libFuzzer's cov: and ft:) and whether it crashed; exits non-zero on any crash, timeout, leak or
# missing binary, the crash input's path in the output. The committed corpus is never written.
#   FK_FUZZ_BIN  the binaries' directory (default <repo>/build/fuzz)
#   FK_FUZZ_OUT  crash inputs and logs (default $FK_FUZZ_BIN/out; one <target>/ and <target>.log each)
#   FK_FUZZ_ARGS more libFuzzer options (e.g. "-jobs=2 -workers=2", "-only_ascii=1")
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${FK_FUZZ_BIN:-$here/../../build/fuzz}
out=${FK_FUZZ_OUT:-$bin/out}
secs=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-manifest fixture plan_desc ckpt}
case $secs in ''|*[!0-9]*) echo "run.sh: seconds must be a whole number, got '$secs'" >&2; exit 2;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fkfuzz.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
for t in $targets; do
  exe=$bin/fuzz_$t
  if [ ! -x "$exe" ]; then
    echo "fuzz_$t: no binary at $exe (cmake --build <build> --target fuzz)"
    fail=1
    continue
  fi
  mkdir -p "$tmp/$t" "$out/$t"
  for d in "$here/corpus/$t" "$here/regress/$t"; do
    [ -d "$d" ] && find "$d" -maxdepth 1 -type f -exec cp {} "$tmp/$t/" \;
  done
  dict=
  [ -f "$here/$t.dict" ] && dict="-dict=$here/$t.dict"
  log=$out/$t.log
  start=$(date +%s)
  # shellcheck disable=SC2086
  "$exe" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
    -artifact_prefix="$out/$t/" $dict ${FK_FUZZ_ARGS:-} "$tmp/$t" >"$log" 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  corp=$(grep -o 'corp: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
  if [ $rc -eq 0 ]; then
    echo "fuzz_$t: ok, ${took} s, ${execs:-?} executions, cov: ${cov:-?} ft: ${ft:-?}, corpus ${corp:-?} inputs"
  else
    fail=1
    crash=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    echo "fuzz_$t: CRASH (exit $rc) after ${took} s, ${execs:-?} executions, cov: ${cov:-?} ft: ${ft:-?}"
    echo "fuzz_$t: crash input: ${crash:-none written (see the log)}; log: $log"
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*FUZZ_REQUIRE|.*runtime error)' "$log" | head -n 5 | sed "s/^/fuzz_$t:   /"
  fi
done
exit $fail
