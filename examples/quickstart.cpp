// quickstart: profiles a small multi-threaded workload (a blocked matrix multiply, a sort, a tiny
// expression parser), prints the key-averages table and writes quickstart.pt.trace.json.
#include <stint/stint.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using matrix = std::vector<double>;

void multiply_block(const matrix& a, const matrix& b, matrix& c, int n, int i0, int j0, int k0, int block) {
    STINT_OP(stint::config<>, "blas::gemm_block", n, block);
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

int main() {
    stint::profiler<> prof;
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

    std::cout << prof.key_averages().table({.sort_by = "self_cpu_time_total", .row_limit = 12}) << "\n";
    const std::string path = "quickstart.pt.trace.json";
    prof.export_chrome_trace(path);
    std::cout << "recorded " << prof.stats().recorded << " events (" << prof.stats().dropped << " dropped)\n"
              << "trace written to " << std::filesystem::absolute(path).string() << "\n"
              << "open it at https://ui.perfetto.dev (Open trace file) or in chrome://tracing\n";
}
