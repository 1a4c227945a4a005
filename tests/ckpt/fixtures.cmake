# tests/ckpt/fixtures.cmake: the checkpoint fixtures (fixtures/ckpt/: directories written by transformers
# and liquid-audio, each beside its trace; fixtures/ref/gen_ckpt.py) against the checkpoint loader
# (FK_BUILD_CHECKPOINTS; included by tests/tests.cmake).
#   ckpt_fixtures   tests/ckpt/test_ckpt_fixtures.c: the files, fk_model_query and every tensor against
#                   the manifests; every trace at every boundary on plans of 1, 2 and 3 members, the same
#                   bits for every team size and for one model's bf16 and f32, whole and sharded,
#                   directories; perturbations; fk_ckpt_scenario natively and under qemu-aarch64 (the cross
#                   build's loader links Debian's multiarch libjansson-dev:arm64); flashkern-run on every
#                   checkpoint (the trace's greedy tokens; a WAV bit for bit the plan's PCM; its refusals)
add_executable(fk_ckpt_scenario tests/ckpt/fk_ckpt_scenario.c tests/model/session.c tests/model/model_desc.c)
target_compile_options(fk_ckpt_scenario PRIVATE ${FK_WARNINGS})
target_include_directories(fk_ckpt_scenario PRIVATE ${CMAKE_SOURCE_DIR}/runtime ${CMAKE_SOURCE_DIR}/tests/model)
target_link_libraries(fk_ckpt_scenario PRIVATE fk_model_trace flashkern_ckpt)

add_executable(test_ckpt_fixtures tests/ckpt/test_ckpt_fixtures.c tests/model/model_desc.c)
target_compile_options(test_ckpt_fixtures PRIVATE ${FK_WARNINGS})
target_include_directories(test_ckpt_fixtures PRIVATE ${CMAKE_SOURCE_DIR}/runtime)
target_compile_definitions(test_ckpt_fixtures PRIVATE FKT_CKPT_SCENARIO_HOST="$<TARGET_FILE:fk_ckpt_scenario>"
  FKT_CKPT_SCENARIO_AARCH64="${CMAKE_BINARY_DIR}/aarch64/fk_ckpt_scenario" FKH_QEMU="${FK_QEMU}")
target_compile_definitions(test_ckpt_fixtures PRIVATE FKT_FLASHKERN_RUN="$<TARGET_FILE:flashkern-run>")
target_include_directories(test_ckpt_fixtures PRIVATE ${FK_SNDFILE_INCLUDE})
target_link_libraries(test_ckpt_fixtures PRIVATE fk_model_trace flashkern_ckpt ${FK_SNDFILE_LIB} ${FK_CRITERION} m)
add_dependencies(test_ckpt_fixtures fk_ckpt_scenario fk_aarch64 flashkern-run)
add_test(NAME ckpt_fixtures COMMAND test_ckpt_fixtures --jobs 1)
set_tests_properties(ckpt_fixtures PROPERTIES LABELS "slow;aarch64" TIMEOUT 1800)

#   gguf_fixtures   tests/ckpt/test_gguf_fixtures.c: the GGUF files of fixtures/gguf/ (fixtures/ref/gen_gguf.py:
#                   fixtures/ckpt/'s checkpoints as llama.cpp's GGUF, BF16, Q8_0, Q4_0) against the loader's GGUF
#                   reader: the descriptor equal to the source directory's (quantized matrices: fk_q_quantize_bf16's
#                   blocks), logits bit for bit a reference plan's; swapped tensors caught; flashkern-run on each file
#                   (the refusals of bad GGUF files are badinput rows: gguf_*)
add_executable(test_gguf_fixtures tests/ckpt/test_gguf_fixtures.c)
target_compile_options(test_gguf_fixtures PRIVATE ${FK_WARNINGS})
target_include_directories(test_gguf_fixtures PRIVATE ${CMAKE_SOURCE_DIR}/runtime ${CMAKE_SOURCE_DIR}/tests/ckpt)
target_compile_definitions(test_gguf_fixtures PRIVATE FKT_FLASHKERN_RUN="$<TARGET_FILE:flashkern-run>")
target_link_libraries(test_gguf_fixtures PRIVATE fk_model_trace flashkern_ckpt ${FK_CRITERION} m)
add_dependencies(test_gguf_fixtures flashkern-run)
add_test(NAME gguf_fixtures COMMAND test_gguf_fixtures --jobs 2)
set_tests_properties(gguf_fixtures PROPERTIES LABELS "slow" TIMEOUT 600)
