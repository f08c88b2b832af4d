#pragma once
// Counts a Chrome trace's events with nlohmann-json's strict SAX parser, streaming from the file, so
// that traces of millions of events are checked without holding them as a DOM.

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace stint_test {

struct trace_counts {
    std::uint64_t program_events = 0;   ///< traceEvents with ph "X" or "i", cat not "overhead"
    std::uint64_t overhead_events = 0;  ///< cat "overhead"
    std::uint64_t metadata_events = 0;  ///< ph "M"
};

/// Parses `path` strictly (throws on invalid JSON) and counts its traceEvents by kind.
inline trace_counts count_trace_events(const std::string& path) {
    struct counter : nlohmann::json_sax<nlohmann::json> {
        trace_counts counts;
        int depth = 0;  // 1: the top object, 2: traceEvents' array, 3: an event
        bool in_events = false;
        std::string last_key, ph, cat;

        bool null() override { return true; }
        bool boolean(bool) override { return true; }
        bool number_integer(number_integer_t) override { return true; }
        bool number_unsigned(number_unsigned_t) override { return true; }
        bool number_float(number_float_t, const string_t&) override { return true; }
        bool string(string_t& value) override {
            if (in_events && depth == 3) {
                if (last_key == "ph") ph = value;
                if (last_key == "cat") cat = value;
            }
            return true;
        }
        bool binary(binary_t&) override { return true; }
        bool start_object(std::size_t) override {
            ++depth;
            if (in_events && depth == 3) ph.clear(), cat.clear();
            return true;
        }
        bool key(string_t& value) override {
            last_key = value;
            if (depth == 1) in_events = value == "traceEvents";
            return true;
        }
        bool end_object() override {
            if (in_events && depth == 3) {
                if (ph == "M") ++counts.metadata_events;
                else if (cat == "overhead") ++counts.overhead_events;
                else if (ph == "X" || ph == "i") ++counts.program_events;
            }
            --depth;
            return true;
        }
        bool start_array(std::size_t) override { ++depth; return true; }
        bool end_array() override {
            --depth;
            if (depth == 1) in_events = false;
            return true;
        }
        bool parse_error(std::size_t at, const std::string&, const nlohmann::detail::exception& e) override {
            throw std::runtime_error("invalid JSON at byte " + std::to_string(at) + ": " + e.what());
        }
    } handler;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    nlohmann::json::sax_parse(in, &handler, nlohmann::json::input_format_t::json, true);
    return handler.counts;
}

}  // namespace stint_test
