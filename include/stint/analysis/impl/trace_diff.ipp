#pragma once
// The bodies of analysis/trace_diff.hpp: matching two runs' op totals.

#include "stint/analysis/trace_diff.hpp"

#include <algorithm>  // std::sort
#include <limits>     // std::numeric_limits
#include <map>        // std::map
#include <tuple>      // std::tuple

namespace stint {

double op_diff::ratio() const noexcept {
    if (total_a_ns == 0) return total_b_ns == 0 ? 1.0 : std::numeric_limits<double>::infinity();
    return static_cast<double>(total_b_ns) / static_cast<double>(total_a_ns);
}

std::vector<op_diff> diff_ops(const std::vector<op_stat>& a, const std::vector<op_stat>& b,
                              const diff_options& options) {
    std::map<std::tuple<std::string, std::string, bool>, op_diff> rows;
    const auto row = [&rows](const op_stat& s) -> op_diff& {
        op_diff& d = rows[{s.name, s.shapes, s.on_device}];
        d.name = s.name;
        d.shapes = s.shapes;
        d.on_device = s.on_device;
        return d;
    };
    for (const op_stat& s : a) {
        op_diff& d = row(s);
        d.count_a += s.count;
        d.total_a_ns += s.total_ns;
        d.self_a_ns += s.self_ns;
    }
    for (const op_stat& s : b) {
        op_diff& d = row(s);
        d.count_b += s.count;
        d.total_b_ns += s.total_ns;
        d.self_b_ns += s.self_ns;
    }
    std::vector<op_diff> out;
    for (auto& [key, d] : rows) {
        const std::int64_t change = d.change_ns() < 0 ? -d.change_ns() : d.change_ns();
        if (change < options.noise_ns) continue;
        out.push_back(std::move(d));
    }
    std::stable_sort(out.begin(), out.end(), [](const op_diff& x, const op_diff& y) {
        const std::int64_t cx = x.change_ns() < 0 ? -x.change_ns() : x.change_ns();
        const std::int64_t cy = y.change_ns() < 0 ? -y.change_ns() : y.change_ns();
        return cx > cy;
    });
    return out;
}

std::vector<op_diff> slowed_ops(const std::vector<op_diff>& diff, double ratio) {
    std::vector<op_diff> out;
    for (const op_diff& d : diff) {
        if (d.total_b_ns > 0 && d.ratio() > ratio) out.push_back(d);
    }
    return out;
}

}  // namespace stint
