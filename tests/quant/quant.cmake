# tests/quant (included by tests/tests.cmake): the quantized weight formats (runtime/fk_quant.c).
#   quant   tests/quant/test_quant.c: the binary16 conversions against the compiler's _Float16; every
#           case of fixtures/quant/ (the gguf package's blocks and dequantization): flashkern's RNE
#           quantizer, the exact dequantization, the packed layout, the ties where RNE and ggml differ.
add_executable(test_quant tests/quant/test_quant.c)
target_include_directories(test_quant PRIVATE ${CMAKE_SOURCE_DIR}/tests ${CMAKE_SOURCE_DIR}/runtime)
target_compile_options(test_quant PRIVATE ${FK_WARNINGS} -ffp-contract=off)
target_link_libraries(test_quant PRIVATE fk_suite)
add_test(NAME quant COMMAND test_quant --jobs 2)
set_tests_properties(quant PROPERTIES TIMEOUT 300 PROCESSORS 2)
