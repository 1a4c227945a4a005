# tests/leaves/embed.cmake: the embedding leaf's suite (templates/embed.lua), included by CMakeLists.txt.
add_executable(test_embed tests/test_embed.c)
target_compile_options(test_embed PRIVATE ${FK_WARNINGS})
target_link_libraries(test_embed PRIVATE fk_suite)
add_test(NAME embed COMMAND test_embed --jobs 2)
