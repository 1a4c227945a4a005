# tests/tests.cmake: the tests, included by CMakeLists.txt with FK_BUILD_TESTS (and, for the cross
# build's stamp runner and scenarios, with FK_AARCH64_TOOLS). Labels: `quick` (the quick preset:
# under 2 minutes), `slow`, `aarch64` (runs code under qemu-aarch64), `leaf` and each leaf's name.
# ---- contract models and the call harness (host suites and the stamp runner) ----------------
# every contract model in tests/contract/ (one file per leaf)
file(GLOB FK_CONTRACT_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/contract/*.c)
list(SORT FK_CONTRACT_SOURCES)
add_library(fk_harness STATIC tests/harness/fkh.c tests/harness/contract_call.c ${FK_CONTRACT_SOURCES})
# the contract models must neither fuse nor split floating-point operations
target_compile_options(fk_harness PRIVATE ${FK_WARNINGS} -ffp-contract=off -fno-fast-math)
target_link_libraries(fk_harness PUBLIC flashkern m)
# the contract models are reached through weak references (tests/contract/contract.h, from the
# registry): whoever links the harness links its archive whole
set(FK_HARNESS_LINK "$<LINK_LIBRARY:WHOLE_ARCHIVE,fk_harness>")

if(FK_AARCH64_TOOLS)
  add_executable(fk_stamp_runner tests/runner/fk_stamp_runner.c)
  target_compile_options(fk_stamp_runner PRIVATE ${FK_WARNINGS})
  target_link_libraries(fk_stamp_runner PRIVATE ${FK_HARNESS_LINK})
  target_link_options(fk_stamp_runner PRIVATE -static)
  # the plan scenario (tests/test_plan.c compares its digests with the host's)
  add_executable(fk_plan_scenario tests/plan/fk_plan_scenario.c tests/plan/plan_model.c)
  target_compile_options(fk_plan_scenario PRIVATE ${FK_WARNINGS})
  target_link_libraries(fk_plan_scenario PRIVATE flashkern m)
  target_link_options(fk_plan_scenario PRIVATE -static)
  # the model programs' scenario (tests/model/test_model.c compares its digests with the host's)
  add_executable(fk_model_scenario tests/model/fk_model_scenario.c tests/model/model_desc.c tests/model/session.c
    tests/model/synth.c)
  target_compile_options(fk_model_scenario PRIVATE ${FK_WARNINGS} -ffp-contract=off)
  target_compile_definitions(fk_model_scenario PRIVATE FKM_NO_XXHASH)
  target_include_directories(fk_model_scenario PRIVATE ${CMAKE_SOURCE_DIR}/runtime ${CMAKE_SOURCE_DIR}/tests/model)
  target_link_libraries(fk_model_scenario PRIVATE flashkern m)
  target_link_options(fk_model_scenario PRIVATE -static)
  if(FK_BUILD_CHECKPOINTS)
    # a checkpoint opened by the loader and run (tests/ckpt/test_ckpt_fixtures.c compares its digests)
    add_executable(fk_ckpt_scenario tests/ckpt/fk_ckpt_scenario.c tests/model/session.c tests/model/model_desc.c
      tests/model/synth.c)
    target_compile_options(fk_ckpt_scenario PRIVATE ${FK_WARNINGS} -ffp-contract=off)
    target_compile_definitions(fk_ckpt_scenario PRIVATE FKM_NO_XXHASH)
    target_include_directories(fk_ckpt_scenario PRIVATE ${CMAKE_SOURCE_DIR}/runtime ${CMAKE_SOURCE_DIR}/tests/model)
    target_link_libraries(fk_ckpt_scenario PRIVATE flashkern_ckpt m)
    target_link_options(fk_ckpt_scenario PRIVATE -static)
  endif()
  # the audio family's scenario (tests/audio/test_audio.c compares its lines with the host's)
  add_executable(fk_audio_scenario tests/audio/fk_audio_scenario.c tests/audio/audio_desc.c tests/audio/audio_session.c
    tests/model/synth.c)
  target_compile_options(fk_audio_scenario PRIVATE ${FK_WARNINGS} -ffp-contract=off)
  target_compile_definitions(fk_audio_scenario PRIVATE FKM_NO_XXHASH)
  target_include_directories(fk_audio_scenario PRIVATE ${CMAKE_SOURCE_DIR}/tests/model ${CMAKE_SOURCE_DIR}/tests/audio)
  target_link_libraries(fk_audio_scenario PRIVATE flashkern m)
  target_link_options(fk_audio_scenario PRIVATE -static)
  return()
endif()
# ---- the AArch64 cross build: this tree configured again with the AArch64 toolchain -----------
if(FK_BUILD_CROSS)
  find_program(FK_AARCH64_CC aarch64-linux-gnu-gcc REQUIRED)
  find_program(FK_QEMU qemu-aarch64 REQUIRED)
  include(ExternalProject)
  ExternalProject_Add(fk_aarch64
    SOURCE_DIR ${CMAKE_SOURCE_DIR}
    BINARY_DIR ${CMAKE_BINARY_DIR}/aarch64
    CMAKE_ARGS -DCMAKE_TOOLCHAIN_FILE=${CMAKE_SOURCE_DIR}/cmake/aarch64-linux-gnu.cmake
               -DFK_AARCH64_TOOLS=ON -DFK_BUILD_EXAMPLES=OFF -DFK_WERROR=${FK_WERROR} -DCMAKE_BUILD_TYPE=Release
               -DFK_BUILD_CHECKPOINTS=${FK_BUILD_CHECKPOINTS}
    BUILD_ALWAYS ON
    INSTALL_COMMAND ""
    BUILD_BYPRODUCTS ${CMAKE_BINARY_DIR}/aarch64/fk_stamp_runner ${CMAKE_BINARY_DIR}/aarch64/fk_plan_scenario
                     ${CMAKE_BINARY_DIR}/aarch64/fk_model_scenario ${CMAKE_BINARY_DIR}/aarch64/fk_ckpt_scenario
                     ${CMAKE_BINARY_DIR}/aarch64/fk_audio_scenario)
else()
  # no cross build: the AArch64 targets report themselves unavailable and their tests skip
  add_custom_target(fk_aarch64)
  find_program(FK_QEMU qemu-aarch64)
  if(NOT FK_QEMU)
    set(FK_QEMU qemu-aarch64)
  endif()
endif()
set(FK_RUNNER ${CMAKE_BINARY_DIR}/aarch64/fk_stamp_runner)

# ---- tests ------------------------------------------------------------------------------------
enable_testing()
find_library(FK_CRITERION criterion REQUIRED)
find_library(FK_ZSTD zstd REQUIRED)
find_library(FK_XXHASH xxhash REQUIRED)
find_package(Python3 REQUIRED COMPONENTS Interpreter)
# every committed bench result renders again from its CSV (bench/report.py --check)
add_test(NAME bench_report COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/bench/report.py
         --results ${CMAKE_SOURCE_DIR}/bench/results --all --check --no-plot)

# every leaf's cases in tests/leaves/ (cases_<leaf>.c and helpers)
file(GLOB FK_CASE_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/leaves/*.c)
list(SORT FK_CASE_SOURCES)
add_library(fk_suite STATIC tests/suite.c tests/harness/targets.c tests/fixture/fkfix.c ${FK_CASE_SOURCES}
  tests/suite_state.c)
# diagnostics may be cut short, never wrong: truncation warnings are off for the suites
target_compile_options(fk_suite PRIVATE ${FK_WARNINGS} -Wno-format-truncation)
target_compile_definitions(fk_suite PUBLIC FKT_FIXTURE_DIR="${CMAKE_SOURCE_DIR}/fixtures"
  FKH_RUNNER="${FK_RUNNER}" FKH_QEMU="${FK_QEMU}" _POSIX_C_SOURCE=200809L)
target_link_libraries(fk_suite PUBLIC ${FK_HARNESS_LINK} ${FK_CRITERION} ${FK_ZSTD} ${FK_XXHASH})
add_dependencies(fk_suite fk_aarch64)

# the case builders are reached through weak references too (tests/leaves/cases.h): whole archive
set(FK_SUITE_LINK "$<LINK_LIBRARY:WHOLE_ARCHIVE,fk_suite>")
# one suite per leaf of the registry: tests/test_leaf.c (exact pairs, fixture gates, the gate's own
# perturbation) and the leaf's further tests in tests/test_<leaf>.c when it has some
foreach(leaf IN LISTS FK_LEAVES)
  set(fk_srcs tests/test_leaf.c)
  if(EXISTS ${CMAKE_SOURCE_DIR}/tests/test_${leaf}.c)
    list(APPEND fk_srcs tests/test_${leaf}.c)
  endif()
  add_executable(test_${leaf} ${fk_srcs})
  target_compile_options(test_${leaf} PRIVATE ${FK_WARNINGS})
  target_compile_definitions(test_${leaf} PRIVATE FKT_LEAF="${leaf}")
  target_link_libraries(test_${leaf} PRIVATE ${FK_SUITE_LINK} m)
  add_test(NAME ${leaf} COMMAND test_${leaf} --jobs 2)
  set_tests_properties(${leaf} PROPERTIES LABELS "leaf;${leaf};aarch64")
endforeach()
foreach(suite fixture_reader runtime perturb)
  add_executable(test_${suite} tests/test_${suite}.c)
  target_compile_options(test_${suite} PRIVATE ${FK_WARNINGS})
  target_link_libraries(test_${suite} PRIVATE ${FK_SUITE_LINK})
  add_test(NAME ${suite} COMMAND test_${suite} --jobs 2)
endforeach()
# every form has a contract model, cases and fixtures (or the template's exemption)
add_executable(test_coverage tests/test_coverage.c)
target_compile_options(test_coverage PRIVATE ${FK_WARNINGS})
target_link_libraries(test_coverage PRIVATE ${FK_SUITE_LINK})
add_test(NAME coverage COMMAND test_coverage ${CMAKE_SOURCE_DIR}/fixtures)
# a new leaf needs its template, contract model and case builder only (tests/newleaf/run.sh: a
# scratch copy of the tree gains docs/adding-a-leaf.md's example, stamps, builds, runs its suite)
add_test(NAME newleaf COMMAND ${CMAKE_SOURCE_DIR}/tests/newleaf/run.sh)
set_tests_properties(newleaf PROPERTIES ENVIRONMENT "FK_SOURCE_DIR=${CMAKE_SOURCE_DIR}" TIMEOUT 900)

# the runtime: plans against the contract composition, team sizes, turns, refusals, AArch64
add_executable(fk_plan_scenario tests/plan/fk_plan_scenario.c tests/plan/plan_model.c)
target_compile_options(fk_plan_scenario PRIVATE ${FK_WARNINGS})
target_link_libraries(fk_plan_scenario PRIVATE flashkern m)
add_executable(test_plan tests/test_plan.c tests/plan/plan_model.c tests/plan/plan_ref.c)
target_compile_options(test_plan PRIVATE ${FK_WARNINGS})
target_compile_definitions(test_plan PRIVATE FKT_SCENARIO_HOST="$<TARGET_FILE:fk_plan_scenario>"
  FKT_SCENARIO_AARCH64="${CMAKE_BINARY_DIR}/aarch64/fk_plan_scenario")
target_link_libraries(test_plan PRIVATE ${FK_SUITE_LINK} m)
add_dependencies(test_plan fk_plan_scenario)
add_test(NAME plan COMMAND test_plan --jobs 2)

set(FK_SCRIPT_ENV "FK_SOURCE_DIR=${CMAKE_SOURCE_DIR}" "FK_BUILD_DIR=${CMAKE_BINARY_DIR}")
add_test(NAME stamp_scan COMMAND ${CMAKE_SOURCE_DIR}/tests/scan_stamps.sh)
add_test(NAME stamp_assemble COMMAND ${CMAKE_SOURCE_DIR}/tests/assemble_stamps.sh)
add_test(NAME gen_determinism COMMAND ${CMAKE_SOURCE_DIR}/tests/gen_determinism.sh)
add_test(NAME gen_errors COMMAND ${CMAKE_SOURCE_DIR}/tests/gen_errors.sh)
add_test(NAME dsl_ops COMMAND ${CMAKE_SOURCE_DIR}/tests/dsl_ops.sh)
# the exact tier's RNE over every f32 on the x86_64 exact variants, and on the AArch64 ones (under
# qemu) over every special-exponent chunk and 1 in 16 of the others (FK_RNE_STRIDE=1: every f32)
add_test(NAME rne_exhaustive COMMAND ${CMAKE_SOURCE_DIR}/tests/rne_exhaustive.sh)
set_tests_properties(rne_exhaustive PROPERTIES TIMEOUT 1500)
add_test(NAME fixture_provenance COMMAND ${CMAKE_SOURCE_DIR}/tests/fixture_provenance.sh)
add_test(NAME census_tool COMMAND ${CMAKE_SOURCE_DIR}/tests/census_test.sh)
add_test(NAME asmdiff COMMAND ${CMAKE_SOURCE_DIR}/tests/asmdiff_test.sh)
# install, then link the installed library from a host: find_package (static, shared), pkg-config
add_test(NAME install_host COMMAND ${CMAKE_SOURCE_DIR}/tests/install_host.sh)
# the library alone (no test or bench dependency looked up), on x86_64 and as an arm64 build run under qemu
add_test(NAME lib_only COMMAND ${CMAKE_SOURCE_DIR}/tests/lib_only.sh)
set_tests_properties(lib_only PROPERTIES ENVIRONMENT "FK_SOURCE_DIR=${CMAKE_SOURCE_DIR}" TIMEOUT 900)
add_test(NAME scan_archive COMMAND ${CMAKE_SOURCE_DIR}/tests/scan_archive.sh)
# the runtime's includes and calls run one way: public <- utilities <- team <- engine <- programs
add_test(NAME runtime_layers COMMAND ${CMAKE_SOURCE_DIR}/tests/runtime_layers.sh)
set_tests_properties(runtime_layers PROPERTIES ENVIRONMENT "${FK_SCRIPT_ENV}")
# zero allocations after readiness: a malloc/open interposer around 1,000 steps (plain C)
add_executable(test_noalloc tests/test_noalloc.c tests/interpose.c tests/plan/plan_model.c tests/model/model_desc.c
  tests/audio/audio_desc.c)
target_compile_options(test_noalloc PRIVATE ${FK_WARNINGS})
target_link_libraries(test_noalloc PRIVATE fk_model_trace flashkern m ${CMAKE_DL_LIBS})
target_include_directories(test_noalloc PRIVATE ${CMAKE_SOURCE_DIR}/tests)
add_test(NAME noalloc COMMAND test_noalloc)
find_program(FK_LUACHECK luacheck)
if(FK_LUACHECK)
  add_test(NAME luacheck COMMAND ${FK_LUACHECK} --no-color gen tools templates WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
endif()
add_test(NAME example_host COMMAND fk_hello)
# memcheck of the example host (valgrind has no AVX-512: the AVX2 stamps run; a small model)
find_program(FK_VALGRIND valgrind)
if(FK_VALGRIND)
  add_test(NAME example_host_valgrind COMMAND ${FK_VALGRIND} -q --error-exitcode=1 --leak-check=full
           --errors-for-leak-kinds=definite,indirect $<TARGET_FILE:fk_hello> 2 exact small)
  set_tests_properties(example_host_valgrind PROPERTIES ENVIRONMENT "FK_CPU_MASK=3")
endif()
# reliability suites, each in its own file (fuzzing, guard pages, bad input, long runs), and the
# whole-model trace tests (tests/model/)
foreach(fk_part tests/fuzz/fuzz.cmake tests/guard/guard.cmake tests/badinput/badinput.cmake tests/longrun/longrun.cmake
    tests/model/model.cmake tests/audio/audio.cmake tests/quant/quant.cmake)
  if(EXISTS ${CMAKE_SOURCE_DIR}/${fk_part})
    include(${CMAKE_SOURCE_DIR}/${fk_part})
  endif()
endforeach()
include(${CMAKE_SOURCE_DIR}/tests/api/api.cmake)  # the public header, the host helpers, fk_hello's arguments
if(FK_BUILD_CHECKPOINTS)
  include(${CMAKE_SOURCE_DIR}/tests/ckpt/ckpt.cmake)  # the checkpoint loader; its rows in badinput, noalloc
  include(${CMAKE_SOURCE_DIR}/tests/ckpt/fixtures.cmake)  # the checkpoints of fixtures/ckpt/ against their traces
endif()
set_tests_properties(stamp_scan stamp_assemble gen_determinism gen_errors dsl_ops fixture_provenance install_host scan_archive
  census_tool asmdiff rne_exhaustive PROPERTIES ENVIRONMENT "${FK_SCRIPT_ENV}")

# ---- labels: quick (ctest --preset quick: under 2 minutes on 2 cores), slow (a minute or more on
# an idle machine), aarch64 (runs code under qemu-aarch64); the leaf suites also carry `leaf` and
# their leaf's name. A test in none of the lists runs in the full suite only.
set(FK_QUICK_TESTS bench_report fixture_provenance dsl_ops fixture_reader scan_archive luacheck model_synth runtime
  example_host install_host coverage fixture_lock vmath plan runtime_layers irfft badinput swiglu census_tool shortconv
  stamp_scan fuzz_regress rmsnorm api api_headers example_host_args ckpt quant)
set(FK_SLOW_TESTS audio audio_trace lib_only attn guard_pages newleaf model qkprep perturb asmdiff gemv noalloc stamp_assemble gen_determinism
  fuzz_smoke sample rne_exhaustive)
set(FK_AARCH64_TESTS audio plan model guard_pages perturb longrun dsl_ops newleaf lib_only rne_exhaustive)
foreach(fk_label quick slow aarch64)
  string(TOUPPER ${fk_label} fk_upper)
  foreach(fk_test IN LISTS FK_${fk_upper}_TESTS)
    if(TEST ${fk_test})
      set_property(TEST ${fk_test} APPEND PROPERTY LABELS ${fk_label})
    endif()
  endforeach()
endforeach()
