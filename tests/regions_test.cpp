// Framework regions and names: STINT_REGION and its always-on counters (dynamo_timed), names from
// the dynamic type with STINT_SCOPE_DYNAMIC (test_high_level_trace), compiled-region annotations and
// cache-lookup events (test/dynamo/test_profiler.py), read from events() and from the Chrome trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "stint/stint.hpp"
#include "stint/recording/detail/dynamic_name_table.hpp"
#include "test_util.hpp"

namespace {

struct dynamo_timed {
    static constexpr std::string_view label = "dynamo_timed";
};
struct compile_phase {
    static constexpr std::string_view label = "compile_phase";
};

using stint_test::count_named;

/// The events of `prof`'s last window as the Chrome trace has them, parsed with nlohmann-json.
template <class Profiler>
std::vector<nlohmann::json> trace_events(const Profiler& prof) {
    stint_test::temp_dir dir;
    const std::string path = dir.file("regions.pt.trace.json");
    prof.export_chrome_trace(path);
    return stint_test::timed_events(stint_test::read_json(path));
}

using stint_test::spin_for;

/// A region's counters now (zero when none of that name has run yet).
template <class Kind>
stint::region_stats counters_of(std::string_view name) {
    const stint::region_kind_stats all = stint::region_counters<Kind>();
    const stint::region_stats* row = all.find(name);
    return row != nullptr ? *row : stint::region_stats{name, 0, 0};
}

// ---- dynamo_timed (test_dynamo_timed_profiling_isolated, ..._backend_compile) ----------------------

double inner_fn(double x) {
    STINT_REGION(dynamo_timed, "inner_fn");
    return std::sin(x);
}
double outer_fn(double x, double y) { return inner_fn(x) * y; }

void call_user_compiler() {
    STINT_REGION(dynamo_timed, "call_user_compiler");
    spin_for(std::chrono::microseconds(50));
}
void compile_fx() {
    STINT_REGION(dynamo_timed, "compile_fx");
    call_user_compiler();
}

void lower() {
    STINT_REGION(compile_phase, "lower");
    spin_for(std::chrono::microseconds(200));
}
// A second site with the same name: one row in the counters.
void lower_again() {
    STINT_REGION(compile_phase, "lower");
}
void schedule_phase() {
    STINT_REGION(compile_phase, "schedule");
    lower_again();
}

}  // namespace

TEST_CASE("a region shows as 'name (label)' in events and traces") {
    stint::profiler<> prof;
    prof.start();
    const double r = outer_fn(0.5, 2.0);
    compile_fx();
    prof.stop();
    CHECK(r == doctest::Approx(2.0 * std::sin(0.5)));

    const stint::event_list& events = prof.events();
    CHECK(count_named(events, "inner_fn (dynamo_timed)") == 1);
    REQUIRE(count_named(events, "call_user_compiler (dynamo_timed)") == 1);
    for (const stint::event& e : events) {
        if (e.name != "call_user_compiler (dynamo_timed)") continue;
        REQUIRE(e.parent != stint::no_index);
        CHECK(events[e.parent].name == "compile_fx (dynamo_timed)");
        CHECK(e.kind == stint::event_kind::user_annotation);
    }

    const std::vector<nlohmann::json> trace = trace_events(prof);
    CHECK(count_named(trace, "inner_fn (dynamo_timed)") == 1);
    CHECK(count_named(trace, "call_user_compiler (dynamo_timed)") == 1);
    for (const auto& e : trace) {
        CHECK(e.at("cat") == "user_annotation");
        CHECK(e.at("ph") == "X");
    }
}

TEST_CASE("region counters count every region, with or without a session") {
    const stint::region_stats before = counters_of<compile_phase>("lower");

    SUBCASE("without a session") {
        const auto began = std::chrono::steady_clock::now();
        for (int i = 0; i < 3; ++i) lower();
        const auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - began);
        const stint::region_stats after = counters_of<compile_phase>("lower");
        CHECK(after.count - before.count == 3);
        // Each region spins 200 us; the counter's ticks convert to at least that, and to no more than the
        // time the three calls took (measured around them on the steady clock; 5 % for the calibration).
        CHECK(after.total_ns - before.total_ns >= 3 * 200'000 * 95 / 100);
        CHECK(static_cast<double>(after.total_ns - before.total_ns) <= static_cast<double>(wall.count()) * 1.05);
    }
    SUBCASE("with a session: counted and recorded") {
        stint::profiler<> prof;
        prof.start();
        lower();
        lower();
        prof.stop();
        CHECK(count_named(prof.events(), "lower (compile_phase)") == 2);
        CHECK(counters_of<compile_phase>("lower").count - before.count == 2);
    }
    SUBCASE("a region still open is not counted yet") {
        std::uint64_t inside = 0;
        {
            STINT_REGION(compile_phase, "lower");
            inside = counters_of<compile_phase>("lower").count;
        }
        CHECK(inside == before.count);
        CHECK(counters_of<compile_phase>("lower").count == before.count + 1);
    }
}

TEST_CASE("region counters give one row per name, sorted, with the kind's totals") {
    lower();
    schedule_phase();  // "schedule" around a second "lower" site
    const stint::region_kind_stats stats = stint::region_counters<compile_phase>();
    CHECK(stats.label == "compile_phase");
    std::set<std::string_view> names;
    std::uint64_t count = 0;
    std::int64_t total = 0;
    for (const stint::region_stats& r : stats.regions) {
        CHECK(names.insert(r.name).second);  // both "lower" sites share a row
        count += r.count;
        total += r.total_ns;
    }
    CHECK(std::is_sorted(stats.regions.begin(), stats.regions.end(),
                         [](const auto& a, const auto& b) { return a.name < b.name; }));
    CHECK(stats.count == count);
    CHECK(stats.total_ns == total);
    REQUIRE(stats.find("schedule") != nullptr);
    REQUIRE(stats.find("lower") != nullptr);
    CHECK(stats.find("lower")->count >= 2);
    CHECK(stats.find("inner_fn") == nullptr);  // another kind's region

    const stint::region_kind_stats dynamo = stint::region_counters<dynamo_timed>();
    CHECK(dynamo.label == "dynamo_timed");
    CHECK(dynamo.find("lower") == nullptr);
    // Nested regions count in each: the outer one's time includes the inner one's.
    const stint::region_stats before_outer = counters_of<dynamo_timed>("compile_fx");
    const stint::region_stats before_inner = counters_of<dynamo_timed>("call_user_compiler");
    compile_fx();
    const stint::region_stats outer = counters_of<dynamo_timed>("compile_fx");
    const stint::region_stats inner = counters_of<dynamo_timed>("call_user_compiler");
    CHECK(outer.count - before_outer.count == 1);
    CHECK(inner.count - before_inner.count == 1);
    CHECK(outer.total_ns - before_outer.total_ns >= inner.total_ns - before_inner.total_ns);
    CHECK(inner.total_ns - before_inner.total_ns >= 50'000 * 95 / 100);
}

// The counters are the framework's own metrics: a translation unit whose STINT_CONFIG is disabled
// loses the event, not the count.
#undef STINT_CONFIG
#define STINT_CONFIG ::stint::disabled
namespace {
void region_in_disabled_config() { STINT_REGION(compile_phase, "disabled_config"); }
}  // namespace
#undef STINT_CONFIG
#define STINT_CONFIG ::stint::config<>

TEST_CASE("with STINT_CONFIG disabled a region is counted but not recorded") {
    const std::uint64_t before = counters_of<compile_phase>("disabled_config").count;
    stint::profiler<> prof;
    prof.start();
    region_in_disabled_config();
    region_in_disabled_config();
    prof.stop();
    CHECK(counters_of<compile_phase>("disabled_config").count - before == 2);
    CHECK(count_named(prof.events(), "disabled_config (compile_phase)") == 0);
    CHECK(prof.events().empty());
}

TEST_CASE("regions from many threads are all counted and recorded on their threads") {
    constexpr int threads = 4;
    constexpr int per_thread = 250;
    const std::uint64_t before = counters_of<compile_phase>("threaded").count;
    stint::profiler<> prof;
    prof.start();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([] {
            for (int i = 0; i < per_thread; ++i) {
                STINT_REGION(compile_phase, "threaded");
            }
        });
    }
    for (auto& t : pool) t.join();
    prof.stop();
    CHECK(counters_of<compile_phase>("threaded").count - before == threads * per_thread);
    CHECK(count_named(prof.events(), "threaded (compile_phase)") == threads * per_thread);
    std::set<std::uint64_t> tids;
    for (const stint::event& e : prof.events()) {
        if (e.name == "threaded (compile_phase)") tids.insert(prof.events().thread_of(e).os_tid);
    }
    CHECK(tids.size() == threads);
}

// ---- names from the dynamic type (test_high_level_trace) -------------------------------------------

namespace {

// The classes carry torch's names because the events are named after them.
struct batch {
    std::vector<double> x;
    std::vector<double> y;
};

class Optimizer {
public:
    explicit Optimizer(std::vector<double>& params, double lr) : params_(&params), lr_(lr) {}
    virtual ~Optimizer() = default;
    virtual void step() = 0;
    virtual void zero_grad() = 0;
    std::vector<double> grads;

protected:
    Optimizer(const Optimizer&) = default;
    std::vector<double>* params_;
    double lr_;
};

class SGD : public Optimizer {
public:
    using Optimizer::Optimizer;
    SGD(const SGD&) = default;
    void step() override {
        STINT_SCOPE_DYNAMIC("Optimizer.step", "step", *this);
        for (std::size_t i = 0; i < params_->size() && i < grads.size(); ++i) (*params_)[i] -= lr_ * grads[i];
    }
    void zero_grad() override {
        STINT_SCOPE_DYNAMIC("Optimizer.zero_grad", "zero_grad", *this);
        grads.assign(params_->size(), 0.0);
    }
};

class CustomSGD : public SGD {
public:
    using SGD::SGD;
};

class data_loader_iter {
public:
    virtual ~data_loader_iter() = default;
    virtual std::optional<batch> next() = 0;
};

// torch's iterator class name, leading underscore included (reserved in C++, harmless in a test).
class _SingleProcessDataLoaderIter : public data_loader_iter {
public:
    _SingleProcessDataLoaderIter(const std::vector<batch>& data) : data_(&data) {}
    std::optional<batch> next() override {
        STINT_SCOPE_DYNAMIC("enumerate(DataLoader)", "__next__", *this);
        if (at_ == data_->size()) return std::nullopt;
        return (*data_)[at_++];
    }

private:
    const std::vector<batch>* data_;
    std::size_t at_ = 0;
};

class DataLoader {
public:
    explicit DataLoader(std::vector<batch> data) : data_(std::move(data)) {}
    [[nodiscard]] std::unique_ptr<data_loader_iter> iter() const {
        return std::make_unique<_SingleProcessDataLoaderIter>(data_);
    }

private:
    std::vector<batch> data_;
};

/// A linear model y = w . x trained with squared error: enough to give the optimizer real gradients.
struct two_layer_net {
    std::vector<double> weights;
    [[nodiscard]] double forward(const std::vector<double>& x) const {
        double y = 0;
        for (std::size_t i = 0; i < x.size(); ++i) y += weights[i] * x[i];
        return y;
    }
};

void train(const DataLoader& loader, two_layer_net& model, Optimizer& optimizer) {
    const std::unique_ptr<data_loader_iter> it = loader.iter();
    while (std::optional<batch> data = it->next()) {
        const double y_pred = model.forward(data->x);
        const double error = y_pred - data->y[0];
        optimizer.zero_grad();
        for (std::size_t i = 0; i < data->x.size(); ++i) optimizer.grads[i] = 2 * error * data->x[i];
        optimizer.step();
    }
}

constexpr int samples = 8;  // N

DataLoader repeated_dataset() {
    std::vector<batch> data;
    for (int i = 0; i < samples; ++i) data.push_back({{1.0, 0.5 * i, -0.25}, {1.0}});
    return DataLoader(std::move(data));
}

/// judge() of the seed: every expected name occurs exactly as often as expected.
void judge(const std::map<std::string, std::size_t>& expected, const stint::event_list& events) {
    for (const auto& entry : expected) {
        INFO(entry.first);
        CHECK(count_named(events, entry.first) == entry.second);
    }
}

}  // namespace

TEST_CASE("a scope names itself after the object's dynamic type, once per call") {
    two_layer_net model{{0.1, 0.2, 0.3}};
    SGD optimizer(model.weights, 1e-4);
    const DataLoader dataloader = repeated_dataset();
    train(dataloader, model, optimizer);  // without profiling: nothing to record, nothing breaks

    // More instances change nothing: a name belongs to a site and a type, not to an object.
    SGD optimizer_duplicate(model.weights, 1e-4);
    const DataLoader dataloader_duplicate = repeated_dataset();

    const std::map<std::string, std::size_t> expected = {
        // +1: the last iteration enters __next__ and ends the loop.
        {"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", samples + 1},
        {"Optimizer.step#SGD.step", samples},
        {"Optimizer.zero_grad#SGD.zero_grad", samples},
    };
    stint::profiler<> prof;
    prof.start();
    train(dataloader, model, optimizer);
    prof.stop();
    judge(expected, prof.events());
    CHECK(prof.events().size() == 3 * samples + 1);  // one event per call, nothing else

    const std::vector<nlohmann::json> trace = trace_events(prof);
    for (const auto& entry : expected) {
        INFO(entry.first);
        CHECK(count_named(trace, entry.first) == entry.second);
    }

    // The name is made once per site and type: every event, in every session, points to one copy.
    const auto name_data = [](const stint::event_list& events, std::string_view name) {
        std::set<const char*> data;
        for (const stint::event& e : events) {
            if (e.name == name) data.insert(e.name.data());
        }
        return data;
    };
    const std::set<const char*> first = name_data(prof.events(), "Optimizer.step#SGD.step");
    CHECK(first.size() == 1);

    SUBCASE("a copied optimizer (the seed's pickle round trip)") {
        SGD copy(optimizer);
        stint::profiler<> again;
        again.start();
        train(dataloader, model, copy);
        again.stop();
        judge(expected, again.events());
        CHECK(name_data(again.events(), "Optimizer.step#SGD.step") == first);
    }
    SUBCASE("a subclass names its own type") {
        CustomSGD custom(model.weights, 1e-4);
        stint::profiler<> again;
        again.start();
        train(dataloader, model, custom);
        again.stop();
        judge({{"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", samples + 1},
               {"Optimizer.step#CustomSGD.step", samples},
               {"Optimizer.zero_grad#CustomSGD.zero_grad", samples},
               {"Optimizer.step#SGD.step", 0},
               {"Optimizer.zero_grad#SGD.zero_grad", 0}},
              again.events());
        const std::vector<nlohmann::json> custom_trace = trace_events(again);
        CHECK(count_named(custom_trace, "Optimizer.step#CustomSGD.step") == samples);
        CHECK(count_named(custom_trace, "Optimizer.zero_grad#CustomSGD.zero_grad") == samples);
    }
}

TEST_CASE("the class name drops namespaces and enclosing scopes, and keeps template arguments") {
    using stint::detail::unqualified_name;
    CHECK(unqualified_name("SGD") == "SGD");
    CHECK(unqualified_name("torch::optim::SGD") == "SGD");
    CHECK(unqualified_name("ns::(anonymous namespace)::SGD") == "SGD");
    CHECK(unqualified_name("outer::inner") == "inner");
    CHECK(unqualified_name("train()::SGD") == "SGD");
    CHECK(unqualified_name("f(int)::{lambda()#1}::operator()() const::local") == "local");
    CHECK(unqualified_name("ns::adam<ns::half, 2>") == "adam<ns::half, 2>");
    CHECK(unqualified_name("std::map<int, std::vector<int, std::allocator<int> > >") ==
          "map<int, std::vector<int, std::allocator<int> > >");
    CHECK(unqualified_name("ns::holder<f()::local>") == "holder<f()::local>");
}

namespace stint_test_models {

struct half {};

class module_base {
public:
    virtual ~module_base() = default;
    /// One site for every subclass: the type decides the name.
    int forward() {
        STINT_SCOPE_DYNAMIC("Module.forward", "forward", *this);
        return calls_++;
    }

private:
    int calls_ = 0;
};

template <class T>
class adam : public module_base {};

template <int I>
class layer : public module_base {};

}  // namespace stint_test_models

TEST_CASE("names of templates, local classes and many types at one site") {
    using namespace stint_test_models;
    struct LocalNet : module_base {};

    SUBCASE("template arguments and local classes") {
        adam<half> a;
        adam<int> b;
        LocalNet local;
        stint::profiler<> prof;
        prof.start();
        a.forward();
        b.forward();
        local.forward();
        prof.stop();
        CHECK(count_named(prof.events(), "Module.forward#adam<stint_test_models::half>.forward") == 1);
        CHECK(count_named(prof.events(), "Module.forward#adam<int>.forward") == 1);
        CHECK(count_named(prof.events(), "Module.forward#LocalNet.forward") == 1);
    }
    SUBCASE("more types than the site caches, called in turn") {
        layer<0> l0;
        layer<1> l1;
        layer<2> l2;
        layer<3> l3;
        layer<4> l4;
        layer<5> l5;
        std::vector<module_base*> modules = {&l0, &l1, &l2, &l3, &l4, &l5};
        stint::profiler<> prof;
        prof.start();
        for (int round = 0; round < 3; ++round) {
            for (module_base* m : modules) m->forward();
        }
        prof.stop();
        CHECK(prof.events().size() == 18);
        for (int i = 0; i < 6; ++i) {
            const std::string name = "Module.forward#layer<" + std::to_string(i) + ">.forward";
            INFO(name);
            CHECK(count_named(prof.events(), name) == 3);
            std::set<const char*> data;
            for (const stint::event& e : prof.events()) {
                if (e.name == name) data.insert(e.name.data());
            }
            CHECK(data.size() == 1);
        }
    }
}

TEST_CASE("threads meeting a type for the first time together share one name") {
    using namespace stint_test_models;
    constexpr int threads = 8;
    constexpr int calls = 100;
    struct RaceA : module_base {};
    struct RaceB : module_base {};
    std::atomic<int> ready{0};
    stint::profiler<> prof;
    prof.start();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&ready] {
            RaceA a;
            RaceB b;
            ready.fetch_add(1);
            while (ready.load() < threads) {
            }
            for (int i = 0; i < calls; ++i) {
                a.forward();
                b.forward();
            }
        });
    }
    for (auto& t : pool) t.join();
    prof.stop();
    for (std::string_view name : {"Module.forward#RaceA.forward", "Module.forward#RaceB.forward"}) {
        INFO(name);
        CHECK(count_named(prof.events(), name) == threads * calls);
        std::set<const char*> data;
        for (const stint::event& e : prof.events()) {
            if (e.name == name) data.insert(e.name.data());
        }
        CHECK(data.size() == 1);
    }
    CHECK(stint_test::program_event_count(prof.events()) == 2 * threads * calls);
}

// ---- compiled regions and cache lookups (test/dynamo/test_profiler.py) -----------------------------

namespace {

/// A frame as torch.compile keeps it: each compile guards on one shape; a call whose shape no compile
/// fits compiles again (the frame's compile id counts its compiles).
class compiled_frame {
public:
    explicit compiled_frame(std::uint32_t id) : id_(id) {}

    template <class Body>
    auto call(int shape, Body&& body) {
        {
            STINT_SCOPE("TorchDynamo Cache Lookup");
            found_ = static_cast<std::uint32_t>(std::find(guards_.begin(), guards_.end(), shape) - guards_.begin());
            if (found_ == guards_.size()) guards_.push_back(shape);
        }
        stint::compiled_region region(id_, found_);
        return body();
    }

private:
    std::uint32_t id_;
    std::uint32_t found_ = 0;
    std::vector<int> guards_;
};

/// The seed's fn: `r = y.sum(dim=1); print(r.shape); return x * r`. The print is a graph break, so
/// torch.compile makes two frames: frame 0 up to the break (guarding on y's shape), frame 1 after it
/// (guarding on r's).
struct compiled_fn {
    compiled_frame before_break{0};
    compiled_frame after_break{1};

    std::vector<double> operator()(const std::vector<double>& x, const std::vector<std::vector<double>>& y) {
        const int columns = static_cast<int>(y.at(0).size());
        std::vector<double> r = before_break.call(columns, [&] {
            std::vector<double> sums;
            for (const auto& row : y) {
                double s = 0;
                for (double v : row) s += v;
                sums.push_back(s);
            }
            return sums;
        });
        return after_break.call(static_cast<int>(r.size()), [&] {
            std::vector<double> out(x.size());
            for (std::size_t i = 0; i < x.size(); ++i) out[i] = x[i] * r[i];
            return out;
        });
    }
};

std::vector<std::vector<double>> ones(int rows, int columns) {
    const std::vector<double> row(static_cast<std::size_t>(columns), 1.0);
    return std::vector<std::vector<double>>(static_cast<std::size_t>(rows), row);
}

}  // namespace

TEST_CASE("compiled regions are named 'Torch-Compiled Region: frame/compile', once per entry") {
    compiled_fn fn_c;
    stint::profiler<> prof;
    prof.start();
    const std::vector<double> first = fn_c(std::vector<double>(10, 2.0), ones(10, 10));
    const std::vector<double> second = fn_c(std::vector<double>(10, 2.0), ones(10, 15));  // recompiles frame 0
    prof.stop();
    CHECK(first.at(0) == 20.0);
    CHECK(second.at(0) == 30.0);

    std::vector<std::optional<stint::event>> regions;
    for (const stint::event& e : prof.events()) {
        if (e.name.find("Torch-Compiled") != std::string_view::npos) regions.push_back(e);
    }
    std::sort(regions.begin(), regions.end(), [](const auto& a, const auto& b) { return a->start_ns < b->start_ns; });
    std::vector<std::string_view> annotations;
    for (std::optional<stint::event> e : regions) annotations.push_back(e->name);
    CHECK(annotations == std::vector<std::string_view>{"Torch-Compiled Region: 0/0", "Torch-Compiled Region: 1/0",
                                                       "Torch-Compiled Region: 0/1", "Torch-Compiled Region: 1/0"});
    // Made once per (frame, compile): both 1/0 entries point to one name.
    REQUIRE(regions.size() == 4);
    CHECK(regions[1]->name.data() == regions[3]->name.data());
    CHECK(regions[0]->kind == stint::event_kind::user_annotation);

    std::vector<nlohmann::json> trace = trace_events(prof);
    std::erase_if(trace, [](const nlohmann::json& e) {
        return e.at("name").get<std::string>().find("Torch-Compiled") == std::string::npos;
    });
    std::sort(trace.begin(), trace.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
        return a.at("ts").get<double>() < b.at("ts").get<double>();
    });
    std::vector<std::string> trace_names;
    for (const auto& e : trace) {
        trace_names.push_back(e.at("name").get<std::string>());
        CHECK(e.at("cat") == "user_annotation");
    }
    CHECK(trace_names == std::vector<std::string>{"Torch-Compiled Region: 0/0", "Torch-Compiled Region: 1/0",
                                                  "Torch-Compiled Region: 0/1", "Torch-Compiled Region: 1/0"});
}

TEST_CASE("compiled regions with many and large ids, ended early, and on several threads") {
    stint::profiler<> prof;
    prof.start();
    {
        stint::compiled_region big(4294967295U, 7);
    }
    {
        stint::compiled_region early(3, 2);
        early.end();
        early.end();
    }
    // More pairs than a thread's cache holds, each twice.
    for (int round = 0; round < 2; ++round) {
        for (std::uint32_t frame = 0; frame < 100; ++frame) stint::compiled_region region(frame, frame % 3);
    }
    std::thread other([] { stint::compiled_region region(5, 2); });
    other.join();
    prof.stop();
    const stint::event_list& events = prof.events();
    CHECK(count_named(events, "Torch-Compiled Region: 4294967295/7") == 1);
    CHECK(count_named(events, "Torch-Compiled Region: 3/2") == 1);
    for (std::uint32_t frame = 0; frame < 100; ++frame) {
        const std::string name = "Torch-Compiled Region: " + std::to_string(frame) + "/" + std::to_string(frame % 3);
        INFO(name);
        CHECK(count_named(events, name) == (frame == 5 ? 3U : 2U));
    }
    CHECK(stint_test::program_event_count(events) == 2 + 200 + 1);
}

TEST_CASE("a compiled region without a session records nothing") {
    {
        stint::compiled_region region(0, 0);
    }
    stint::profiler<> prof;
    prof.start();
    prof.stop();
    CHECK(prof.events().empty());
}

TEST_CASE("the cache lookup appears exactly once per call") {
    // test_profiler_cache_lookup: a warm compiled function, one call profiled.
    compiled_fn fn_c;
    fn_c(std::vector<double>(4, 1.0), ones(4, 4));  // warmup: compiles
    stint::profiler<> prof;
    prof.start();
    fn_c(std::vector<double>(4, 1.0), ones(4, 4));
    prof.stop();
    // One per frame entered: the call enters both frames once.
    CHECK(count_named(prof.events(), "TorchDynamo Cache Lookup") == 2);
    CHECK(count_named(trace_events(prof), "TorchDynamo Cache Lookup") == 2);
}

TEST_CASE("the cache lookup appears exactly once per call when only step() drives the profiler") {
    // test_profiler_cache_lookup_profiler_step: schedule(wait=2, warmup=2, active=2, repeat=...),
    // opt_fn then step() per iteration, never start().
    compiled_frame opt_fn(0);
    const auto call = [&](std::int64_t step) {
        stint::record_function rf("call#" + std::to_string(step));
        return opt_fn.call(4, [] { return 1; });
    };
    std::vector<stint::event_list> windows;
    std::vector<std::size_t> trace_lookups;

    std::int64_t repeat = 0;
    std::int64_t iterations = 0;
    SUBCASE("one window") {
        repeat = 1;
        iterations = 10;
    }
    SUBCASE("two windows") {
        repeat = 2;
        iterations = 14;
    }
    stint::profiler<> prof({
        .schedule = stint::schedule({.wait = 2, .warmup = 2, .active = 2, .repeat = repeat}),
        .on_trace_ready =
            [&](stint::profiler<>& p) {
                windows.push_back(p.events());
                trace_lookups.push_back(count_named(trace_events(p), "TorchDynamo Cache Lookup"));
            },
    });
    for (std::int64_t i = 0; i < iterations; ++i) {
        call(prof.step_num());
        prof.step();
    }
    REQUIRE(windows.size() == static_cast<std::size_t>(repeat));
    for (std::size_t w = 0; w < windows.size(); ++w) {
        INFO("window " << w);
        const stint::event_list& events = windows[w];
        const std::int64_t first_step = 4 + 6 * static_cast<std::int64_t>(w);
        CHECK(count_named(events, "TorchDynamo Cache Lookup") == 2);
        CHECK(trace_lookups[w] == 2);
        // Exactly the record steps' calls: nothing from the wait and warmup steps.
        std::vector<std::string_view> steps;
        for (const stint::event& e : events) {
            if (e.name.starts_with("call#")) steps.push_back(e.name);
        }
        std::sort(steps.begin(), steps.end());
        const std::string a = "call#" + std::to_string(first_step);
        const std::string b = "call#" + std::to_string(first_step + 1);
        CHECK(steps == std::vector<std::string_view>{a, b});
        // Each lookup lies in its own call, in its own ProfilerStep.
        std::set<std::string> profiler_steps;
        for (const stint::event& e : events) {
            if (e.name != "TorchDynamo Cache Lookup") continue;
            REQUIRE(e.parent != stint::no_index);
            const stint::event& in_call = events[e.parent];
            CHECK(in_call.name.starts_with("call#"));
            REQUIRE(in_call.parent != stint::no_index);
            profiler_steps.insert(std::string(events[in_call.parent].name));
        }
        CHECK(profiler_steps == std::set<std::string>{"ProfilerStep#" + std::to_string(first_step),
                                                           "ProfilerStep#" + std::to_string(first_step + 1)});
        CHECK(count_named(events, "Torch-Compiled Region: 0/0") == 2);
    }
    CHECK(std::any_of(prof.events().begin(), prof.events().end(),
                      [](const stint::event& e) { return e.name == "TorchDynamo Cache Lookup"; }));
}
