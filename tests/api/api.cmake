# tests/api (included by CMakeLists.txt): the public header and the host-facing helpers.
#   api               tests/api/test_api.c: the bf16 conversions against the contract model's RNE
#                     (all 2^32 patterns), in place and bulk; why a CPU feature is missing; the version.
#   api_headers       tests/api/headers.sh: flashkern.h compiles as C99, C11 (gcc, clang) and C++11..20
#                     (g++, clang++) with -Wall -Wextra -pedantic -Werror; a host of the plan API and one
#                     stamp (tests/api/host_cxx.c) links against libflashkern.a and runs, as C and as C++.
#   example_host_args tests/api/example_args.sh: fk_hello --help, its refusals of bad arguments (exit 2),
#                     a bad FK_CPU_MASK (exit 1), the sections of a small run and tables that fit.
add_executable(test_api tests/api/test_api.c)
target_include_directories(test_api PRIVATE ${CMAKE_SOURCE_DIR}/tests ${CMAKE_SOURCE_DIR}/runtime)
target_compile_options(test_api PRIVATE ${FK_WARNINGS})
target_link_libraries(test_api PRIVATE ${FK_HARNESS_LINK} ${FK_CRITERION})
add_test(NAME api COMMAND test_api --jobs 2)
set_tests_properties(api PROPERTIES TIMEOUT 600 PROCESSORS 2)

add_test(NAME api_headers COMMAND ${CMAKE_SOURCE_DIR}/tests/api/headers.sh)
# the library's own flags and compiler: a sanitizer build's archive links only with its sanitizer runtime
set_tests_properties(api_headers PROPERTIES TIMEOUT 300
  ENVIRONMENT "${FK_SCRIPT_ENV};FK_C_FLAGS=${CMAKE_C_FLAGS};FK_C_COMPILER_ID=${CMAKE_C_COMPILER_ID}")

add_test(NAME example_host_args COMMAND ${CMAKE_SOURCE_DIR}/tests/api/example_args.sh $<TARGET_FILE:fk_hello>)
set_tests_properties(example_host_args PROPERTIES TIMEOUT 120)
