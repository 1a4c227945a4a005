#!/bin/sh
# tests/fuzz/regress.sh [target...]: executes every input of tests/fuzz/corpus/<target>/ and
# tests/fuzz/regress/<target>/ once under the target's binary (no fuzzing, nothing written);
# exits non-zero when any input crashes, leaks or breaks an invariant. The ctest fuzz_regress.
#   FK_FUZZ_BIN  the binaries' directory (default <repo>/build/fuzz)
set -u
here=$(cd "$(dirname "$0")" && pwd)
bin=${FK_FUZZ_BIN:-$here/../../build/fuzz}
targets=${*:-manifest fixture plan_desc ckpt}
fail=0
for t in $targets; do
  exe=$bin/fuzz_$t
  if [ ! -x "$exe" ]; then
    echo "fuzz_$t: no binary at $exe"
    fail=1
    continue
  fi
  # file arguments (not directories): libFuzzer runs each once and writes nothing
  files=$(find "$here/corpus/$t" "$here/regress/$t" -maxdepth 1 -type f 2>/dev/null | sort)
  n=$(printf '%s\n' "$files" | grep -c .)
  if [ "$n" -eq 0 ]; then
    echo "fuzz_$t: no inputs"
    fail=1
    continue
  fi
  log=$(mktemp "${TMPDIR:-/tmp}/fkregress.XXXXXX")
  # shellcheck disable=SC2086
  if "$exe" -rss_limit_mb=2048 -timeout=25 $files >"$log" 2>&1; then
    echo "fuzz_$t: $n inputs ok"
  else
    fail=1
    echo "fuzz_$t: FAILED on one of $n inputs:"
    grep -E '^Running: ' "$log" | tail -n 1
    tail -n 40 "$log"
  fi
  rm -f "$log"
done
exit $fail
