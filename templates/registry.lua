-- templates/registry.lua: the single list of leaf templates. The generator stamps every
-- template listed here for every variant of its tier; fk_leaves.h, the runtime's variant
-- table, the tests' case tables and the bench entries all come from this list.
-- ORDER LEAF: append new leaves at the end (the order reaches generated/ and symbol tables).
return {
  "rmsnorm",
  "gemv",
  "shortconv",
  "qkprep",
  "vmath",
  "irfft",
  "istft",
  "swiglu",
  "embed",
  "attn",
  "sample",
}
