# The include layering of cuboid's folders: each rule "FOLDER:FORBIDDEN[,FORBIDDEN...]" says that
# no source under FOLDER includes a header under any FORBIDDEN folder. The layers run upward:
#   sim  <-  hardware_models  <-  strategies  <-  validate, bench, tests
#   validate/plan  <-  validate/report  <-  validate/cuda  <-  validate/cli
# (sim knows no transformer and no GPU model; the execution plan and the report are plain C++ that
# builds without CUDA; the GPU executor fills the report's figures; the cuboid-validate program
# uses all three.)
#
#   cmake -DROOT=<source dir> [-DEXTRA_RULE=FOLDER:FORBIDDEN] -P check_includes.cmake
# exits non-zero and names each offending file and include. EXTRA_RULE adds a rule, so that a
# test can show that a known include is caught.
set(rules
  "sim:hardware_models/,strategies/,validate/,calibrate/"
  "hardware_models:strategies/,validate/,calibrate/"
  "strategies:validate/,calibrate/"
  "calibrate:strategies/,validate/"
  "validate/plan:validate/report/,validate/cuda/,validate/cli/"
  "validate/report:validate/cuda/,validate/cli/"
  "validate/cuda:validate/cli/")
if(DEFINED EXTRA_RULE)
  list(APPEND rules "${EXTRA_RULE}")
endif()
if(NOT DEFINED ROOT)
  message(FATAL_ERROR "check_includes.cmake: pass -DROOT=<the source directory>")
endif()

set(violations 0)
foreach(rule IN LISTS rules)
  string(REPLACE ":" ";" parts "${rule}")
  list(GET parts 0 folder)
  list(GET parts 1 forbidden)
  string(REPLACE "," ";" forbidden "${forbidden}")
  if(NOT IS_DIRECTORY "${ROOT}/${folder}")
    message(SEND_ERROR "rule ${rule}: no folder ${ROOT}/${folder}")
    math(EXPR violations "${violations} + 1")
    continue()
  endif()
  file(GLOB_RECURSE sources "${ROOT}/${folder}/*.hpp" "${ROOT}/${folder}/*.cpp" "${ROOT}/${folder}/*.cu")
  foreach(source IN LISTS sources)
    foreach(target IN LISTS forbidden)
      file(STRINGS "${source}" hits REGEX "^[ \t]*#[ \t]*include[ \t]*\"${target}")
      foreach(hit IN LISTS hits)
        file(RELATIVE_PATH rel "${ROOT}" "${source}")
        message(SEND_ERROR "${rel}: ${hit} (${folder}/ must not include ${target})")
        math(EXPR violations "${violations} + 1")
      endforeach()
    endforeach()
  endforeach()
endforeach()

if(violations GREATER 0)
  message(FATAL_ERROR "${violations} include(s) against the layering")
endif()
list(LENGTH rules n)
message(STATUS "include layering: ${n} rules hold")
