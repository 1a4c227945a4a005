-- templates/irfft.lua: the inverse real FFT, x = irfft(X, N) with 1/N scaling (numpy's
-- irfft): N = 256, 512, 1024, 2048 and 1280 (the LFM2.5 detokenizer's n_fft). The algorithm, its
-- plan (radix 2 stages, then radix 5 for 1280 = 5 * 2^8) and its constant tables are
-- gen/vfft.lua's; every table is computed by the generator in double, rounded once to f32, and
-- emitted into the stamps (and, for the contract model, into generated/fk_tables.h).
--
-- Input X[0..N/2] as two arrays (re, im); the imaginary parts of X[0] and X[N/2] are ignored.
-- Output: N f32 (a NaN stored as the canonical 0x7fc00000). Scratch: `work`, 2N floats,
-- meaningless after the call.

local V = require("vfft")

local SIZES = { 256, 512, 1024, 1280, 2048 }

local function args(n)
  return {
    { "re", "const float *", extent = string.format("%d", n / 2 + 1), doc = "N/2 + 1 real parts of X" },
    { "im", "const float *", extent = string.format("%d", n / 2 + 1),
      doc = "N/2 + 1 imaginary parts of X (those of X[0] and X[N/2] ignored)" },
    { "y", "float *", extent = string.format("%d", n), doc = "N outputs: irfft(X) with 1/N scaling" },
    { "work", "float *", scratch = true, extent = string.format("%d", 2 * n),
      doc = "2N floats of scratch (N = " .. n .. ")" },
  }
end

local forms, exports = {}, {}
for _, n in ipairs(SIZES) do
  forms[#forms + 1] = { name = "n" .. n, args = args(n), n = n, fixtures = { exempt =
    "accuracy against a float64 inverse DFT and FFTW-style linearity, impulse and shift checks (test_irfft)" } }
  local tabs = V.tables(n)
  for name, words in pairs(tabs) do exports["N" .. n .. "_" .. name:upper()] = words end
end

return {
  leaf = "irfft",
  doc = "inverse real FFT, N = 256..2048 and 1280, 1/N scaling, generated plan and twiddles",
  tiers = { exact = { "neon", "avx2", "avx512" } },
  fixture_gate = "none",
  params = {},
  check = function() end,
  exports = exports,
  forms = forms,
  body = function(t, _, form)
    local a, N = t.arg, form.n
    local tabs = V.tables(N)
    local function tab(name) return t:table(name, tabs[name]) end
    local zr, zi = V.emit(t, N, a.re, a.im, a.work, tab)
    -- 3. x[2m] = Re z[m] / N, x[2m+1] = Im z[m] / N (re and im interleaved)
    t:for_tiles(t:iconst(N / 2), 16, function(m)
      local sc = t:load_bcast_f32(tab("scale"), t:iconst(0), 0)
      local yr, yi = t:canon(t:mul(t:load_f32(zr, m, 0), sc)), t:canon(t:mul(t:load_f32(zi, m, 0), sc))
      local o = t:add(m, m)
      t:store_f32(a.y, o, 0, t:zip_lo(yr, yi, 1))
      t:store_f32(a.y, o, 16, t:zip_hi(yr, yi, 1))
    end, nil, { whole = true })
  end,
}
