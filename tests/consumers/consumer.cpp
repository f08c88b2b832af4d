// A framework-style consumer of an installed stint: records a scope and an op, exports a trace.
#include <stint/stint.hpp>

#include <cstddef>
#include <cstdio>

int main(int argc, char** argv) {
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("consumer::main");
        STINT_OP(stint::config<>, "consumer::op", argc);
    }
    prof.stop();
    std::size_t program_events = 0;  // the main thread's registration is an overhead event of its own
    for (const stint::event& e : prof.events()) program_events += e.kind != stint::event_kind::overhead ? 1 : 0;
    if (program_events != 2 || prof.stats().overhead_events != 1) return 1;
    prof.export_chrome_trace(argc > 1 ? argv[1] : "consumer.pt.trace.json");
    std::puts("consumer ok");
    return 0;
}
