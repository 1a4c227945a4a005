# tests/leaves/attn.cmake: the decode attention leaf's suite (templates/attn.lua), included by CMakeLists.txt.
add_executable(test_attn tests/test_attn.c)
target_compile_options(test_attn PRIVATE ${FK_WARNINGS})
target_link_libraries(test_attn PRIVATE fk_suite)
add_test(NAME attn COMMAND test_attn --jobs 2)
