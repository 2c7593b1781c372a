# trainscope_torch_target(TORCH_DIR INCLUDE_FOLDER): the imported target
# trainscope::torch for the libtorch inside the torch package at TORCH_DIR
# (site-packages/torch). Used by the build (cmake/TorchFromPython.cmake) and
# by an installed trainscope's find_package(trainscope).
#
# The package's headers come without the copies of fmt and protobuf it also
# ships (newer than Debian's, which trainscope links): INCLUDE_FOLDER is made
# a folder of links to the rest, so <fmt/...> and <google/protobuf/...> stay
# Debian's. Linked: libtorch_cpu and libc10 (the CPU half; libtorch.so would
# also load the CUDA half, hundreds of MB, into every process).
function(trainscope_torch_target torch_dir inc)
  if(TARGET trainscope::torch)
    return()
  endif()
  file(REMOVE_RECURSE "${inc}")
  file(MAKE_DIRECTORY "${inc}")
  file(GLOB entries RELATIVE "${torch_dir}/include" "${torch_dir}/include/*")
  foreach(e IN LISTS entries)
    if(NOT e MATCHES "^(fmt|google)$")
      file(CREATE_LINK "${torch_dir}/include/${e}" "${inc}/${e}" SYMBOLIC)
    endif()
  endforeach()
  foreach(lib torch_cpu c10)
    find_library(_ts_torch_${lib} ${lib} PATHS "${torch_dir}/lib" NO_DEFAULT_PATH NO_CACHE)
    if(NOT _ts_torch_${lib})
      message(FATAL_ERROR "torch: no lib${lib}.so in ${torch_dir}/lib: reinstall torch there")
    endif()
  endforeach()
  add_library(trainscope::torch INTERFACE IMPORTED GLOBAL)
  set_target_properties(trainscope::torch PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${inc};${inc}/torch/csrc/api/include"
    INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=1"
    INTERFACE_LINK_LIBRARIES "${_ts_torch_torch_cpu};${_ts_torch_c10}")
endfunction()
