-- luacheck configuration for gen/, tools/ and templates/ (Lua 5.4 and LuaJIT 2.1 alike)
std = "max"
max_line_length = 120
