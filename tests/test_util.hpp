#pragma once
// Helpers shared by the tests: temporary directories, reading traces back independently, and the small
// tools many tests use (one definition each: test binaries are built as unity builds).

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <optional>
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

/// A fresh directory under the system temp dir (mode 0700, or 0711 where others must pass through it:
/// a child dropped to "nobody"), removed with its contents at scope end, after the test's own
/// permission changes inside it are undone.
class temp_dir {
public:
    enum class others { kept_out, may_enter };
    explicit temp_dir(others who = others::kept_out) {
        std::string pattern = (std::filesystem::temp_directory_path() / "stint_test_XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw std::runtime_error("stint_test: cannot make a directory " + pattern + ": " + std::strerror(errno));
        }
        path_ = pattern;
        if (who == others::may_enter) {
            namespace fs = std::filesystem;
            fs::permissions(path_, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
        }
    }
    ~temp_dir() {
        namespace fs = std::filesystem;
        std::error_code ignored;
        fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ignored);
        for (auto it = fs::recursive_directory_iterator(path_, ignored); it != fs::recursive_directory_iterator();
             it.increment(ignored)) {
            if (it->is_directory(ignored) && !it->is_symlink(ignored)) {
                fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
            }
        }
        fs::remove_all(path_, ignored);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    [[nodiscard]] std::string file(std::string_view name) const { return (path_ / name).string(); }
    [[nodiscard]] std::string operator/(std::string_view name) const { return file(name); }
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

/// The names in a directory, sorted.
inline std::vector<std::string> entries(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

/// The exact text of stint's error when it cannot write a trace (output_file's OS errors).
inline std::string write_error_text(const std::string& path, const std::string& reason) {
    return "stint: cannot write trace '" + path + "': " + reason;
}

/// A file's bytes; throws (the path and the reason) where it cannot be read, so that a file that was
/// never written fails the test instead of reading as empty.
inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("stint_test: cannot read '" + path + "': " + std::strerror(errno));
    std::stringstream text;
    text << in.rdbuf();
    if (in.bad()) throw std::runtime_error("stint_test: cannot read '" + path + "'");
    return text.str();
}

/// A gzip file's bytes, decompressed; throws where it cannot be opened, or is not whole gzip.
inline std::string read_gzip(const std::string& path) {
    gzFile file = gzopen(path.c_str(), "rb");
    if (file == nullptr) throw std::runtime_error("stint_test: cannot open '" + path + "': " + std::strerror(errno));
    std::string text;
    char block[65536];
    int n = 0;
    while ((n = gzread(file, block, sizeof(block))) > 0) text.append(block, static_cast<std::size_t>(n));
    int code = Z_OK;
    const char* message = n < 0 ? gzerror(file, &code) : nullptr;
    const std::string reason = message != nullptr ? message : "";
    const int closed = gzclose(file);  // Z_BUF_ERROR: the file ends inside a member
    if (n < 0) throw std::runtime_error("stint_test: cannot decompress '" + path + "': " + reason);
    if (closed != Z_OK) throw std::runtime_error("stint_test: '" + path + "' ends inside a gzip member");
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

/// The first event named `name`, or null.
inline std::optional<stint::event> find(const stint::event_list& list, std::string_view name) {
    for (const stint::event& e : list) {
        if (e.name == name) return e;
    }
    return std::nullopt;
}

/// How many of a list's events are named `name`.
inline std::size_t count_named(const stint::event_list& list, std::string_view name) {
    std::size_t n = 0;
    for (const stint::event& e : list) n += e.name == name ? 1 : 0;
    return n;
}

/// How many of a trace's events (as timed_events() returns them) are named `name`.
inline std::size_t count_named(const std::vector<nlohmann::json>& events, std::string_view name) {
    std::size_t n = 0;
    for (const nlohmann::json& e : events) n += e.at("name") == name ? 1 : 0;
    return n;
}

/// A list's memory events (profile_memory), in order.
inline std::vector<std::optional<stint::event>> memory_events(const stint::event_list& list) {
    std::vector<std::optional<stint::event>> found;
    for (const stint::event& e : list) {
        if (e.kind == stint::event_kind::memory) found.push_back(e);
    }
    return found;
}

/// This process's resident bytes now (VmRSS) and at most so far (VmHWM), from /proc/self/status.
struct process_memory {
    std::int64_t resident = 0;
    std::int64_t peak = 0;
};
inline process_memory memory_now() {
    process_memory m;
    std::ifstream status("/proc/self/status");
    if (!status) throw std::runtime_error("stint_test: cannot read /proc/self/status: " + std::string(std::strerror(errno)));
    std::string line;
    while (std::getline(status, line)) {
        const auto bytes = [&] { return std::stoll(line.substr(line.find(':') + 1)) * 1024; };
        if (line.starts_with("VmRSS:")) m.resident = bytes();
        if (line.starts_with("VmHWM:")) m.peak = bytes();
    }
    return m;
}

/// Busy-waits for `span`: time the profiler sees spent on this thread, not asleep.
inline void spin_for(std::chrono::microseconds span) {
    const auto until = std::chrono::steady_clock::now() + span;
    while (std::chrono::steady_clock::now() < until) {
    }
}

/// Installs a handler that keeps every warning for its lifetime, then puts the previous one back.
class warning_capture {
public:
    warning_capture()
        : previous_(stint::set_warning_handler([this](std::string_view text) {
              std::lock_guard lock(mutex_);
              seen_.emplace_back(text);
          })) {}
    ~warning_capture() { stint::set_warning_handler(std::move(previous_)); }
    warning_capture(const warning_capture&) = delete;
    warning_capture& operator=(const warning_capture&) = delete;

    [[nodiscard]] std::vector<std::string> seen() const {
        std::lock_guard lock(mutex_);
        return seen_;
    }
    /// How many warnings were exactly `text`.
    [[nodiscard]] std::size_t count(std::string_view text) const {
        std::size_t n = 0;
        for (const std::string& s : seen()) n += s == text ? 1 : 0;
        return n;
    }

private:
    mutable std::mutex mutex_;
    std::vector<std::string> seen_;
    stint::warning_handler previous_;
};

/// A sink for the streaming writers that keeps what they write.
struct string_sink {
    std::string text;
    void write(std::string_view bytes) { text.append(bytes); }
};

/// An event's arguments holding only these input shapes.
inline stint::event_args input_shapes(std::vector<std::vector<std::int64_t>> dims) {
    stint::event_args args;
    args.input_dims = std::move(dims);
    return args;
}

/// What a shell command printed (stdout and stderr together), and how it ended.
struct program_result {
    int status = -1;  ///< its exit status, or 128 + the signal that ended it
    std::string output;
};

/// Runs `command` with /bin/sh, its stderr joined to its stdout, and keeps what it printed.
inline program_result run_program(const std::string& command) {
    program_result result;
    FILE* pipe = ::popen(("exec 2>&1; " + command).c_str(), "r");
    if (pipe == nullptr) throw std::runtime_error("stint_test: cannot run '" + command + "': " + std::strerror(errno));
    char block[4096];
    for (std::size_t n = 0; (n = std::fread(block, 1, sizeof block, pipe)) > 0;) result.output.append(block, n);
    const int status = ::pclose(pipe);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return result;
}

/// The test program that leaves main during a session in the way `mode` names
/// (tests/programs/exit_in_session.cpp), with `environment` ("NAME='value' ...") before it.
#ifdef STINT_TEST_EXIT_PROGRAM
inline program_result run_exit_program(const std::string& mode, const std::string& environment = "") {
    return run_program(environment + " " + std::string(STINT_TEST_EXIT_PROGRAM) + " " + mode);
}
#endif

/// A golden file's bytes (tests/golden/NAME): meson passes the source directory; a bare compiler
/// build has __FILE__, which is beside it.
inline std::string read_golden(std::string_view name) {
#ifdef STINT_TEST_SOURCE_DIR
    const std::filesystem::path dir = STINT_TEST_SOURCE_DIR;
#else
    const std::filesystem::path dir = std::filesystem::path(__FILE__).parent_path();
#endif
    const std::filesystem::path path = dir / "golden" / name;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("missing golden file " + path.string());
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A text's lines, without their line ends.
inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// The first CUDA device.
inline constexpr stint::device cuda0{stint::device_type::cuda, 0};

/// A schedule's actions, one letter each, as the schedule tests write their expected sequences.
namespace schedule_actions {
inline constexpr stint::profiler_action N = stint::profiler_action::none;
inline constexpr stint::profiler_action W = stint::profiler_action::warmup;
inline constexpr stint::profiler_action R = stint::profiler_action::record;
inline constexpr stint::profiler_action S = stint::profiler_action::record_and_save;
}  // namespace schedule_actions

/// torch's schedule written out step by step, as a list: skip, then whole cycles laid end to end, then
/// NONE. A different construction from the library's modulo arithmetic on purpose.
inline std::vector<stint::profiler_action> reference_actions(const stint::schedule_options& o, std::size_t steps) {
    using namespace schedule_actions;
    std::vector<stint::profiler_action> out;
    auto push = [&](stint::profiler_action a, std::int64_t times) {
        for (std::int64_t i = 0; i < times && out.size() < steps; ++i) out.push_back(a);
    };
    push(N, o.skip_first);
    for (std::int64_t cycle = 0; out.size() < steps && (o.repeat == 0 || cycle < o.repeat); ++cycle) {
        push(N, o.wait);
        push(W, o.warmup);
        push(R, o.active - 1);
        push(S, 1);
    }
    while (out.size() < steps) out.push_back(N);
    return out;
}

}  // namespace stint_test
