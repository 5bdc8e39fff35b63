# Precompiled third-party headers for the targets whose many files include them (CUBOID_PCH, on in
# the checked build that scripts/fuzz.sh configures, off by default).
#
# Parsing nlohmann/json, Eigen, yaml-cpp or Catch2 costs every file that includes them a second or
# two, the same work each time; a target's precompiled header parses them once. Only targets with
# many such files get one, since building it costs a few seconds per target. Measured on the
# 2-core vm, clean builds: the checked build 9 min 23 s -> 8 min 20 s; the Release build (GCC)
# 6 min 31 s -> 6 min 8 s. The headers are included first in every file of the target, so there
# a file that uses them without its own #include still compiles: the default build, without
# precompiled headers (the Release build of scripts/test.sh), is the one that catches it.
option(CUBOID_PCH "Precompile the heavy third-party headers of the largest targets" OFF)

# cuboid_precompile(target header...): `header`s (as <name>) precompiled for `target`.
function(cuboid_precompile target)
  if(CUBOID_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
