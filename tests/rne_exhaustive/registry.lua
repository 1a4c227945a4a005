-- tests/rne_exhaustive/registry.lua: the exhaustive RNE check's template (not part of the library).
return { "rnecheck" }
