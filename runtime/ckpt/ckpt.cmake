# runtime/ckpt/ckpt.cmake: libflashkern_ckpt, the checkpoint loader (fk_checkpoint.h), static and
# shared beside libflashkern, with FK_BUILD_CHECKPOINTS (included by CMakeLists.txt). It reads
# safetensors and JSON (jansson: Debian libjansson-dev) and links libflashkern; libflashkern itself
# stays free of any dependency (tests/lib_only.sh). Targets: flashkern_ckpt (static),
# flashkern_ckpt_shared (libflashkern_ckpt.so, the core's soname rule); installed with the header
# and exported as flashkern::flashkern_ckpt and flashkern::flashkern_ckpt_shared.
if(CMAKE_CROSSCOMPILING)
  # the AArch64 cross build (the tests' scenario) takes the target's multiarch jansson
  # (Debian: dpkg --add-architecture arm64; libjansson-dev:arm64), statically
  find_path(FK_JANSSON_INCLUDE jansson.h PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH NO_DEFAULT_PATH)
  find_library(FK_JANSSON_LIB NAMES libjansson.a PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}
               NO_CMAKE_FIND_ROOT_PATH NO_DEFAULT_PATH)
else()
  find_path(FK_JANSSON_INCLUDE jansson.h)
  find_library(FK_JANSSON_LIB jansson)
endif()
if(NOT FK_JANSSON_INCLUDE OR NOT FK_JANSSON_LIB)
  message(FATAL_ERROR "FK_BUILD_CHECKPOINTS=ON needs jansson (Debian 12: apt-get install libjansson-dev)")
endif()

# one concern per file (runtime/ckpt/ckpt.h lists them); a layer above the programs (tests/runtime_layers.sh)
set(FK_CKPT_SOURCES runtime/ckpt/json.c runtime/ckpt/safetensors.c runtime/ckpt/index.c runtime/ckpt/config.c
  runtime/ckpt/names.c runtime/ckpt/convert.c runtime/ckpt/gguf.c runtime/ckpt/model.c)
add_library(fk_ckpt_objects OBJECT ${FK_CKPT_SOURCES})
target_include_directories(fk_ckpt_objects PRIVATE runtime runtime/include generated ${FK_JANSSON_INCLUDE})
target_compile_options(fk_ckpt_objects PRIVATE ${FK_WARNINGS})

add_library(flashkern_ckpt STATIC $<TARGET_OBJECTS:fk_ckpt_objects>)
target_include_directories(flashkern_ckpt PUBLIC ${FK_PUBLIC_INCLUDES})
# installed, a static host links -ljansson -lm by name (no path of this machine in the package)
target_link_libraries(flashkern_ckpt PUBLIC flashkern
  PRIVATE $<BUILD_INTERFACE:${FK_JANSSON_LIB}> $<INSTALL_INTERFACE:jansson> m)
add_library(flashkern_ckpt_shared SHARED $<TARGET_OBJECTS:fk_ckpt_objects>)
set_target_properties(flashkern_ckpt_shared PROPERTIES OUTPUT_NAME flashkern_ckpt
  VERSION ${PROJECT_VERSION} SOVERSION ${FK_SOVERSION})
target_include_directories(flashkern_ckpt_shared PUBLIC ${FK_PUBLIC_INCLUDES})
target_link_libraries(flashkern_ckpt_shared PUBLIC flashkern_shared PRIVATE ${FK_JANSSON_LIB} m)
add_library(flashkern::flashkern_ckpt ALIAS flashkern_ckpt)
add_library(flashkern::flashkern_ckpt_shared ALIAS flashkern_ckpt_shared)

install(TARGETS flashkern_ckpt flashkern_ckpt_shared EXPORT flashkernTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES runtime/include/fk_checkpoint.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/flashkern)

# flashkern-run (runtime/cli/flashkern_run.c): a checkpoint directory to tokens, or code frames to a
# WAV file through libsndfile (Debian libsndfile1-dev); installed beside the libraries
if(NOT FK_AARCH64_TOOLS)
  find_path(FK_SNDFILE_INCLUDE sndfile.h)
  find_library(FK_SNDFILE_LIB sndfile)
  if(NOT FK_SNDFILE_INCLUDE OR NOT FK_SNDFILE_LIB)
    message(FATAL_ERROR "FK_BUILD_CHECKPOINTS=ON builds flashkern-run, which needs libsndfile (Debian 12: apt-get install libsndfile1-dev)")
  endif()
  add_executable(flashkern-run runtime/cli/flashkern_run.c)
  target_include_directories(flashkern-run PRIVATE ${FK_SNDFILE_INCLUDE})
  target_compile_options(flashkern-run PRIVATE ${FK_WARNINGS})
  target_link_libraries(flashkern-run PRIVATE flashkern_ckpt ${FK_SNDFILE_LIB} m)
  install(TARGETS flashkern-run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
