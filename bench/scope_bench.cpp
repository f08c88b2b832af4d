// Hot-path cost, measured in one run so that ratios are honest on a shared machine: the baselines
// (empty loop, two tick reads, two steady_clock reads, the ideal recorder) and stint compiled out,
// disabled at run time, recording timing-only scopes, ops, instants and counters, at 1, nproc and 8
// threads.
// bench/run turns the JSON of this binary into the design §6 table.
// This file is built with frame pointers (bench/meson.build), so with_stack<native> may walk them.
#define STINT_NATIVE_STACK_FRAME_POINTERS 1

#include <benchmark/benchmark.h>
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <stint/recording/chunk_memory.hpp>
#include <stint/recording/registry.hpp>
#include <stint/stint.hpp>

namespace {

struct ideal_record {
    const void* site;
    std::uint64_t begin;
    std::uint64_t end;
};
static_assert(sizeof(ideal_record) == 24);

constexpr std::size_t ideal_capacity = std::size_t{1} << 22;  // 96 MiB, wraps: resident but not cached
thread_local std::unique_ptr<ideal_record[]> ideal_storage;
thread_local std::size_t ideal_cursor = 0;

// Recording runs use fixed iterations so that a session's buffers can be reserved (faulted in)
// before the timed loop, as the ideal recorder's array is.
constexpr benchmark::IterationCount recorded_iterations = 2'000'000;

void baseline_empty_loop(benchmark::State& state) {
    for (auto _ : state) benchmark::ClobberMemory();
}
BENCHMARK(baseline_empty_loop);

void baseline_two_tick_reads(benchmark::State& state) {
    for (auto _ : state) {
        std::uint64_t a = stint::read_ticks();
        std::uint64_t b = stint::read_ticks();
        benchmark::DoNotOptimize(a);
        benchmark::DoNotOptimize(b);
    }
}
BENCHMARK(baseline_two_tick_reads);

void baseline_two_steady_clock_reads(benchmark::State& state) {
    for (auto _ : state) {
        auto a = std::chrono::steady_clock::now();
        auto b = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(a);
        benchmark::DoNotOptimize(b);
    }
}
BENCHMARK(baseline_two_steady_clock_reads);

// Two tick reads and a 24-byte store into a preallocated thread-local array: what any recorder
// must at least do.
void baseline_ideal_recorder(benchmark::State& state) {
    if (!ideal_storage) {
        ideal_storage = std::make_unique<ideal_record[]>(ideal_capacity);  // value-initialised: faulted in
    }
    static constexpr int site = 0;
    for (auto _ : state) {
        const std::uint64_t begin = stint::read_ticks();
        benchmark::ClobberMemory();
        const std::uint64_t end = stint::read_ticks();
        ideal_storage[ideal_cursor] = {&site, begin, end};
        ideal_cursor = (ideal_cursor + 1) & (ideal_capacity - 1);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(baseline_ideal_recorder)->Iterations(recorded_iterations)->Threads(1)->ThreadPerCpu()->Threads(8);

void stint_scope_no_session(benchmark::State& state) {
    for (auto _ : state) {
        STINT_SCOPE("bench");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_scope_no_session);

/// A session around one benchmark run: thread 0 opens it before the threads' start barrier and
/// closes it after their stop barrier, so only the loop is timed. `record_bytes`: the most one
/// iteration records (two 24-byte records for timing-only rows, for their 2x headroom).
template <class Config = stint::config<>>
class bench_session {
public:
    bench_session(benchmark::State& state, bool reserve, std::size_t record_bytes = 48) : state_(state) {
        if (state.thread_index() != 0) return;
        stint::profiler_options<Config> options;
        options.buffer_budget_bytes = std::size_t{8} << 30;
        if (reserve) {
            // Every thread's records plus one partly filled chunk per thread.
            options.reserve_buffer_bytes = static_cast<std::size_t>(state.threads()) *
                                           (static_cast<std::size_t>(state.max_iterations) * record_bytes + (std::size_t{128} << 10));
        }
        profiler_ = std::make_unique<stint::profiler<Config>>(options);
        profiler_->start();
    }
    ~bench_session() {
        if (!profiler_) return;
        profiler_->stop();
        state_.counters["dropped"] = static_cast<double>(profiler_->stats().dropped);
    }
    bench_session(const bench_session&) = delete;
    bench_session& operator=(const bench_session&) = delete;

private:
    benchmark::State& state_;
    std::unique_ptr<stint::profiler<Config>> profiler_;
};

// Timing-only scopes into reserved (resident) buffers: the figure design §6 compares with the ideal
// recorder.
void stint_scope_timing_only(benchmark::State& state) {
    bench_session<> session(state, true);
    for (auto _ : state) {
        STINT_SCOPE("bench");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_scope_timing_only)->Iterations(recorded_iterations)->Threads(1)->ThreadPerCpu()->Threads(8);

// What a user gets who sets no option (default budget, no reserve), in a fresh process (bench/run runs
// these alone): the pool's prefault thread must keep chunks resident ahead of the records. "faults_per_M":
// page faults the recording thread itself took per million scopes (getrusage of the thread).
std::uint64_t thread_page_faults() {
    rusage usage{};
    ::getrusage(RUSAGE_THREAD, &usage);
    return static_cast<std::uint64_t>(usage.ru_minflt + usage.ru_majflt);
}
void stint_scope_default_options(benchmark::State& state) {
    std::unique_ptr<stint::profiler<>> prof;
    if (state.thread_index() == 0) {
        prof = std::make_unique<stint::profiler<>>();
        prof->start();
    }
    const std::uint64_t faults_before = thread_page_faults();
    for (auto _ : state) {
        STINT_SCOPE("bench");
        benchmark::ClobberMemory();
    }
    const std::uint64_t faults = thread_page_faults() - faults_before;
    state.counters["faults_per_M"] = benchmark::Counter(
        static_cast<double>(faults) * 1e6 / static_cast<double>(state.iterations()), benchmark::Counter::kAvgThreads);
    if (prof) {
        prof->stop();
        state.counters["dropped"] = static_cast<double>(prof->stats().dropped);
    }
}
// 10 M scopes (240 MB of records) on one thread; with a thread per CPU, as many per thread as the
// default 512 MiB budget holds for all of them.
constexpr benchmark::IterationCount default_options_iterations = 10'000'000;
benchmark::IterationCount default_options_iterations_per_cpu() {
    const auto cpus = static_cast<benchmark::IterationCount>(std::max(1U, std::thread::hardware_concurrency()));
    return std::min<benchmark::IterationCount>(default_options_iterations, (400 << 20) / 24 / cpus);
}
BENCHMARK(stint_scope_default_options)->Iterations(default_options_iterations)->Threads(1);
BENCHMARK(stint_scope_default_options)->Iterations(default_options_iterations_per_cpu())->ThreadPerCpu();

// stint's own slow path, which a session records as overhead events (cat "overhead") so that it is
// never charged to the user's scopes. First record on a new thread: registration and its first chunk,
// timed around one scope on a thread created for it (the thread's creation is not in the time).
void stint_first_record_new_thread(benchmark::State& state) {
    stint::profiler<> prof({.buffer_budget_bytes = std::size_t{8} << 30});
    prof.start();
    for (auto _ : state) {
        std::int64_t ns = 0;
        std::thread fresh([&ns] {
            const auto t0 = std::chrono::steady_clock::now();
            {
                STINT_SCOPE("first");
            }
            ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
        });
        fresh.join();
        state.SetIterationTime(static_cast<double>(ns) / 1e9);
    }
    prof.stop();
}
BENCHMARK(stint_first_record_new_thread)->UseManualTime()->Iterations(2'000);

// Each chunk after the first: the slow path's own measurement, read back from the session's overhead
// events ("[stint] buffer chunk"), as the mean ns per chunk. Arg 1: chunks cached warm by a reserve;
// arg 0: fresh chunks, whose pages the slow path faults in (glibc's malloc_trim returns the previous
// repetition's pages to the system first).
void stint_chunk_slow_path(benchmark::State& state) {
    const bool warm = state.range(0) != 0;
    double total_ns = 0;
    double chunks = 0;
    for (auto _ : state) {
        state.PauseTiming();
        stint::profiler<> prof({.buffer_budget_bytes = std::size_t{1} << 30,
                                .reserve_buffer_bytes = warm ? std::size_t{64} << 20 : 0});
        prof.start();
        state.ResumeTiming();
        for (int i = 0; i < 1'000'000; ++i) {
            STINT_SCOPE("bench");
            benchmark::ClobberMemory();
        }
        state.PauseTiming();
        prof.stop();
        for (const stint::event& e : prof.events()) {
            if (e.kind == stint::event_kind::overhead && e.name == "[stint] buffer chunk") {
                total_ns += static_cast<double>(e.duration_ns());
                chunks += 1;
            }
        }
        stint::detail::the_registry().release_buffers();
        ::malloc_trim(0);  // give the freed chunks' pages back, so that fresh chunks fault them in again
        state.ResumeTiming();
    }
    state.counters["ns_per_chunk"] = chunks > 0 ? total_ns / chunks : 0;
    state.counters["chunks"] = chunks;
}
BENCHMARK(stint_chunk_slow_path)->Arg(1)->Arg(0)->Iterations(3);

// Faulting largest chunks in, the two ways chunk_memory chooses between: a 2 MiB slab advised for a
// huge page (arg 1) or 32 chunks from the heap one by one (arg 0). Fresh memory each time: every
// chunk goes back (the slab unmapped, heap pages trimmed) before the next iteration.
void chunk_fault_in(benchmark::State& state) {
    using stint::detail::chunk;
    using stint::detail::chunk_memory;
    chunk_memory memory;
    std::array<chunk*, chunk_memory::chunks_per_slab> chunks{};
    for (auto _ : state) {
        if (state.range(0) == 0 || !memory.allocate_slab(chunks)) {
            for (chunk*& c : chunks) c = chunk_memory::allocate_one(chunk::size_classes - 1);
        }
        state.PauseTiming();
        for (chunk* c : chunks) memory.deallocate(c);
        ::malloc_trim(0);
        state.ResumeTiming();
    }
    state.counters["ns_per_chunk"] = benchmark::Counter(
        static_cast<double>(chunk_memory::chunks_per_slab) * static_cast<double>(state.iterations()),
        benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(chunk_fault_in)->Arg(1)->Arg(0)->Iterations(64);

void stint_op_timing_only(benchmark::State& state) {
    bench_session<> session(state, true);
    int rows = 64;
    int cols = 32;
    for (auto _ : state) {
        STINT_OP(stint::config<>, "aten::mm", rows, cols);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_op_timing_only)->Iterations(recorded_iterations);

void stint_instant(benchmark::State& state) {
    bench_session<> session(state, true);
    for (auto _ : state) {
        STINT_INSTANT("bench");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_instant)->Iterations(recorded_iterations);

// A counter's sample (STINT_COUNTER: an instant's record with an 8-byte header and the value, 40 bytes),
// issue 35's "about an instant's cost".
void stint_counter_sample(benchmark::State& state) {
    bench_session<> session(state, true, 80);
    std::int64_t value = 0;
    for (auto _ : state) {
        STINT_COUNTER("bench", value);
        ++value;
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_counter_sample)->Iterations(recorded_iterations);

// The same through a typed counter (its site made at the first sample, before the timed loop).
void stint_counter_object(benchmark::State& state) {
    static stint::counter<double> counter{"bench counter"};
    bench_session<> session(state, true, 80);
    counter.set(0);
    double value = 0;
    for (auto _ : state) {
        counter.set(value);
        value += 1;
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_counter_object)->Iterations(recorded_iterations);

// A counter with no session: one relaxed load, the value never computed.
void stint_counter_no_session(benchmark::State& state) {
    std::int64_t value = 0;
    for (auto _ : state) {
        STINT_COUNTER("bench", value);
        ++value;
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_counter_no_session);

// A flow's two points (STINT_FLOW_BEGIN and STINT_FLOW_END, 40 bytes each: the record, a payload
// header and the id), as a thread pool's submit and run would record them, without the scopes.
void stint_flow_points(benchmark::State& state) {
    bench_session<> session(state, true, 96);
    std::uint64_t id = 0;
    for (auto _ : state) {
        STINT_FLOW_BEGIN(id);
        STINT_FLOW_END(id);
        ++id;
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_flow_points)->Iterations(recorded_iterations);

// An async span begun and ended (its name copied at the begin, written with both points).
void stint_async_span(benchmark::State& state) {
    bench_session<> session(state, true, 128);
    for (auto _ : state) {
        stint::async_scope span("request");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_async_span)->Iterations(recorded_iterations);

// record_shapes with three rank-2 tensors (issue 18: <= 2x a timing-only op at the median). The tensors escape
// and ClobberMemory makes every iteration read them again, so the capture cannot be folded into
// constants as it could be for tensors the compiler sees through.
struct bench_tensor {
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> steps;
    std::string type = "float";
    const std::vector<std::int64_t>& sizes() const { return dims; }
    const std::vector<std::int64_t>& strides() const { return steps; }
    std::string_view dtype() const { return type; }
};

using shapes_config = stint::config<stint::record_shapes>;

void stint_op_shapes_3x_rank2(benchmark::State& state) {
    bench_tensor a{{64, 32}, {32, 1}}, b{{32, 16}, {16, 1}}, c{{64, 16}, {16, 1}};
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(b);
    benchmark::DoNotOptimize(c);
    bench_session<shapes_config> session(state, true, 256);
    for (auto _ : state) {
        STINT_OP(shapes_config, "bench::op", a, b, c);
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_op_shapes_3x_rank2)->Iterations(recorded_iterations);

// with_stack<> and with_modules build their data at stop(): their ops are timing-only ops.
using stack_scopes_config = stint::config<stint::with_stack<>, stint::with_modules>;
static_assert(std::is_same_v<stint::detail::op_scope_or_site<stack_scopes_config>,
                             stint::detail::scope<stack_scopes_config>>);

void stint_op_with_stack_scopes(benchmark::State& state) {
    bench_session<stack_scopes_config> session(state, true);
    for (auto _ : state) {
        STINT_OP(stack_scopes_config, "bench::op");
        benchmark::ClobberMemory();
    }
}
BENCHMARK(stint_op_with_stack_scopes)->Iterations(recorded_iterations);

// with_stack<native>: an op 10 calls deep in this file, built with frame pointers (bench/meson.build;
// STINT_NATIVE_STACK_FRAME_POINTERS=1 above), so that every capture takes the same 10 frames.
using native_config = stint::config<stint::with_stack<stint::native_frames<10>>>;
constexpr int native_frames = 10;

template <int Depth>
__attribute__((noinline)) void op_at_depth() {
    if constexpr (Depth <= 1) {
        STINT_OP(native_config, "bench::op");
        benchmark::ClobberMemory();
    } else {
        op_at_depth<Depth - 1>();
        benchmark::ClobberMemory();  // keeps the call from becoming a tail call
    }
}

void stint_op_with_stack_native(benchmark::State& state) {
    bench_session<native_config> session(state, true, 24 + 8 + 8 + native_frames * 8);
    for (auto _ : state) op_at_depth<native_frames>();
}
BENCHMARK(stint_op_with_stack_native)->Iterations(200'000);

// The capture alone, 10 frames deep, by each method; "frames" counts what it took.
using capture_function = std::size_t (*)(std::byte*, std::size_t) noexcept;

template <int Depth>
__attribute__((noinline)) std::size_t capture_at_depth(capture_function capture, std::byte* out) {
    std::size_t used = 0;
    if constexpr (Depth <= 1) {
        used = capture(out, native_frames);
    } else {
        used = capture_at_depth<Depth - 1>(capture, out);
    }
    benchmark::ClobberMemory();
    return used;
}

void native_stack_capture(benchmark::State& state, capture_function capture) {
    alignas(8) std::byte out[stint::detail::native_stack_bytes(native_frames)];
    std::size_t used = 0;
    for (auto _ : state) {
        used = capture_at_depth<native_frames>(capture, out);
        benchmark::DoNotOptimize(used);
    }
    state.counters["frames"] = static_cast<double>((used - stint::detail::native_stack_header_bytes) / 8);
}
BENCHMARK_CAPTURE(native_stack_capture, walked, &stint::detail::capture_native_stack_walked)->Iterations(200'000);
BENCHMARK_CAPTURE(native_stack_capture, unwound, &stint::detail::capture_native_stack_unwound)->Iterations(200'000);

}  // namespace

BENCHMARK_MAIN();
