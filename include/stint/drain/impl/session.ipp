#pragma once
// The bodies of drain/session.hpp: opening, closing and draining a session, and building its events.

#include "stint/drain/session.hpp"

#include <algorithm>  // std::min, std::max, std::find_if
#include <cstring>  // std::memcpy
#include <iterator>  // std::make_move_iterator
#include <stdexcept>  // std::logic_error
#include <utility>  // std::move

#include "stint/annotations/event_args.hpp"
#include "stint/annotations/recording_hook.hpp"
#include "stint/capture/detail/input_encoding.hpp"
#include "stint/capture/native_stack.hpp"
#include "stint/drain/device_join.hpp"
#include "stint/memory/report.hpp"
#include "stint/common/warning.hpp"

namespace stint::detail {

// record_outputs and add_args records waiting for the event around them. A thread's buffer holds
// each scope's record after everything recorded inside it, so the first later record of a lower
// depth is the scope around one. Args go to that scope. Outputs go to the innermost op: if that
// scope is no op, the one around it is looked for, and so on; outputs no op encloses go to the
// innermost scope around them.
class session::pending_attachments {
public:
    // Returns 1 when the capture was truncated.
    std::uint64_t add(std::uint32_t depth, const record_payload& payload) {
        op_inputs values = decode_inputs({}, payload.bytes, payload.aux);
        const std::uint64_t truncated = values.truncated() ? 1 : 0;
        waiting_.push_back({depth, no_index, std::move(values.mutable_inputs()), {}, false, false});
        return truncated;
    }
    void add_args(std::uint32_t depth, const record_payload& payload) {
        waiting_.push_back({depth, no_index, {}, decode_args(payload), (payload.aux & args_cut) != 0, true});
    }
    // Scope event i (recorded at `depth`) ended: it encloses every waiting entry deeper than it.
    void enclosed_by(event_list_builder& builder, event_index i, std::uint32_t depth) {
        if (waiting_.empty()) return;
        const bool op = builder.kind_of(i) == event_kind::cpu_op;
        std::size_t kept = 0;
        for (std::size_t w = 0; w < waiting_.size(); ++w) {
            entry& e = waiting_[w];
            if (e.depth > depth) {
                // Args belong to the event one level up; a scope further up means that event's
                // record was dropped (and counted), and they go with it.
                if (e.args) {
                    if (depth + 1 == e.depth) attach(builder, i, e);
                    continue;
                }
                if (op) {
                    attach(builder, i, e);
                    continue;
                }
                if (e.innermost == no_index) e.innermost = i;
                e.depth = depth;
            }
            if (kept != w) waiting_[kept] = std::move(e);  // never onto itself: that would empty it
            ++kept;
        }
        waiting_.resize(kept);
    }
    // The end of one buffer's records: what no op enclosed goes to the innermost scope around it
    // (none: its scope's record was dropped, and counted).
    void finish_run(event_list_builder& builder) {
        for (entry& e : waiting_) {
            if (e.innermost != no_index) attach(builder, e.innermost, e);
        }
        waiting_.clear();
    }

private:
    struct entry {
        std::uint32_t depth;
        event_index innermost;  // the innermost scope found around it so far
        std::vector<op_input> values;
        std::vector<named_arg> named;
        bool cut;
        bool args;  // add_args' (else record_outputs')
    };
    static void attach(event_list_builder& builder, event_index i, entry& e) {
        event_args& to = builder.args_of(i);
        if (!e.args) {
            to.outputs.insert(to.outputs.end(), std::make_move_iterator(e.values.begin()),
                              std::make_move_iterator(e.values.end()));
            return;
        }
        to.named_args_cut = to.named_args_cut || e.cut;
        for (named_arg& a : e.named) {
            const auto same = std::find_if(to.named_args.begin(), to.named_args.end(),
                                           [&](const named_arg& b) { return b.name == a.name; });
            if (same != to.named_args.end()) {
                *same = std::move(a);
            } else {
                to.named_args.push_back(std::move(a));
            }
        }
    }
    // The arguments of an add_args record (annotations/event_args.hpp's encoding).
    static std::vector<named_arg> decode_args(const record_payload& payload) {
        std::vector<named_arg> out;
        const std::span<const std::byte> bytes = payload.bytes;
        std::size_t at = 0;
        for (std::uint32_t n = payload.aux & ~args_cut; n != 0; --n) {
            arg_head head{};
            if (bytes.size() - at < sizeof head) break;
            std::memcpy(&head, bytes.data() + at, sizeof head);
            at += sizeof head;
            if (bytes.size() - at < std::size_t{head.name_size} + head.value_size) break;
            named_arg& a = out.emplace_back();
            a.name.assign(reinterpret_cast<const char*>(bytes.data() + at), head.name_size);
            at += head.name_size;
            a.type = static_cast<arg_type>(head.type);
            if (a.type == arg_type::string) {
                a.text.assign(reinterpret_cast<const char*>(bytes.data() + at), head.value_size);
            } else if (head.value_size == 8) {
                std::memcpy(a.type == arg_type::real ? static_cast<void*>(&a.real) : static_cast<void*>(&a.integer),
                            bytes.data() + at, 8);
            }
            at += head.value_size;
        }
        return out;
    }
    std::vector<entry> waiting_;
};

session::~session() {
    if (opened_) the_registry().release_buffers();
}

void session::prepare(std::size_t budget_bytes, std::size_t reserve_bytes) {
    if (prepared_) return;
    registry& reg = the_registry();
    const std::int64_t t0 = steady_now_ns();
    calibration_ = reg.calibration();
    calibration_.anchor = take_clock_anchor();
    if (reserve_bytes > 0) {
        reg.reserve_buffers(std::min(reserve_bytes, budget_bytes));
        opened_ = true;  // the reserve is released with the session
    }
    prepare_us_ = microseconds_between(t0, steady_now_ns());
    prepared_ = true;
}

void session::open(std::size_t budget_bytes, std::size_t reserve_bytes, bool record_cpu, bool track_memory,
                   capture_options capture, bool streamed, ring_options ring) {
    registry& reg = the_registry();
    prepare(budget_bytes, record_cpu ? reserve_bytes : 0);
    const std::int64_t t1 = steady_now_ns();
    // Re-anchored here, not at prepare(): a warmup may have prepared steps ago, and time 0 is the
    // window's start.
    calibration_.anchor = take_clock_anchor();
    state_ = record_cpu ? reg.begin_session(budget_bytes, streamed, ring) : device_only_state;
    opened_ = true;
    const std::int64_t t2 = steady_now_ns();
    prepared_ = false;
    if (track_memory && record_cpu) {
        memory_events_dropped.store(0, std::memory_order_relaxed);
        memory_state.store(state_, std::memory_order_relaxed);
    }
    capture_state.outputs.store(capture.outputs && record_cpu, std::memory_order_relaxed);
    capture_state.identities.store(capture.tensor_identities && record_cpu, std::memory_order_relaxed);
    // Objects with copies of their own (recording/object_links.hpp) get the same switches.
    const std::vector<const object_link*> linked = record_cpu ? reg.linked_objects() : std::vector<const object_link*>{};
    for (const object_link* link : linked) {
        if (track_memory) link->memory_state->store(state_, std::memory_order_relaxed);
        link->capture->outputs.store(capture.outputs, std::memory_order_relaxed);
        link->capture->identities.store(capture.tensor_identities, std::memory_order_relaxed);
    }
    stats_ = {};
    stats_.profiler_prepare_call_duration_us = prepare_us_;
    stats_.profiler_enable_call_duration_us = microseconds_between(t1, t2);
    if (record_cpu) {  // last: a framework's first op finds all set
        run_recording_hooks(recording_hooks, true);
        for (const object_link* link : linked) run_recording_hooks(*link->hooks, true);
    }
}

bool session::close_records(record_store& out) {
    if (state_ == 0) return false;
    registry& reg = the_registry();
    const std::vector<const object_link*> linked =
        state_ != device_only_state ? reg.linked_objects() : std::vector<const object_link*>{};
    if (state_ != device_only_state) {  // a framework stops feeding it first
        run_recording_hooks(recording_hooks, false);
        for (const object_link* link : linked) run_recording_hooks(*link->hooks, false);
    }
    // First: the drain below allocates, and no report may land in a session being drained.
    if (memory_state.load(std::memory_order_relaxed) == state_) memory_state.store(0, std::memory_order_relaxed);
    capture_state.outputs.store(false, std::memory_order_relaxed);
    capture_state.identities.store(false, std::memory_order_relaxed);
    for (const object_link* link : linked) {
        if (link->memory_state->load(std::memory_order_relaxed) == state_) {
            link->memory_state->store(0, std::memory_order_relaxed);
        }
        link->capture->outputs.store(false, std::memory_order_relaxed);
        link->capture->identities.store(false, std::memory_order_relaxed);
    }
    record_store store;
    const std::int64_t disable_start = steady_now_ns();
    std::int64_t disabled_at = 0;
    const auto on_disabled = [&](std::uint64_t stop_ticks) {
        store.stop_ticks = stop_ticks;
        disabled_at = steady_now_ns();
        store.buffer_bytes = reg.session_buffer_bytes();
        store.late = reg.late_records_found();
        // Before the chunks are given back: the next window reuses them, resident.
        if (keep_buffers_) reg.retain_buffers(store.buffer_bytes);
        calibration_ = refine_calibration(calibration_, take_clock_anchor());
    };
    const auto on_taken = [&](taken_records&& t) { store.add(std::move(t)); };
    const bool closed = state_ == device_only_state ? (on_disabled(read_ticks()), true)
                                                    : reg.end_session(state_, on_disabled, on_taken);
    state_ = 0;
    if (!closed) return false;
    // Objects loaded while it recorded kept their flags clear: linked now, for the next session.
    for (const std::string& name : reg.link_objects_loaded_since()) {
        warn("'" + name + "' includes stint and was loaded while a session recorded, with copies of its own "
             "of stint's state (a library loaded RTLD_LOCAL into a program not linked with -rdynamic): its "
             "events start with the next session (docs/guide/06-embedding.md)");
    }
    store.calibration = calibration_;
    store.memory_dropped = memory_events_dropped.exchange(0, std::memory_order_relaxed);
    const std::int64_t taken_at = steady_now_ns();
    stats_.profiling_window_duration_sec =
        static_cast<double>(disabled_at - calibration_.anchor.steady_ns) / 1e9;
    stats_.profiler_disable_call_duration_us = microseconds_between(disable_start, disabled_at);
    stats_.parse_kineto_call_duration_us = microseconds_between(disabled_at, taken_at);
    count_records(store, stats_);
    stats_.late_records = store.late;
    stats_.buffer_bytes = store.buffer_bytes;
    stats_.memory_dropped = store.memory_dropped;  // a window kept unbuilt reports it too
    out = std::move(store);
    return true;
}

bool session::copy_records(record_store& out, std::uint64_t from_ticks) {
    if (state_ == 0 || state_ == device_only_state) return false;
    record_store store;
    const bool copied = the_registry().copy_ring(state_, [&](taken_records&& t) {
        if (from_ticks != 0) keep_records_ending_between(t.tail, from_ticks, ~std::uint64_t{0});
        store.add(std::move(t));
    });
    if (!copied) return false;
    store.stop_ticks = read_ticks();
    store.calibration = refine_calibration(calibration_, take_clock_anchor());
    out = std::move(store);
    return true;
}

void session::count_records(const record_store& store, profiler_stats& stats) noexcept {
    stats.number_of_events = store.events();
    stats.recorded = stats.dropped = stats.overhead_events = stats.truncated_names = 0;
    for (const record_store::thread_records& t : store.threads()) {
        stats.recorded += t.counts.recorded;
        stats.dropped += t.counts.dropped;
        stats.overhead_events += t.counts.overhead;
        stats.truncated_names += t.counts.truncated;
    }
}

bool session::close(event_list& out, std::uint64_t first_id, const drain_options& options, device_capture* device) {
    record_store records;
    if (!close_records(records)) return false;
    build_events(records, out, first_id, options, device, stats_);
    return true;
}

void session::build_events(record_store& records, event_list& out, std::uint64_t first_id,
                           const drain_options& options, device_capture* device, profiler_stats& stats) {
    const tick_calibration& calibration = records.calibration;
    event_list_builder builder;
    builder.set_first_id(first_id);
    builder.reserve(records.events());
    if (options.call_stacks != nullptr) builder.build_call_stacks(options.call_stacks);
    if (options.module_hierarchy != nullptr) builder.build_module_hierarchy(options.module_hierarchy);
    std::unordered_map<std::uint64_t, std::uint32_t> thread_index;
    const auto thread_for = [&](const drained_thread& t) {
        auto [it, added] = thread_index.try_emplace(t.os_tid, 0);
        if (added) it->second = builder.add_thread({t.os_tid, t.name, 0, 0});
        return it->second;
    };
    std::unordered_map<std::uint64_t, event_index> links;
    event_index last_scope = no_index;
    std::uint64_t last_scope_end = 0;
    std::uint16_t last_scope_depth = 0;
    pending_attachments outputs;  // record_outputs and add_args records waiting for their event
    std::uint64_t truncated_inputs = 0;
    flop_cache flops;
    std::uint32_t thread = 0;
    const auto on_record = [&](const record& r, const record_payload& payload) {
        if (r.where()->payload == payload_kind::outputs) {
            truncated_inputs += outputs.add(r.depth(), payload);
            return;
        }
        if (r.where()->payload == payload_kind::args) {
            outputs.add_args(r.depth(), payload);
            return;
        }
        if (r.where()->payload == payload_kind::device_link) {
            // The link names the scope record just before it: same depth, same end. Anything else
            // (that record was dropped over budget) leaves the id unlinked, counted at the join.
            if (last_scope != no_index && last_scope_depth == r.depth() && last_scope_end == r.end_ticks) {
                links.emplace(r.begin_ticks, last_scope);
            }
            last_scope = no_index;
            return;
        }
        const std::int64_t start = calibration.to_ns_since_anchor(r.begin_ticks);
        const std::int64_t end = calibration.to_ns_since_anchor(r.end_ticks);
        const site& where = *r.where();
        const source_location* at = where.location.line != 0 ? &where.location : nullptr;
        std::span<const std::byte> bytes = payload.bytes;
        std::vector<std::uint64_t> frames;
        if (where.payload == payload_kind::native_stack || where.payload == payload_kind::native_stack_inputs) {
            frames = take_native_frames(bytes);
        }
        event_index i = no_index;
        switch (where.payload) {
            case payload_kind::none:
            case payload_kind::device_link:  // handled above
            case payload_kind::native_stack: i = builder.add(where.kind, where.name, thread, start, end, at); break;
            case payload_kind::runtime_name:
                i = builder.add_copy(where.kind, runtime_name_of(payload), thread, start, end, at);
                break;
            case payload_kind::inputs:
            case payload_kind::native_stack_inputs:
                i = builder.add(where.kind, where.name, thread, start, end, at);
                truncated_inputs += add_inputs(builder, i, where, bytes, payload.aux, flops, options.input_values);
                break;
            case payload_kind::outputs:
            case payload_kind::args: break;  // handled above
            case payload_kind::memory: {
                memory_payload m{};
                std::memcpy(&m, bytes.data(), std::min(bytes.size(), sizeof(m)));
                const memory_record record{.addr = m.addr,
                                           .bytes = m.bytes,
                                           .total_allocated = m.total_allocated,
                                           .total_reserved = m.total_reserved,
                                           .device = {static_cast<device_type>(m.device_type), m.device_index}};
                i = builder.add_memory_event(where.kind, thread, start, record, m.sequence,
                                             {.free = (m.flags & memory_free) != 0,
                                              .size_known = (m.flags & memory_size_known) != 0,
                                              .totals_given = (m.flags & memory_totals_given) != 0},
                                             at);
                break;
            }
            case payload_kind::point: {
                const point_payload point = read_point(payload);
                i = point.name.empty() ? builder.add(where.kind, where.name, thread, start, start, at)
                                       : builder.add_copy(where.kind, point.name, thread, start, start, at);
                builder.set_point_id(i, point.id);
                break;
            }
            case payload_kind::counter:
                i = builder.add(where.kind, where.name, thread, start, start, at);
                builder.set_counter_value(i, read_counter(payload));
                break;
            case payload_kind::runtime_name_inputs: {
                const std::string_view name = runtime_name_of(payload);
                i = builder.add_copy(where.kind, name, thread, start, end, at);
                const std::size_t head = (name.size() + 7) & ~std::size_t{7};
                std::uint32_t aux = 0;
                std::uint32_t used = 0;
                if (bytes.size() < head + 8) break;
                std::memcpy(&aux, bytes.data() + head, 4);
                std::memcpy(&used, bytes.data() + head + 4, 4);
                const std::span<const std::byte> inputs =
                    bytes.subspan(head + 8, std::min<std::size_t>(used, bytes.size() - head - 8));
                truncated_inputs += add_inputs(builder, i, where, inputs, aux, flops, options.input_values, true);
                break;
            }
        }
        builder.set_record_depth(i, r.depth());
        if (where.kind != event_kind::overhead && !is_memory_kind(where.kind) && !is_point_kind(where.kind) &&
            where.kind != event_kind::counter) {
            last_scope = i;
            last_scope_end = r.end_ticks;
            last_scope_depth = r.depth();
            if (where.kind != event_kind::instant) outputs.enclosed_by(builder, i, r.depth());
        }
        if (!frames.empty()) builder.set_native_frames(i, std::move(frames));
    };
    std::uint64_t recorded = 0;
    std::uint64_t dropped = 0;
    for (record_store::thread_records& t : records.threads()) {
        thread = thread_for(t.counts);
        last_scope = no_index;
        records.for_each_record(t, on_record);
        thread_info& info = builder.thread(thread);
        // Several buffers (one per shared object) of one OS thread merge into one thread.
        info.recorded += t.counts.recorded;
        info.dropped += t.counts.dropped;
        if (info.name.empty()) info.name = t.counts.name;
        recorded += t.counts.recorded;
        dropped += t.counts.dropped;
        outputs.finish_run(builder);
        builder.begin_run();  // the next buffer's records are a run of their own
        records.release(t);
    }
    if (device != nullptr) {
        auto thread_of_tid = [&](std::uint64_t tid) -> std::uint32_t {
            auto [it, added] = thread_index.try_emplace(tid, 0);
            if (added) it->second = builder.add_thread({tid, {}, 0, 0});
            return it->second;
        };
        using thread_of = decltype(thread_of_tid);
        if (options.join_device == nullptr) {
            throw std::logic_error("stint: a drain was given device activity without drain_options::join_device");
        }
        options.join_device(builder, *device, links, {calibration.anchor.ticks, records.stop_ticks, calibration},
                     thread_of_tid_ref{&thread_of_tid, [](void* callback, std::uint64_t tid) -> std::uint32_t {
                                           return (*static_cast<thread_of*>(callback))(tid);
                                       }});
        stats.device_status = device->report.status;
        stats.device_loss = device->report.loss;
    }
    const std::int64_t parsed_at = steady_now_ns();
    builder.set_totals(recorded, dropped, records.late);
    builder.set_memory_dropped(records.memory_dropped);
    builder.set_base_time_ns(calibration.anchor.system_ns);
    builder.set_base_steady_ns(calibration.anchor.steady_ns);
    out = std::move(builder).build();
    const std::int64_t built_at = steady_now_ns();

    stats.function_events_build_tree_call_duration_us = microseconds_between(parsed_at, built_at);
    stats.number_of_events = out.size();
    stats.truncated_inputs = truncated_inputs;
    stats.memory_peaks.assign(out.memory_peaks().begin(), out.memory_peaks().end());
    stats.memory_dropped = out.memory_dropped();
    stats.memory_events = stats.device_events = stats.device_api_calls = 0;
    if (out.has_memory_events() || device != nullptr) {
        for (const event& e : out) {
            if (is_memory_kind(e.kind)) ++stats.memory_events;
            if (e.on_device()) ++stats.device_events;
            if (e.kind == event_kind::cuda_runtime || e.kind == event_kind::cuda_driver) ++stats.device_api_calls;
        }
    }
}

std::vector<std::uint64_t> session::take_native_frames(std::span<const std::byte>& bytes) {
    std::vector<std::uint64_t> frames;
    if (bytes.size() < native_stack_header_bytes) return frames;
    std::uint32_t count = 0;
    std::memcpy(&count, bytes.data(), sizeof(count));
    const std::size_t fit = (bytes.size() - native_stack_header_bytes) / sizeof(std::uint64_t);
    frames.resize(std::min<std::size_t>(count, fit));
    if (!frames.empty()) {
        std::memcpy(frames.data(), bytes.data() + native_stack_header_bytes, frames.size() * sizeof(std::uint64_t));
    }
    bytes = bytes.subspan(native_stack_header_bytes + frames.size() * sizeof(std::uint64_t));
    return frames;
}

std::string_view session::runtime_name_of(const record_payload& payload) noexcept {
    const std::size_t n = std::min<std::size_t>(payload.aux, payload.bytes.size());
    return {reinterpret_cast<const char*>(payload.bytes.data()), n};
}

std::uint64_t session::add_inputs(event_list_builder& builder, event_index i, const site& where,
                                  std::span<const std::byte> bytes, std::uint32_t aux, flop_cache& flops,
                                  bool keep_values, bool record_args) {
    op_inputs inputs = decode_inputs(where.name, bytes, aux);
    if (inputs.empty() && !inputs.truncated()) return 0;  // an op without inputs has no args, as in torch
    const std::uint64_t truncated = inputs.truncated() ? 1 : 0;
    event_args args;
    inputs_to_args(inputs, (aux & inputs_aux_concrete) != 0, args);
    if (record_args && !inputs.empty()) args.record_args = inputs[0].text;
    if (!where.flops.empty()) builder.set_flops(i, evaluate_flops(where, inputs, flops));
    if (keep_values) args.inputs = std::move(inputs.mutable_inputs());
    builder.set_args(i, std::move(args));
    return truncated;
}

std::int64_t session::evaluate_flops(const site& where, const op_inputs& inputs, flop_cache& cache) {
    if (where.flops.function != nullptr) return estimate_flops(where.flops, inputs);
    auto [it, added] = cache.try_emplace(&where);
    if (added) it->second = find_flop_formula(where.flops.name);
    if (!it->second) return -1;
    try {
        return std::max<std::int64_t>(it->second(inputs), -1);
    } catch (...) {
        return -1;
    }
}

}  // namespace stint::detail
