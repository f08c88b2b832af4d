// Built header-only (no define): runs a profiler made by a separately compiled file (run.py, case 2).
#include <stint/stint.hpp>

void profile_one_scope(stint::profiler<>& prof) {
    prof.start();
    { STINT_SCOPE("mixed::scope"); }
    prof.stop();
}
