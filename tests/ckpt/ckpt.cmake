# tests/ckpt/ckpt.cmake: the checkpoint loader's tests (FK_BUILD_CHECKPOINTS; included by
# tests/tests.cmake). Every checkpoint is written by the tests themselves, in C
# (tests/ckpt/ckpt_write.c: a safetensors writer and whole directories from tests/model/synth.h's
# weights); no Python runs.
#   ckpt         tests/ckpt/test_ckpt.c: LM (bf16 whole and sharded, f32, f16, both config styles,
#                tied heads), the detokenizer alone, LFM2.5-Audio: the session of a plan made from
#                the checkpoint equals the direct descriptors' bit for bit, teams of 1 and 2
add_library(fk_ckpt_write STATIC tests/ckpt/ckpt_write.c)
target_compile_options(fk_ckpt_write PRIVATE ${FK_WARNINGS})
target_include_directories(fk_ckpt_write PUBLIC ${CMAKE_SOURCE_DIR}/tests/ckpt ${FK_JANSSON_INCLUDE})
target_link_libraries(fk_ckpt_write PUBLIC fk_model_trace ${FK_JANSSON_LIB} m)

add_executable(test_ckpt tests/ckpt/test_ckpt.c tests/model/model_desc.c tests/model/session.c)
target_compile_options(test_ckpt PRIVATE ${FK_WARNINGS})
target_include_directories(test_ckpt PRIVATE ${CMAKE_SOURCE_DIR}/runtime)
target_link_libraries(test_ckpt PRIVATE fk_ckpt_write flashkern_ckpt ${FK_CRITERION} ${FK_SNDFILE_LIB})
target_compile_definitions(test_ckpt PRIVATE FKT_FLASHKERN_RUN="$<TARGET_FILE:flashkern-run>")
add_dependencies(test_ckpt flashkern-run)
add_test(NAME ckpt COMMAND test_ckpt --jobs 2)
set_tests_properties(ckpt PROPERTIES TIMEOUT 600)

# the bad-input table gains the checkpoint rows (docs/bad-input.md)
target_compile_definitions(test_badinput PRIVATE FKT_CKPT)
target_link_libraries(test_badinput PRIVATE fk_ckpt_write flashkern_ckpt)
# no allocation, free or open after readiness on a plan made from a checkpoint (tests/test_noalloc.c)
target_compile_definitions(test_noalloc PRIVATE FKT_CKPT)
target_link_libraries(test_noalloc PRIVATE fk_ckpt_write flashkern_ckpt)
# the rows count the blocks fk_model_open leaves allocated (tests/interpose.c): plain builds only,
# a sanitizer owns malloc (the rows then ask LeakSanitizer)
if(NOT CMAKE_C_FLAGS MATCHES "-fsanitize")
  target_sources(test_badinput PRIVATE tests/interpose.c)
  target_compile_definitions(test_badinput PRIVATE FKT_INTERPOSE)
endif()
