// framework_regions: what a framework embeds. Timed regions of its own kind with always-on counters,
// scopes named after the dynamic type of the object they run in, and compiled-region annotations;
// prints the events of one profiled run and the region counters, which need no session.
#include <stint/stint.hpp>

#include <cstdio>
#include <memory>
#include <string_view>
#include <vector>

namespace {

struct dynamo_timed {
    static constexpr std::string_view label = "dynamo_timed";
};

class optimizer {
public:
    virtual ~optimizer() = default;
    virtual void step() = 0;
};

class sgd : public optimizer {
public:
    void step() override {
        STINT_SCOPE_DYNAMIC("Optimizer.step", "step", *this);  // "Optimizer.step#sgd.step"
        for (double& w : weights_) w *= 0.999;
    }

private:
    std::vector<double> weights_ = std::vector<double>(1024, 1.0);
};

class momentum_sgd : public sgd {};  // "Optimizer.step#momentum_sgd.step"

void compile_graph() {
    STINT_REGION(dynamo_timed, "call_user_compiler");  // "call_user_compiler (dynamo_timed)"
    std::vector<int> nodes(4096);
    for (std::size_t i = 0; i < nodes.size(); ++i) nodes[i] = static_cast<int>(i * i % 7);
}

}  // namespace

int main() {
    compile_graph();  // counted even though nothing records

    std::vector<std::unique_ptr<optimizer>> optimizers;
    optimizers.push_back(std::make_unique<sgd>());
    optimizers.push_back(std::make_unique<momentum_sgd>());

    stint::profiler<> prof;
    prof.start();
    compile_graph();
    for (std::uint32_t compile_id = 0; compile_id < 2; ++compile_id) {
        stint::compiled_region region(0, compile_id);  // "Torch-Compiled Region: 0/<compile_id>"
        for (const auto& opt : optimizers) opt->step();
    }
    prof.stop();

    for (const stint::event& e : prof.events()) {
        std::printf("%*s%.*s\n", 2 * e.depth, "", static_cast<int>(e.name.size()), e.name.data());
    }
    const stint::region_kind_stats counters = stint::region_counters<dynamo_timed>();
    for (const stint::region_stats& r : counters.regions) {
        std::printf("%.*s (%.*s): %llu regions, %.3f ms\n", static_cast<int>(r.name.size()), r.name.data(),
                    static_cast<int>(counters.label.size()), counters.label.data(),
                    static_cast<unsigned long long>(r.count), static_cast<double>(r.total_ns) / 1e6);
    }
}
