// stint::compiled (meson's stint_compiled_dep, CMake's stint::compiled): the session side compiled once,
// for programs built with STINT_SEPARATE_COMPILATION (include/stint/detail/separate_compilation.hpp).
#include <stint/impl/src.hpp>
