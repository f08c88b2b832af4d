// quickstart: profiles a small multi-threaded workload (a blocked matrix multiply, a sort, a tiny
// expression parser), prints the key-averages table (grouped by input shape, with flops), writes
// quickstart.pt.trace.json and, for a flame graph, the collapsed stacks quickstart.stacks.
#include <stint/stint.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

// Ops of this config record their inputs' shapes and get torch's flop estimates (with_flops implies
// record_shapes); the table groups them by input shape and adds a "Total MFLOPs" column.
using flops_config = stint::config<stint::with_flops>;

using matrix = std::vector<double>;

// Any type with sizes() and dtype() is captured as a tensor, with no stint code.
struct shape_of {
    std::array<std::int64_t, 2> dims;
    const std::array<std::int64_t, 2>& sizes() const { return dims; }
    std::string_view dtype() const { return "double"; }
};

void multiply_block(const matrix& a, const matrix& b, matrix& c, int n, int i0, int j0, int k0, int block) {
    // A custom op whose flops follow torch's aten::mm formula: 2 * M * K * N per block.
    STINT_OP_FLOPS(flops_config, "blas::gemm_block", "aten::mm", shape_of{{block, block}}, shape_of{{block, block}});
    for (int i = i0; i < std::min(i0 + block, n); ++i)
        for (int k = k0; k < std::min(k0 + block, n); ++k) {
            const double aik = a[static_cast<std::size_t>(i * n + k)];
            for (int j = j0; j < std::min(j0 + block, n); ++j)
                c[static_cast<std::size_t>(i * n + j)] += aik * b[static_cast<std::size_t>(k * n + j)];
        }
}

void matmul(int n, int block) {
    STINT_SCOPE("matmul");
    matrix a(static_cast<std::size_t>(n * n), 1.5), b(static_cast<std::size_t>(n * n), 0.5);
    matrix c(static_cast<std::size_t>(n * n), 0.0);
    STINT_OP(flops_config, "aten::mm", shape_of{{n, n}}, shape_of{{n, n}});
    for (int i = 0; i < n; i += block)
        for (int j = 0; j < n; j += block)
            for (int k = 0; k < n; k += block) multiply_block(a, b, c, n, i, j, k, block);
}

void sort_numbers(std::size_t count, unsigned seed) {
    STINT_SCOPE("sort");
    std::vector<std::uint64_t> values(count);
    {
        STINT_OP(stint::config<>, "rng::fill", count);
        std::mt19937_64 rng(seed);
        for (auto& v : values) v = rng();
    }
    STINT_OP(stint::config<>, "std::sort", count);
    std::sort(values.begin(), values.end());
}

// A recursive-descent parser for sums and products of integers: "1+2*(3+4)".
struct parser {
    std::string_view text;
    std::size_t at = 0;
    long expression() {
        STINT_OP(stint::config<>, "parse::expression");
        long value = term();
        while (at < text.size() && text[at] == '+') {
            ++at;
            value += term();
        }
        return value;
    }
    long term() {
        long value = factor();
        while (at < text.size() && text[at] == '*') {
            ++at;
            value *= factor();
        }
        return value;
    }
    long factor() {
        if (at < text.size() && text[at] == '(') {
            ++at;
            const long value = expression();
            ++at;  // ')'
            return value;
        }
        long value = 0;
        while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) value = value * 10 + (text[at++] - '0');
        return value;
    }
};

long parse_many(int count) {
    STINT_SCOPE("parse");
    long total = 0;
    for (int i = 0; i < count; ++i) {
        const std::string source = std::to_string(i) + "+2*(3+" + std::to_string(i % 7) + ")*(1+1)";
        stint::record_function rf("parse_line");
        total += parser{source}.expression();
    }
    return total;
}

}  // namespace

// The profiler's own config says what its drain builds: with_stack gives every event its chain of
// enclosing scopes (file(line): function), for export_stacks and the Source Location column.
using profiler_config = stint::config<stint::with_flops, stint::with_stack<>>;

int main() {
    stint::profiler<profiler_config> prof;
    prof.start();
    {
        STINT_SCOPE("workload");
        std::vector<std::thread> workers;
        workers.emplace_back([] {
            stint::set_thread_name("matmul");
            matmul(192, 32);
        });
        workers.emplace_back([] {
            stint::set_thread_name("sorter");
            for (unsigned s = 0; s < 4; ++s) sort_numbers(200'000, s);
        });
        workers.emplace_back([] {
            stint::set_thread_name("parser");
            std::printf("parsed total: %ld\n", parse_many(2000));
        });
        for (auto& w : workers) w.join();
    }
    prof.stop();

    std::cout << prof.key_averages({.group_by_input_shape = true}).table({.sort_by = "self_cpu_time_total", .row_limit = 12})
              << "\n";
    const std::string path = "quickstart.pt.trace.json";
    prof.export_chrome_trace(path);
    const std::string stacks = "quickstart.stacks";
    prof.export_stacks(stacks);
    std::cout << "recorded " << prof.stats().recorded << " events (" << prof.stats().dropped << " dropped)\n"
              << "trace written to " << std::filesystem::absolute(path).string() << "\n"
              << "open it at https://ui.perfetto.dev (Open trace file) or in chrome://tracing\n"
              << "flame graph: " << std::filesystem::absolute(stacks).string()
              << " (open it at https://www.speedscope.app, or: flamegraph.pl " << stacks << " > flame.svg)\n";
}
