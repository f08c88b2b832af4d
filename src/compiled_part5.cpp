// stint::compiled (meson's stint_compiled_dep, CMake's stint::compiled), part 5 of 6: the flight recorder, crash dumps, Perfetto's writer, the execution trace.
// The session side compiled once, in parts that compile in parallel, for programs built with
// STINT_SEPARATE_COMPILATION (include/stint/detail/separate_compilation.hpp, include/stint/impl/src.hpp).
#define STINT_COMPILED_PART 5
#include <stint/impl/src.hpp>
