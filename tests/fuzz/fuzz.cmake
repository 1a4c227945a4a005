# tests/fuzz/fuzz.cmake: libFuzzer targets (tests/fuzz/README.md), included by CMakeLists.txt once
# the library and the suites exist (uses FK_STAMP_SOURCES, FK_WARNINGS, FK_ZSTD, FK_XXHASH).
#
# The main build compiles with gcc; libFuzzer needs clang. So the fuzz binaries are built by
# custom commands that call clang directly: the runtime sources and tests/fixture/fkfix.c are
# compiled with -fsanitize=fuzzer-no-link,address,undefined into ${CMAKE_BINARY_DIR}/fuzz/obj,
# the host's stamps (generated/<isa>/*.S, the same list and assembler flags as the library) are
# assembled by the project's ASM compiler (their -Wa,-march=... flags are GNU as flags) into an
# object library, and each target links with -fsanitize=fuzzer,address,undefined into
# ${CMAKE_BINARY_DIR}/fuzz/fuzz_<name>. Without a clang that links -fsanitize=fuzzer the targets
# and their tests are skipped, with a message.
#
# Tests: fuzz_regress (every seed and regression input, executed once each, no fuzzing) and
# fuzz_smoke (each target fuzzes 10 s from a copy of its corpus). Targets: `fuzz` (in ALL) builds
# the binaries; `fuzz-seeds` rewrites tests/fuzz/corpus/ with gen_seeds.c (only when the seeds change).

find_program(FK_CLANG NAMES clang-14 clang)
if(NOT FK_CLANG)
  message(STATUS "fuzz: no clang found: fuzz targets and tests skipped")
  return()
endif()
if(NOT DEFINED FK_FUZZ_WORKS OR NOT FK_FUZZ_WORKS_CLANG STREQUAL FK_CLANG)
  set(fk_probe_dir ${CMAKE_BINARY_DIR}/fuzz/probe)
  file(MAKE_DIRECTORY ${fk_probe_dir})
  file(WRITE ${fk_probe_dir}/probe.c
    "#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n")
  execute_process(COMMAND ${FK_CLANG} -fsanitize=fuzzer,address,undefined ${fk_probe_dir}/probe.c -o ${fk_probe_dir}/probe
    RESULT_VARIABLE fk_probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(fk_probe_rc EQUAL 0)
    set(FK_FUZZ_WORKS ON CACHE INTERNAL "clang links -fsanitize=fuzzer,address,undefined")
  else()
    set(FK_FUZZ_WORKS OFF CACHE INTERNAL "clang links -fsanitize=fuzzer,address,undefined")
  endif()
  set(FK_FUZZ_WORKS_CLANG ${FK_CLANG} CACHE INTERNAL "the clang FK_FUZZ_WORKS was probed with")
endif()
if(NOT FK_FUZZ_WORKS)
  message(STATUS "fuzz: ${FK_CLANG} cannot link -fsanitize=fuzzer,address,undefined (libclang-rt-dev?): fuzz targets and tests skipped")
  return()
endif()

set(FK_FUZZ_DIR ${CMAKE_BINARY_DIR}/fuzz)
set(FK_FUZZ_SRC ${CMAKE_SOURCE_DIR}/tests/fuzz)
set(FK_FUZZ_SAN -fsanitize=address,undefined -fno-sanitize-recover=undefined -g -O1 -fno-omit-frame-pointer)
set(FK_FUZZ_INCLUDES -I${CMAKE_SOURCE_DIR}/runtime/include -I${CMAKE_SOURCE_DIR}/runtime -I${CMAKE_SOURCE_DIR}/generated
  -I${CMAKE_SOURCE_DIR}/tests)
file(GLOB fk_fuzz_headers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/runtime/*.h ${CMAKE_SOURCE_DIR}/runtime/include/*.h
  ${CMAKE_SOURCE_DIR}/runtime/ckpt/*.h
  ${CMAKE_SOURCE_DIR}/generated/*.h ${CMAKE_SOURCE_DIR}/tests/fixture/fkfix.h ${FK_FUZZ_SRC}/*.h)

# the stamps of this ISA, assembled as the library assembles them (source properties carry the flags)
add_library(fk_fuzz_stamps OBJECT ${FK_STAMP_SOURCES})
target_include_directories(fk_fuzz_stamps PRIVATE ${CMAKE_SOURCE_DIR}/generated)

# the runtime (fk_objects' list, FK_RUNTIME_SOURCES), the fixture reader and, with FK_BUILD_CHECKPOINTS,
# the checkpoint loader (FK_CKPT_SOURCES), instrumented: one object each
set(fk_fuzz_c_sources ${FK_RUNTIME_SOURCES} tests/fixture/fkfix.c ${FK_CKPT_SOURCES})
set(fk_fuzz_jansson) # jansson.h's directory, unless the compiler searches it anyway
if(FK_BUILD_CHECKPOINTS AND NOT FK_JANSSON_INCLUDE IN_LIST CMAKE_C_IMPLICIT_INCLUDE_DIRECTORIES)
  set(fk_fuzz_jansson -I${FK_JANSSON_INCLUDE})
endif()
set(fk_fuzz_runtime_objs)
set(fk_fuzz_ckpt_objs)
set(fk_fuzz_fkfix_obj)
foreach(src IN LISTS fk_fuzz_c_sources)
  get_filename_component(base ${src} NAME_WE)
  set(obj ${FK_FUZZ_DIR}/obj/${base}.o)
  set(extra)
  if(src STREQUAL "runtime/fk_rope.c")
    set(extra -ffp-contract=off -fno-fast-math)   # as the library: the tables' bytes
  endif()
  if(src STREQUAL "tests/fixture/fkfix.c")
    set(extra ${FK_WARNINGS} -D_POSIX_C_SOURCE=200809L)
    set(fk_fuzz_fkfix_obj ${obj})
  elseif(src MATCHES "^runtime/ckpt/")
    set(extra ${fk_fuzz_jansson})
    set(obj ${FK_FUZZ_DIR}/obj/ckpt_${base}.o)
    list(APPEND fk_fuzz_ckpt_objs ${obj})
  else()
    list(APPEND fk_fuzz_runtime_objs ${obj})
  endif()
  # the runtime is gcc -Werror clean; clang's own warnings there are reported, not fatal
  add_custom_command(OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${FK_FUZZ_DIR}/obj
    COMMAND ${FK_CLANG} -std=c11 ${FK_FUZZ_SAN} -fsanitize=fuzzer-no-link ${FK_FUZZ_INCLUDES} ${extra}
      -c ${CMAKE_SOURCE_DIR}/${src} -o ${obj}
    DEPENDS ${CMAKE_SOURCE_DIR}/${src} ${fk_fuzz_headers}
    COMMENT "fuzz: clang ${src}" VERBATIM COMMAND_EXPAND_LISTS)
endforeach()

set(FK_FUZZ_TARGETS manifest fixture plan_desc)
if(FK_BUILD_CHECKPOINTS)
  list(APPEND FK_FUZZ_TARGETS ckpt)   # the loader's readers: safetensors headers, the index, config.json
endif()
set(fk_fuzz_bins)
foreach(t IN LISTS FK_FUZZ_TARGETS)
  set(bin ${FK_FUZZ_DIR}/fuzz_${t})
  if(t STREQUAL "plan_desc")
    set(objs ${fk_fuzz_runtime_objs} $<TARGET_OBJECTS:fk_fuzz_stamps>)
    set(libs -lpthread -lm)
  elseif(t STREQUAL "ckpt")
    set(objs ${fk_fuzz_ckpt_objs} ${fk_fuzz_runtime_objs} $<TARGET_OBJECTS:fk_fuzz_stamps>)
    set(libs ${FK_JANSSON_LIB} -lpthread -lm)
  else()
    set(objs ${fk_fuzz_fkfix_obj})
    set(libs ${FK_ZSTD} ${FK_XXHASH})
  endif()
  add_custom_command(OUTPUT ${bin}
    COMMAND ${FK_CLANG} -std=c11 ${FK_FUZZ_SAN} -fsanitize=fuzzer ${FK_WARNINGS} ${FK_FUZZ_INCLUDES} ${fk_fuzz_jansson}
      ${FK_FUZZ_SRC}/fuzz_${t}.c ${objs} ${libs} -o ${bin}
    DEPENDS ${FK_FUZZ_SRC}/fuzz_${t}.c ${objs} ${fk_fuzz_headers}
    COMMENT "fuzz: linking fuzz_${t}" VERBATIM COMMAND_EXPAND_LISTS)
  list(APPEND fk_fuzz_bins ${bin})
endforeach()
add_custom_target(fuzz ALL DEPENDS ${fk_fuzz_bins})
add_dependencies(fuzz fk_fuzz_stamps)   # file-level dependencies on its objects need the target first

# the seed writer (plain clang, no sanitizer); `fuzz-seeds` rewrites the committed corpora
add_custom_command(OUTPUT ${FK_FUZZ_DIR}/gen_seeds
  COMMAND ${FK_CLANG} -std=c11 -O1 ${FK_WARNINGS} -D_POSIX_C_SOURCE=200809L ${FK_FUZZ_SRC}/gen_seeds.c
    ${FK_ZSTD} ${FK_XXHASH} -o ${FK_FUZZ_DIR}/gen_seeds
  DEPENDS ${FK_FUZZ_SRC}/gen_seeds.c VERBATIM COMMAND_EXPAND_LISTS)
add_custom_target(fuzz-seeds
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${FK_FUZZ_SRC}/corpus
  COMMAND ${FK_FUZZ_DIR}/gen_seeds ${CMAKE_SOURCE_DIR} ${FK_FUZZ_SRC}/corpus
  DEPENDS ${FK_FUZZ_DIR}/gen_seeds
  COMMENT "fuzz: writing tests/fuzz/corpus/ (review with git diff)" VERBATIM)

set(FK_FUZZ_ENV "FK_SOURCE_DIR=${CMAKE_SOURCE_DIR}" "FK_FUZZ_BIN=${FK_FUZZ_DIR}")
add_test(NAME fuzz_regress COMMAND ${FK_FUZZ_SRC}/regress.sh ${FK_FUZZ_TARGETS})
add_test(NAME fuzz_smoke COMMAND ${FK_FUZZ_SRC}/run.sh 10 ${FK_FUZZ_TARGETS})
set_tests_properties(fuzz_regress fuzz_smoke PROPERTIES ENVIRONMENT "${FK_FUZZ_ENV}")
set_tests_properties(fuzz_regress PROPERTIES TIMEOUT 300)
set_tests_properties(fuzz_smoke PROPERTIES TIMEOUT 600)
