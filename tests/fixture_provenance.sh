#!/usr/bin/env bash
# tests/fixture_provenance.sh: each manifest names the script that wrote it and that script's
# git blob hash (and, in `# helper` comments, the blob of each shared module it ran: the writer
# fixtures/ref/fkfix.py, the traces' fixtures/ref/fktrace.py). A script or module edited without
# regenerating its fixtures, or a manifest whose script is gone, fails here.
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
blob() { { printf 'blob %d\0' "$(stat -c %s "$1")"; cat "$1"; } | sha1sum | cut -d' ' -f1; }
declare -A have
fail=0 n=0
for m in "$src"/fixtures/*/*.manifest; do
  script='' want='' pairs=()
  while read -r key a b c; do
    case "$key" in
      script) script=$a ;;
      script_blob) want=$a ;;
      "#") [ "$a" = helper ] && pairs+=("$b:${c#blob }") ;;   # the shared code it ran (one line per module)
    esac
  done < "$m"
  for pair in "$script:$want" "${pairs[@]}"; do
    f=${pair%%:*} w=${pair#*:}
    [ -n "$f" ] || continue
    if [ ! -f "$src/$f" ]; then echo "FAIL ${m#$src/}: script $f does not exist"; fail=1; continue; fi
    [ -n "${have[$f]:-}" ] || have[$f]=$(blob "$src/$f")
    if [ "${have[$f]}" != "$w" ]; then
      echo "FAIL ${m#$src/}: $f is blob ${have[$f]}, the manifest was written by $w (regenerate the fixtures)"; fail=1
    fi
  done
  n=$((n + 1))
done
echo "checked the provenance of $n manifests"
[ "$n" -gt 0 ] || exit 1
exit $fail
