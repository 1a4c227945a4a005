-- templates/istft.lua: the spectral tail of the LFM2.5 detokenizer, frame by frame (liquid-audio's
-- ISTFT(1280, 320, 1280, padding="same") after torch.polar(exp(log_abs), angle)).
--
-- Form frame (frame_i16): one STFT frame t of the stream.
--   x[0..640] log-magnitudes, x[641..1281] phases (the 512 -> 1282 head's row)
--   X[k] = min(clip, exp(x[k])) * (cos(x[641+k]) + i sin(x[641+k]))  (clip = +inf: none, as LFM2.5;
--          Vocos clips at 1e2); min keeps a NaN magnitude
--   z = IFFT_640 of the half-size complex sequence of X (gen/vfft.lua, steps 1-2: z = N * irfft)
--   s[n] = z[n] * wN[n], n < 1280, wN[n] = f32(hann(n) / 1280) (the irfft's 1/N folded into the
--          periodic Hann window hann(n) = 0.5 - 0.5 cos(2 pi n / 1280); z[2m] = Re, z[2m+1] = Im)
--   the caller's ring (1280 f32 sums): frame t covers stream positions [320t, 320t + 1280),
--   position q at ring[q mod 1280]; ring[q] += s, segment by segment in order (k = 0..3:
--   positions 320(t + k) + [0, 320))
--   positions [320t, 320t + 320) are then final: y = ring / envelope (IEEE divide), and that ring
--   segment is zeroed (it is the next frame's newest); the envelope, the sum of
--   win2[n] = f32(hann(n)^2) over the frames covering a position, depends only on how many do:
--   tables E1, E2, E3 below (f32 sums, oldest frame first)
--   "same" padding trims 480 samples at the start: frame 0 writes nothing, frame 1 writes the
--   last 160 of its 320 (y[0..159]), frames t >= 2 write 320 (y[0..319])
-- Form flush (flush_i16): after the stream's T >= 2 frames (frame = T), writes the last 480
--   samples (positions [320T, 320T + 480); envelopes F0 (F0T2 when T = 2) and F1) and zeroes the
--   ring for the next stream.
-- The _i16 forms write int16 PCM: RNE(min(max(y * 32767, -32768), 32767)) (NaN -> -32768), as
--   uint16_t bit patterns. A NaN the f32 forms store in y, and any NaN stored in the ring, is the
--   canonical quiet NaN 0x7fc00000.
-- Transient planes: `work` holds X (the polar conversion: the pre-processing reads bins k and
--   640 - k together, so the spectrum must exist whole before it) and the FFT's two ping-pong
--   buffers (a Stockham stage reads its input whole before its output is complete).

local C = require("compat")
local V = require("vfft")

local N, HOP, L = 1280, 320, 640
local BINS = L + 1
-- work: X re, X im (656 each), the FFT's two ping-pong buffers, the broadcast clip at 3872
local WORK, CLIP_AT = 3888, 3872

-- the window tables, from doubles, rounded once
local WN, WIN2 = {}, {}
local win2 = {}
for n = 0, N - 1 do
  local c = V.cis(n, N)
  local h = 0.5 - 0.5 * c
  WN[n + 1] = C.f32bits(h / N)
  WIN2[n + 1] = C.f32bits(h * h)
  win2[n] = C.f32value(WIN2[n + 1])
end

-- The envelope is the stream's sum of squared windows at a position: it depends on the frame
-- index only through how many frames cover the position, so it is a table, not state. An f32
-- sum over the covering frames, oldest first (offsets i + 960, + 640, + 320, + 0 of win2):
--   E3[i] (a segment finished by frame t >= 3), E2 (t = 2), E1 (t = 1: elements 160..319);
--   F0[i] (flush, positions [320T, 320T + 320), T >= 3), F0T2 (T = 2), F1[i] (the next 160).
local function f32add(a, b) return C.f32value(C.f32bits(a + b)) end
local E3, E2, E1, F0, F0T2, F1 = {}, {}, {}, {}, {}, {}
for i = 0, HOP - 1 do
  local w = function(off) return win2[i + off] end
  E3[i + 1] = C.f32bits(f32add(f32add(f32add(w(960), w(640)), w(320)), w(0)))
  E2[i + 1] = C.f32bits(f32add(f32add(w(640), w(320)), w(0)))
  E1[i + 1] = C.f32bits(f32add(w(320), w(0)))
  F0[i + 1] = C.f32bits(f32add(f32add(w(960), w(640)), w(320)))
  F0T2[i + 1] = C.f32bits(f32add(w(640), w(320)))
  F1[i + 1] = C.f32bits(f32add(w(960), w(640)))
end

local function args(form)
  local a = {}
  if form.frame then
    a[#a + 1] = { "x", "const float *", extent = "1282", doc = "1282 f32: 641 log-magnitudes, then 641 phases" }
  end
  a[#a + 1] = { "ring", "float *", inout = true, extent = "1280",
                doc = "1280 f32 overlap-add sums (zeros at the stream's start)" }
  a[#a + 1] = { "y", form.i16 and "uint16_t *" or "float *",
                extent = form.frame and "frame == 0 ? 0 : frame == 1 ? 160 : 320" or "480",
                doc = form.frame and "PCM out: 0 (frame 0), 160 (frame 1) or 320 samples" or "PCM out: 480 samples" }
  if form.frame then
    a[#a + 1] = { "work", "float *", scratch = true, extent = string.format("%d", WORK),
                  doc = WORK .. " f32 of scratch" }
  end
  a[#a + 1] = { "frame", "int64_t",
                doc = form.frame and "this frame's index t in the stream" or "T, the frames so far (>= 2)" }
  if form.frame then a[#a + 1] = { "clip", "float", doc = "magnitude clip (+inf: none)" } end
  return a
end

local I16 = "the f32 form's samples as int16 by the template's clamp-and-round rule, bit-exact against the " ..
            "contract model; the streams check the f32 forms"
local FORMS = {
  { name = "frame", frame = true },
  { name = "frame_i16", frame = true, i16 = true, fixtures = { exempt = I16 } },
  { name = "flush", fixtures = { via = "frame" } },   -- every stream ends in the flush
  { name = "flush_i16", i16 = true, fixtures = { exempt = I16 } },
}
for _, f in ipairs(FORMS) do f.args = args(f) end

-- y[o .. o + 15] from 16 final samples: f32, or int16 bits (high halves of the shifted int32)
local function put(t, form, y, o, v)
  if form.i16 then
    local q = t:mul(v, t:vconst(0x46fffe00))                              -- 32767
    q = t:min(t:max(q, t:vconst(0xc7000000)), t:vconst(0x46fffe00))      -- NaN -> -32768
    t:store_bf16(y, o, 0, t:ishl_v(t:f2i(t:rint(q)), 16))
  else
    t:store_f32(y, o, 0, t:canon(v))
  end
end

-- final samples of ring segment `seg` (element offset), elements [from, 320) to y[0 ..], then
-- zero the segment
local function finish(t, form, a, seg, from, env)
  local rs = t:addr(a.ring, seg, 4)
  local zero = t:zero()
  if from < HOP then
    t:for_tiles(t:iconst(HOP - from), 16, function(i)
      put(t, form, a.y, i, t:div(t:load_f32(rs, i, from), t:load_f32(env, i, from)))
    end, nil, { whole = true })
  end
  t:for_tiles(t:iconst(HOP), 16, function(i) t:store_f32(rs, i, 0, zero) end, nil, { whole = true })
end

return {
  leaf = "istft",
  doc = "LFM2.5 detokenizer ISTFT frame by frame: polar, irfft 1280, Hann window, overlap-add, envelope, PCM",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  params = {},
  check = function() end,
  -- CHECK: the runtime sizes the tail's buffers from these (runtime/fk_plan.c)
  exports = { WN = WN, WIN2 = WIN2, E1 = E1, E2 = E2, E3 = E3, F0 = F0, F0T2 = F0T2, F1 = F1,
              N = N, HOP = HOP, SPEC = 2 * BINS, WORK = WORK, RING = N, FLUSH = 480 },
  forms = FORMS,
  fixture_gate = "stream",   -- frames 0 .. T-1 on one ring, then the flush
  body = function(t, _, form)
    local a = t.arg
    if form.frame then
      -- 1. the spectrum, polar -> rectangular, into work[0 .. 656) (re) and work[656 .. 1312) (im)
      local xr, xi, fw = a.work, t:addr(a.work, 656, 4), t:addr(a.work, 1312, 4)
      -- the clip, broadcast once into work[3872 .. 3888): read from there in the loop, it holds
      -- no register across the polar conversion
      local clipv = t:addr(a.work, CLIP_AT, 4)
      t:store_f32(clipv, t:iconst(0), 0, t:bcast(a.clip))
      t:for_tiles(t:iconst(BINS), 16, function(k, tail)
        local lanes = tail and tail(0)
        local s, c = t:sincos(t:load_f32(a.x, k, BINS, lanes))
        if not t.tune.hold_operands then
          -- cos and sin wait in the spectrum buffer (the same operations)
          t:store_f32(xr, k, 0, c, lanes)
          t:store_f32(xi, k, 0, s, lanes)
        end
        local mag = t:min(t:load_f32(clipv, t:iconst(0), 0), t:exp(t:load_f32(a.x, k, 0, lanes)))
        if not t.tune.hold_operands then c, s = t:load_f32(xr, k, 0, lanes), t:load_f32(xi, k, 0, lanes) end
        t:store_f32(xr, k, 0, t:mul(mag, c), lanes)
        t:store_f32(xi, k, 0, t:mul(mag, s), lanes)
      end)
      -- 2. z = IFFT (unscaled) in the FFT buffers
      local tabs = V.tables(N)
      tabs.wn, tabs.e1, tabs.e2, tabs.e3 = WN, E1, E2, E3
      local function tab(name) return t:table(name, tabs[name]) end
      local zr, zi = V.emit(t, N, xr, xi, fw, tab)
      -- 3. window and overlap-add, segment by segment: frame sample n = 320k + i goes to ring
      -- element ((t + k) mod 4) * 320 + i
      for k = 0, 3 do
        local seg = t:mul(t:iand(t:add(a.frame, k), 3), HOP)
        local rs = t:addr(a.ring, seg, 4)
        local zro, zio = t:addr(zr, HOP / 2 * k, 4), t:addr(zi, HOP / 2 * k, 4)
        local wn = t:addr(tab("wn"), HOP * k, 4)
        t:for_tiles(t:iconst(HOP / 2), 16, function(m)
          local o = t:add(m, m)                               -- samples 2m .. 2m + 31 of the segment
          local vr, vi = t:load_f32(zro, m, 0), t:load_f32(zio, m, 0)
          for h = 0, 1 do
            local s = t:mul(h == 0 and t:zip_lo(vr, vi, 1) or t:zip_hi(vr, vi, 1), t:load_f32(wn, o, 16 * h))
            t:store_f32(rs, o, 16 * h, t:canon(t:add(t:load_f32(rs, o, 16 * h), s)))
          end
        end, nil, { whole = true })
      end
      -- 4. the oldest segment is final: frame 0 writes nothing, frame 1 its last 160, then 320
      local seg0 = t:mul(t:iand(a.frame, 3), HOP)
      t:cases(t:imin(a.frame, 3), { 0, 1, 2, 3 }, function(c)
        finish(t, form, a, seg0, c == 0 and HOP or (c == 1 and 160 or 0), tab(({ "e1", "e1", "e2", "e3" })[c + 1]))
      end)
    else
      -- flush: positions [320T, 320T + 320) (segment T mod 4) then [320T + 320, 320T + 480)
      local s0 = t:mul(t:iand(a.frame, 3), HOP)
      local s1 = t:mul(t:iand(t:add(a.frame, 1), 3), HOP)
      local y1 = form.i16 and t:addr(a.y, HOP, 2) or t:addr(a.y, HOP, 4)
      local function seg_out(seg, y, count, env)
        local rs = t:addr(a.ring, seg, 4)
        t:for_tiles(t:iconst(count), 16, function(i)
          put(t, form, y, i, t:div(t:load_f32(rs, i, 0), t:load_f32(env, i, 0)))
        end, nil, { whole = true })
      end
      t:cases(t:imin(a.frame, 3), { 2, 3 }, function(c)
        seg_out(s0, a.y, HOP, t:table(c == 2 and "f0t2" or "f0", c == 2 and F0T2 or F0))
      end)
      seg_out(s1, y1, 160, t:table("f1", F1))
      local zero = t:zero()
      t:for_tiles(t:iconst(N), 16, function(i) t:store_f32(a.ring, i, 0, zero) end, nil, { whole = true })
    end
  end,
}
