// Built with STINT_SEPARATE_COMPILATION: hands its profiler to a header-only file (run.py, case 2).
#include <stint/stint.hpp>

void profile_one_scope(stint::profiler<>& prof);

int main() {
    stint::profiler<> prof;
    profile_one_scope(prof);
    return prof.events().size() == 1 ? 0 : 1;
}
