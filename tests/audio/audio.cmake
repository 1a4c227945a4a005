# tests/audio/audio.cmake: the audio family (FK_PROGRAMS_AUDIO): the scenario (natively and under
# qemu-aarch64), snapshots and turns, the modality state machine, refusals (tests/audio/test_audio.c).
add_executable(fk_audio_scenario tests/audio/fk_audio_scenario.c tests/audio/audio_desc.c tests/audio/audio_session.c)
target_compile_options(fk_audio_scenario PRIVATE ${FK_WARNINGS})
target_include_directories(fk_audio_scenario PRIVATE ${CMAKE_SOURCE_DIR}/tests/audio)
target_link_libraries(fk_audio_scenario PRIVATE fk_model_trace flashkern)
add_executable(test_audio tests/audio/test_audio.c tests/audio/audio_desc.c tests/audio/audio_session.c)
target_compile_options(test_audio PRIVATE ${FK_WARNINGS})
target_include_directories(test_audio PRIVATE ${CMAKE_SOURCE_DIR}/tests/audio)
target_compile_definitions(test_audio PRIVATE FKT_AUDIO_SCENARIO_HOST="$<TARGET_FILE:fk_audio_scenario>"
  FKT_AUDIO_SCENARIO_AARCH64="${CMAKE_BINARY_DIR}/aarch64/fk_audio_scenario" FKH_QEMU="${FK_QEMU}")
target_link_libraries(test_audio PRIVATE fk_model_trace flashkern ${FK_CRITERION} m)
add_dependencies(test_audio fk_audio_scenario fk_aarch64)
add_test(NAME audio COMMAND test_audio --jobs 1)
# the audio programs against liquid-audio's turns (fixtures/audio/), with the gates' negative controls
add_executable(test_audio_trace tests/audio/test_audio_trace.c tests/audio/audio_desc.c tests/model/model_desc.c)
target_compile_options(test_audio_trace PRIVATE ${FK_WARNINGS})
target_include_directories(test_audio_trace PRIVATE ${CMAKE_SOURCE_DIR}/tests/audio ${CMAKE_SOURCE_DIR}/runtime)
target_link_libraries(test_audio_trace PRIVATE fk_model_trace flashkern ${FK_CRITERION} m)
add_test(NAME audio_trace COMMAND test_audio_trace --jobs 1)
