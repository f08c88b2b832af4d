// A framework-style consumer of an installed stint: records a scope and an op, exports a trace.
#include <stint/stint.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    stint::profiler<> prof;
    prof.start();
    {
        STINT_SCOPE("consumer::main");
        STINT_OP(stint::config<>, "consumer::op", argc);
    }
    prof.stop();
    if (prof.events().size() != 2) return 1;
    prof.export_chrome_trace(argc > 1 ? argv[1] : "consumer.pt.trace.json");
    std::puts("consumer ok");
    return 0;
}
