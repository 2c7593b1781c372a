# Strict warnings for trainscope's own targets only (never for third-party code).
# -Wno-restrict: GCC 12 reports false positives for std::string operator+ at
# -O2 (GCC bug 105329). -Wno-missing-field-initializers: C++20 designated
# initializers (`{.status = RunStatus::kRunning}`) leave the other fields at
# their defaults on purpose; GCC 12 warns about them anyway.
# TRAINSCOPE_WERROR off: warnings stay warnings, for a compiler this project
# is not checked with (scripts/gpu-check.sh builds with the GPU machine's own).
option(TRAINSCOPE_WERROR "Warnings are errors (Debian 12's GCC and clang are checked)" ON)
function(trainscope_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra $<$<BOOL:${TRAINSCOPE_WERROR}>:-Werror> -Wshadow
                         -Wnon-virtual-dtor -Wno-unused-parameter -Wno-missing-field-initializers
                         $<$<CXX_COMPILER_ID:GNU>:-Wno-restrict>)
endfunction()
