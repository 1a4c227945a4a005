#!/usr/bin/env bash
# tests/gen_errors.sh: template errors fail closed. Each broken template below must make the
# generator exit 1 with `templates/<leaf>.lua:LINE: error: ...` (LINE the template line at
# fault) and leave generated/ untouched.
set -u
src=${FK_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
lua=$(command -v luajit || command -v lua5.4)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
# case name | sed script applied to templates/gemv.lua | expected message regex (after "error: ")
cases=(
  "bad param|s/params = { chains = 4, tile = TILE/params = { chains = 3, tile = TILE/|params: the lane mapping is written for 4 chains over 64-element tiles"
  "type error|s/t:store1_bf16(dest_row(t, a, a.y, j0, j, 2), n, 0, t:rne(s))/t:store1_bf16(dest_row(t, a, a.y, j0, j, 2), n, 0, t:rne(a.x))/|rne: operand a must be a scalar f32, got an integer \\(an address, index or count\\) \\(argument a.x\\)"
  "unknown arg|s/t:load_f32(xrow, i, 16 \\* q/t:load_f32(a.xx, i, 16 * q/|no argument named 'xx' in form 'f32' \\(did you mean 'x'\\?\\)"
  "unknown op|s/t:fma_acc(acc\\[r\\]/t:fma_ac(acc[r]/|no DSL op named 'fma_ac' \\(did you mean 'fma_acc'\\?\\)"
  "store into const|s/      local mb = t:imin(t:sub(a.m, j0), J)/      local mb = t:imin(t:sub(a.m, j0), J); t:store_f32(a.x, j, 0, t:zero())/|store_f32 into a.x, which is const float \\*"
  "store bf16 into float|s/for q = 0, 3 do t:store_bf16(xsf, at, 16 \\* q/for q = 0, 3 do t:store_bf16(a.xs, at, 16 * q/|store_bf16 into a.xs, which is float \\* \\(f32 elements; store_bf16 moves bf16\\)"
  "load bf16 from float|s/v\\[q\\] = t:load_f32(xrow, i, 16 \\* q/v[q] = t:load_bf16(xrow, i, 16 * q/|load_bf16 from a.x, which is const float \\* \\(f32 elements; load_bf16 moves bf16\\)"
  "addr scale|s/local xrow = t:addr(a.x, t:mul(a.ldx, j), 4)/local xrow = t:addr(a.x, t:mul(a.ldx, j), 2)/|addr: a.x holds 4-byte elements \\(const float \\*\\), not 2-byte ones"
  "unknown tuning|s/local budget = t.tune.accumulators$/local budget = t.tune.acumulators/|no tuning parameter 'acumulators' \\(did you mean 'accumulators'\\?\\)"
  "extent name|s/extent = \"span(m, ldx, k)\"/extent = \"span(m, ldxx, k)\"/|argument 'x': extent \"span\\(m, ldxx, k\\)\": 'ldxx' is not an int64_t argument of this form"
  "extent syntax|s/extent = \"span(m, ldx, k)\"/extent = \"span(m, ldx k)\"/|argument 'x': extent \"span\\(m, ldx k\\)\": expected '\\)'"
  "extent missing|s/extent = \"span(m, ldx, k)\", //|argument 'x': a pointer argument states its extent"
  "fast tolerance|s/tolerance = { fast = \"gemv_fast_f64\" },//|tolerance: a leaf with a fast tier names its tolerance class"
  "registers|s/while C > 1 and C \\* M + wregs > budget do C = math.floor(C \\/ 2) end//|out of vec registers"
  "syntax|s/^return {/return {{/|"
  "bad arg type|s/{ \"ldw\", \"int64_t\"/{ \"ldw\", \"int32_t\"/|argument 'ldw': unsupported C type 'int32_t'"
  "unknown variant|s/fast = { \"bf16\", \"avx512bf16\" }/fast = { \"bf16\", \"sve\" }/|tiers: no fast-tier variant named 'sve'"
  "unknown tree|s/p.tree == \"halving\", \"tree must be 'halving'\"/true, \"\"/;s/tree = \"halving\", max_m/tree = \"butterfly\", max_m/|unknown tree 'butterfly'"
  "rne_store read|s/t:store_bf16(yrow, n, BR \\* b, t:rne(v), lanes)/t:store_bf16(yrow, n, BR * b, t:rne(t:add(t:rne_store(v), v)), lanes)/|vadd: operand 1 comes from rne_store"
  "NaN rule|s/t:store1_f32(dest_row(t, a, a.y, j0, j, 4), n, 0, t:canon(s))/t:store1_f32(dest_row(t, a, a.y, j0, j, 4), n, 0, s)/|store1_f32 into a.y: the value may be a NaN whose bits differ between ISAs; an exact form stores canonical NaNs only"
  "NaN rule, accumulator|s/t:store1_bf16(dest_row(t, a, a.y, j0, j, 2), n, 0, t:rne(s))/t:store1_bf16(dest_row(t, a, a.y, j0, j, 2), n, 0, s)/|store1_bf16 into a.y: the value may be a NaN"
  "exact uses dot|s/local fast = t.tier == \"fast\"/local fast = true/|dot_bf16_acc rounds differently on each ISA: only a fast-tier form may use it"
  "reload_bcast after drop|s/if s8 then t:drop(s8) end/if s8 then t:drop(s8); t:reload_bcast(s8, 0) end/|reload_bcast: this spill was reloaded or dropped already"
  "reload_bcast lane|s/t:reload_bcast(s8, 2 \\* r + h)/t:reload_bcast(s8, 16 + r)/|reload_bcast: lane must be 0..15"
  "vtable words|s/t:vtable(\"q4_ramp\", Q4_RAMP)/t:vtable(\"q4_ramp\", { 1, 2 })/|vtable q4_ramp: give 16 words"
  "spill_to after reload|s/for h = 0, 1 do v\\[h\\] = t:add(t:reload(park\\[h\\]\\[g\\]\\[r\\]\\[0\\]), t:reload(park\\[h\\]\\[g\\]\\[r\\]\\[1\\])) end/for h = 0, 1 do v[h] = t:add(t:reload(park[h][g][r][0]), t:reload(park[h][g][r][1])); t:spill_to(park[h][g][r][0], v[h]) end/|spill_to: this spill was reloaded or dropped already"
  "ushr8_v count|s/t:ushr8_v(v, 4)/t:ushr8_v(v, 8)/|vushr8: shift count must be 1..7"
  "int8 dot outside dotprod|/form(\"q4_f32\",/{n;s/\"avx512vnnihw\", \"dotprod\"/\"avx512vnnihw\", \"bf16\"/}|aarch64/bf16: dot_u7s8 needs the dotprod variant \\(SDOT\\)"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name script want <<<"$c"
  root="$tmp/$name"
  mkdir -p "$root"
  cp -r "$src/gen" "$src/templates" "$src/generated" "$root/"
  sed -i "$script" "$root/templates/gemv.lua"
  if cmp -s "$src/templates/gemv.lua" "$root/templates/gemv.lua"; then echo "FAIL [$name]: the sed script changed nothing"; fail=1; continue; fi
  before=$(cd "$root" && find generated -type f -exec sha1sum {} + | sort)
  "$lua" "$root/gen/fkgen.lua" --root "$root" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  after=$(cd "$root" && find generated -type f -exec sha1sum {} + | sort)
  msg=$(head -1 "$tmp/err")
  if [ $rc -ne 1 ]; then echo "FAIL [$name]: exit $rc, want 1 ($msg)"; fail=1; fi
  if ! grep -Eq "^templates/gemv\.lua:[0-9]+: error: .*$want" <<<"$msg"; then
    echo "FAIL [$name]: message '$msg' does not match 'templates/gemv.lua:LINE: error: $want'"; fail=1
  else
    line=$(sed -E 's/^templates\/gemv\.lua:([0-9]+):.*/\1/' <<<"$msg")
    [ "$line" -gt 0 ] || { echo "FAIL [$name]: no template line in '$msg'"; fail=1; }
    echo "ok [$name]: $msg"
  fi
  [ "$before" = "$after" ] || { echo "FAIL [$name]: generated/ was written"; fail=1; }
done
exit $fail
