// The annotation header compiled out: a framework's file that includes only <stint/annotate.hpp> and
// uses its macros is, with -DSTINT_DISABLE, the same object code as the file without them. Every
// STINT_* use is a whole statement on a line of its own; the extern functions are defined nowhere
// (see compiled_out.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "stint/annotate.hpp"

std::string layer_name(int index);
std::vector<int> make_result(int n);
std::uint64_t next_task();

struct matmul_kind {
    static constexpr const char* label = "matmul";
};

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    STINT_OP(stint::config<stint::record_shapes>, "mylib::dot", a, b);
    double total = 0;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) total += a[i] * b[i];
    return total;
}

int run_layers(int n) {
    STINT_SCOPE("run_layers");
    int done = 0;
    for (int i = 0; i < n; ++i) {
        STINT_SCOPE_NAMED(layer_name(i));
        STINT_INSTANT("layer");
        STINT_COUNTER("layers done", done + next_task());
        STINT_OUTPUTS(make_result(i));
        ++done;
    }
    return done;
}

void hand_over() {
    STINT_SCOPE("hand_over");
    STINT_FLOW_BEGIN(next_task());
}
