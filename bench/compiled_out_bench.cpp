// The compiled-out row: the same loop as stint_scope_no_session, in a translation unit built with
// STINT_DISABLE (tests/codegen proves the object code equals the uninstrumented loop's).
#define STINT_DISABLE
#include <benchmark/benchmark.h>

#include <stint/stint.hpp>

namespace {

void stint_scope_compiled_out(benchmark::State& state) {
    for (auto _ : state) {
        STINT_SCOPE("bench");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_scope_compiled_out);

}  // namespace
