// stint::compiled (meson's stint_compiled_dep, CMake's stint::compiled), part 3 of 6: the drain and the profiler.
// The session side compiled once, in parts that compile in parallel, for programs built with
// STINT_SEPARATE_COMPILATION (include/stint/detail/separate_compilation.hpp, include/stint/impl/src.hpp).
#define STINT_COMPILED_PART 3
#include <stint/impl/src.hpp>
