# bench/bench.cmake: the benchmarks (bench/README.md), included by CMakeLists.txt with FK_BUILD_BENCH:
# oneDNN, OpenBLAS, FFTW and OpenMP peers, bench/report.py (Python 3) rendering the results.
# ---- bench: the results, rendered by bench/report.py from each bench's CSV (bench/README.md) ----
# Every bench-* target runs its bench (which writes bench/results/<bench>.csv and <bench>-meta.csv),
# then report.py (bench/results/<bench>.md, the plot data and the plot). The bench_report test
# renders every committed CSV again and fails if a committed .md or .dat differs from it.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(FK_BENCH_RESULTS ${CMAKE_SOURCE_DIR}/bench/results)
set(FK_BENCH_REPORT ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/bench/report.py --results ${FK_BENCH_RESULTS})

# ---- bench: fk_bench_gemv against oneDNN, OpenBLAS and the compiler (bench/README.md) --------
option(FK_BENCH_FLASHKERN "Time flashkern's GEMV leaves in fk_bench_gemv" ON)
find_library(FK_DNNL dnnl REQUIRED)
find_path(FK_DNNL_INCLUDE dnnl.h PATH_SUFFIXES oneapi/dnnl REQUIRED)
find_library(FK_OPENBLAS openblas REQUIRED)
find_path(FK_OPENBLAS_INCLUDE openblas_config.h PATH_SUFFIXES openblas-pthread openblas REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS C)   # oneDNN runs on libgomp; the bench sets its thread count
find_package(Threads REQUIRED)
add_executable(fk_bench_gemv bench/fk_bench_gemv.c bench/fkb_common.c bench/fkb_harness.c bench/gemv_ref.c bench/peer_autovec.c
  bench/peer_onednn.c bench/peer_openblas.c bench/bw_probe.c)
target_include_directories(fk_bench_gemv SYSTEM PRIVATE ${FK_DNNL_INCLUDE} ${FK_OPENBLAS_INCLUDE})
target_compile_options(fk_bench_gemv PRIVATE ${FK_WARNINGS} -O2)
# the compiler's own vectorization of the contract order is a peer: it gets the host's best flags
set_source_files_properties(bench/peer_autovec.c PROPERTIES COMPILE_OPTIONS "-O3;-march=native;-ffp-contract=off")
set_source_files_properties(bench/gemv_ref.c PROPERTIES COMPILE_OPTIONS "-ffp-contract=off;-fno-tree-vectorize")
target_link_libraries(fk_bench_gemv PRIVATE ${FK_DNNL} ${FK_OPENBLAS} ${OpenMP_C_LIBRARIES} Threads::Threads m)
if(FK_BENCH_FLASHKERN)
  target_sources(fk_bench_gemv PRIVATE bench/contender_flashkern.c)
  target_compile_definitions(fk_bench_gemv PRIVATE FK_BENCH_WITH_FLASHKERN FKB_FLASHKERN_VERSION="${PROJECT_VERSION}")
  target_link_libraries(fk_bench_gemv PRIVATE flashkern)
endif()
add_custom_target(bench-gemv
  COMMAND fk_bench_gemv --out ${FK_BENCH_RESULTS}
  COMMAND ${FK_BENCH_REPORT} gemv
  DEPENDS fk_bench_gemv WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "GEMV benchmark (several minutes): bench/results/gemv.csv, gemv.md, gemv.png" USES_TERMINAL VERBATIM)
add_custom_target(bench-gemm
  COMMAND fk_bench_gemv --gemm --out ${FK_BENCH_RESULTS}
  COMMAND ${FK_BENCH_REPORT} gemm
  DEPENDS fk_bench_gemv WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "GEMM benchmark (M = 8..300, hot): bench/results/gemm.csv, gemm.md" USES_TERMINAL VERBATIM)

# ---- bench: fk_bench_state, ShortConv and qkprep against the compiler, at L2 (bench/README.md) --
add_executable(fk_bench_state bench/fk_bench_state.c bench/fkb_common.c bench/fkb_harness.c bench/state_scalar.c
  bench/state_autovec.c bench/l2_probe.c)
target_compile_options(fk_bench_state PRIVATE ${FK_WARNINGS} -O2)
# peers: the compiler's vectorization of the contract (best host flags), and the contract's scalar C
set_source_files_properties(bench/state_autovec.c PROPERTIES COMPILE_OPTIONS "-O3;-march=native;-ffp-contract=off")
set_source_files_properties(bench/state_scalar.c PROPERTIES
  COMPILE_OPTIONS "-O2;-march=native;-ffp-contract=off;-fno-tree-vectorize")
target_compile_definitions(fk_bench_state PRIVATE FKB_FLASHKERN_VERSION="${PROJECT_VERSION}")
target_link_libraries(fk_bench_state PRIVATE flashkern m)
add_custom_target(bench-state
  COMMAND fk_bench_state --out ${FK_BENCH_RESULTS}
  COMMAND ${FK_BENCH_REPORT} state
  DEPENDS fk_bench_state WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "ShortConv and qkprep benchmark (seconds): bench/results/state.csv, state.md" USES_TERMINAL VERBATIM)
# ---- end fk_bench_state ---------------------------------------------------------------------

# ---- bench: fk_bench_fft, irfft and the ISTFT frame against FFTW and OpenBLAS (bench/README.md) --
find_library(FK_FFTW3F fftw3f REQUIRED)
find_path(FK_FFTW3_INCLUDE fftw3.h REQUIRED)
add_executable(fk_bench_fft bench/fk_bench_fft.c bench/fkb_common.c bench/fkb_harness.c bench/fft_scale.c bench/fft_peer_frame.c)
target_include_directories(fk_bench_fft SYSTEM PRIVATE ${FK_FFTW3_INCLUDE} ${FK_OPENBLAS_INCLUDE})
target_compile_options(fk_bench_fft PRIVATE ${FK_WARNINGS} -O2)
# the 1/N pass charged to FFTW gets the host's best flags; the user's frame is plain -O2
set_source_files_properties(bench/fft_scale.c PROPERTIES COMPILE_OPTIONS "-O3;-march=native")
target_compile_definitions(fk_bench_fft PRIVATE FKB_FLASHKERN_VERSION="${PROJECT_VERSION}")
target_link_libraries(fk_bench_fft PRIVATE flashkern ${FK_FFTW3F} ${FK_OPENBLAS} m)
add_custom_target(bench-fft
  COMMAND fk_bench_fft --out ${FK_BENCH_RESULTS}
  COMMAND ${FK_BENCH_REPORT} fft
  DEPENDS fk_bench_fft WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "inverse FFT and ISTFT frame benchmark (seconds): bench/results/fft.csv, fft.md, fft.png" USES_TERMINAL VERBATIM)
# ---- end fk_bench_fft -----------------------------------------------------------------------

# ---- bench: fk_bench_runtime, the plan's cost and its team against direct calls and OpenMP ---------
add_executable(fk_bench_runtime bench/fk_bench_runtime.c bench/runtime_peers.c bench/fkb_common.c bench/fkb_harness.c bench/bw_probe.c)
target_compile_options(fk_bench_runtime PRIVATE ${FK_WARNINGS} -O2)
set_source_files_properties(bench/runtime_peers.c PROPERTIES COMPILE_OPTIONS "${OpenMP_C_FLAGS}")
target_compile_definitions(fk_bench_runtime PRIVATE FKB_FLASHKERN_VERSION="${PROJECT_VERSION}")
target_link_libraries(fk_bench_runtime PRIVATE flashkern ${OpenMP_C_LIBRARIES} Threads::Threads m)
add_custom_target(bench-runtime
  COMMAND fk_bench_runtime --out ${FK_BENCH_RESULTS}
  COMMAND ${FK_BENCH_REPORT} runtime
  DEPENDS fk_bench_runtime WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "runtime benchmark (about a minute): bench/results/runtime.csv, runtime.md" USES_TERMINAL VERBATIM)
# ---- end fk_bench_runtime -------------------------------------------------------------------

# ---- bench: fk_bench_model, whole LFM2 model steps against PyTorch CPU (bench/README.md) -----------
# The flashkern side of bench/run_model.sh; the PyTorch side is bench/torch_peer.py (/opt/fkref).
add_executable(fk_bench_model bench/fk_bench_model.c bench/fkb_common.c bench/fkb_harness.c bench/bw_probe.c)
target_compile_options(fk_bench_model PRIVATE ${FK_WARNINGS} -O2)
target_compile_definitions(fk_bench_model PRIVATE FKB_FLASHKERN_VERSION="${PROJECT_VERSION}")
target_link_libraries(fk_bench_model PRIVATE flashkern Threads::Threads m)
add_custom_target(bench-model
  COMMAND ${CMAKE_SOURCE_DIR}/bench/run_model.sh --fk $<TARGET_FILE:fk_bench_model> --out ${FK_BENCH_RESULTS}
  DEPENDS fk_bench_model WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
  COMMENT "whole-model benchmark against PyTorch CPU (minutes): bench/results/model.md, model.csv, model.png"
  USES_TERMINAL VERBATIM)
# ---- end fk_bench_model ---------------------------------------------------------------------


# ---- bench: fk_bench_ckpt, checkpoints: readiness and flashkern-run's tokens/s (bench/README.md) ----
# It writes LFM2-350M-shaped checkpoints with the tests' writer (tests/ckpt/ckpt_write.c), so it needs
# the tests and the loader (the default preset has both).
if(TARGET fk_ckpt_write AND TARGET flashkern-run)
  add_executable(fk_bench_ckpt bench/fk_bench_ckpt.c bench/fkb_common.c bench/fkb_harness.c bench/bw_probe.c)
  target_compile_options(fk_bench_ckpt PRIVATE ${FK_WARNINGS} -O2)
  target_compile_definitions(fk_bench_ckpt PRIVATE FKB_FLASHKERN_VERSION="${PROJECT_VERSION}")
  target_link_libraries(fk_bench_ckpt PRIVATE fk_ckpt_write flashkern_ckpt flashkern Threads::Threads m)
  add_custom_target(bench-ckpt
    COMMAND fk_bench_ckpt --run $<TARGET_FILE:flashkern-run> --model-bench $<TARGET_FILE:fk_bench_model>
      --out ${FK_BENCH_RESULTS}
    COMMAND ${FK_BENCH_REPORT} ckpt
    DEPENDS fk_bench_ckpt flashkern-run fk_bench_model WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    COMMENT "checkpoint benchmark (minutes; 2.2 GB under /var/tmp): bench/results/ckpt.csv, ckpt.md" USES_TERMINAL VERBATIM)
endif()
# ---- end fk_bench_ckpt ----------------------------------------------------------------------

# ---- bench: fk_bench_audio, LFM2.5-Audio steps and PCM against liquid-audio on PyTorch (bench/README.md) ----
# The checkpoint (2.8 GB, LFM2.5-Audio's shapes, synthetic bf16) is written once by bench/audio_peer.py under
# $FK_BENCH_AUDIO_DIR (default /tmp/fk_bench_audio); the PyTorch peer is the same script (/opt/fkref).
if(TARGET flashkern_ckpt)
  add_executable(fk_bench_audio bench/fk_bench_audio.c bench/fkb_common.c bench/fkb_harness.c bench/bw_probe.c)
  target_compile_options(fk_bench_audio PRIVATE ${FK_WARNINGS} -O2)
  target_compile_definitions(fk_bench_audio PRIVATE FKB_FLASHKERN_VERSION="${PROJECT_VERSION}")
  target_link_libraries(fk_bench_audio PRIVATE flashkern_ckpt flashkern Threads::Threads m)
  add_custom_target(bench-audio
    COMMAND fk_bench_audio --peer ${CMAKE_SOURCE_DIR}/bench/audio_peer.py --out ${FK_BENCH_RESULTS}
    COMMAND ${FK_BENCH_REPORT} audio
    DEPENDS fk_bench_audio WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
    COMMENT "LFM2.5-Audio benchmark against PyTorch (minutes; 2.8 GB checkpoint under /tmp): bench/results/audio.csv, audio.md"
    USES_TERMINAL VERBATIM)
endif()
# ---- end fk_bench_audio ---------------------------------------------------------------------
