# Warnings for cuboid's own targets: cuboid_warnings(target)
function(cuboid_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-unused-parameter)
endfunction()
