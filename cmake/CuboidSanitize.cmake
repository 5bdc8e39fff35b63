# Checked builds (docs/testing.md): each in its own build folder, never the Release one.
#
# CUBOID_SANITIZE: AddressSanitizer + UndefinedBehaviorSanitizer on every target; any report stops
#   the program (no recovery), so a test that trips one fails.
# CUBOID_FUZZ: the libFuzzer harnesses of tests/fuzz (clang only). Every library is compiled with
#   the fuzzer's coverage instrumentation, so the harnesses can steer into it.
option(CUBOID_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
option(CUBOID_FUZZ "Build the libFuzzer harnesses in tests/fuzz (needs clang)" OFF)

if(CUBOID_SANITIZE)
  # Debug information: line tables only (clang -gline-tables-only, GCC -g1), after the build type's
  # -g, which it overrides. That is what a sanitizer report needs (function, file and line of each
  # frame), and it builds the checked build faster than full debug information (types, locals):
  # the checked build is half of what the README's test command compiles. For a debugger, add -g
  # to CMAKE_CXX_FLAGS of the checked build.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    set(cuboid_debug_info -gline-tables-only)
  else()
    set(cuboid_debug_info -g1)
  endif()
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -O1
                      ${cuboid_debug_info})
  add_link_options(-fsanitize=address,undefined -fno-sanitize-recover=all)
endif()

if(CUBOID_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "CUBOID_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
