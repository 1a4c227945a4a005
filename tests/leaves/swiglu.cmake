# tests/leaves/swiglu.cmake: the SwiGLU leaf's suite (templates/swiglu.lua), included by CMakeLists.txt.
add_executable(test_swiglu tests/test_swiglu.c)
target_compile_options(test_swiglu PRIVATE ${FK_WARNINGS})
target_link_libraries(test_swiglu PRIVATE fk_suite)
add_test(NAME swiglu COMMAND test_swiglu --jobs 2)
