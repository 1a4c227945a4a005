#!/usr/bin/env bash
# tests/runtime_layers.sh: the runtime's includes run one way.
#   * every runtime/*.c, runtime/*.h and runtime/include/*.h is declared in one layer (below), and
#     every file declared exists;
#   * a file includes ("...") only files of its own layer or a lower one: public headers <-
#     utilities <- team <- engine <- the programs' helpers <- the program families <- the
#     checkpoint loader (runtime/ckpt/, libflashkern_ckpt), which includes only the public headers,
#     fk_internal.h's utilities and its own files (a header of the same directory first);
#   * the include graph has no cycle (tsort), and no .c file is included;
#   * an include names a runtime file or a generated/ header, nothing else;
#   * calls run the same way: no object of the library (FK_BUILD_DIR's fk_objects) references a
#     symbol another object of a higher layer defines, but the engine's table of families
#     (fk_families.c) naming each family's fk_family (fk_<name>_family); the loader's objects
#     (fk_ckpt_objects, when built) call only the public API and the utilities.
# Negative controls at the end run the same checks on altered copies (a back-include from the
# team to the engine, a helper including a family, a cycle, an undeclared file, an included .c,
# the engine including the loader's header, the loader including the engine's, the team's object
# calling the engine, the loader's object calling an engine-internal function) and fail unless
# each is caught.
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
build=${FK_BUILD_DIR:-$src/build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The layers, lowest first: "number name: files (paths under runtime/, globs allowed)".
LAYERS=(
  "1 public: include/flashkern.h include/fk_models.h"
  "2 utilities: fk_internal.h fk_roles.h fk_args.c fk_cpu.c fk_error.c fk_leaf.c fk_pack.c fk_quant.c fk_rope.c"
  "3 team: fk_team.h fk_team.c"
  "4 engine: fk_plan_internal.h fk_plan.c fk_run.c fk_state.c fk_families.c"
  "5 program-helpers: fk_program.h fk_program.c fk_spectral.h fk_spectral.c fk_lfm2.h fk_lfm2.c"
  "6 programs: fk_prog_*.h fk_prog_*.c"
  "7 checkpoints: include/fk_checkpoint.h ckpt/*.h ckpt/*.c"
)
# the loader (layer 7) stands on the public API and the utilities only, not on the engine's insides
LOADER=7

# layer_of DIR FILE -> prints "number name" of the layer declaring FILE (path under DIR), or nothing
layer_of() {
  local f=$2 row num name pats pat
  for row in "${LAYERS[@]}"; do
    num=${row%% *}
    name=${row#* }
    name=${name%%:*}
    pats=${row#*: }
    for pat in $pats; do
      # shellcheck disable=SC2053  # glob match on purpose
      if [[ $f == $pat ]]; then
        echo "$num $name"
        return
      fi
    done
  done
}

# check DIR (a copy of runtime/) -> prints FAIL lines, returns 1 on any failure
check() {
  local dir=$1 rc=0 f rel inc target lf lt edges=$tmp/edges.$$ n=0
  : > "$edges"
  # every declared pattern names at least one file
  local row pats pat
  for row in "${LAYERS[@]}"; do
    pats=${row#*: }
    for pat in $pats; do
      compgen -G "$dir/$pat" > /dev/null || { echo "FAIL declared but missing: runtime/$pat"; rc=1; }
    done
  done
  for f in "$dir"/*.c "$dir"/*.h "$dir"/include/*.h "$dir"/ckpt/*.c "$dir"/ckpt/*.h; do
    [ -e "$f" ] || continue
    rel=${f#"$dir"/}
    n=$((n + 1))
    lf=$(layer_of "$dir" "$rel")
    if [ -z "$lf" ]; then
      echo "FAIL runtime/$rel is in no layer (declare it in tests/runtime_layers.sh)"
      rc=1
      continue
    fi
    while IFS= read -r inc; do
      [ -n "$inc" ] || continue
      here=$(dirname "$rel")
      if [ "$here" != . ] && [ -e "$dir/$here/$inc" ]; then target=$here/$inc
      elif [ -e "$dir/$inc" ]; then target=$inc
      elif [ -e "$dir/include/$inc" ]; then target=include/$inc
      elif [ -e "$src/generated/$inc" ]; then continue # generated headers sit below every layer
      else
        echo "FAIL runtime/$rel includes \"$inc\": not a runtime file nor a generated header"
        rc=1
        continue
      fi
      case $target in
      *.c) echo "FAIL runtime/$rel includes a .c file: $target"; rc=1 ;;
      esac
      echo "$rel $target" >> "$edges"
      lt=$(layer_of "$dir" "$target")
      [ -n "$lt" ] || continue # reported as undeclared in its own turn
      if [ "${lt%% *}" -gt "${lf%% *}" ]; then
        echo "FAIL runtime/$rel (layer ${lf#* }) includes runtime/$target of a higher layer (${lt#* })"
        rc=1
      elif [ "${lf%% *}" = $LOADER ] && [ "${lt%% *}" -gt 2 ] && [ "${lt%% *}" != $LOADER ]; then
        echo "FAIL runtime/$rel (the checkpoint loader) includes runtime/$target (${lt#* }): the loader uses the public API and fk_internal.h only"
        rc=1
      fi
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  done
  if [ "$n" -lt 10 ]; then echo "FAIL only $n runtime files found under $dir"; rc=1; fi
  if ! tsort "$edges" > /dev/null 2> "$tmp/tsort.err"; then
    echo "FAIL include cycle: $(tr '\n' ' ' < "$tmp/tsort.err")"
    rc=1
  fi
  return $rc
}

# check_calls OBJDIR [CKPTDIR] (the library's runtime objects, <file>.c.o, and the loader's) -> prints
# FAIL lines, returns 1
check_calls() {
  local dir=$1 ckdir=${2:-} rc=0 o n=0 rel sym def lo ld
  : > "$tmp/defs"
  : > "$tmp/uses"
  for o in "$dir"/*.c.o "${ckdir:-/nonexistent}"/*.c.o; do
    [ -e "$o" ] || continue
    n=$((n + 1))
    rel=$(basename "$o" .o)
    [ "$(dirname "$o")" = "$ckdir" ] && rel=ckpt/$rel
    nm -P --defined-only "$o" | awk -v f="$rel" '$2 ~ /^[TDRBCG]$/ { print $1, f }' >> "$tmp/defs"
    nm -P --undefined-only "$o" | awk -v f="$rel" '{ print $1, f }' >> "$tmp/uses"
  done
  if [ "$n" -lt 10 ]; then echo "FAIL only $n runtime objects under $dir (build first)"; return 1; fi
  # every use of a symbol another runtime object defines: user, symbol, definer (libc, stamps: none)
  while read -r rel sym def; do
    lo=$(layer_of "$dir" "$rel")
    ld=$(layer_of "$dir" "$def")
    if [ -z "$lo" ] || [ -z "$ld" ]; then continue; fi # the include check names undeclared files
    # shellcheck disable=SC2053  # glob match on purpose
    if [ "${ld%% *}" -gt "${lo%% *}" ] && ! [[ $rel == fk_families.c && $sym == fk_*_family ]]; then
      echo "FAIL runtime/$rel (layer ${lo#* }) calls $sym of runtime/$def (layer ${ld#* })"
      rc=1
    elif [ "${lo%% *}" = $LOADER ] && [ "${ld%% *}" -gt 2 ] && [ "${ld%% *}" != $LOADER ] &&
         ! grep -qw "$sym" "$src/runtime/include/flashkern.h"; then
      echo "FAIL runtime/$rel (the checkpoint loader) calls $sym of runtime/$def (${ld#* }): not in flashkern.h"
      rc=1
    fi
  done < <(awk 'NR == FNR { def[$1] = $2; next } ($1 in def) { print $2, $1, def[$1] }' "$tmp/defs" "$tmp/uses")
  return $rc
}

fail=0
objs=$build/CMakeFiles/fk_objects.dir/runtime
ckobjs=$build/CMakeFiles/fk_ckpt_objects.dir/runtime/ckpt
[ -d "$ckobjs" ] || ckobjs=
if out=$(check_calls "$objs" "$ckobjs"); then
  echo "ok   $objs${ckobjs:+ and $ckobjs}: no object calls into a higher layer (but the table naming the families)"
else
  echo "$out"
  fail=1
fi
if out=$(check "$src/runtime"); then
  echo "ok   runtime/: $(find "$src/runtime" -maxdepth 2 -name '*.[ch]' -not -path '*/example/*' | wc -l) files in ${#LAYERS[@]} layers, includes run one way, no cycle"
else
  echo "$out"
  fail=1
fi

# negative controls: each alteration of a copy must be caught
control() { # NAME EXPECTED-TEXT EDIT-COMMAND...
  local name=$1 want=$2
  shift 2
  rm -rf "$tmp/rt"
  cp -r "$src/runtime" "$tmp/rt"
  (cd "$tmp/rt" && "$@")
  local got
  got=$(check "$tmp/rt")
  if echo "$got" | grep -q "$want"; then
    echo "ok   negative control: $name caught"
  else
    echo "FAIL negative control: $name was not caught (wanted \"$want\"; got: $got)"
    fail=1
  fi
}
# shellcheck disable=SC2317  # called through control
append() { printf '%s\n' "$2" >> "$1"; }
control "the team including the engine's header" "of a higher layer" \
  append fk_team.h '#include "fk_plan_internal.h"'
control "a program helper including a family's header" "of a higher layer" \
  append fk_lfm2.h '#include "fk_prog_lm.h"'
control "a public header including the runtime's" "of a higher layer" \
  append include/fk_models.h '#include "fk_internal.h"'
control "a cycle within a layer" "include cycle" \
  sh -c 'echo "#include \"fk_lfm2.h\"" >> fk_spectral.h && echo "#include \"fk_spectral.h\"" >> fk_lfm2.h'
control "an undeclared file" "in no layer" \
  sh -c 'echo "#include \"fk_plan_internal.h\"" > fk_new.c'
control "an included .c file" "includes a .c file" \
  append fk_prog_lm.c '#include "fk_lfm2.c"'
control "the engine including the checkpoint loader's header" "of a higher layer" \
  append fk_plan.c '#include "fk_checkpoint.h"'
control "the checkpoint loader including the engine's header" "the loader uses the public API" \
  append ckpt/model.c '#include "fk_plan_internal.h"'
# the team's object calling the engine (fk_run), linked into a copy of the objects
if [ -d "$objs" ]; then
  rm -rf "$tmp/obj"
  cp -r "$objs" "$tmp/obj"
  printf 'int fk_run(void);\nint fk_team_probe(void) { return fk_run(); }\n' > "$tmp/probe.c"
  if cc -c "$tmp/probe.c" -o "$tmp/probe.o" && ld -r "$tmp/obj/fk_team.c.o" "$tmp/probe.o" -o "$tmp/team.o" &&
     mv "$tmp/team.o" "$tmp/obj/fk_team.c.o" && check_calls "$tmp/obj" | grep -q "calls fk_run of runtime/fk_run.c"; then
    echo "ok   negative control: the team's object calling the engine caught"
  else
    echo "FAIL negative control: the team's object calling fk_run was not caught"
    fail=1
  fi
fi
# the loader's object calling an engine-internal function (fk_lfm2_check, not in flashkern.h)
if [ -n "$ckobjs" ]; then
  rm -rf "$tmp/ckobj"
  cp -r "$ckobjs" "$tmp/ckobj"
  printf 'int fk_lfm2_check(void);\nint fk_ckpt_probe(void) { return fk_lfm2_check(); }\n' > "$tmp/probe2.c"
  if cc -c "$tmp/probe2.c" -o "$tmp/probe2.o" && ld -r "$tmp/ckobj/model.c.o" "$tmp/probe2.o" -o "$tmp/model.o" &&
     mv "$tmp/model.o" "$tmp/ckobj/model.c.o" && check_calls "$objs" "$tmp/ckobj" | grep -q "calls fk_lfm2_check of runtime/fk_lfm2.c (program-helpers): not in flashkern.h"; then
    echo "ok   negative control: the loader's object calling an engine-internal function caught"
  else
    echo "FAIL negative control: the loader's object calling fk_lfm2_check was not caught"
    fail=1
  fi
fi
[ $fail -eq 0 ] && echo "negative controls: back-includes, a cycle, an undeclared file, an included .c, the loader on the engine's insides and a call into a higher layer are each caught"
exit $fail
