# torch from a Python environment: the C++ library, the CLI's torch half and
# the Python module all build against the libtorch inside the torch package
# that TRAINSCOPE_TORCH_PYTHON imports (PyPI's wheel in the project's .venv
# by default; a conda or pip environment of the user's own through
# `make PYTHON=...` or -DTRAINSCOPE_TORCH_PYTHON=...). docs/torch.md.
#
# Not find_package(Torch): the wheel's TorchConfig.cmake of a CUDA build
# insists on a CUDA toolkit even for CPU code, which a machine without a GPU
# (CI) lacks. As torch.utils.cpp_extension does, the target is made from the
# package's include and lib folders.
#
# Defines the imported target trainscope::torch and, for the build and the
# manifest: TRAINSCOPE_TORCH_VERSION, _VERSION_NUMBER (major*100 + minor),
# _GIT, _CUDA, _CUDNN, _DIR, _LIB_DIR, _SITE (its site-packages), and the
# pybind11 ABI strings torch._C was built with (_PYBIND11_*), the Python it
# runs in (_PYTHON_INCLUDE, _EXT_SUFFIX).

# The supported range, as major*100 + minor: the oldest release built and
# tested here, and the newest (docs/torch.md has how they were checked).
set(TRAINSCOPE_TORCH_MIN 211)
set(TRAINSCOPE_TORCH_MAX 215)

set(TRAINSCOPE_TORCH_PYTHON "" CACHE FILEPATH
    "A python whose `import torch` is the torch to build against (make passes .venv/bin/python)")

function(_trainscope_torch_python out)
  if(TRAINSCOPE_TORCH_PYTHON)
    set(${out} "${TRAINSCOPE_TORCH_PYTHON}" PARENT_SCOPE)
  elseif(Python_EXECUTABLE)  # scikit-build-core (pip install .) sets this
    set(${out} "${Python_EXECUTABLE}" PARENT_SCOPE)
  elseif(EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python")
    set(${out} "${PROJECT_SOURCE_DIR}/.venv/bin/python" PARENT_SCOPE)
  else()
    find_program(_py NAMES python3 python REQUIRED)
    set(${out} "${_py}" PARENT_SCOPE)
  endif()
endfunction()

# Runs cmake/torch_info.py; under pip's build isolation (which hides the
# environment's own site-packages) it retries in isolated mode (-I), which
# sees the environment's torch again instead of fetching a second one.
function(_trainscope_torch_query python out_info)
  set(script "${PROJECT_SOURCE_DIR}/cmake/torch_info.py")
  execute_process(COMMAND "${python}" "${script}" OUTPUT_VARIABLE info
                  ERROR_VARIABLE err RESULT_VARIABLE rc ERROR_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    execute_process(COMMAND "${python}" -I "${script}" OUTPUT_VARIABLE info
                    ERROR_VARIABLE err2 RESULT_VARIABLE rc)
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "torch: ${python} ${err} ${err2}. Install torch there "
                        "(pip install -r requirements/torch.txt), or name a python that has it: "
                        "make PYTHON=/path/to/python (cmake -DTRAINSCOPE_TORCH_PYTHON=...)")
  endif()
  set(${out_info} "${info}" PARENT_SCOPE)
endfunction()

_trainscope_torch_python(_torch_py)
_trainscope_torch_query("${_torch_py}" _torch_info)
string(REPLACE "\n" ";" _torch_lines "${_torch_info}")
foreach(line IN LISTS _torch_lines)
  if(line MATCHES "^([a-z0-9_]+)=(.*)$")
    string(TOUPPER "${CMAKE_MATCH_1}" _k)
    set(TRAINSCOPE_TORCH_${_k} "${CMAKE_MATCH_2}")
  endif()
endforeach()

if(NOT TRAINSCOPE_TORCH_VERSION MATCHES "^([0-9]+)\\.([0-9]+)")
  message(FATAL_ERROR "torch: cannot read the version of the torch ${_torch_py} imports "
                      "('${TRAINSCOPE_TORCH_VERSION}')")
endif()
math(EXPR TRAINSCOPE_TORCH_VERSION_NUMBER "${CMAKE_MATCH_1} * 100 + ${CMAKE_MATCH_2}")
math(EXPR _min_major "${TRAINSCOPE_TORCH_MIN} / 100")
math(EXPR _min_minor "${TRAINSCOPE_TORCH_MIN} % 100")
math(EXPR _max_major "${TRAINSCOPE_TORCH_MAX} / 100")
math(EXPR _max_minor "${TRAINSCOPE_TORCH_MAX} % 100")
set(TRAINSCOPE_TORCH_RANGE "${_min_major}.${_min_minor} to ${_max_major}.${_max_minor}")
if(TRAINSCOPE_TORCH_VERSION_NUMBER LESS TRAINSCOPE_TORCH_MIN
   OR TRAINSCOPE_TORCH_VERSION_NUMBER GREATER TRAINSCOPE_TORCH_MAX)
  message(FATAL_ERROR "torch ${TRAINSCOPE_TORCH_VERSION} (${TRAINSCOPE_TORCH_DIR}) is not supported: "
                      "trainscope builds on torch ${TRAINSCOPE_TORCH_RANGE}; install one "
                      "(requirements/torch.txt pins the default) or name another python with "
                      "make PYTHON=...")
endif()
if(NOT TRAINSCOPE_TORCH_CXX11_ABI)
  message(FATAL_ERROR "torch ${TRAINSCOPE_TORCH_VERSION} was built with the pre-C++11 ABI "
                      "(_GLIBCXX_USE_CXX11_ABI=0), which this compiler's libraries do not use: "
                      "install a wheel from PyPI (every one since 2.7 uses the C++11 ABI)")
endif()
set(TRAINSCOPE_TORCH_LIB_DIR "${TRAINSCOPE_TORCH_DIR}/lib")
# make demo's .venv holds torch's C++ libraries only (the Makefile's
# TORCH_CORE): enough for the C++ build, not for `import torch`.
if(TRAINSCOPE_PYTHON AND NOT TRAINSCOPE_TORCH_IMPORTABLE)
  message(FATAL_ERROR "the Python package needs `import torch` to work in ${_torch_py}, and it "
                      "does not (${TRAINSCOPE_TORCH_IMPORT_ERROR}): install all of torch there "
                      "(make venv-full, or pip install -r requirements/torch.txt), or configure "
                      "with -DTRAINSCOPE_PYTHON=OFF")
endif()
message(STATUS "torch ${TRAINSCOPE_TORCH_VERSION} (CUDA: ${TRAINSCOPE_TORCH_CUDA}) from "
               "${TRAINSCOPE_TORCH_DIR}, for Python ${TRAINSCOPE_TORCH_PYTHON_VERSION}")

include("${CMAKE_CURRENT_LIST_DIR}/TrainscopeTorchTarget.cmake")
trainscope_torch_target("${TRAINSCOPE_TORCH_DIR}" "${PROJECT_BINARY_DIR}/torch-include")
find_library(TRAINSCOPE_TORCH_PYTHON_LIBRARY torch_python PATHS "${TRAINSCOPE_TORCH_LIB_DIR}"
             NO_DEFAULT_PATH NO_CACHE REQUIRED)
set(TRAINSCOPE_TORCH_PYTHON "${_torch_py}" CACHE FILEPATH
    "A python whose `import torch` is the torch to build against" FORCE)
