-- templates/qkprep.lua: per-head q/k RMSNorm, RoPE and RNE to bf16, in place, at cache slots.
--
-- Forms neox64/neox32: LFM2 (transformers' Lfm2Attention: q_layernorm/k_layernorm, then the
-- rotate-half RoPE). Forms cis64/cis32: the Depthformer (liquid-audio's BoundedAttention:
-- RMSNorm, then the interleaved complex RoPE). The number is head_dim (hd).
--
-- Head g of row j lies at x + g*ld_head + s_j*ld_row with s_j = slot + j, minus ring once it
-- reaches ring (a ring of W = ring slots; ring = 0: linear). Row j takes table row pos + j.
-- Per head, h = the hd bf16 values widened:
--   ss  = sum h^2 in the rmsnorm leaf's order (lane l of chain c sums the i with i mod 32 ==
--         16c + l, fma, increasing i; chain 0 + chain 1; halving tree)
--   inv = 1 / sqrt(ss / hd + eps)                 (correctly rounded divide and sqrt)
--   neox: qn = RNE(w * RNE(h * inv))              (LFM2: weight * hidden.to(bf16))
--   cis:  qn = RNE(w * (h * inv))                 (liquid-audio: (output * weight).type_as(x))
--   with c = cos[(pos + j)*(hd/2) + i], s = sin[...] (f32 tables, fk_rope_table), i < hd/2:
--   neox: a = qn[i],  b = qn[i + hd/2]: x[i]  = RNE(fma(a, c, b*(-s))), x[i + hd/2] = RNE(fma(b, c, a*s))
--   cis:  a = qn[2i], b = qn[2i + 1]:  x[2i] = RNE(fma(a, c, b*(-s))), x[2i + 1]   = RNE(fma(b, c, a*s))
-- b*(-s) equals -(b*s) for every number (the table value is negated, never a product). Every NaN
-- stored is the canonical 0x7fc0 (the RNE's NaN), whatever NaNs met in the norm or the rotation.
-- Every element of a rotation pair is read before either is written, so the transform is in
-- place. Only the m rows' slots are written; V needs no transform (its GEMV writes the slot).

local function args(hd)
  return {
    { "x", "uint16_t *", inout = true,
      extent = "heads > 0 && m > 0 ? (ring > 0 ? min(slot + m - 1, ring - 1) : slot + m - 1) * ld_row" ..
               " + (heads - 1) * ld_head + " .. string.format("%d", hd) .. " : 0",
      doc = "bf16 heads, in place: head g of row j at x + g*ld_head + slot_j*ld_row" },
    { "w", "const uint16_t *", extent = string.format("%d", hd), doc = "head_dim bf16 norm weights" },
    { "cos", "const float *", extent = "m > 0 ? (pos + m) * " .. string.format("%d", hd / 2) .. " : 0",
      doc = "RoPE table (fk_rope_table): cos[p*(head_dim/2) + i]" },
    { "sin", "const float *", extent = "m > 0 ? (pos + m) * " .. string.format("%d", hd / 2) .. " : 0",
      doc = "RoPE table (fk_rope_table): sin[p*(head_dim/2) + i]" },
    { "heads", "int64_t", doc = "heads per row, >= 0" },
    { "m", "int64_t", doc = "rows (positions), >= 0; <= ring when ring > 0" },
    { "ld_head", "int64_t", doc = "elements from one head to the next" },
    { "ld_row", "int64_t", doc = "elements from one slot to the next" },
    { "pos", "int64_t", doc = "position of row 0 (the cursor): row j uses table row pos + j" },
    { "slot", "int64_t", doc = "slot of row 0; < ring when ring > 0" },
    { "ring", "int64_t", doc = "ring slots W (row j at slot (slot + j) mod W), or 0: linear (slot + j)" },
    { "eps", "float", doc = "RMSNorm epsilon" },
  }
end

local function form(name, style, hd)
  return { name = name, args = args(hd), style = style, hd = hd }
end

-- f32 bit patterns of the head sizes (ss / hd divides by the f32 value)
-- 1/hd as f32 bits: ss * 2^-k is ss / hd exactly (a power of two: both are the correctly
-- rounded value of the same real, subnormal results included), without a divide's latency
local HD_INV_F32 = { [32] = "0x3d000000", [64] = "0x3c800000" }

return {
  leaf = "qkprep",
  doc = "per-head q/k RMSNorm + RoPE (rotate-half or interleaved) + RNE, in place at linear or ring slots",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  fixture_gate = "sequence",   -- each manifest a sequence of calls on the KV slots the leaf writes
  params = { chains = 2, tree = "halving" },
  check = function(p, need)
    need(p.chains == 2, "chains: the norm follows the rmsnorm leaf's order (2 chains of 16 lanes)")
    need(p.tree == "halving", "tree must be 'halving'")
  end,
  forms = {
    form("neox64", "neox", 64), form("neox32", "neox", 32),
    form("cis64", "cis", 64), form("cis32", "cis", 32),
  },
  body = function(t, p, form_)
    local a = t.arg
    local hd, half = form_.hd, math.floor(form_.hd / 2)
    local z = t:iconst(0)
    t:for_rows(z, a.m, 1, function(j)
      local rowx = t:addr(a.x, t:mul(t:wrap(t:add(a.slot, j), a.ring), a.ld_row), 2)
      local trow = t:mul(t:add(a.pos, j), half)
      local ctab, stab = t:addr(a.cos, trow, 4), t:addr(a.sin, trow, 4)
      -- the row's cos, sin and -sin, shared by its heads (kept in registers where there are many)
      local tabs = {}
      local function tab(off)
        local v = tabs[off]
        if not v then
          local c, sn = t:load_f32(ctab, z, off), t:load_f32(stab, z, off)
          v = { c, sn, t:neg(sn) }
          if t.tune.hold_operands then tabs[off] = v end
        end
        return v[1], v[2], v[3]
      end
      if t.tune.hold_operands then
        for off = 0, half - 1, 16 do tab(off) end
      end
      -- heads run in groups: every head's sum of squares and 1/sqrt first, then every head's
      -- second pass, so the long dependent chain of one head (sum, tree, divide, sqrt, divide)
      -- overlaps the others' instead of stalling the pipeline head after head
      local group = t.tune.head_group
      t:for_rows(z, a.heads, group, function(g0, n)
        local invs = {}
        -- head k's pointer, computed where it is used (four live pointers would take too many
        -- general registers)
        local function head(k) return t:addr(rowx, t:mul(k == 1 and g0 or t:add(g0, k - 1), a.ld_head), 2) end
        -- pass 1: the sums of squares in the rmsnorm leaf's order
        local accs = {}
        for k = 1, n do
          accs[k] = {}
          for c = 1, p.chains do accs[k][c] = t:zero() end
        end
        for off = 0, hd - 1, 32 do
          for k = 1, n do
            local hp = head(k)
            for c = 1, p.chains do
              local h = t:load_bf16(hp, z, off + 16 * (c - 1))
              t:fma_acc(accs[k][c], h, h)
            end
          end
        end
        for k = 1, n do
          local ss = t:reduce_add(t:add(accs[k][1], accs[k][2]), p.tree)
          local inv = t:div(t:f32("0x3f800000"), t:sqrt(t:add(t:mul(ss, t:f32(HD_INV_F32[hd])), a.eps)))
          invs[k] = t:bcast(inv)
        end
        -- pass 2: norm, rotate, round; each rotation pair is read before it is written
        local function rotate(qa, qb, off)
          local c, sn, nsn = tab(off)
          return t:rne(t:fma(qa, c, t:mul(qb, nsn))), t:rne(t:fma(qb, c, t:mul(qa, sn)))
        end
        for k = 1, n do
          local hp, invv = head(k), invs[k]
          if form_.style == "neox" then
            local function qn(off)
              local n1 = t:rne(t:mul(t:load_bf16(hp, z, off), invv))
              return t:rne(t:mul(t:load_bf16(a.w, z, off), n1))
            end
            for off = 0, half - 1, 16 do
              local oa, ob = rotate(qn(off), qn(off + half), off)
              t:store_bf16(hp, z, off, oa)
              t:store_bf16(hp, z, off + half, ob)
            end
          else
            for off = 0, hd - 1, 32 do
              local raw, wraw = t:load_raw(hp, z, off), t:load_raw(a.w, z, off)
              local qa = t:rne(t:mul(t:bf16_even(wraw), t:mul(t:bf16_even(raw), invv)))
              local qb = t:rne(t:mul(t:bf16_odd(wraw), t:mul(t:bf16_odd(raw), invv)))
              local oa, ob = rotate(qa, qb, math.floor(off / 2))
              t:store_raw(hp, z, off, t:bf16_pairs(oa, ob))
            end
          end
        end
      end)
    end)
  end,
}
