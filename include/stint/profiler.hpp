#pragma once
// stint::profiler: start/stop a recording session and read or export its events.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "stint/analysis/event_list.hpp"
#include "stint/analysis/key_averages.hpp"
#include "stint/analysis/table.hpp"
#include "stint/config.hpp"
#include "stint/detail/platform.hpp"
#include "stint/detail/session.hpp"
#include "stint/export/chrome_trace.hpp"

namespace stint {

/// Options of a profiler.
struct profiler_options {
    /// Bytes of record buffers a session may use, over all threads. Records beyond it are dropped
    /// and counted exactly (stats().dropped, every export's "stint" block).
    std::size_t buffer_budget_bytes = std::size_t{512} << 20;
    /// Bytes of buffers allocated and faulted in at start(), so that the first records of a session
    /// land in resident memory (a fresh page costs more than the records written to it). Later
    /// sessions of the same profiler reuse the previous session's buffers without asking.
    std::size_t reserve_buffer_bytes = 0;
};

/// Records the events of every thread between start() and stop(); one profiler records at a time
/// in a process. Events and exports are available after stop().
///
///     stint::profiler<> prof;
///     prof.start();
///     work();
///     prof.stop();
///     prof.export_chrome_trace("work.pt.trace.json");
template <configuration Config = config<>>
class profiler {
public:
    using config_type = Config;

    explicit profiler(profiler_options options = {}) : options_(options) {}
    profiler(const profiler&) = delete;
    profiler& operator=(const profiler&) = delete;
    /// A profiler destroyed while recording stops (and drains) first.
    ~profiler() {
        try {
            stop();
        } catch (...) {
            // Destructors never throw; the session's events are lost with the profiler anyway.
        }
    }

    /// Starts recording. Throws std::logic_error if this or another profiler is already recording.
    void start() {
        if constexpr (Config::enabled) {
            if (session_.is_open()) throw std::logic_error("stint: start(): this profiler is already recording");
            session_.open(options_.buffer_budget_bytes, options_.reserve_buffer_bytes);
        }
    }

    /// Stops recording and builds the event list. Stopping a stopped profiler does nothing.
    void stop() {
        if constexpr (Config::enabled) {
            if (session_.close(events_, next_id_)) next_id_ += events_.size();
        }
    }

    /// Whether this profiler's session is recording.
    [[nodiscard]] bool is_running() const noexcept { return session_.is_open(); }

    /// The events of the last session (torch's `prof.events()`).
    [[nodiscard]] const event_list& events() const {
        require_finished("events()");
        return events_;
    }

    /// The events grouped by name (and by shapes or stack frames when asked), as torch's
    /// `prof.key_averages()`.
    ///
    ///     std::cout << prof.key_averages().table({.sort_by = "self_cpu_time_total", .row_limit = 10});
    [[nodiscard]] averaged_event_list key_averages(key_averages_options options = {}) const {
        require_finished("key_averages()");
        return stint::key_averages(events_, options);
    }

    /// Sum of every event's self time, in microseconds (torch's `prof.self_cpu_time_total`).
    [[nodiscard]] double self_cpu_time_total() const {
        require_finished("self_cpu_time_total()");
        std::int64_t total = 0;
        for (const event& e : events_) total += e.self_ns;
        return static_cast<double>(total) / 1e3;
    }

    /// The profiler's own timings and record accounting for the last session.
    [[nodiscard]] const profiler_stats& stats() const {
        require_finished("stats()");
        return session_.stats();
    }

    /// Writes the last session as Chrome/Perfetto trace JSON (gzip if `path` ends in ".gz").
    void export_chrome_trace(const std::string& path) const {
        require_finished("export_chrome_trace()");
        detail::chrome_trace_info info;
        info.pid = detail::current_pid();
        info.truncated_names = session_.stats().truncated_names;
        detail::write_chrome_trace_file(path, events_, info);
    }

private:
    void require_finished(std::string_view call) const {
        if (session_.is_open()) {
            throw std::logic_error("stint: " + std::string(call) +
                                   ": the profiler didn't finish running; call stop() first");
        }
    }

    profiler_options options_;
    detail::session session_;
    event_list events_;
    std::uint64_t next_id_ = 0;
};

/// Prints the key-averages table, as `str(prof)` does in torch.
template <class Config>
std::ostream& operator<<(std::ostream& out, const profiler<Config>& prof) {
    return out << prof.key_averages().table();
}

}  // namespace stint

template <class Config>
struct fmt::formatter<stint::profiler<Config>> : fmt::formatter<std::string_view> {
    template <class FormatContext>
    auto format(const stint::profiler<Config>& prof, FormatContext& ctx) const {
        const std::string text = prof.key_averages().table();
        return fmt::formatter<std::string_view>::format(text, ctx);
    }
};
