# trainscope_unit(NAME SOURCES ... [TORCH_SOURCES ...] [TESTS ...]): a
# capability in a folder of its own under src/ (src/CMakeLists.txt adds
# every src/<folder>/CMakeLists.txt), so that adding one is that folder and
# nothing else (src/README.md, "A capability is one unit"):
#   SOURCES        its torch-free half (config section, record codec, view):
#                  compiled into libtrainscope, so the CLI's torch-free half
#                  and `serve` read its records without libtorch
#   TORCH_SOURCES  its observers: compiled into libtrainscope_train
#   TESTS          Python scripts run by CTest as Units.<NAME>.<script>,
#                  with the environment every unit test gets:
#                  TS_CLI (the executable), TS_CONFIGS (configs/), TS_WORK (a
#                  scratch folder of its own), TS_PYTHON and TS_PYTHONPATH
#                  (the Python package, when built; else empty). A script
#                  passes by exiting 0.
#
# trainscope_component(NAME SOURCES ... [TORCH_SOURCES ...]): any component's
# folder (core, store, train, ...): its torch-free sources join
# libtrainscope, its torch sources libtrainscope_train (when torch is built),
# so that src/CMakeLists.txt lists no component's files. A source's own
# compile options are set in its folder with TARGET_DIRECTORY.
function(trainscope_component name)
  cmake_parse_arguments(C "" "" "SOURCES;TORCH_SOURCES" ${ARGN})
  list(TRANSFORM C_SOURCES PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
  target_sources(trainscope PRIVATE ${C_SOURCES})
  if(TRAINSCOPE_WITH_TORCH AND C_TORCH_SOURCES)
    list(TRANSFORM C_TORCH_SOURCES PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
    target_sources(trainscope_train PRIVATE ${C_TORCH_SOURCES})
  endif()
endfunction()

function(trainscope_unit name)
  cmake_parse_arguments(U "" "" "SOURCES;TORCH_SOURCES;TESTS" ${ARGN})
  trainscope_component(${name} SOURCES ${U_SOURCES} TORCH_SOURCES ${U_TORCH_SOURCES})
  if(NOT TRAINSCOPE_BUILD_TESTS OR NOT TRAINSCOPE_WITH_TORCH)
    return()
  endif()
  set(python "")
  set(pythonpath "")
  if(TRAINSCOPE_PYTHON)
    set(python ${TRAINSCOPE_TORCH_PYTHON})
    set(pythonpath ${PROJECT_BINARY_DIR}/python)
  endif()
  foreach(script ${U_TESTS})
    get_filename_component(stem ${script} NAME_WE)
    set(test Units.${name}.${stem})
    add_test(NAME ${test} COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/${script})
    set_tests_properties(${test} PROPERTIES TIMEOUT 300 ENVIRONMENT
      "TS_CLI=$<TARGET_FILE:trainscope_cli>;TS_CONFIGS=${PROJECT_SOURCE_DIR}/configs;TS_WORK=${CMAKE_CURRENT_BINARY_DIR}/${stem};TS_PYTHON=${python};TS_PYTHONPATH=${pythonpath}")
  endforeach()
endfunction()
