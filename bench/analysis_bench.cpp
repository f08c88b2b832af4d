// Analysis cost: key_averages over 1,000,000 events (design §6: <= 150 ms) and table() of 10,000
// distinct keys (<= 50 ms), on hand-built event lists shaped like a real session.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include <stint/analysis/event_tree.hpp>
#include <stint/stint.hpp>

namespace {

constexpr std::string_view op_names[] = {"aten::mm", "aten::add", "aten::relu", "aten::conv2d", "aten::cat",
                                         "aten::sum", "aten::mul", "aten::linear"};

// Steps of one scope with 4 nested ops each, on 4 threads.
stint::event_list make_events(std::size_t count) {
    stint::detail::event_list_builder b;
    for (std::uint64_t t = 0; t < 4; ++t) b.add_thread({100 + t, "worker", 0, 0});
    std::int64_t now = 0;
    std::size_t made = 0;
    while (made < count) {
        const auto thread = static_cast<std::uint32_t>(made % 4);
        b.add(stint::event_kind::user_annotation, "step", thread, now, now + 1000);
        ++made;
        for (int k = 0; k < 4 && made < count; ++k, ++made) {
            b.add(stint::event_kind::cpu_op, op_names[made % 8], thread, now + 10 + k * 200, now + 150 + k * 200);
        }
        now += 1100;
    }
    return std::move(b).build();
}

stint::averaged_event_list make_distinct(std::size_t keys) {
    stint::detail::event_list_builder b;
    b.add_thread({1, "main", 0, 0});
    for (std::size_t i = 0; i < keys; ++i) {
        const auto start = static_cast<std::int64_t>(i * 100);
        b.add_copy(stint::event_kind::cpu_op, "op_" + std::to_string(i), 0, start, start + 50);
    }
    return stint::key_averages(std::move(b).build());
}

void key_averages_1m_events(benchmark::State& state) {
    const stint::event_list events = make_events(1'000'000);
    for (auto _ : state) {
        auto averaged = stint::key_averages(events);
        benchmark::DoNotOptimize(averaged);
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1'000'000);
}
BENCHMARK(key_averages_1m_events)->Unit(benchmark::kMillisecond);

void table_10k_keys(benchmark::State& state) {
    const stint::averaged_event_list averaged = make_distinct(10'000);
    for (auto _ : state) {
        std::string text = averaged.table({.sort_by = "self_cpu_time_total", .row_limit = -1});
        benchmark::DoNotOptimize(text);
    }
}
BENCHMARK(table_10k_keys)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
