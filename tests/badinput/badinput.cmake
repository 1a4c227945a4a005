# tests/badinput: the bad-input table (docs/bad-input.md), one Criterion test per row
# (badinput::<row id>). Included from the top-level CMakeLists.txt after the test targets exist.
add_executable(test_badinput tests/badinput/test_badinput.c tests/plan/plan_model.c tests/audio/audio_desc.c)
target_include_directories(test_badinput PRIVATE ${CMAKE_SOURCE_DIR}/tests)
target_compile_options(test_badinput PRIVATE ${FK_WARNINGS})
target_compile_definitions(test_badinput PRIVATE FKT_BADINPUT_DOC="${CMAKE_SOURCE_DIR}/docs/bad-input.md")
target_link_libraries(test_badinput PRIVATE ${FK_SUITE_LINK} fk_model_trace Threads::Threads m)
add_test(NAME badinput COMMAND test_badinput --jobs 2)
