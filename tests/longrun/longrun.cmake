# tests/longrun/longrun.cmake (included by CMakeLists.txt): the long-run lockstep test and the
# fixture lock.
#   longrun       tests/longrun/test_longrun.c (plain C): 10,000 block decode steps through a plan,
#                 10,000 qkprep KV decode steps (host stamps; the AArch64 stamp under qemu through
#                 the stamp runner) and 1,000 detokenizer frames through a plan, each against the
#                 contract composition after every step, with a perturbation self-check.
#   fixture_lock  tests/fixture_lock.sh: fixtures/LOCK against the committed fixtures (content vs
#                 provenance), with its own negative controls.
add_executable(test_longrun tests/longrun/test_longrun.c tests/plan/plan_model.c tests/plan/plan_ref.c)
target_compile_options(test_longrun PRIVATE ${FK_WARNINGS})
target_link_libraries(test_longrun PRIVATE ${FK_SUITE_LINK} m)   # fk_harness (contract models, fkh), targets, flashkern
add_dependencies(test_longrun fk_aarch64)                # the stamp runner the qemu part drives
add_test(NAME longrun COMMAND test_longrun)
# the runner and qemu the suites were built with (targets.c also reads them from the environment);
# a team of 4 on the machine's cores: the test takes 2 of ctest's job slots
set_tests_properties(longrun PROPERTIES TIMEOUT 600 PROCESSORS 2
  ENVIRONMENT "FKH_RUNNER=${FK_RUNNER};FKH_QEMU=${FK_QEMU}")

add_test(NAME fixture_lock COMMAND ${CMAKE_SOURCE_DIR}/tests/fixture_lock.sh)
set_tests_properties(fixture_lock PROPERTIES TIMEOUT 120 ENVIRONMENT "${FK_SCRIPT_ENV}")
