// The second header-only file of tests/header_only_link (first.cpp says why).
#include <stint/stint.hpp>
#include <stint/profiler/on_demand_server.hpp>

#include <string>

std::string table_from_the_second_file() {
    stint::profiler<stint::config<stint::with_stack<>>> prof;
    prof.start();
    { STINT_SCOPE("second_file_scope"); }
    prof.stop();
    return prof.key_averages().table();
}
