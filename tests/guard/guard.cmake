# tests/guard/guard.cmake: guard pages (included from the top-level CMakeLists.txt once the harness,
# the AArch64 cross build and FK_RUNNER / FK_QEMU exist). test_guard is a plain C program, not a
# Criterion suite: it links the call harness and the case builders, not fk_suite.
add_executable(test_guard tests/guard/test_guard.c tests/harness/targets.c ${FK_CASE_SOURCES})
target_compile_options(test_guard PRIVATE ${FK_WARNINGS} -Wno-format-truncation)
target_compile_definitions(test_guard PRIVATE FKH_RUNNER="${FK_RUNNER}" FKH_QEMU="${FK_QEMU}")
target_link_libraries(test_guard PRIVATE ${FK_HARNESS_LINK})
add_dependencies(test_guard fk_aarch64)   # the stamp runner it drives under qemu-aarch64
# every leaf form, both guard modes, every variant (host and AArch64 under qemu -cpu max): every
# named case (the edges, every tail length) and 16 seeded random ones per form (the leaf suites run
# all of them for values; build/test_guard without --random runs them all here too); ~1 min
add_test(NAME guard_pages COMMAND test_guard --random 16)
set_tests_properties(guard_pages PROPERTIES TIMEOUT 600)
