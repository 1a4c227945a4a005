-- templates/attn.lua: attention for one new token (decode; prefill of P tokens below), GQA,
-- causal, over a linear KV cache (forms decode64, decode32: every position 0..pos) or a
-- sliding-window ring of W slots (forms decode_ring64, decode_ring32: positions max(0, pos - W + 1)..pos;
-- the wide forms, which also store y widened to f32, are described at the end of the file). The number is
-- head_dim d. It reads the layout the qkprep leaf writes: q heads contiguous (head h at q + h*d),
-- k head g of slot s at k + g*k_ld_head + s*k_ld_row (normed, RoPE'd, bf16), v likewise at
-- v + g*v_ld_head + s*v_ld_row (a GEMV's strided destination: y_off = the slot's offset, heads
-- contiguous in a row when v_ld_head = d). The new token's k and v are already in their slot
-- (pos for the linear cache, slot = pos mod W in the ring).
--
-- Query head h = g*group + r (r < group) reads kv head g (transformers' repeat_kv). The window
-- has n = pos + 1 positions (linear) or min(pos + 1, W) (ring); window position j (0..n-1) is
-- the (j+1)-th oldest, at slot j (linear) or (slot + 1 - n + j) mod W (ring). Per head, the
-- order of transformers' eager_attention_forward in bf16 (matmul, * scaling, softmax in f32,
-- .to(bf16), matmul):
--   dot_j = q . k_j in the rmsnorm leaf's order (lane l of chain c sums the i with i mod 32 ==
--           16c + l, fma, increasing i, from +0; chain 0 + chain 1; halving tree)
--   s_j   = RNE(RNE(dot_j) * scale)       scale = f32(d^-0.5): 0x3e000000 (d = 64), 0x3e3504f3
--                                         (d = 32); the scores are scaled, not q (torch: matmul
--                                         then * scaling, both bf16 results)
--   m     = max_j s_j                     16 lanes (lane l: the j with j mod 16 == l, increasing
--                                         j, from -inf, a > m ? a : m), then the halving tree
--                                         (lower lanes first, a > b ? a : b); the window is
--                                         padded to a multiple of 16 with -inf
--   e_j   = exp(s_j - m)                  gen/vmath.lua's exp (<= 1.5 ulp); padding gives +0
--   sum   = sum_j e_j                     lane l sums the j with j mod 16 == l (padding
--                                         included, +0), increasing j, from +0; halving tree
--   p_j   = RNE(e_j * (1 / sum))          correctly rounded reciprocal, then one product (torch's
--                                         CPU softmax multiplies by 1/sum), rounded to bf16
--                                         (attn_weights.to(query.dtype))
--   o[i]  = sum_j p_j * v_j[i]            fma, increasing j, from +0
--   y[h*d + i] = RNE(o[i]); a NaN o[i] is the canonical quiet NaN 0x7fc0 (the RNE's NaN: NaNs
--           made by inf - inf differ in sign between ISAs and two NaNs meeting keep different
--           operands; one canonical NaN keeps the exact tier exact where the window holds inf or NaN)
-- The scratch holds the scores, then s - m, e and p: round_up(n, 16) floats (the last 16 of
-- them written as -inf padding before the scores). y must not overlap q, k, v or s; nothing else
-- is written. Checked against
-- transformers (fixtures/attn): the contract equals eager attention's bf16 output bit for bit on
-- every fixture output (torch 2.15 CPU), the dot and sum orders being the only freedom left.
-- The stamps take the scores of 16 window positions at a time: their lane vectors reduced together
-- (t:reduce_add_rows: each position's halving tree as above), the roundings and the scaling once
-- per vector; the n mod 16 positions left one by one.
--
-- Prefill (forms prefill64, prefill32, prefill_ring64, prefill_ring32): rows P query rows at
-- positions pos .. pos + P - 1 in one call, q row i at q + i*q_ld, y row i at y + i*y_ld (the
-- gap between rows is not written), causal within the block: row i is, bit for bit, the decode
-- form's result at position pos + i over the same cache (the definition: prefill of P rows == P
-- decode calls, same dot, softmax and sum orders; the rows run one after another, sharing the
-- scratch). The cache holds the P new keys and values already (qkprep and the GEMV append them
-- before the call). Linear forms: slots 0..pos + P - 1. Ring forms take the sliding window W
-- (`window`) apart from the ring's slot count R (`ring`): position p lives at slot p mod R, `slot`
-- is pos mod R (row i's slot is (slot + i) mod R), row i sees the last min(pos + i + 1, W)
-- positions. Appending the block's P keys overwrites the slots of positions pos + 1 - R ..
-- pos + P - 1 - R, and row 0 still needs positions down to pos + 1 - W: the caller must size the
-- ring R >= W + P - 1, i.e. P <= R - W + 1 (a decode ring of R = W slots allows P = 1 once the
-- window is full: a longer prompt is prefilled in chunks of at most R - W + 1 rows, or with
-- R = W + P_max - 1 slots). The leaf does not check it (a leaf returns no errors). The scratch
-- holds round_up(n, 16) floats for the longest (last) row's window n.

-- Extents (elements from each pointer on): the heads of one row, or of `rows` rows q_ld / y_ld /
-- yw_ld apart; the cache slots up to the last one the window can reach (the last row's position,
-- or the ring's last slot once it wraps); the scratch's round_up(n, 16) floats for the last row.
local function extents(ring, hd, prefill)
  local heads = "kv_heads * group * " .. string.format("%d", hd)
  local last = prefill and "(rows > 0 ? pos + rows - 1 : pos)" or "pos"
  local slot = ring and ("min(" .. last .. ", ring - 1)") or last
  local function cache(ld) return "kv_heads > 0 ? (kv_heads - 1) * " .. ld .. "_ld_head + " .. slot .. " * " .. ld ..
                                  "_ld_row + " .. string.format("%d", hd) .. " : 0" end
  local n = ring and ("min(" .. last .. " + 1, " .. (prefill and "window" or "ring") .. ")") or (last .. " + 1")
  local function rows(ld) return prefill and ("span(rows, " .. ld .. ", " .. heads .. ")") or heads end
  return { q = rows("q_ld"), y = rows("y_ld"), yw = rows("yw_ld"), k = cache("k"), v = cache("v"),
           s = "round_up(" .. n .. ", 16)" }
end

local function args(ring, hd)
  local e = extents(ring, hd, false)
  local a = {
    { "q", "const uint16_t *", extent = e.q, doc = "kv_heads*group query heads of d bf16 at q + h*d (qkprep's q row)" },
    { "k", "const uint16_t *", extent = e.k, doc = "K cache: kv head g of slot s at k + g*k_ld_head + s*k_ld_row" },
    { "v", "const uint16_t *", extent = e.v, doc = "V cache: kv head g of slot s at v + g*v_ld_head + s*v_ld_row" },
    { "y", "uint16_t *", extent = e.y, doc = "kv_heads*group output heads of d bf16 at y + h*d" },
    { "s", "float *", scratch = true, extent = e.s, doc = "scratch: round_up(n, 16) floats, n the window length" },
    { "kv_heads", "int64_t", doc = "kv heads, >= 0" },
    { "group", "int64_t", doc = "query heads per kv head (n_heads / n_kv_heads), >= 1" },
    { "k_ld_head", "int64_t", doc = "elements from one k head to the next" },
    { "k_ld_row", "int64_t", doc = "elements from one k slot to the next" },
    { "v_ld_head", "int64_t", doc = "elements from one v head to the next" },
    { "v_ld_row", "int64_t", doc = "elements from one v slot to the next" },
    { "pos", "int64_t", doc = "position of the new token, >= 0 (its k and v are in the cache)" },
  }
  if ring then
    a[#a + 1] = { "slot", "int64_t", doc = "slot of pos: pos mod ring" }
    a[#a + 1] = { "ring", "int64_t", doc = "ring slots W, >= 1: the window is the last min(pos + 1, W) positions" }
  end
  return a
end

-- prefill: rows query rows at positions pos .. pos + rows - 1 (q row i at q + i*q_ld, y row i at
-- y + i*y_ld); the ring forms take the window W apart from the ring's slot count R (see the header)
local function prefill_args(ring, hd)
  local e = extents(ring, hd, true)
  local a = {
    { "q", "const uint16_t *", extent = e.q,
      doc = "rows query rows: row i's kv_heads*group heads of d bf16 at q + i*q_ld + h*d" },
    { "k", "const uint16_t *", extent = e.k, doc = "K cache: kv head g of slot s at k + g*k_ld_head + s*k_ld_row" },
    { "v", "const uint16_t *", extent = e.v, doc = "V cache: kv head g of slot s at v + g*v_ld_head + s*v_ld_row" },
    { "y", "uint16_t *", extent = e.y,
      doc = "rows output rows: row i's kv_heads*group heads of d bf16 at y + i*y_ld + h*d" },
    { "s", "float *", scratch = true, extent = e.s, doc = "scratch: round_up(n, 16) floats, n the longest row window" },
    { "kv_heads", "int64_t", doc = "kv heads, >= 0" },
    { "group", "int64_t", doc = "query heads per kv head (n_heads / n_kv_heads), >= 1" },
    { "k_ld_head", "int64_t", doc = "elements from one k head to the next" },
    { "k_ld_row", "int64_t", doc = "elements from one k slot to the next" },
    { "v_ld_head", "int64_t", doc = "elements from one v head to the next" },
    { "v_ld_row", "int64_t", doc = "elements from one v slot to the next" },
    { "pos", "int64_t", doc = "position of row 0, >= 0 (the rows' k and v are in the cache)" },
    { "rows", "int64_t", doc = "query rows P, >= 0 (ring forms: P <= ring - window + 1)" },
    { "q_ld", "int64_t", doc = "elements from one q row to the next" },
    { "y_ld", "int64_t", doc = "elements from one y row to the next" },
  }
  if ring then
    a[#a + 1] = { "slot", "int64_t", doc = "slot of pos (row 0): pos mod ring" }
    a[#a + 1] = { "ring", "int64_t", doc = "ring slots R >= window + rows - 1" }
    a[#a + 1] = { "window", "int64_t",
                  doc = "sliding window W, 1 <= W <= R: row i sees the last min(pos + i + 1, W) positions" }
  end
  return a
end

local function form(name, ring, hd)
  return { name = name, args = args(ring, hd), ring = ring, hd = hd }
end

local function prefill_form(name, ring, hd)
  return { name = name, args = prefill_args(ring, hd), ring = ring, hd = hd, prefill = true }
end

-- d^-0.5 rounded to f32 (torch multiplies by the Python float in f32 opmath)
local SCALE_F32 = { [32] = "0x3e3504f3", [64] = "0x3e000000" }

local template = {
  leaf = "attn",
  doc = "decode and prefill attention: GQA, causal, linear or sliding-window ring KV cache, softmax in f32, bf16 out",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  params = { chains = 2, tree = "halving" },
  check = function(p, need)
    need(p.chains == 2, "chains: the dot products follow the rmsnorm leaf's order (2 chains of 16 lanes)")
    need(p.tree == "halving", "tree must be 'halving'")
  end,
  forms = {
    form("decode64", false, 64), form("decode32", false, 32),
    form("decode_ring64", true, 64), form("decode_ring32", true, 32),
    prefill_form("prefill64", false, 64), prefill_form("prefill32", false, 32),
    prefill_form("prefill_ring64", true, 64), prefill_form("prefill_ring32", true, 32),
  },
  body = function(t, p, form_)
    local a = t.arg
    local hd = form_.hd
    local nv = math.floor(hd / 16)
    -- one query row's attention; r = nil: the decode forms (the row is the arguments' pos),
    -- else prefill row r (position pos + r, slot (slot + r) mod R, q and y rows r)
    local function one_row(r)
    -- zeros made where they are used (one more live register does not fit x86_64)
    local function Z() return t:iconst(0) end
    local function pos_of() return r and t:add(a.pos, r) or a.pos end
    local function slot_row() return r and t:wrap(t:add(a.slot, r), a.ring) or a.slot end
    local function win_of() return r and a.window or a.ring end
    local function q_of() return r and t:addr(a.q, t:mul(r, a.q_ld), 2) or a.q end
    local function y_of() return r and t:addr(a.y, t:mul(r, a.y_ld), 2) or a.y end
    -- the window, computed afresh where it is needed (few general registers stay live): n
    -- positions; window position j is index jlo + j of the scan, slot slot_of(jlo + j), score
    -- at sbase[jlo + j] = s[j]
    local function window()
      if form_.ring then
        local n = t:imin(t:add(pos_of(), 1), win_of())
        local start = t:wrap(t:add(t:sub(t:add(slot_row(), 1), n), a.ring), a.ring)
        return n, start, t:add(start, n)
      end
      local n = t:add(pos_of(), 1)
      return n, nil, n                                 -- (jlo: 0)
    end
    local function slot_of(jj)
      if form_.ring then return t:wrap(jj, a.ring) end
      return jj
    end
    local function n16_of(n) return t:iand(t:add(n, 15), -16) end
    -- the scan index of the first position after the window's whole blocks of 16
    local function tail_of(jlo, jhi)
      local whole = t:iand(t:sub(jhi, jlo or Z()), -16)
      return jlo and t:add(jlo, whole) or whole
    end
    -- the positions of block b (window indexes 16 b .. 16 b + 15), for l = 0..15 in that order:
    -- the element offset of position l's slot in a cache of row stride ld (a linear cache's rows
    -- one stride apart: an add per position)
    local function block_rows(b, ld)
      local _, jlo = window()
      local first = t:mul(b, 16)
      if jlo then first = t:add(jlo, first) end
      local at
      return function(l)
        if form_.ring or l == 0 then
          at = t:mul(slot_of(l > 0 and t:add(first, l) or first), ld)
        else
          at = t:add(at, ld)
        end
        return at
      end
    end
    -- kv head g of a cache (k or v), and its row for scan index jj
    local function head_of(base, ld_head, g) return t:addr(base, t:mul(g, ld_head), 2) end
    local function row_of(base, ld_head, ld_row, g, jj)
      return t:addr(head_of(base, ld_head, g), t:mul(slot_of(jj), ld_row), 2)
    end
    local keep_q = t.tune.hold_operands
    t:for_rows(Z(), a.kv_heads, 1, function(g)
      local h0 = t:mul(g, a.group)
      t:for_rows(h0, t:add(h0, a.group), 1, function(h)
        -- padding: the last 16 scratch floats -inf, before the scores overwrite the valid ones
        local n = window()
        t:store_f32(a.s, n16_of(n), -16, t:vconst(0xff800000))
        local qv = {}
        if keep_q then
          local qh = t:addr(q_of(), t:mul(h, hd), 2)
          for c = 1, nv do qv[c] = t:load_bf16(qh, Z(), 16 * (c - 1)) end
        end
        -- pass 1: the scores. dot_vec: a position's lane vector, chain 0 + chain 1, its key at
        -- kp + ki (ki an element index, or nil), q from qv (held over the head), qb or qh
        local function dot_vec(kp, ki, qh, qb)
          local acc = { t:zero(), t:zero() }
          for c = 1, nv do
            local qc = keep_q and qv[c] or qb and qb[c] or t:load_bf16(qh, Z(), 16 * (c - 1))
            t:fma_acc(acc[(c - 1) % 2 + 1], qc, t:load_bf16(kp, ki or Z(), 16 * (c - 1)))
          end
          return t:add(acc[1], acc[2])
        end
        local function qh_of() return not keep_q and t:addr(q_of(), t:mul(h, hd), 2) end
        -- whole blocks of 16 positions: the 16 vectors reduced together (reduce_add_rows: lane l
        -- is position l's halving tree, bit for bit), the roundings and the scaling once per
        -- vector (a row loop: the arguments load per block, not held across the loop)
        t:for_rows(Z(), t:ishr(n, 4), 1, function(b)
          -- (q's chunks held in registers over the block where they are not over the head: the
          -- block's vectors wait in stack slots)
          local qb = {}
          if not keep_q then
            local qh = qh_of()
            for c = 1, nv do qb[c] = t:load_bf16(qh, Z(), 16 * (c - 1)) end
          end
          local kg, at = head_of(a.k, a.k_ld_head, g), block_rows(b, a.k_ld_row)
          local function dot_of(l) return dot_vec(kg, at(l), nil, qb) end
          -- the 16 vectors made in order (a linear cache's keys one row apart), then reduced; where
          -- the vector registers cannot hold them (hold_operands false) each waits in a stack slot
          local vs = {}
          for l = 0, 15 do
            vs[l] = dot_of(l)
            if not keep_q then vs[l] = t:spill(vs[l]) end
          end
          local dots = t:reduce_add_rows(function(l) return keep_q and vs[l] or t:reload(vs[l]) end, p.tree)
          t:store_f32(a.s, t:mul(b, 16), 0, t:rne(t:mul(t:rne(dots), t:vconst(SCALE_F32[hd]))))
        end)
        -- the n mod 16 positions left, one by one (the same tree, roundings and scaling)
        local _, jlo1, jhi1 = window()
        local sbase = jlo1 and t:addr(a.s, t:sub(Z(), jlo1), 4) or a.s
        t:for_rows(tail_of(jlo1, jhi1), jhi1, 1, function(jj)
          local dot = t:reduce_add(dot_vec(row_of(a.k, a.k_ld_head, a.k_ld_row, g, jj), nil, qh_of()), p.tree)
          t:store1_f32(sbase, jj, 0, t:rne(t:mul(t:rne(dot), t:f32(SCALE_F32[hd]))))
        end)
        local n16 = n16_of((window()))
        -- pass 2: the maximum
        local mx = t:fill(0xff800000)
        t:for_tiles(n16, 16, function(i) t:max_acc(mx, t:load_f32(a.s, i, 0)) end, nil, { whole = true })
        local m = t:bcast(t:reduce_max(mx, p.tree))
        -- pass 3: s - m, then e = exp(s - m) and its sum (two sweeps: exp's temporaries and m
        -- do not fit the smallest register file together)
        t:for_tiles(n16, 16, function(i)
          t:store_f32(a.s, i, 0, t:vsub(t:load_f32(a.s, i, 0), m))
        end, nil, { whole = true })
        local sum = t:zero()
        t:for_tiles(n16, 16, function(i)
          local e = t:exp(t:load_f32(a.s, i, 0))
          t:store_f32(a.s, i, 0, e)
          t:fma_acc(sum, e, t:vconst(0x3f800000))
        end, nil, { whole = true })
        local inv = t:bcast(t:div(t:f32("0x3f800000"), t:reduce_add(sum, p.tree)))
        -- pass 4: p = RNE(e * inv), then the weighted sum of v
        t:for_tiles(n16, 16, function(i)
          t:store_f32(a.s, i, 0, t:rne(t:mul(t:load_f32(a.s, i, 0), inv)))
        end, nil, { whole = true })
        local o = {}
        for c = 1, nv do o[c] = t:zero() end
        -- whole blocks of 16 positions, unrolled (a linear cache's values one row apart: an add per
        -- value), then the n mod 16 left one by one; every o[c] in increasing j as before. (The
        -- prefill ring forms take every position one by one: their wrap needs one general register
        -- more than x86_64 has there.)
        local vblocks = not (form_.ring and form_.prefill)
        local function vblock(b)
          local vg, at = head_of(a.v, a.v_ld_head, g), block_rows(b, a.v_ld_row)
          local i16 = t:mul(b, 16)
          for l = 0, 15 do
            local vi, pj = at(l), t:load_bcast_f32(a.s, i16, l)
            for c = 1, nv do t:fma_acc(o[c], pj, t:load_bf16(vg, vi, 16 * (c - 1))) end
          end
        end
        if vblocks then t:for_rows(Z(), t:ishr((window()), 4), 1, vblock) end
        local _, jlo2, jhi2 = window()
        local sbase2 = jlo2 and t:addr(a.s, t:sub(Z(), jlo2), 4) or a.s
        t:for_rows(vblocks and tail_of(jlo2, jhi2) or jlo2 or Z(), jhi2, 1, function(jj)
          local vp = row_of(a.v, a.v_ld_head, a.v_ld_row, g, jj)
          local pj = t:load_bcast_f32(sbase2, jj, 0)
          for c = 1, nv do t:fma_acc(o[c], pj, t:load_bf16(vp, Z(), 16 * (c - 1))) end
        end)
        local yh = t:addr(y_of(), t:mul(h, hd), 2)
        for c = 1, nv do
          local yv = t:rne(o[c])                 -- a NaN o: the canonical 0x7fc0
          t:store_bf16(yh, Z(), 16 * (c - 1), yv)
          if form_.wide then form_.widen(t, r, h, yv, Z, c, hd) end
        end
      end)
    end)
    end
    if form_.prefill then
      t:for_rows(t:iconst(0), a.rows, 1, function(r) one_row(r) end)
    else
      one_row(nil)
    end
  end,
}

-- Wide forms (decode64_wide, decode_ring64_wide, prefill64_wide, prefill_ring64_wide, decode32_wide): the base
-- form's arithmetic and its y, plus yw (f32) for a consumer that reads f32 x (o_proj's GEMV):
-- every final y value widened exactly (<< 16), head h at yw + h*d (decode) or at yw + i*yw_ld + h*d
-- (prefill row i; the gap between rows is not written). Each 16-element chunk RNE(o) is stored to
-- y and, as the f32 whose high half y holds (its low half is zero), to yw, so yw holds exactly the
-- bits of y (y must not overlap yw; nothing else changes). The struct is the base form's with
-- yw (decode) or yw, yw_ld (prefill) appended: the base struct is a prefix of the wide one. head_dim 32
-- has decode32_wide only (the LFM2.5-Audio Depthformer's decode). They are declared here, after the body,
-- so that the lines of the base forms' ops (each stamped instruction names its template line) stay put.

-- chunk c (16 values) of head h of y, the rounded yv, into yw (r: the prefill row, nil: decode)
local function widen(t, r, h, yv, Z, c, hd)
  local a = t.arg
  local ywr = r and t:addr(a.yw, t:mul(r, a.yw_ld), 4) or a.yw
  local ywh = t:addr(ywr, t:mul(h, hd), 4)
  t:store_f32(ywh, Z(), 16 * (c - 1), yv)
end

local function wide_form(base)
  local f = { name = base.name .. "_wide", args = {}, ring = base.ring, hd = base.hd, prefill = base.prefill,
              wide = true, widen = widen, fixtures = { via = base.name } }
  for i, arg in ipairs(base.args) do f.args[i] = arg end
  if base.prefill then
    f.args[#f.args + 1] = { "yw", "float *", extent = extents(base.ring, base.hd, true).yw,
                            doc = "rows output rows: row i's kv_heads*group heads of d f32 at " ..
                            "yw + i*yw_ld + h*d: y widened (<< 16)" }
    f.args[#f.args + 1] = { "yw_ld", "int64_t", doc = "elements from one yw row to the next" }
  else
    f.args[#f.args + 1] = { "yw", "float *", extent = extents(base.ring, base.hd, false).yw,
                            doc = "kv_heads*group output heads of d f32 at yw + h*d: y widened (<< 16)" }
  end
  return f
end

do
  local by_name = {}
  for _, f in ipairs(template.forms) do by_name[f.name] = f end
  for _, name in ipairs({ "decode64", "decode_ring64", "prefill64", "prefill_ring64", "decode32" }) do
    template.forms[#template.forms + 1] = wide_form(by_name[name])
  end
end

return template
