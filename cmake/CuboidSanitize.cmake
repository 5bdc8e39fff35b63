# Checked builds (docs/testing.md): each in its own build folder, never the Release one.
#
# CUBOID_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on every target; any report stops
#   the program (no recovery), so a test that trips one fails.
# CUBOID_FUZZ: the libFuzzer harnesses of tests/fuzz (clang only). Every library is compiled with
#   the fuzzer's coverage instrumentation, so the harnesses can steer into it.
option(CUBOID_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
option(CUBOID_FUZZ "Build the libFuzzer harnesses in tests/fuzz (needs clang)" OFF)

if(CUBOID_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1 -g)
  add_link_options(-fsanitize=address,undefined -fno-sanitize-recover=all)
endif()

if(CUBOID_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CUBOID_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
