# tests/leaves/sample.cmake: the sampler leaf's suite (templates/sample.lua), included by CMakeLists.txt.
add_executable(test_sample tests/test_sample.c)
target_compile_options(test_sample PRIVATE ${FK_WARNINGS})
target_link_libraries(test_sample PRIVATE fk_suite)
add_test(NAME sample COMMAND test_sample --jobs 2)
