#!/usr/bin/env bash
# tests/api/example_args.sh FK_HELLO: the example host's command line (runtime/example/fk_hello.c).
#   * --help (and -h) exits 0 and prints the usage, the arguments, the small mode and every column;
#   * each bad argument (unknown word, threads 0, 65, -1, 2x, a tier twice, small twice, an extra
#     number) exits 2 with one line on stderr naming it, and runs nothing (no stdout);
#   * a bad FK_CPU_MASK exits 1 with the library's refusal naming it and its value;
#   * `fk_hello 2 exact small` exits 0 and prints every section: the version and CPU features, the
#     plan, the block and tail table (each program, (total), state), the whole models (tokens,
#     throughput, a table of lm_prefill, lm_decode, detok, detok_flush);
#   * the tables' columns fit their content: every line of a table has the same length.
# Negative controls run the section and table checks on altered copies of the output.
set -u
hello=${1:?usage: example_args.sh path/to/fk_hello}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

echo "== --help"
for opt in --help -h; do
  "$hello" "$opt" > "$tmp/help" 2> "$tmp/help.err"
  rc=$?
  [ "$rc" = 0 ] || fail "$opt exits $rc"
  [ -s "$tmp/help.err" ] && fail "$opt writes to stderr: $(head -1 "$tmp/help.err")"
  for want in "usage: fk_hello [threads] [exact|fast] [small]" "threads" "exact" "fast" "small" "FK_CPU_MASK" \
              "program" "phase" "stamp" "share" "layers" "runs" "median us" "min us" "(total)" "warm-up" "exit status"; do
    grep -qF -- "$want" "$tmp/help" || fail "$opt does not mention '$want'"
  done
done
echo "ok: --help and -h exit 0 and explain the arguments, the small mode and every column"

echo "== bad arguments: exit 2, one line naming the argument, nothing run"
# each case: "arguments|the fragment the message must name"
cases=("3 bogus|'bogus'" "0|threads '0'" "65|threads '65'" "-1|threads '-1'" "2x|threads '2x'" "2 3|threads '3'"
       "exact fast|tier 'fast'" "small small|'small' given twice" "--threads=2|'--threads=2'" "2 exact small extra|'extra'")
for case in "${cases[@]}"; do
  args=${case%%|*}
  want=${case#*|}
  # shellcheck disable=SC2086  # the arguments are a word list
  "$hello" $args > "$tmp/out" 2> "$tmp/err"
  rc=$?
  if [ "$rc" != 2 ]; then fail "fk_hello $args: exit $rc, want 2"; continue; fi
  [ "$(wc -l < "$tmp/err")" = 1 ] || fail "fk_hello $args: $(wc -l < "$tmp/err") lines on stderr, want 1"
  grep -qF -- "$want" "$tmp/err" || fail "fk_hello $args: the message does not name $want: $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "fk_hello $args: ran (stdout: $(head -1 "$tmp/out"))"
  echo "ok: fk_hello $args -> 2: $(cat "$tmp/err")"
done

echo "== a bad FK_CPU_MASK: the library's refusal, exit 1"
FK_CPU_MASK=zz "$hello" small > "$tmp/out" 2> "$tmp/err"
rc=$?
if [ "$rc" = 1 ] && grep -qF 'FK_CPU_MASK="zz"' "$tmp/err"; then
  echo "ok: FK_CPU_MASK=zz -> 1: $(cut -c1-120 "$tmp/err")"
else
  fail "FK_CPU_MASK=zz: exit $rc: $(cat "$tmp/err")"
fi

# sections FILE -> FAIL lines for every section missing from a run's output
sections() {
  local f=$1 rc=0 want
  for want in "^flashkern [0-9]+\.[0-9]+\.[0-9]+; cpu features: " "^plan: LFM2 ShortConv block" "^ran: block_prefill" \
              "^program +phase +stamp +share +runs +median us +min us$" "^block_prefill +rmsnorm +fk_rmsnorm_" \
              "^block_decode " "^tail +head " "^tail_flush +flush " "^ +\(total\) " "^state: [0-9]+ tokens committed" \
              "^whole models: " "^  tokens: " "^  lm decode: [0-9]+ tokens/s" "^  program +phase +layers +runs +median us" \
              "^  lm_prefill " "^  lm_decode " "^  detok " "^  detok_flush "; do
    grep -qE -- "$want" "$f" || { echo "FAIL: no line matching /$want/"; rc=1; }
  done
  return $rc
}

# tables FILE -> FAIL lines unless every line of each table has its header's length
tables() {
  awk '
    /^ *program  / { len = length($0); intable = 1; next }
    intable && /^(state:|$)/ { intable = 0; next }
    intable && length($0) != len { printf "FAIL: line %d is %d wide, its table %d: %s\n", NR, length($0), len, $0; bad = 1 }
    END { exit bad }' "$1"
}

echo "== fk_hello 2 exact small"
if ! "$hello" 2 exact small > "$tmp/run" 2> "$tmp/err"; then
  fail "fk_hello 2 exact small: $(cat "$tmp/err")"
else
  sections "$tmp/run" || fail "a section is missing from the run's output"
  tables "$tmp/run" || fail "a table's columns do not fit"
  echo "ok: every section, $(grep -cE '^ *program  ' "$tmp/run") tables whose lines are all as wide as their header"
fi

echo "== negative controls"
if [ -s "$tmp/run" ]; then
  grep -v '^  detok_flush ' "$tmp/run" > "$tmp/cut"
  if sections "$tmp/cut" > /dev/null; then fail "control: a run without detok_flush passes the section check"; fi
  # a stamp one character longer than its column, as fixed widths printed a long symbol
  sed '0,/fk_rmsnorm_bf16_wide__[a-z0-9_]*/s//&x/' "$tmp/run" > "$tmp/wide"
  if cmp -s "$tmp/run" "$tmp/wide"; then fail "control: no stamp to widen"; fi
  if tables "$tmp/wide" > /dev/null; then fail "control: a line wider than its table passes the table check"; fi
  echo "ok: the section check sees a missing section, the table check a cell wider than its column"
fi

if [ "$fails" -ne 0 ]; then
  echo "FAIL: $fails checks"
  exit 1
fi
echo "PASS"
