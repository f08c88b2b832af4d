// stint::compiled (meson's stint_compiled_dep, CMake's stint::compiled), part 1 of 6: the recording side.
// The session side compiled once, in parts that compile in parallel, for programs built with
// STINT_SEPARATE_COMPILATION (include/stint/detail/separate_compilation.hpp, include/stint/impl/src.hpp).
#define STINT_COMPILED_PART 1
#include <stint/impl/src.hpp>
