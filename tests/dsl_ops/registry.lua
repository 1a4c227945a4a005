-- tests/dsl_ops/registry.lua: the DSL conformance template (not part of the library).
return { "opcheck" }
