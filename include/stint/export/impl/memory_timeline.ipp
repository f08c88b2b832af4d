#pragma once
// The memory timeline's bodies: the points of a device, their JSON and the HTML page with its plot.
#include "stint/export/memory_timeline.hpp"

#include <algorithm>  // std::stable_sort, std::max
#include <cmath>      // std::fabs, std::pow, std::floor, std::log10, std::ceil
#include <cstddef>    // std::size_t
#include <iterator>   // std::back_inserter, std::size
#include <stdexcept>  // std::invalid_argument
#include <utility>    // std::pair

#include <fmt/format.h>  // fmt::format_to, fmt::format

#include "stint/export/json_writer.hpp"
#include "stint/export/output_file.hpp"
#include "stint/common/utf8.hpp"

namespace stint::detail {

/// `[times, sizes]` as torch's json.dump writes it: times in integer µs, and per time one row of
/// 1 + 8 integers, a leading 0 then one column per category, all bytes in the last.
template <class Sink>
void write_memory_timeline_json(Sink& sink, const memory_timeline_points& points) {
    json_writer out(sink);
    write_memory_timeline_points(out, points);
}

memory_timeline_points memory_timeline_of(const event_list& events, device on) {
    memory_timeline_points points;
    struct sample {
        std::int64_t at_ns;
        std::int64_t bytes;
    };
    std::vector<sample> samples;
    for (const event& e : events) {
        if (e.kind != event_kind::memory) continue;
        const memory_record* r = events.memory_of(e);
        if (r != nullptr && r->device == on) samples.push_back({e.start_ns, r->total_allocated});
    }
    // The list is ordered by start already; after append() a later window may overlap an earlier one.
    std::stable_sort(samples.begin(), samples.end(),
                     [](const sample& a, const sample& b) { return a.at_ns < b.at_ns; });
    for (const sample& s : samples) {
        const std::int64_t t = floor_microseconds(events.base_time_ns() + s.at_ns);
        if (points.times_us.empty() || points.times_us.back() != t) {
            points.times_us.push_back(t);
            points.bytes.push_back(s.bytes);
        } else {
            points.bytes.back() = s.bytes;
        }
    }
    return points;
}

std::string memory_timeline_device_name(device d) {
    std::string name(device_type_name(d.type));
    if (d.index >= 0) name += ":" + std::to_string(d.index);
    return name;
}

void write_memory_timeline_points(json_writer& out, const memory_timeline_points& points) {
    out.raw("[[");
    for (std::size_t i = 0; i < points.times_us.size(); ++i) {
        if (i != 0) out.raw(", ");
        out.number(points.times_us[i]);
    }
    out.raw("], [");
    for (std::size_t i = 0; i < points.bytes.size(); ++i) {
        out.raw(i != 0 ? ", [0" : "[0");
        for (std::size_t c = 0; c + 1 < std::size(memory_timeline_categories); ++c) out.raw(", 0");
        out.raw(", ");
        out.number(points.bytes[i]);
        out.raw("]");
    }
    out.raw("]]");
    out.flush();
}

void append_html_escaped(std::string& out, std::string_view text) {
    const auto* p = reinterpret_cast<const unsigned char*>(text.data());
    const auto* end = p + text.size();
    while (p < end) {
        const int length = utf8_sequence(p, end);
        if (length < 0) {
            out += "\xEF\xBF\xBD";
            p += -length;
            continue;
        }
        if (length > 1) {
            out.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(length));
            p += length;
            continue;
        }
        switch (const unsigned char c = *p++) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default:
                if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7F) {
                    out += "\xEF\xBF\xBD";
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
}

std::string html_escaped(std::string_view text) {
    std::string out;
    append_html_escaped(out, text);
    return out;
}

std::string memory_timeline_bytes(double bytes) {
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    std::size_t unit = 0;
    while (unit + 1 < std::size(units) && std::fabs(bytes) >= 1024.0) {
        bytes /= 1024.0;
        ++unit;
    }
    return unit == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, units[unit]);
}

double memory_timeline_step(double span, int parts) {
    const double raw = span / parts;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (const double m : {1.0, 2.0, 5.0}) {
        if (m * power >= raw) return m * power;
    }
    return 10.0 * power;
}

std::string memory_timeline_tick(double value, double step) {
    const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
    return fmt::format("{:.{}f}", value, decimals);
}

std::string memory_timeline_html(const memory_timeline_points& points, const event_list& events, device on) {
    const std::string device_name = memory_timeline_device_name(on);
    std::string page;
    page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Memory timeline: ";
    page += device_name;
    page +=
        "</title>\n<style>\nbody { font-family: sans-serif; margin: 16px; color: #222; background: #fff; }\n"
        "svg text { font-family: sans-serif; font-size: 12px; fill: #222; }\n</style>\n</head>\n<body>\n"
        "<h1>Memory timeline: ";
    page += device_name;
    page += "</h1>\n";
    const memory_peak* peak = nullptr;
    for (const memory_peak& p : events.memory_peaks()) {
        if (p.device == on) peak = &p;
    }
    if (points.times_us.empty()) {
        page += "<p id=\"empty\">No memory events for " + device_name + " in this session.</p>\n";
    }
    if (events.memory_dropped() != 0) {
        page += fmt::format(
            "<p id=\"dropped\">{} memory events were dropped (buffer budget): the plot misses them.</p>\n",
            events.memory_dropped());
    }
    if (points.times_us.empty()) {
        page += "</body>\n</html>\n";
        return page;
    }
    const std::int64_t t0 = points.times_us.front();
    const std::int64_t peak_us = peak != nullptr ? floor_microseconds(events.base_time_ns() + peak->at_ns) : t0;
    if (peak != nullptr) {
        page += "<p id=\"peak\">Peak: " + memory_timeline_bytes(static_cast<double>(peak->bytes));
        page += fmt::format(" ({} bytes) at {:.3f} ms", peak->bytes, static_cast<double>(peak_us - t0) / 1e3);
        page += peak->op.empty() ? std::string(", with no op open") : ", in " + html_escaped(peak->op);
        page += "</p>\n";
    }

    // Plot area: x from 0 to the last point (ms), y from 0 to a round number of the largest unit.
    constexpr double width = 960, height = 480, left = 90, right = 30, top = 20, bottom = 60;
    constexpr double plot_w = width - left - right, plot_h = height - top - bottom;
    std::int64_t max_bytes = 1;
    for (const std::int64_t b : points.bytes) max_bytes = std::max(max_bytes, b);
    if (peak != nullptr) max_bytes = std::max(max_bytes, peak->bytes);
    double unit = 1;
    const char* unit_name = "B";
    for (const auto& [size, name] : {std::pair{1024.0, "KiB"}, {1048576.0, "MiB"}, {1073741824.0, "GiB"}}) {
        if (static_cast<double>(max_bytes) >= size) {
            unit = size;
            unit_name = name;
        }
    }
    const double y_step = memory_timeline_step(static_cast<double>(max_bytes) / unit, 5);
    const double y_max = std::ceil(static_cast<double>(max_bytes) / unit / y_step) * y_step;
    const double last_ms = static_cast<double>(std::max(points.times_us.back(), peak_us) - t0) / 1e3;
    // The last value is held a twentieth of the span (at least 1 µs) so that it shows as a step too.
    const double end_ms = last_ms + std::max(last_ms / 20, 1e-3);
    const double x_step = memory_timeline_step(end_ms, 8);
    const double x_max = std::ceil(end_ms / x_step - 1e-9) * x_step;
    const auto x_of = [&](std::int64_t t_us) { return left + static_cast<double>(t_us - t0) / 1e3 / x_max * plot_w; };
    const auto y_of = [&](double bytes) { return top + plot_h - bytes / unit / y_max * plot_h; };

    auto out = std::back_inserter(page);
    fmt::format_to(out,
                   "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"plot\" width=\"{0}\" height=\"{1}\" "
                   "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"live bytes of {2} over time\">\n"
                   "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>\n",
                   width, height, device_name);
    // Grid, ticks and labels.
    for (int i = 0; i * y_step <= y_max + y_step * 1e-9; ++i) {
        const double y = top + plot_h - i * y_step / y_max * plot_h;
        fmt::format_to(out,
                       "<line x1=\"{0}\" y1=\"{1:.2f}\" x2=\"{2}\" y2=\"{1:.2f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{3}\" y=\"{4:.2f}\" text-anchor=\"end\">{5}</text>\n",
                       left, y, left + plot_w, left - 6, y + 4, memory_timeline_tick(i * y_step, y_step));
    }
    for (int i = 0; i * x_step <= x_max + x_step * 1e-9; ++i) {
        const double x = left + i * x_step / x_max * plot_w;
        fmt::format_to(out,
                       "<line x1=\"{0:.2f}\" y1=\"{1}\" x2=\"{0:.2f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
                       "<text x=\"{0:.2f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                       x, top, top + plot_h, top + plot_h + 18, memory_timeline_tick(i * x_step, x_step));
    }
    fmt::format_to(out,
                   "<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"#222\"/>"
                   "<line x1=\"{0}\" y1=\"{2}\" x2=\"{3}\" y2=\"{2}\" stroke=\"#222\"/>\n"
                   "<text x=\"{4}\" y=\"{5}\" text-anchor=\"middle\">Time (ms)</text>\n"
                   "<text transform=\"translate(20 {6}) rotate(-90)\" text-anchor=\"middle\">Memory ({7})</text>\n",
                   left, top, top + plot_h, left + plot_w, left + plot_w / 2, height - 12, top + plot_h / 2,
                   unit_name);
    // The step line: each value holds until the next point.
    std::string line =
        fmt::format("M{:.2f},{:.2f}", x_of(points.times_us[0]), y_of(static_cast<double>(points.bytes[0])));
    for (std::size_t i = 1; i < points.times_us.size(); ++i) {
        fmt::format_to(std::back_inserter(line), " H{:.2f} V{:.2f}", x_of(points.times_us[i]),
                       y_of(static_cast<double>(points.bytes[i])));
    }
    fmt::format_to(std::back_inserter(line), " H{:.2f}", left + end_ms / x_max * plot_w);
    fmt::format_to(out,
                   "<path id=\"area\" d=\"{0} V{1:.2f} H{2:.2f} Z\" fill=\"#9aa5b1\" fill-opacity=\"0.45\" "
                   "stroke=\"none\"/>\n"
                   "<path id=\"series\" d=\"{0}\" fill=\"none\" stroke=\"#1f4e9c\" stroke-width=\"2\"/>\n",
                   line, y_of(0), x_of(t0));
    if (peak != nullptr) {
        const double px = x_of(peak_us);
        const double py = y_of(static_cast<double>(peak->bytes));
        const bool label_left = px > left + plot_w * 0.6;
        fmt::format_to(out,
                       "<circle id=\"peak-marker\" cx=\"{:.2f}\" cy=\"{:.2f}\" r=\"5\" fill=\"#c0392b\"/>"
                       "<text x=\"{:.2f}\" y=\"{:.2f}\" text-anchor=\"{}\" style=\"fill:#c0392b\">peak {}{}</text>\n",
                       px, py, label_left ? px - 8 : px + 8, std::max(py - 8, top + 12), label_left ? "end" : "start",
                       memory_timeline_bytes(static_cast<double>(peak->bytes)),
                       peak->op.empty() ? std::string() : " in " + html_escaped(peak->op));
    }
    page += "</svg>\n";
    fmt::format_to(out, "<p>{} points from {} µs to {} µs since the Unix epoch.</p>\n</body>\n</html>\n",
                   points.times_us.size(), t0, points.times_us.back());
    return page;
}

}  // namespace stint::detail

namespace stint {

void export_memory_timeline(const event_list& events, const std::string& path, stint::device device) {
    const bool html = path.ends_with(".html");
    const bool json = path.ends_with(".json") || path.ends_with(".json.gz");
    if ((!html && !json) || path.ends_with(".raw.json.gz")) {
        throw std::invalid_argument("stint: export_memory_timeline('" + path +
                                    "'): the path must end in .json, .json.gz or .html");
    }
    const detail::memory_timeline_points points = detail::memory_timeline_of(events, device);
    detail::output_file file(path);
    if (html) {
        detail::write_memory_timeline_html(file, points, events, device);
    } else {
        detail::write_memory_timeline_json(file, points);
    }
    file.commit();
}

}  // namespace stint
