# tests/model/model.cmake: whole-model traces (fixtures/lfm2/, fixtures/detok/): the synthetic weights
# by formula (tests/model/synth.c, the twin of fixtures/ref/gen_trace.py) against the digests every
# trace manifest records, and the trace reader / compare helper (tests/model/trace.c) that the model
# program suites use. Included by CMakeLists.txt. Needs no stamp and no cross build: the fixture
# reader, Criterion, zstd, xxhash, and libflashkern's fk_bf16_from_f32 (the weights' RNE; the
# digests then prove it rounds as gen_trace.py does).
add_library(fk_model_trace STATIC tests/model/synth.c tests/model/trace.c tests/fixture/fkfix.c)
target_compile_options(fk_model_trace PRIVATE ${FK_WARNINGS} -ffp-contract=off -fno-fast-math)
target_compile_definitions(fk_model_trace PUBLIC FKT_FIXTURE_DIR="${CMAKE_SOURCE_DIR}/fixtures" _POSIX_C_SOURCE=200809L)
target_include_directories(fk_model_trace PUBLIC ${CMAKE_SOURCE_DIR}/tests/model ${CMAKE_SOURCE_DIR}/tests/fixture)
target_link_libraries(fk_model_trace PUBLIC flashkern ${FK_ZSTD} ${FK_XXHASH} m)
add_executable(test_model_synth tests/model/test_synth.c)
target_compile_options(test_model_synth PRIVATE ${FK_WARNINGS})
target_link_libraries(test_model_synth PRIVATE fk_model_trace ${FK_CRITERION})
add_test(NAME model_synth COMMAND test_model_synth --jobs 2)

# the model programs end to end (tests/model/test_model.c): the traces at every boundary, team
# sizes, turns, perturbations, and the scenario natively and under qemu-aarch64
add_executable(fk_model_scenario tests/model/fk_model_scenario.c tests/model/model_desc.c tests/model/session.c)
target_compile_options(fk_model_scenario PRIVATE ${FK_WARNINGS})
target_include_directories(fk_model_scenario PRIVATE ${CMAKE_SOURCE_DIR}/runtime)
target_link_libraries(fk_model_scenario PRIVATE fk_model_trace flashkern)
add_executable(test_model tests/model/test_model.c tests/model/model_desc.c)
target_compile_options(test_model PRIVATE ${FK_WARNINGS} -Wno-format-truncation)
target_include_directories(test_model PRIVATE ${CMAKE_SOURCE_DIR}/runtime)
target_compile_definitions(test_model PRIVATE FKT_MODEL_SCENARIO_HOST="$<TARGET_FILE:fk_model_scenario>"
  FKT_MODEL_SCENARIO_AARCH64="${CMAKE_BINARY_DIR}/aarch64/fk_model_scenario" FKH_QEMU="${FK_QEMU}")
target_link_libraries(test_model PRIVATE fk_model_trace fk_harness flashkern ${FK_CRITERION} m)
add_dependencies(test_model fk_model_scenario fk_aarch64)
add_test(NAME model COMMAND test_model --jobs 1)
