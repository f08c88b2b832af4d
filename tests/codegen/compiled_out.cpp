// Functions that check_codegen.py compiles three ways and compares function by function:
//   - without instrumentation (the script deletes every STINT_* line and the stint include),
//   - with -DSTINT_DISABLE,
//   - with -DSTINT_CONFIG=::stint::disabled (so STINT_OP(STINT_CONFIG, ...) is
//     STINT_OP(stint::disabled, ...)).
// Every STINT_* use is a whole statement on a line of its own, so deleting the line leaves the
// same program. The extern functions are defined nowhere: a call to one that survived in the
// compiled-out code would show as a call in the disassembly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stint/stint.hpp"

int next_id() noexcept;
std::string describe(const std::vector<float>& v);
void log_line(const char* text) noexcept;

// A loop with a scope nested in the function's scope, and an instant per iteration.
double sum_rows(const std::vector<std::vector<double>>& rows) {
    STINT_SCOPE("sum_rows");
    double total = 0;
    for (const auto& row : rows) {
        STINT_SCOPE("row");
        for (double x : row) total += x;
        STINT_INSTANT("row done");
    }
    return total;
}

// An op whose arguments have side effects: a compiled-out op evaluates none of them.
void scale(std::vector<float>& v, float factor) {
    STINT_OP(STINT_CONFIG, "aten::mul", v, factor, next_id(), describe(v), std::string(v.size(), 'x'));
    for (float& x : v) x *= factor;
}

// A function calling another, both instrumented, one of them in this file.
static int clamp_add(int a, int b) {
    STINT_SCOPE("clamp_add");
    const long sum = static_cast<long>(a) + b;
    return sum > 1000 ? 1000 : static_cast<int>(sum);
}
int accumulate(const std::vector<int>& values) {
    STINT_OP(STINT_CONFIG, "accumulate", values.size());
    int total = 0;
    for (int v : values) total = clamp_add(total, v);
    log_line("accumulated");
    return total;
}

// A recursive function.
std::uint64_t fib(unsigned n) {
    STINT_SCOPE("fib");
    if (n < 2) return n;
    STINT_INSTANT("fib split");
    return fib(n - 1) + fib(n - 2);
}

// Locals with destructors around the scopes: the unwinding code must not change either.
std::size_t joined_size(const std::vector<std::string>& parts) {
    STINT_OP(STINT_CONFIG, "join", parts.size(), next_id());
    std::string joined;
    for (const auto& part : parts) {
        STINT_SCOPE("append");
        joined += part;
        log_line(part.c_str());
    }
    return joined.size();
}

// Work handed to another thread: flow points compile to nothing, their ids unevaluated.
void hand_over(std::uint64_t id) {
    STINT_SCOPE("hand_over");
    STINT_FLOW_BEGIN(id + static_cast<std::uint64_t>(next_id()));
    log_line(id != 0 ? "handed over" : "nothing to hand over");
    STINT_FLOW_END(id);
}

// A counter sampled in a loop: compiled out, its value (a call here) is never evaluated.
int drain_queue(std::vector<int>& queue) {
    int total = 0;
    while (!queue.empty()) {
        STINT_COUNTER("queue depth", queue.size() + static_cast<std::size_t>(next_id()));
        total += queue.back();
        queue.pop_back();
    }
    return total;
}
