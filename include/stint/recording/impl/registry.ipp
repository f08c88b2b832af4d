#pragma once
// The registry's bodies: sessions, threads and their chunks, drains, fork handling, its slow path.

#include "stint/recording/registry.hpp"

#include <algorithm>  // std::count_if, std::max, std::min, std::partition
#include <cstring>    // std::memcpy
#include <stdexcept>  // std::logic_error
#include <utility>    // std::exchange, std::move, std::pair

// The slow path of dynamic scopes, installed with the registry's (below).
#include "stint/recording/detail/dynamic_name_table.hpp"
#include "stint/recording/detail/named_site_table.hpp"
#include "stint/detail/platform.hpp"
#include "stint/recording/signal_stack.hpp"
#include "stint/recording/state.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

std::uint32_t registry::begin_session(std::size_t budget_bytes, bool streamed, ring_options ring) {
    link_objects_loaded_since();  // before the lock: dlopen takes the loader's (object_links.hpp)
    std::lock_guard lock(mutex_);
    if (active_ != 0) {
        throw std::logic_error("stint: start(): a profiler is already recording in this process; stop it first");
    }
    free_exited_nodes();
    serial_ = (serial_ + 1) & serial_mask;
    if (serial_ == 0) serial_ = 1;
    active_ = (serial_ << 2) | (ring.on ? open_scopes_bit : 0U) | 1U;
    pool_.reset_budget(budget_bytes);
    const std::uint32_t limit = growth_limit(budget_bytes, streamed);
    growth_limit_.store(limit, std::memory_order_relaxed);
    streamed_.store(streamed, std::memory_order_relaxed);
    ring_.store(ring.on, std::memory_order_relaxed);
    ring_span_ticks_.store(ring.span_ticks, std::memory_order_relaxed);
    set_aside_ready_chunks(budget_bytes, limit);
    // The prefault thread keeps largest chunks warm; capped chunks come back warm through the writer.
    if (limit == chunk_pool::largest_class) pool_.start_prefaulting();
    // release: a thread that sees the new state also sees the budget.
    recording.value.store(active_, std::memory_order_release);
    links_.set_recording(active_, std::memory_order_release);
    return active_;
}

bool registry::end_session_erased(std::uint32_t state, registry_callback<void(std::uint64_t)> on_disabled,
                                  registry_callback<void(taken_records&&)> on_taken) {
    std::lock_guard lock(mutex_);
    if (active_ != state || state == 0) return false;
    recording.value.store(state & ~1U, std::memory_order_release);
    links_.set_recording(state & ~1U, std::memory_order_release);
    const std::uint64_t stop_ticks = read_ticks();
    active_ = 0;
    last_stopped_state_ = state;
    last_stop_ticks_ = stop_ticks;
    // Threads that did not record in this session may hold late records of an earlier one.
    for (thread_node* node : nodes_) {
        if (node->state.load(std::memory_order_acquire) != state) count_late(*node);
    }
    late_in_last_drain_ = late_total_ - late_reported_;
    late_reported_ = late_total_;
    pool_.stop_prefaulting();
    on_disabled(stop_ticks);
    for (thread_node* node : nodes_) {
        pool_.release(std::exchange(node->ready, nullptr));  // set aside, never taken
        if (node->state.load(std::memory_order_acquire) != state) continue;
        on_taken(take_node(*node, state, stop_ticks));
    }
    free_exited_nodes();
    return true;
}

void registry::take_written_erased(std::uint32_t state, registry_callback<void(taken_records&&)> on_taken) {
    std::lock_guard lock(mutex_);
    if (active_ != state || state == 0) return;
    for (thread_node* node : nodes_) {
        if (node->state.load(std::memory_order_acquire) != state) continue;
        // acquire: the owner published a chunk's last records before it moved on (or exited).
        const bool exited = node->exited.load(std::memory_order_acquire);
        chunk* const keep = exited ? nullptr : node->current.load(std::memory_order_acquire);
        chunk* const head = node->head.load(std::memory_order_acquire);
        if (head == nullptr || head == keep) continue;
        taken_records taken;
        taken.node = node;
        taken.os_tid = node->os_tid;
        taken.name = node->name;
        chunk* last = head;
        for (chunk* next = last->next.load(std::memory_order_acquire); next != keep && next != nullptr;
             next = last->next.load(std::memory_order_acquire)) {
            last = next;
        }
        last->next.store(nullptr, std::memory_order_relaxed);  // the owner links only after keep
        node->head.store(keep, std::memory_order_release);
        if (exited) node->current.store(nullptr, std::memory_order_release);
        taken.chunks = head;
        on_taken(std::move(taken));
    }
}

void registry::give_back_streamed(std::uint32_t state, chunk* chain) noexcept {
    bool any = false;
    for (chunk* c = chain; c != nullptr;) {
        chunk* next = c->next.load(std::memory_order_relaxed);
        pool_.refund_and_release(c);  // seq_cst: before the clear below in the order next_chunk relies on
        any = true;
        c = next;
    }
    std::uint32_t spent = state;
    if (any) pool_.exhausted_state.compare_exchange_strong(spent, 0, std::memory_order_seq_cst);
}

bool registry::copy_ring_erased(std::uint32_t state, registry_callback<void(taken_records&&)> on_copied) {
    std::vector<std::pair<thread_node*, taken_records>> nodes;
    {
        std::lock_guard lock(mutex_);
        if (active_ != state || state == 0) return false;
        nodes.reserve(nodes_.size());
        for (thread_node* node : nodes_) {
            if (node->state.load(std::memory_order_acquire) != state) continue;
            taken_records taken;
            taken.node = node;
            taken.os_tid = node->os_tid;
            taken.name = node->name;
            nodes.emplace_back(node, std::move(taken));
        }
    }
    for (auto& [node, taken] : nodes) {
        copy_node_ring(*node, taken);
        on_copied(std::move(taken));
    }
    return true;
}

std::uint64_t registry::late_records_total() {
    std::lock_guard lock(mutex_);
    return late_total_;
}

std::size_t registry::registered_threads() {
    std::lock_guard lock(mutex_);
    return nodes_.size();
}

open_scope_stack* registry::make_open_scope_stack(thread_node& node, thread_buffer& buffer) {
    auto* made = new open_scope_stack;
    {
        std::lock_guard lock(mutex_);
        if (node.open == nullptr) {
            node.open = made;
            made = nullptr;
        }
    }
    delete made;
    buffer.open = node.open;
    return node.open;
}

std::vector<registry::open_scope> registry::open_scopes(std::uint64_t since_ticks, std::uint64_t& not_kept) {
    std::vector<open_scope> out;
    not_kept = 0;
    std::lock_guard lock(mutex_);
    for (const thread_node* node : nodes_) {
        if (node->open == nullptr || node->exited.load(std::memory_order_acquire)) continue;
        // acquire: pairs with the release in note_scope_entered(); the entries below it are written.
        const std::uint32_t depth = node->open->depth.load(std::memory_order_acquire);
        if (depth > open_scope_stack::capacity) not_kept += depth - open_scope_stack::capacity;
        for (std::uint32_t i = 0; i < depth && i < open_scope_stack::capacity; ++i) {
            open_scope_stack::snapshot e;
            // An entry rewritten while it was read held a scope that has ended meanwhile.
            if (!node->open->read_entry(i, e) || e.where == nullptr || e.begin_ticks < since_ticks) continue;
            out.push_back({node->os_tid, node->name, e.where, open_scope_name(e, *e.where), e.begin_ticks, i});
        }
    }
    return out;
}

std::string registry::open_scope_name(const open_scope_stack::snapshot& e, const site& where) {
    if (where.payload != payload_kind::runtime_name && where.payload != payload_kind::runtime_name_inputs) {
        return std::string(where.name);
    }
    char text[open_scope_stack::name_words * 8];
    for (std::size_t w = 0; w < open_scope_stack::name_words; ++w) std::memcpy(text + w * 8, &e.name[w], 8);
    const std::size_t size = e.name_size;
    std::string name(text, std::min(size, sizeof text));
    if (size > sizeof text) name += "...";
    return name;
}

std::size_t registry::live_threads() {
    std::lock_guard lock(mutex_);
    return static_cast<std::size_t>(std::count_if(nodes_.begin(), nodes_.end(), [](const thread_node* node) {
        return !node->exited.load(std::memory_order_acquire);
    }));
}

bool registry::is_active(std::uint32_t state) {
    std::lock_guard lock(mutex_);
    return state != 0 && active_ == state;
}

const tick_calibration& registry::calibration() {
    std::call_once(calibrated_, [this] { calibration_ = calibrate_ticks(); });
    return calibration_;
}

void registry::install_fork_handlers() noexcept {
#if defined(__linux__) || defined(__APPLE__)
    ::pthread_atfork([] { the_registry().before_fork(); }, [] { the_registry().after_fork_in_parent(); },
                     [] { the_registry().after_fork_in_child(); });
#endif
}

bool registry::register_thread(thread_buffer& buffer) {
    auto* node = new thread_node;
    node->os_tid = current_os_tid();
    node->name = current_thread_name();
    {
        std::lock_guard lock(mutex_);
        nodes_.push_back(node);
        node_count_.store(nodes_.size(), std::memory_order_relaxed);
    }
    buffer.node = node;  // the caller's thread_exit_guard watches the buffer (slow_path.hpp)
    return true;
}

registry::session_start registry::reset_for_session(thread_buffer& buffer, std::uint32_t state, std::uint64_t end) {
    std::lock_guard lock(mutex_);
    // A scope that began in a session that has ended (or a stale state) writes nowhere.
    if (state != active_) {
        count_if_late(state, end);
        return session_start::refused;
    }
    thread_node& node = *buffer.node;
    count_late(node);
    release_chain(node);
    node.dropped.store(0, std::memory_order_relaxed);
    node.truncated.store(0, std::memory_order_relaxed);
    {
        const ring_guard hold(node);
        node.overwritten = 0;
        node.overwritten_until = 0;
        node.ring_bytes.store(0, std::memory_order_relaxed);
    }
    buffer.state = state;
    buffer.current = nullptr;
    buffer.cursor = nullptr;
    buffer.limit = nullptr;
    session_start result = session_start::no_chunk;
    if (node.ready != nullptr) {
        chunk* c = std::exchange(node.ready, nullptr);
        if (pool_.charge(c->size_class)) {
            node.head.store(c, std::memory_order_release);
            node.current.store(c, std::memory_order_release);
            node.ring_bytes.store(c->total(), std::memory_order_relaxed);
            buffer.current = c;
            buffer.cursor = c->data();
            buffer.limit = c->data_end();
            result = session_start::ready_chunk;
        } else {
            pool_.release(c);
        }
    }
    // A crash dump is installed: this thread's crash must find a stack to run its handler on.
    if (signal_stack_requests_.load(std::memory_order_relaxed) != 0) ensure_signal_stack(node);
    // release: pairs with the acquire in end_session(); the chunk above is visible before the state.
    node.state.store(state, std::memory_order_release);
    return result;
}

registry::chunk_result registry::next_chunk(thread_buffer& buffer, std::uint32_t state, std::size_t min_data,
                                            std::uint64_t end) {
    // A session that has ended takes no more chunks from the pool (checked first: a record of an
    // ended session is late or in no window, not a drop of the session, even when its budget is spent).
    if (recording.value.load(std::memory_order_relaxed) != state) {
        std::lock_guard lock(mutex_);  // waits for a drain in progress, which sets the stop tick
        count_if_late(state, end);
        return chunk_result::session_ended;
    }
    // Each chunk doubles the last, from the smallest: the budget pays for what a thread records.
    const std::uint32_t limit = growth_limit_.load(std::memory_order_relaxed);
    std::uint32_t size_class = buffer.current == nullptr ? 0 : std::min(buffer.current->size_class + 1, limit);
    size_class = std::max(size_class, chunk::class_for_data(min_data));
    chunk* c = nullptr;
    const bool ring = ring_.load(std::memory_order_relaxed);
    if (ring) {
        // A flight recorder keeps only the span asked for: a chunk whose records all ended before it is
        // overwritten before the budget is charged for another.
        const std::uint64_t span = ring_span_ticks_.load(std::memory_order_relaxed);
        if (span != 0 && end > span) c = overwrite_oldest(pool_, buffer, size_class, min_data, end - span);
    }
    if (c == nullptr && pool_.exhausted_state.load(std::memory_order_relaxed) != state) {
        c = pool_.acquire(size_class, min_data);
        if (c == nullptr) {
            // Marked spent, then charged once more: a stream's writer may have given chunks back between
            // the failed charge and the mark, its clearing (give_back_streamed) finding no mark. All four
            // are seq_cst: either its clear comes after this mark, or this charge sees its refund.
            pool_.exhausted_state.store(state, std::memory_order_seq_cst);
            c = pool_.acquire(size_class, min_data);
            std::uint32_t spent = state;
            if (c != nullptr) pool_.exhausted_state.compare_exchange_strong(spent, 0, std::memory_order_seq_cst);
        }
    }
    if (c == nullptr && ring) {
        // The budget is spent: the ring turns, on the thread's own chunks once it holds its share.
        c = take_richest_oldest(buffer, min_data);
        if (c == nullptr) c = overwrite_oldest(pool_, buffer, size_class, min_data, 0);
    }
    if (c == nullptr) return chunk_result::budget_spent;
    thread_node& node = *buffer.node;
    if (c == buffer.current) {
        // The thread's only chunk, overwritten in place.
        buffer.cursor = c->data();
        return chunk_result::linked;
    }
    if (ring) node.ring_bytes.fetch_add(c->total(), std::memory_order_relaxed);
    if (buffer.current != nullptr) {
        // The drain keeps the chunk it saw as current and counts what is linked after it as late.
        buffer.current->next.store(c, std::memory_order_release);  // pairs with the drain's acquire
        node.current.store(c, std::memory_order_release);
    } else {
        // The session's first chunk, or the first after handing one over: linked under the registry
        // lock, so that a drain sees the node either without it or with it, never half-linked.
        std::unique_lock lock(mutex_);
        if (active_ != state) {
            count_if_late(state, end);
            lock.unlock();
            pool_.refund_and_release(c);
            return chunk_result::session_ended;
        }
        // Chunks handed over that the writer has not taken yet come first.
        chunk* last = node.head.load(std::memory_order_acquire);
        if (last == nullptr) {
            node.head.store(c, std::memory_order_release);
        } else {
            for (chunk* next = last->next.load(std::memory_order_acquire); next != nullptr;
                 next = last->next.load(std::memory_order_acquire)) {
                last = next;
            }
            last->next.store(c, std::memory_order_release);
        }
        node.current.store(c, std::memory_order_release);
    }
    buffer.current = c;
    buffer.cursor = c->data();
    buffer.limit = c->data_end();
    return chunk_result::linked;
}

void registry::hand_over_chunk(thread_buffer& buffer) noexcept {
    if (buffer.current == nullptr || !streamed_.load(std::memory_order_relaxed)) return;
    buffer.node->current.store(nullptr, std::memory_order_release);  // pairs with take_written's acquire
    buffer.current = nullptr;
    buffer.cursor = nullptr;
    buffer.limit = nullptr;
}

void registry::set_thread_name(thread_node& node, std::string_view name) {
    std::lock_guard lock(mutex_);
    node.name.assign(name);
}

chunk* registry::take_richest_oldest(thread_buffer& buffer, std::size_t min_data) noexcept {
    thread_node& mine = *buffer.node;
    const std::uint64_t held = mine.ring_bytes.load(std::memory_order_relaxed);
    const std::uint64_t threads = std::max<std::uint64_t>(node_count_.load(std::memory_order_relaxed), 1);
    if (held >= static_cast<std::uint64_t>(pool_.budget()) / threads) return nullptr;  // its share: its own ring
    std::lock_guard lock(mutex_);
    thread_node* richest = nullptr;
    for (thread_node* node : nodes_) {
        if (node == &mine) continue;
        if (richest == nullptr || node->ring_bytes.load(std::memory_order_relaxed) >
                                      richest->ring_bytes.load(std::memory_order_relaxed)) {
            richest = node;
        }
    }
    if (richest == nullptr) return nullptr;
    return take_oldest_of(pool_, *richest, held, min_data);
}

taken_records registry::take_node(thread_node& node, std::uint32_t state, std::uint64_t stop_ticks) {
    // A flight recorder's thread that passed the recording check before the stop may be overwriting
    // its oldest chunk: the chain is read as it was before or after.
    const ring_guard hold(node);
    taken_records taken;
    taken.node = &node;
    taken.os_tid = node.os_tid;
    taken.name = node.name;
    chunk* const keep = node.exited.load(std::memory_order_acquire)
                            ? nullptr
                            : node.current.load(std::memory_order_acquire);
    const std::byte* kept_until = nullptr;
    if (keep != nullptr) {
        kept_until = keep->published.load(std::memory_order_acquire);
        taken.tail.assign(static_cast<const std::byte*>(keep->data()), kept_until);  // may throw: nothing taken yet
    }
    chunk* head = node.head.load(std::memory_order_acquire);
    if (head != nullptr && head != keep) {
        taken.chunks = head;
        chunk* last = head;
        for (chunk* next = last->next.load(std::memory_order_acquire); next != keep && next != nullptr;
             next = last->next.load(std::memory_order_acquire)) {
            last = next;
        }
        last->next.store(nullptr, std::memory_order_relaxed);  // the owner links only after keep
    }
    taken.dropped = node.dropped.load(std::memory_order_relaxed);
    taken.truncated = node.truncated.load(std::memory_order_relaxed);
    taken.overwritten = node.overwritten;
    taken.overwritten_until = node.overwritten_until;
    node.drained_state = state;
    node.drained_stop_ticks = stop_ticks;
    node.drained_chunk = keep;
    node.drained_until = kept_until;
    node.drained_dropped = taken.dropped;
    node.head.store(keep, std::memory_order_release);
    return taken;
}

void registry::count_late(thread_node& node) noexcept {
    if (node.drained_state == 0 || node.state.load(std::memory_order_acquire) != node.drained_state) return;
    const std::uint64_t dropped = node.dropped.load(std::memory_order_relaxed);
    late_total_ += dropped - node.drained_dropped;
    node.drained_dropped = dropped;
    for (chunk* c = node.drained_chunk; c != nullptr; c = c->next.load(std::memory_order_acquire)) {
        const std::byte* from = c == node.drained_chunk && node.drained_until != nullptr ? node.drained_until
                                                                                          : c->data();
        node.drained_until = for_each_record(*c, from, [&](const record& r, const record_payload&) {
            if (r.end_ticks <= node.drained_stop_ticks && r.where()->kind != event_kind::overhead) ++late_total_;
        });
        node.drained_chunk = c;
    }
}

void registry::set_aside_ready_chunks(std::size_t budget_bytes, std::uint32_t size_class) noexcept {
    const std::size_t size = chunk::bytes_of_class(size_class);
    std::size_t bytes = 0;
    std::size_t given = 0;
    for (thread_node* node : nodes_) {
        if (given == max_ready_threads || bytes + size > budget_bytes) break;
        if (node->exited.load(std::memory_order_acquire) || node->ready != nullptr) continue;
        try {
            node->ready = pool_.take_uncharged(size_class);
        } catch (...) {
            return;  // out of memory: the remaining threads take the slow path
        }
        bytes += size;
        ++given;
    }
}

void registry::free_exited_nodes() noexcept {
    auto dead = std::partition(nodes_.begin(), nodes_.end(), [](thread_node* node) {
        return !node->exited.load(std::memory_order_acquire);
    });
    for (auto it = dead; it != nodes_.end(); ++it) {
        count_late(**it);
        release_chain(**it);
        pool_.release(std::exchange((*it)->ready, nullptr));
        free_signal_stack(**it);
        delete *it;
    }
    nodes_.erase(dead, nodes_.end());
    node_count_.store(nodes_.size(), std::memory_order_relaxed);
}

void registry::release_chain(thread_node& node) noexcept {
    forget_drain(node);
    chunk* c = node.head.load(std::memory_order_acquire);
    while (c != nullptr) {
        chunk* next = c->next.load(std::memory_order_acquire);
        pool_.release(c);
        c = next;
    }
    node.head.store(nullptr, std::memory_order_release);
    node.current.store(nullptr, std::memory_order_release);
}

void registry::before_fork() noexcept {
    mutex_.lock();
    links_.mutex().lock();
    pool_.mutex().lock();
    pool_.memory_mutex().lock();
    forking_tid_ = current_os_tid();
}

void registry::after_fork_in_parent() noexcept {
    pool_.memory_mutex().unlock();
    pool_.mutex().unlock();
    links_.mutex().unlock();
    mutex_.unlock();
}

void registry::after_fork_in_child() noexcept {
    serial_ = (serial_ + 1) & serial_mask;
    active_ = 0;
    recording.value.store(serial_ << 2, std::memory_order_relaxed);
    links_.set_recording_locked(serial_ << 2, std::memory_order_relaxed);  // before_fork() holds its lock
    const std::uint64_t child_tid = current_os_tid();
    for (thread_node* node : nodes_) {
        if (node->os_tid == forking_tid_) {
            node->os_tid = child_tid;
        } else {
            node->exited.store(true, std::memory_order_relaxed);
        }
    }
    pool_.forget_prefaulting_after_fork();
    pool_.memory_mutex().unlock();
    pool_.mutex().unlock();
    links_.after_fork_in_child();
    links_.mutex().unlock();
    mutex_.unlock();
}

std::vector<std::string> registry::link_objects_loaded_since() {
    const slow_path* path = installed_slow_path.load(std::memory_order_acquire);
    return links_.refresh(&recording.value, path != nullptr ? path : &registry_slow_path());
}

std::vector<const object_link*> registry::linked_objects() { return links_.linked(); }

registry& the_registry() {
    static registry* const instance = (install_registry_slow_path(), new registry());
    return *instance;
}

buffer_room make_room_in_registry(thread_buffer& buffer, std::uint32_t state, std::size_t bytes, std::uint64_t end) {
    const own_allocation_scope own;  // the chunks and nodes below are stint's, never reported
    registry& reg = the_registry();
    buffer_room room;
    if (buffer.node == nullptr) {
        reg.register_thread(buffer);
        room.overhead = &overhead_register_thread_site;
    }
    if (buffer.state != state) {
        const registry::session_start start = reg.reset_for_session(buffer, state, end);
        if (start == registry::session_start::refused) {
            room.discarded = true;
            return room;
        }
        if (start == registry::session_start::no_chunk && room.overhead == nullptr) {
            room.overhead = &overhead_buffer_chunk_site;
        }
    }
    if (bytes > chunk::data_bytes) return room;  // can never fit a chunk: dropped
    const auto left = [&] { return static_cast<std::size_t>(buffer.limit - buffer.cursor); };
    if (left() < bytes + sizeof(record)) {
        const registry::chunk_result taken =
            reg.next_chunk(buffer, state, std::min(bytes + sizeof(record), chunk::data_bytes), end);
        if (taken == registry::chunk_result::linked) {
            if (room.overhead == nullptr) room.overhead = &overhead_buffer_chunk_site;
        } else if (left() < bytes) {
            room.discarded = taken == registry::chunk_result::session_ended;  // counted late, or in no window
            if (taken == registry::chunk_result::budget_spent) reg.hand_over_chunk(buffer);
            return room;  // else the budget is spent: a drop
        }
    }
    // No room for the overhead record after the record (the budget is spent, or the record nearly fills
    // a chunk): the record wins.
    if (left() < bytes + sizeof(record)) room.overhead = nullptr;
    room.ok = true;
    return room;
}

void set_thread_name_in_registry(thread_buffer& buffer, std::string_view name) {
    const own_allocation_scope own;
    registry& reg = the_registry();
    if (buffer.node == nullptr) reg.register_thread(buffer);
    reg.set_thread_name(*buffer.node, name);
}

open_scope_stack* make_open_scope_stack_in_registry(thread_buffer& buffer) {
    const own_allocation_scope own;
    registry& reg = the_registry();
    if (buffer.node == nullptr) reg.register_thread(buffer);
    return reg.make_open_scope_stack(*buffer.node, buffer);
}

const slow_path& registry_slow_path() noexcept {
    static constexpr slow_path table{&make_room_in_registry,          &set_thread_name_in_registry,
                                     &intern_dynamic_site_in_table, &intern_named_site_in_table,
                                     &intern_text_site_in_table,    &make_open_scope_stack_in_registry,
                                     &leave_signal_stack};
    return table;
}

bool install_registry_slow_path() noexcept {
    const slow_path* none = nullptr;
    installed_slow_path.compare_exchange_strong(none, &registry_slow_path(), std::memory_order_acq_rel);
    return true;
}

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
