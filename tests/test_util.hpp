#pragma once
// Helpers shared by the tests: temporary directories and reading traces back independently.

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "stint/stint.hpp"

namespace stint_test {

// The names of a table's rows, top to bottom.
inline std::vector<std::string> table_row_names(const std::string& text) {
    std::vector<std::string> names;
    std::size_t at = 0;
    int separators = 0;
    while (at < text.size()) {
        const std::size_t end = text.find('\n', at);
        const std::string line = text.substr(at, end - at);
        at = end + 1;
        if (line.starts_with("---")) {
            ++separators;
            continue;
        }
        if (separators != 2) continue;
        const std::size_t first = line.find_first_not_of(' ');
        names.push_back(line.substr(first, line.find("  ", first) - first));
    }
    return names;
}

/// A fresh directory under the system temp dir, removed with its contents at scope end.
class temp_dir {
public:
    temp_dir() {
        std::random_device rd;
        path_ = std::filesystem::temp_directory_path() / ("stint_test_" + std::to_string(rd()) + std::to_string(rd()));
        std::filesystem::create_directories(path_);
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

inline std::string read_gzip(const std::string& path) {
    gzFile file = gzopen(path.c_str(), "rb");
    std::string text;
    if (file == nullptr) return text;
    char block[65536];
    int n = 0;
    while ((n = gzread(file, block, sizeof(block))) > 0) text.append(block, static_cast<std::size_t>(n));
    gzclose(file);
    return text;
}

/// Parses a trace file (gzip when the name ends in .gz) with nlohmann-json, not with stint.
inline nlohmann::json read_json(const std::string& path) {
    const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
    return nlohmann::json::parse(gz ? read_gzip(path) : read_file(path));
}

/// The overhead records (registration and buffer chunks) a thread that registers during a session
/// makes while it appends `records` timing-only records: its chunks grow from the smallest size class,
/// doubling up to the largest, and each chunk after the first adds one record after the one that
/// took it (the first is part of the registration). Follows registry.hpp's make_room: a new chunk is
/// taken when fewer than 24 bytes are left, and it must hold the record and the overhead record.
inline std::uint64_t overhead_of_new_thread(std::uint64_t records) {
    using stint::detail::chunk;
    constexpr std::size_t record_bytes = sizeof(stint::detail::record);
    std::uint64_t overhead = 0;
    std::size_t left = 0;
    std::uint32_t size_class = 0;
    bool first = true;
    for (std::uint64_t i = 0; i < records; ++i) {
        if (left >= record_bytes) {
            left -= record_bytes;
            continue;
        }
        if (!first) size_class = std::min<std::uint32_t>(size_class + 1, chunk::size_classes - 1);
        first = false;
        left = chunk::bytes_of_class(size_class) - chunk::header_bytes - 2 * record_bytes;
        ++overhead;
    }
    return overhead;
}

/// The trace's timed events (ph "X" or "i", not metadata), stint's own (cat "overhead") included.
inline std::vector<nlohmann::json> all_timed_events(const nlohmann::json& trace) {
    std::vector<nlohmann::json> out;
    for (const auto& e : trace.at("traceEvents")) {
        if (e.at("ph") != "M") out.push_back(e);
    }
    return out;
}

/// The trace's timed events of the program: without stint's own (cat "overhead").
inline std::vector<nlohmann::json> timed_events(const nlohmann::json& trace) {
    std::vector<nlohmann::json> out;
    for (const auto& e : trace.at("traceEvents")) {
        if (e.at("ph") != "M" && e.value("cat", "") != "overhead") out.push_back(e);
    }
    return out;
}

/// How many of a list's events are the program's, not stint's own overhead events.
template <class List>
std::size_t program_event_count(const List& list) {
    std::size_t n = 0;
    for (const auto& e : list) n += e.kind != stint::event_kind::overhead ? 1 : 0;
    return n;
}

/// How many of a list's events are stint's own overhead events named `name`.
template <class List>
std::size_t overhead_event_count(const List& list, std::string_view name) {
    std::size_t n = 0;
    for (const auto& e : list) n += e.kind == stint::event_kind::overhead && e.name == name ? 1 : 0;
    return n;
}

}  // namespace stint_test
