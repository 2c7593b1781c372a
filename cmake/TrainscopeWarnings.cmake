# Strict warnings for trainscope's own targets only (never for third-party code).
# -Wno-restrict: GCC 12 reports false positives for std::string operator+ at
# -O2 (GCC bug 105329). -Wno-missing-field-initializers: C++20 designated
# initializers (`{.status = RunStatus::kRunning}`) leave the other fields at
# their defaults on purpose; GCC 12 warns about them anyway.
function(trainscope_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wshadow
                         -Wnon-virtual-dtor -Wno-unused-parameter -Wno-missing-field-initializers
                         $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)
endfunction()
