#pragma once
// The profiler's plain core: everything a stint::profiler<Config> does that does not depend on Config,
// behind one pointer. profiler<Config> (profiler.hpp) is a thin template that hands the core its
// options and what the config decides (profiler_traits), as fmt's format hands its arguments to vformat.
// The bodies are in impl/profiler_core.ipp: inline in a header-only build, compiled once by
// <stint/impl/src.hpp> under STINT_SEPARATE_COMPILATION.

#include <cstddef>      // std::size_t
#include <cstdint>      // std::int64_t
#include <functional>   // std::function
#include <memory>       // std::unique_ptr
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <unordered_map>  // std::unordered_map
#include <vector>       // std::vector

#include "stint/analysis/event_list.hpp"
#include "stint/analysis/key_averages.hpp"
#include "stint/common/device.hpp"
#include "stint/detail/separate_compilation.hpp"
#include "stint/drain/profiler_stats.hpp"
#include "stint/export/collapsed_stacks.hpp"
#include "stint/export/perfetto_trace_info.hpp"
#include "stint/common/activities.hpp"
#include "stint/profiler/flight_recorder_options.hpp"
#include "stint/export/stream_target.hpp"
#include "stint/schedule.hpp"

namespace stint {

class execution_trace_observer;  // profiler/execution_trace_observer.hpp

namespace detail {

class event_store;              // analysis/detail/event_store.hpp
class event_list_builder;       // analysis/event_tree.hpp
struct device_join_window;      // drain/device_join.hpp
struct thread_of_tid_ref;       // drain/device_join.hpp
struct device_capture;          // device/device_capture.hpp
struct device_session_options;  // device/device_capture.hpp

/// What a profiler's config decides, as values: the core branches on them where the template used
/// `if constexpr`. The device functions are the config's device backend's (null without one).
struct profiler_traits {
    bool enabled = true;  ///< Config::enabled: false, every call is a no-op
    /// with_stack's and with_modules's builders (assign_call_stacks, assign_module_hierarchy), null without
    /// the policy: a program emits them only where its config names it.
    void (*call_stacks)(event_store& events, const std::vector<std::vector<std::uint64_t>>& native,
                        stack_tree& stacks) = nullptr;
    void (*module_hierarchy)(event_store& events, std::vector<event_args>& args) = nullptr;
    /// The config's device backend's join of its activity to the scopes (join_device_activity).
    void (*join_device)(event_list_builder& builder, device_capture& capture,
                        const std::unordered_map<std::uint64_t, event_index>& links, const device_join_window& window,
                        thread_of_tid_ref thread_of_tid) = nullptr;
    bool has_memory = false;
    bool has_shapes = false;
    bool has_device = false;
    bool (*device_start)(const device_session_options& options) = nullptr;
    device_capture (*device_stop)(bool sync) = nullptr;
    device_capture (*device_unavailable)() = nullptr;
};

/// profiler_options<Config> without its one typed member (on_trace_ready, which the template keeps).
struct profiler_settings {
    std::function<profiler_action(std::int64_t)> schedule{};
    bool accumulate_events = false;
    bool enabled = true;
    std::size_t buffer_budget_bytes = 0;
    std::size_t reserve_buffer_bytes = 0;
    activity_set activities{};
    bool sync_device_on_stop = true;
    std::size_t device_buffer_budget_bytes = 0;
    bool enable_cuda_sync_events = false;
    bool teardown_cupti_on_stop = true;
    stint::execution_trace_observer* execution_trace_observer = nullptr;
    stream_target stream_to{};
    std::optional<flight_recorder_options> flight_recorder{};
};

inline namespace STINT_DETAIL_BUILD_NAMESPACE {

class profiler_state;  // impl/profiler_core.ipp

/// The profiler's sessions, windows and results (profiler.hpp documents each call). `owner` is the
/// profiler<Config> handed to `on_trace_ready` (null: no callback).
class profiler_core {
public:
    STINT_DECL profiler_core(profiler_settings settings, const profiler_traits& traits, void* owner,
                             void (*on_trace_ready)(void* owner));
    STINT_DECL ~profiler_core();
    profiler_core(const profiler_core&) = delete;
    profiler_core& operator=(const profiler_core&) = delete;

    STINT_DECL void start();
    STINT_DECL void stop();
    STINT_DECL void step();
    [[nodiscard]] STINT_DECL std::vector<flight_dump> triggered_dumps() const;
    STINT_DECL flight_dump dump(const std::string& path);
    [[nodiscard]] STINT_DECL std::int64_t step_num() const noexcept;
    [[nodiscard]] STINT_DECL profiler_action current_action() const noexcept;
    [[nodiscard]] STINT_DECL bool is_running() const noexcept;
    [[nodiscard]] STINT_DECL const event_list& events() const;
    [[nodiscard]] STINT_DECL averaged_event_list key_averages(const key_averages_options& options) const;
    [[nodiscard]] STINT_DECL double self_cpu_time_total() const;
    [[nodiscard]] STINT_DECL profiler_stats stats() const;
    STINT_DECL void export_chrome_trace(const std::string& path) const;
    // The writers below come from the profiler<Config> member that the program calls (profiler.hpp), so
    // that a program emits, and links, only the writers it calls (design §16, "pay for what you name").
    using perfetto_writer_fn = void (*)(const std::string& path, const event_list& events,
                                        const perfetto_trace_info& info);
    using memory_timeline_fn = void (*)(const event_list& events, const std::string& path, device where);
    using json_validator_fn = std::optional<std::string> (*)(std::string_view text);
    using stacks_writer_fn = void (*)(const std::string& path, const event_list& events, std::string_view metric,
                                      stack_frames frames);
    STINT_DECL void export_perfetto_trace(const std::string& path, perfetto_writer_fn writer) const;
    STINT_DECL void export_memory_timeline(const std::string& path, device where, memory_timeline_fn writer) const;
    STINT_DECL void add_metadata(std::string_view key, std::string_view value);
    STINT_DECL void add_metadata_json(std::string_view key, std::string_view json, json_validator_fn validate);
    STINT_DECL void export_stacks(const std::string& path, std::string_view metric, stack_frames frames,
                                  stacks_writer_fn writer) const;

private:
    std::unique_ptr<profiler_state> state_;
};

}  // namespace STINT_DETAIL_BUILD_NAMESPACE
}  // namespace detail
}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/profiler/impl/profiler_core.ipp"
#endif
