#pragma once
// The process's CUPTI activity collector (design §3, "device sessions"): loads CUPTI once, latches
// whether it works, runs device sessions (enable, external correlation, buffers, flush) and decodes
// their records. One per process, leaked: CUPTI's worker thread may deliver buffers during exit.

#include <algorithm>  // std::find, std::sort, std::max
#include <atomic>     // std::atomic, std::memory_order
#include <chrono>     // std::chrono::steady_clock
#include <cstddef>    // std::size_t
#include <cstdint>    // std::uint64_t, std::uint8_t, std::uint32_t, std::int32_t
#include <cstdlib>    // std::aligned_alloc, std::free, std::getenv
#include <mutex>      // std::mutex, std::lock_guard, std::unique_lock
#include <optional>   // std::optional
#include <string>     // std::string
#include <thread>     // std::this_thread::yield
#include <unordered_map>  // std::unordered_map
#include <utility>    // std::move
#include <vector>     // std::vector

#include <fmt/format.h>  // fmt::format

#include "stint/detail/export_macros.hpp"
#include "stint/device/activity_decoder.hpp"
#include "stint/device/cupti_api.hpp"
#include "stint/device/cupti_library.hpp"
#include "stint/device/device_capture.hpp"
#include "stint/device/device_link.hpp"
#include "stint/detail/platform.hpp"
#include "stint/common/warning.hpp"
#include "stint/recording/clock.hpp"
#include "stint/recording/registry.hpp"

namespace stint::detail {

class cupti_collector {
public:
    /// Uses `table` (and `driver`, or none: no driver check) instead of loading libcupti, and forgets the
    /// latch: for tests, which feed hand-built buffers through the table's callbacks. Call with no session.
    void use_table_for_tests(const cupti_table& table, std::optional<cuda_driver_table> driver,
                             std::string library = "test table") {
        const std::lock_guard lock(mutex_);
        injected_ = table;
        injected_driver_ = std::move(driver);
        injected_library_ = std::move(library);
        forget_process_state();
    }
    /// Goes back to loading libcupti (the latch is taken again on the next session).
    void stop_using_test_table() {
        const std::lock_guard lock(mutex_);
        injected_.reset();
        injected_driver_.reset();
        forget_process_state();
    }

    /// Whether device sessions can run here: CUPTI loads, its version fits, a driver with a device is
    /// present, and no earlier session failed to enable. Loads CUPTI the first time (once per process).
    bool available() {
        const std::lock_guard lock(mutex_);
        load();
        return reason_.empty();
    }
    /// Why not, or "" when available.
    std::string unavailable_reason() {
        const std::lock_guard lock(mutex_);
        load();
        return reason_;
    }

    /// Starts a device session; false (with the reason in report()) when CUPTI cannot be used, in which
    /// case nothing else of CUPTI is ever called in this process.
    bool start(const device_session_options& options) {
        std::unique_lock lock(mutex_);
        load();
        if (!reason_.empty() || active_) return false;
        // CUDA is initialised by a session, never by a query (supported_activities(), available()).
        if (!driver_initialised_) {
            driver_initialised_ = true;
            if (std::string problem = cuda_init_problem(driver_); !problem.empty()) {
                unavailable(std::move(problem));
                return false;
            }
        }
        budget_bytes_ = options.budget_bytes;
        buffer_bytes_ = (std::max<std::size_t>(options.buffer_bytes, 4096) + 7) & ~std::size_t{7};
        sync_events_ = options.sync_events;
        teardown_ = options.teardown;
        rejected_.store(0, std::memory_order_relaxed);
        dropped_.store(0, std::memory_order_relaxed);
        {
            const std::lock_guard ready(ready_mutex_);
            granted_ = 0;
            returned_ = 0;
            received_foreign_ = 0;  // counted from here: another client's buffers may arrive in this flush
        }
        lock.unlock();
        // What CUPTI completed since the last session goes to the callbacks registered now, before stint
        // registers its own: stint's leftovers to stint (stale: delivered under the old epoch), and those
        // of a client that is collecting now (Kineto) home to it. Outside the lock: the callback runs here.
        table_.flush_all(0);
        lock.lock();
        if (!configure()) return false;
        {
            const std::lock_guard ready(ready_mutex_);
            epoch_.fetch_add(1, std::memory_order_acq_rel);
        }
        for (std::size_t i = 0; i < std::size(enabled_kinds); ++i) {
            if (enabled_kinds[i] == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION && !sync_events_) continue;
            if (const CUptiResult r = table_.enable(enabled_kinds[i]); r != CUPTI_SUCCESS) {
                for (std::size_t j = 0; j < i; ++j) table_.disable(enabled_kinds[j]);
                restore_thread_id_type();
                fail("cuptiActivityEnable", r);
                return false;
            }
        }
        // Getters the runtime and driver call all the time: noise in a trace, cost in the buffers.
        for (const CUpti_CallbackId cbid : quiet_runtime_calls) table_.enable_runtime_api(cbid, 0);
        for (const CUpti_CallbackId cbid : quiet_driver_calls) table_.enable_driver_api(cbid, 0);
        if (!clock_.identity) start_anchor_ = bracket_cupti_clock();
        active_ = true;
        device_correlating.store(true, std::memory_order_release);
        return true;
    }

    /// Ends the device session and decodes what it recorded. `sync`: first wait for the work queued on
    /// every device, so a kernel still running is captured (its end would otherwise be unknown); CUPTI is
    /// then torn down (cuptiFinalize) unless the session asked not to or shares CUPTI with another client.
    device_capture stop(bool sync) {
        std::unique_lock lock(mutex_);
        device_capture capture;
        if (!active_) {
            capture.report = report();
            return capture;
        }
        device_correlating.store(false, std::memory_order_release);
        active_ = false;
        // Kineto registers its own timestamp callback at each of its starts: if CUPTI read stint's ticks at
        // start and no longer does, records made since are on that client's clock.
        const bool clock_taken = clock_.identity && clock_verified_ && !cupti_reads_ticks();
        // stint's own synchronisation below is not the program's: its sync records are never collected.
        if (sync_events_) table_.disable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
        if (sync) synchronise_devices(capture);
        for (const CUpti_ActivityKind kind : enabled_kinds) {
            if (kind != CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) table_.disable(kind);  // syncs: off already, or never on
        }
        lock.unlock();
        // Outside every lock: the completion callback runs inside the flush, and CUPTI holds its own lock
        // while it calls us (an ABBA deadlock otherwise).
        table_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        std::size_t dropped = 0;
        if (table_.get_num_dropped_records(nullptr, 0, &dropped) == CUPTI_SUCCESS) {
            dropped_.fetch_add(dropped, std::memory_order_relaxed);
        }
        std::vector<activity_buffer> buffers;
        std::size_t granted = 0;
        std::size_t taken = 0;
        std::size_t taken_bytes = 0;
        std::size_t received = 0;
        {
            const std::lock_guard ready(ready_mutex_);
            buffers.swap(ready_);
            granted = granted_;
            // A forced flush hands every buffer CUPTI holds to the callbacks registered now: one of stint's
            // not back by now went to another client's callbacks, which own (and free) it from here on.
            taken = owned_.size();
            for (const auto& [data, bytes] : owned_) taken_bytes += bytes;
            owned_.clear();
            received = received_foreign_;
            granted_ = 0;
            returned_ = 0;
            received_foreign_ = 0;
        }
        held_bytes_.fetch_sub(taken_bytes, std::memory_order_relaxed);
        lock.lock();
        capture.report = report();
        std::vector<std::string> shared;
        if (taken != 0) {
            shared.push_back(fmt::format(
                "another CUPTI client registered its own buffer callbacks during the session and took {} of the {} "
                "activity buffers stint handed CUPTI; their records are lost",
                taken, std::max(granted, taken)));
        }
        if (received != 0) {
            shared.push_back(fmt::format(
                "{} activity buffer{} of another CUPTI client reached stint's callbacks (it was collecting when stint "
                "registered its own); left untouched: not decoded, not freed, their records lost to that client",
                received, received == 1 ? "" : "s"));
        }
        if (clock_taken) {
            shared.push_back("another CUPTI client registered its own timestamp callback during the session: device "
                             "times since then are on its clock, not stint's, and are counted out of the window");
            clock_alignment_ = "mixed: ticks (cuptiActivityRegisterTimestampCallback) until another client's timestamp "
                               "callback replaced stint's during the session";
        }
        if (!subscriber_.empty()) shared.push_back(subscriber_);
        if (other_client_.empty() && !shared.empty()) other_client_ = shared.front();
        capture.report.status = "active";
        if (!shared.empty()) {
            capture.report.status = "active, shared: " + shared.front();
            for (std::size_t i = 1; i < shared.size(); ++i) capture.report.status += "; " + shared[i];
        }
        capture.report.clock_alignment = clock_alignment_;
        capture.report.loss.dropped_records = dropped_.load(std::memory_order_relaxed);
        capture.report.loss.rejected_buffers = rejected_.load(std::memory_order_relaxed);
        capture.report.loss.foreign_buffers = taken + received;
        if (!clock_.identity) finish_clock_map(capture.report);
        activity_decoder decoder(table_, clock_, capture);
        decoder.decode(buffers, epoch_.load(std::memory_order_acquire));
        for (const activity_buffer& b : buffers) release_buffer(b.data, b.capacity);
        describe_devices(capture);
        restore_thread_id_type();
        // After the last record is read: a process that profiled once runs at full speed again (CUPTI left
        // attached slows launches down, pytorch/pytorch#144455). The next session attaches it anew. Never
        // under another client, which would lose its buffers and callbacks with it.
        if (sync && teardown_ && table_.finalize != nullptr) {
            if (const std::string other = another_client(); !other.empty()) {
                if (shared.empty()) capture.report.status = "active, shared: CUPTI left attached: " + other;
            } else {
                generation_.fetch_add(1, std::memory_order_acq_rel);
                capture.report.torn_down = finalize();
            }
        }
        return capture;
    }

    /// Bytes of activity buffers stint holds now (handed to CUPTI or waiting to be decoded).
    [[nodiscard]] std::size_t held_bytes() const noexcept { return held_bytes_.load(std::memory_order_relaxed); }

    /// The collection's report outside a session: status "unavailable: <reason>" or "active"/"off".
    device_report report() const {
        device_report r;
        r.status = reason_.empty() ? (loaded_ ? "active" : "off") : "unavailable: " + reason_;
        r.library = library_;
        r.cupti_version = version_;
        r.cupti_headers = CUPTI_API_VERSION;
        r.clock_alignment = clock_alignment_;
        r.clock_error_ns = clock_error_ns_;
        return r;
    }

    /// Hot path of a linked scope while a device session is live.
    bool push_external_id(std::uint64_t id) noexcept {
        if (table_.push_external_id(stint_correlation_kind, id) != CUPTI_SUCCESS) return false;
        pushed_generation = generation_.load(std::memory_order_acquire);
        return true;
    }
    /// A pop after CUPTI was torn down is skipped: its stacks are gone, and any call would attach it again.
    void pop_external_id() noexcept {
        if (pushed_generation != generation_.load(std::memory_order_acquire)) return;
        std::uint64_t last = 0;
        table_.pop_external_id(stint_correlation_kind, &last);
    }

    // CUPTI's buffer callbacks (static: CUPTI takes plain function pointers).
    static void CUPTIAPI on_buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
    static void CUPTIAPI on_buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t size,
                                             std::size_t valid);
    // CUPTI's timestamps are stint's ticks: device times need no conversion at drain.
    static std::uint64_t CUPTIAPI timestamp_in_ticks() { return read_ticks(); }
    static void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

private:
    static constexpr CUpti_ActivityKind enabled_kinds[] = {
        // Never CUPTI_ACTIVITY_KIND_KERNEL: it serialises kernels. RUNTIME is what makes CUPTI write the
        // external-correlation records, and the API calls that flows start from.
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
        CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
        CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER,
        CUPTI_ACTIVITY_KIND_OVERHEAD,
    };
    static constexpr CUpti_CallbackId quiet_runtime_calls[] = {
        CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,         CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,      CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
        CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,    CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
        CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,
    };
    static constexpr CUpti_CallbackId quiet_driver_calls[] = {
        CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
        CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute, CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2,
    };

    void forget_process_state() {
        loaded_ = false;
        reason_.clear();
        library_.clear();
        version_ = 0;
        driver_initialised_ = false;
        already_loaded_ = false;
        other_client_.clear();
    }

    // The latch's first half, once: load, version, driver (never cuInit: a query may get here). Under mutex_.
    void load() {
        if (loaded_) return;
        loaded_ = true;
        if (injected_) {
            table_ = *injected_;
            library_ = injected_library_;
        } else {
            // A framework built for another CUDA major (a cu12 PyTorch) loaded its CUPTI: a second one would
            // attach to the driver beside it. Said, and nothing of stint's loaded.
            if (const std::string other = other_cupti_loaded(loaded_objects(), cupti_major_version); !other.empty()) {
                library_ = other;
                return unavailable(fmt::format(
                    "{} (CUPTI {}) is already loaded in this process, by another CUPTI client (a PyTorch or "
                    "library built for CUDA {}); stint does not load libcupti.so.{} beside it: two CUPTIs would "
                    "both attach to the driver. Fix: use the framework's CUDA {} build, or profile the CPU only",
                    other, cupti_major_in_name(other), cupti_major_in_name(other), cupti_major_version,
                    cupti_major_version));
            }
            cupti_library lib = load_cupti_library(std::getenv("STINT_CUPTI_LIBRARY"));
            library_ = lib.path;
            if (!lib.error.empty()) return unavailable(lib.error);
            table_ = lib.table;
            already_loaded_ = lib.already_loaded;
        }
        if (table_.get_version == nullptr || table_.get_version(&version_) != CUPTI_SUCCESS) {
            return unavailable(fmt::format("cuptiGetVersion failed in {}", library_));
        }
        // CUPTI 13 numbers versions 130001 (13.0 Update 1); 12.x and older used small integers.
        const std::uint32_t major = version_ >= 10000 ? version_ / 10000 : 12;
        if (major != cupti_major_version) {
            return unavailable(fmt::format("{} is CUPTI version {} (major {}); stint was built for CUPTI {} "
                                           "(headers {})",
                                           library_, version_, major, cupti_major_version, CUPTI_API_VERSION));
        }
        if (injected_) {
            driver_ = injected_driver_ ? *injected_driver_ : cuda_driver_table{};
            if (std::string old = driver_problem_before_init(driver_, version_); !old.empty()) return unavailable(old);
            return;
        }
        cuda_driver_library driver = load_cuda_driver();
        if (!driver.error.empty()) return unavailable(driver.error);
        if (driver.table.init == nullptr) return unavailable("libcuda.so.1 lacks cuInit");
        if (std::string problem = driver_problem_before_init(driver.table, version_); !problem.empty()) {
            return unavailable(problem);
        }
        driver_ = driver.table;
    }

    // What must precede every session's enable, because another CUPTI client (Kineto) may have changed it
    // since the last one: the thread-id type, the timestamp callback, the buffer callbacks. Under mutex_.
    bool configure() {
        // gettid() as API records' threadId, the id stint's CPU tracks use (CUPTI's default is
        // pthread_self). Process-wide: the previous type is restored at stop, for the next client.
        previous_thread_id_type_.reset();
        if (CUpti_ActivityThreadIdType type{}; table_.get_thread_id_type != nullptr &&
                                               table_.get_thread_id_type(&type) == CUPTI_SUCCESS) {
            previous_thread_id_type_ = type;
        }
        table_.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
        // A successful registration is trusted, as Kineto trusts it: records are then in ticks. Checking
        // cuptiGetTimestamp() against the ticks says nothing (CUPTI need not use the callback for it).
        const bool ticks = table_.register_timestamp_callback(&timestamp_in_ticks) == CUPTI_SUCCESS;
        if (const CUptiResult r = table_.register_callbacks(&on_buffer_requested, &on_buffer_completed);
            r != CUPTI_SUCCESS) {
            restore_thread_id_type();
            fail("cuptiActivityRegisterCallbacks", r);
            return false;
        }
        clock_ = {};
        clock_.identity = ticks;
        clock_error_ns_ = 0;
        // Where cuptiGetTimestamp reads the registered callback, a known tick checks it, now and at stop
        // (another client's callback replacing stint's in between is then seen); where it does not, the
        // registration is trusted, as Kineto trusts it.
        clock_verified_ = ticks && cupti_reads_ticks();
        clock_alignment_ = !ticks           ? "linear (CUPTI's clock in ns, mapped to ticks over the session)"
                           : clock_verified_ ? "ticks (cuptiActivityRegisterTimestampCallback)"
                                             : "ticks (cuptiActivityRegisterTimestampCallback; unverified: "
                                               "cuptiGetTimestamp does not read the callback)";
        // Another subscriber (Kineto's callbacks, Nsight Systems) holds CUPTI too: it must not be torn down.
        // CUPTI 13's cuptiSubscribe_v2 names it; CUPTI has no multi-client activity API (one pair of buffer
        // callbacks, one timestamp callback per process), so this probe is all it offers.
        subscriber_.clear();
        CUpti_SubscriberHandle probe = nullptr;
        CUptiResult r = CUPTI_SUCCESS;
        char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {};
        if (table_.subscribe_v2 != nullptr) {
            CUpti_SubscriberParams params{};
            params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
            params.subscriberName = "stint";
            params.oldSubscriberName = holder;
            params.oldSubscriberSize = sizeof(holder) - 1;
            r = table_.subscribe_v2(&probe, &ignore_callback, nullptr, &params);
        } else if (table_.subscribe != nullptr) {
            r = table_.subscribe(&probe, &ignore_callback, nullptr);
        }
        if (r == CUPTI_SUCCESS && probe != nullptr && table_.unsubscribe != nullptr) table_.unsubscribe(probe);
        if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
            subscriber_ = holder[0] != '\0'
                              ? fmt::format("another CUPTI client is subscribed in this process ('{}', named by "
                                            "cuptiSubscribe_v2); CUPTI is left attached for it",
                                            holder)
                              : "another CUPTI client is subscribed in this process (cuptiSubscribe: "
                                "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED); CUPTI is left attached for it";
        }
        return true;
    }

    void restore_thread_id_type() {
        if (previous_thread_id_type_ && *previous_thread_id_type_ != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) {
            table_.set_thread_id_type(*previous_thread_id_type_);
        }
        previous_thread_id_type_.reset();
    }

    // Whether cuptiGetTimestamp answers stint's ticks (it reads the registered callback): a reading that
    // lies between two tick reads, in one of 4 tries.
    bool cupti_reads_ticks() const {
        for (int i = 0; i < 4; ++i) {
            const std::uint64_t before = read_ticks();
            std::uint64_t cupti = 0;
            if (table_.get_timestamp(&cupti) != CUPTI_SUCCESS) return false;
            const std::uint64_t after = read_ticks();
            if (cupti >= before && cupti <= after) return true;
        }
        return false;
    }

    // One reading of CUPTI's clock between two tick reads, the tightest of 16.
    struct clock_bracket {
        std::uint64_t ticks = 0;  ///< the middle of the bracket
        std::uint64_t cupti = 0;
        std::uint64_t width = ~std::uint64_t{0};  ///< ticks between the two reads
    };
    clock_bracket bracket_cupti_clock() const {
        clock_bracket best;
        for (int i = 0; i < 16; ++i) {
            const std::uint64_t before = read_ticks();
            std::uint64_t cupti = 0;
            table_.get_timestamp(&cupti);
            const std::uint64_t after = read_ticks();
            if (after - before < best.width) best = {before + (after - before) / 2, cupti, after - before};
        }
        return best;
    }

    // Without the timestamp callback: CUPTI's clock (ns) mapped to ticks by a line through two brackets at
    // least 10 ms apart (the session's start and stop), and the line's error in the report.
    void finish_clock_map(device_report& report) {
        const double ns_per_tick = the_registry().calibration().ns_per_tick;
        clock_bracket end = bracket_cupti_clock();
        const auto span_ns = [&] { return static_cast<double>(end.ticks - start_anchor_.ticks) * ns_per_tick; };
        while (span_ns() < 10e6) end = bracket_cupti_clock();
        clock_.identity = false;
        clock_.anchor_ticks = start_anchor_.ticks;
        clock_.anchor_cupti = start_anchor_.cupti;
        const auto cupti_span = static_cast<double>(static_cast<std::int64_t>(end.cupti - start_anchor_.cupti));
        clock_.ticks_per_unit = cupti_span > 0 ? static_cast<double>(end.ticks - start_anchor_.ticks) / cupti_span
                                               : 1.0 / ns_per_tick;
        // Each bracket is known to half its width; the line between them to the wider half.
        clock_error_ns_ = static_cast<double>(std::max(start_anchor_.width, end.width)) * ns_per_tick / 2;
        report.clock_alignment = clock_alignment_;
        report.clock_error_ns = clock_error_ns_;
    }

    void unavailable(std::string reason) {
        reason_ = std::move(reason);
        warn(fmt::format("device activity (cuda_activities) is off in this process: {}. Sessions record the CPU "
                         "only; every trace says why under \"stint\".\"device\".",
                         reason_));
    }

    // A CUPTI call failed at the first session: latch off, with the driver's own reason when it has one
    // (CUPTI says only CUPTI_ERROR_UNKNOWN when there is no usable driver).
    void fail(std::string_view call, CUptiResult result) {
        const char* name = nullptr;
        if (table_.get_result_string == nullptr || table_.get_result_string(result, &name) != CUPTI_SUCCESS) {
            name = "CUPTI error";
        }
        std::string reason = fmt::format("{} returned {} ({})", call, name, static_cast<int>(result));
        if (!injected_) {
            if (std::string problem = cuda_driver_problem(load_cuda_driver(), version_); !problem.empty()) {
                reason += "; " + problem;
            }
        }
        unavailable(std::move(reason));
    }

    // Waits for the work queued in every active primary context (the runtime's), without creating one.
    void synchronise_devices(device_capture& capture) {
        const cuda_driver_table& d = driver_;
        if (d.device_get_count == nullptr || d.device_get == nullptr || d.primary_ctx_get_state == nullptr ||
            d.primary_ctx_retain == nullptr || d.primary_ctx_release == nullptr || d.ctx_push_current == nullptr ||
            d.ctx_pop_current == nullptr || d.ctx_synchronize == nullptr) {
            return;
        }
        capture.own_thread = current_os_tid();
        capture.own_from_ticks = read_ticks();
        int count = 0;
        if (d.device_get_count(&count) == CUDA_SUCCESS) {
            for (int i = 0; i < count; ++i) {
                CUdevice dev = 0;
                unsigned flags = 0;
                int active = 0;
                if (d.device_get(&dev, i) != CUDA_SUCCESS) continue;
                if (d.primary_ctx_get_state(dev, &flags, &active) != CUDA_SUCCESS || active == 0) continue;
                CUcontext ctx = nullptr;
                if (d.primary_ctx_retain(&ctx, dev) != CUDA_SUCCESS) continue;
                if (d.ctx_push_current(ctx) == CUDA_SUCCESS) {
                    d.ctx_synchronize();
                    d.ctx_pop_current(&ctx);
                }
                d.primary_ctx_release(dev);
            }
        }
        capture.own_until_ticks = read_ticks();
    }

    // deviceProperties of the devices that ran work, from the driver.
    void describe_devices(device_capture& capture) const {
        std::vector<std::int32_t> seen;
        for (const device_activity& a : capture.activities) {
            if (a.device >= 0 && std::find(seen.begin(), seen.end(), a.device) == seen.end()) seen.push_back(a.device);
        }
        std::sort(seen.begin(), seen.end());
        const cuda_driver_table& d = driver_;
        for (const std::int32_t index : seen) {
            device_properties p;
            p.id = index;
            CUdevice dev = 0;
            if (d.device_get != nullptr && d.device_get(&dev, index) == CUDA_SUCCESS) {
                char name[256] = {};
                if (d.device_get_name != nullptr && d.device_get_name(name, sizeof(name) - 1, dev) == CUDA_SUCCESS) {
                    p.name = name;
                }
                std::size_t memory = 0;
                if (d.device_total_mem != nullptr && d.device_total_mem(&memory, dev) == CUDA_SUCCESS) {
                    p.total_global_memory = memory;
                }
                const auto attribute = [&](CUdevice_attribute a) -> std::uint32_t {
                    int value = 0;
                    if (d.device_get_attribute == nullptr || d.device_get_attribute(&value, a, dev) != CUDA_SUCCESS) {
                        return 0;
                    }
                    return static_cast<std::uint32_t>(value);
                };
                p.compute_major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
                p.compute_minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
                p.multiprocessors = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
                p.max_threads_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
                p.max_threads_per_multiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
                p.max_registers_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
                p.max_registers_per_multiprocessor = attribute(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
                p.max_shared_memory_per_block = attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
                p.max_shared_memory_per_multiprocessor =
                    attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
                p.warp_size = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
            }
            capture.report.devices.push_back(std::move(p));
        }
    }

    // Why CUPTI must stay attached (another client may hold its buffers or callbacks), or "": one seen in
    // this process (buffers crossing, a foreign clock, a subscriber) stays a reason for good; libcupti
    // loaded by someone else before stint, or linked by another loaded object (Kineto in libtorch_cuda.so,
    // which uses the activity API alone and never subscribes), is looked for at each teardown.
    std::string another_client() const {
        if (!other_client_.empty()) return other_client_;
        if (injected_) return {};  // a test's table: the process's real objects are not its clients
        if (already_loaded_) return library_ + " was loaded by another part of the program, a CUPTI client";
        if (const std::vector<std::string> clients = cupti_clients(loaded_objects()); !clients.empty()) {
            return fmt::format("{} links libcupti (a CUPTI client, such as Kineto)", clients.front());
        }
        return {};
    }

    // CUPTI's documented way to detach: cuptiFinalize from the exit site of a CUDA API call, where no
    // call of that thread is inside CUPTI. A subscriber whose driver-API callback finalizes at the first
    // exit; stint's own cuDriverGetVersion makes one on this thread if no launching thread got there
    // first. Without the callback API (a table without it), directly: the devices were synchronised and
    // the buffers flushed, the other condition the documentation gives.
    bool finalize() {
        if (table_.subscribe == nullptr || table_.enable_domain == nullptr || driver_.driver_get_version == nullptr) {
            return table_.finalize() == CUPTI_SUCCESS;
        }
        finalize_state_.store(finalize_requested, std::memory_order_release);
        CUpti_SubscriberHandle subscriber = nullptr;
        if (table_.subscribe(&subscriber, &finalize_at_api_exit, this) != CUPTI_SUCCESS ||
            table_.enable_domain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
            if (subscriber != nullptr && table_.unsubscribe != nullptr) table_.unsubscribe(subscriber);
            finalize_state_.store(finalize_idle, std::memory_order_release);
            return false;  // left attached: a later session tries again
        }
        int version = 0;
        driver_.driver_get_version(&version);  // its exit runs the callback here, unless another thread's did
        const auto done = [&] { return finalize_state_.load(std::memory_order_acquire) >= finalize_done_ok; };
        // Another thread's exit may be finishing it: wait a while (one CUPTI call).
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
        while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
        std::uint32_t expected = finalize_requested;
        if (finalize_state_.compare_exchange_strong(expected, finalize_idle, std::memory_order_acq_rel)) {
            // No exit callback came (none can now): CUPTI stays attached, and stint's subscriber goes, or
            // the next session's probe would take it for another client.
            if (table_.unsubscribe != nullptr) table_.unsubscribe(subscriber);
            return false;
        }
        while (!done()) std::this_thread::yield();  // a callback is finalizing: it ends
        return finalize_state_.exchange(finalize_idle, std::memory_order_acq_rel) == finalize_done_ok;
    }
    static void CUPTIAPI finalize_at_api_exit(void* self, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
        auto& collector = *static_cast<cupti_collector*>(self);
        if (static_cast<const CUpti_CallbackData*>(data)->callbackSite != CUPTI_API_EXIT) return;
        std::uint32_t expected = finalize_requested;
        // One thread wins; the rest return at once. acquire/release: pairs with finalize()'s loads.
        if (!collector.finalize_state_.compare_exchange_strong(expected, finalize_running, std::memory_order_acq_rel)) {
            return;
        }
        const bool ok = collector.table_.finalize() == CUPTI_SUCCESS;
        collector.finalize_state_.store(ok ? finalize_done_ok : finalize_done_failed, std::memory_order_release);
    }

    void request_buffer(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
        *max_records = 0;  // as many as fit
        const std::size_t bytes = buffer_bytes_;
        std::size_t held = held_bytes_.load(std::memory_order_relaxed);
        do {
            if (held + bytes > budget_bytes_) {
                // Refused (allowed since CUPTI 12.9): CUPTI drops what it cannot store, and counts it.
                rejected_.fetch_add(1, std::memory_order_relaxed);
                *buffer = nullptr;
                *size = 0;
                return;
            }
        } while (!held_bytes_.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
        *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, bytes));
        *size = *buffer == nullptr ? 0 : bytes;
        if (*buffer == nullptr) {
            held_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
            return;
        }
        const std::lock_guard lock(ready_mutex_);
        owned_.emplace(*buffer, bytes);
        ++granted_;
    }

    void complete_buffer(std::uint8_t* buffer, std::size_t valid) {
        if (buffer == nullptr) return;
        {
            const std::lock_guard lock(ready_mutex_);
            const auto it = owned_.find(buffer);
            if (it == owned_.end()) {
                // Another client's (it was collecting when stint registered its callbacks): not stint's to
                // read or free. Its owner keeps it in a map of its own; left as it is.
                ++received_foreign_;
                return;
            }
            ready_.push_back({buffer, valid, epoch_.load(std::memory_order_acquire), it->second});
            owned_.erase(it);
            ++returned_;
        }
        // After our lock is released: CUPTI takes its own lock here, and calls us under it.
        std::size_t dropped = 0;
        if (table_.get_num_dropped_records(nullptr, 0, &dropped) == CUPTI_SUCCESS && dropped != 0) {
            dropped_.fetch_add(dropped, std::memory_order_relaxed);
        }
    }

    void release_buffer(std::uint8_t* buffer, std::size_t bytes) {
        if (buffer == nullptr) return;
        std::free(buffer);
        held_bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    }

    std::mutex mutex_;        // sessions and the latch
    std::mutex ready_mutex_;  // completed buffers, taken briefly by CUPTI's callback
    bool loaded_ = false;
    bool active_ = false;
    bool sync_events_ = false;
    bool teardown_ = true;
    std::optional<CUpti_ActivityThreadIdType> previous_thread_id_type_;
    std::string reason_;      // why CUPTI is off in this process; empty: usable
    std::optional<cupti_table> injected_;
    std::optional<cuda_driver_table> injected_driver_;
    std::string injected_library_;
    cupti_table table_;
    cuda_driver_table driver_;
    std::string library_;
    std::uint32_t version_ = 0;
    cupti_clock_map clock_;
    clock_bracket start_anchor_;
    std::string clock_alignment_;
    double clock_error_ns_ = 0;
    std::size_t budget_bytes_ = 0;
    std::size_t buffer_bytes_ = std::size_t{4} << 20;
    std::atomic<std::size_t> held_bytes_{0};
    std::atomic<std::uint64_t> epoch_{0};
    std::atomic<std::uint64_t> rejected_{0};
    std::atomic<std::uint64_t> dropped_{0};
    std::vector<activity_buffer> ready_;      // under ready_mutex_, as the four below
    std::unordered_map<std::uint8_t*, std::size_t> owned_;  // handed to CUPTI, not back yet: address, bytes
    std::size_t granted_ = 0;                 // handed out this session
    std::size_t returned_ = 0;                // completed to stint this session
    std::size_t received_foreign_ = 0;        // another client's buffers completed to stint this session
    bool driver_initialised_ = false;         // cuInit was called (at the first start)
    bool already_loaded_ = false;             // libcupti was in the process before stint looked
    bool clock_verified_ = false;             // cuptiGetTimestamp read stint's ticks at start
    std::string subscriber_;                  // this session: another subscriber holds CUPTI (what it is)
    std::string other_client_;                // the first sign of another CUPTI client in this process
    static constexpr std::uint32_t finalize_idle = 0, finalize_requested = 1, finalize_running = 2,
                                   finalize_done_ok = 3, finalize_done_failed = 4;
    std::atomic<std::uint32_t> finalize_state_{finalize_idle};
    std::atomic<std::uint64_t> generation_{0};  // +1 at each teardown
    static inline thread_local std::uint64_t pushed_generation = 0;  // generation_ at this thread's last push
};

inline namespace STINT_DETAIL_ABI_NAMESPACE {
/// The process's collector (one even across shared libraries; never destroyed).
STINT_DETAIL_EXPORT inline cupti_collector& the_cupti_collector() {
    static cupti_collector* const collector = new cupti_collector();
    return *collector;
}
}  // namespace STINT_DETAIL_ABI_NAMESPACE

inline void CUPTIAPI cupti_collector::on_buffer_requested(std::uint8_t** buffer, std::size_t* size,
                                                          std::size_t* max_records) {
    the_cupti_collector().request_buffer(buffer, size, max_records);
}
inline void CUPTIAPI cupti_collector::on_buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                                                          std::size_t valid) {
    the_cupti_collector().complete_buffer(buffer, valid);
}

}  // namespace stint::detail
