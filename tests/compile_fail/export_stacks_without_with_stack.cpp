// expect: stint: export_stacks() needs stacks. Fix: add stint::with_stack<> to the profiler's config
// export_stacks on a profiler whose config has no with_stack fails to compile with stint's message.
#include <stint/stint.hpp>

void use() {
    stint::profiler<> prof;
    prof.export_stacks("cpu.stacks");
}
