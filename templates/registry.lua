-- templates/registry.lua: the order of the leaf templates. The generator stamps every template in
-- templates/ for every variant of its tier, those listed here first in this order, then any other
-- in name order (a new template is stamped as soon as it exists; listing it pins its place);
-- fk_leaves.h, the runtime's variant table, the tests' case tables and the bench entries all come
-- from the result. ORDER LEAF: append new leaves at the end (the order reaches generated/).
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
