#pragma once
// The bodies of drain/record_store.hpp: reading a counter's payload, a flight recorder's cut, the store.

#include "stint/drain/record_store.hpp"

#include <algorithm>  // std::min
#include <bit>  // std::bit_cast
#include <cstring>  // std::memcpy, std::memmove

namespace stint::detail {

counter_value read_counter(const record_payload& payload) noexcept {
    counter_value value;
    std::uint64_t bits = 0;
    if (payload.bytes.size() < sizeof(bits)) return value;
    std::memcpy(&bits, payload.bytes.data(), sizeof(bits));
    value.is_real = payload.aux == counter_real;
    if (value.is_real) {
        value.real = std::bit_cast<double>(bits);
    } else {
        value.integer = static_cast<std::int64_t>(bits);
    }
    return value;
}

void keep_records_ending_between(std::vector<std::byte>& bytes, std::uint64_t from, std::uint64_t to) {
    std::byte* out = bytes.data();
    const std::byte* const end = bytes.data() + bytes.size();
    for (std::byte* at = bytes.data(); at < end;) {
        record r;
        std::memcpy(&r, at, sizeof(r));
        std::size_t size = sizeof(record);
        if (has_payload(r.where()->payload)) {
            payload_header header;
            std::memcpy(&header, at + sizeof(record), sizeof(header));
            size += header.bytes;
        }
        if (r.end_ticks >= from && r.end_ticks <= to) {
            if (out != at) std::memmove(out, at, size);
            out += size;
        }
        at += size;
    }
    bytes.resize(static_cast<std::size_t>(out - bytes.data()));
}

record_store& record_store::operator=(record_store&& other) noexcept {
    if (this != &other) {
        release_all();
        threads_ = std::move(other.threads_);
        other.threads_.clear();
        stop_ticks = other.stop_ticks;
        calibration = other.calibration;
        late = other.late;
        buffer_bytes = other.buffer_bytes;
        memory_dropped = other.memory_dropped;
        partly_released_ = other.partly_released_;
    }
    return *this;
}

void record_store::add(taken_records&& taken) {
    thread_records& t = threads_.emplace_back();
    t.node = taken.node;
    t.counts.os_tid = taken.os_tid;
    t.counts.name = std::move(taken.name);
    t.counts.dropped = taken.dropped;
    t.counts.truncated = taken.truncated;
    t.counts.overwritten = taken.overwritten;
    t.counts.overwritten_until = taken.overwritten_until;
    t.chunks = taken.chunks;
    t.tail = std::move(taken.tail);
    for_each_record(t, [&](const record& r, const record_payload&) {
        const site& where = *r.where();
        // A device link is part of the scope record before it, not a record of its own; outputs
        // and args are the program's records but make no event.
        const bool attached = where.payload == payload_kind::outputs || where.payload == payload_kind::args;
        if (where.payload != payload_kind::device_link) {
            const bool own = where.kind == event_kind::overhead && !attached;
            ++(own ? t.counts.overhead : t.counts.recorded);
        }
        if (where.payload == payload_kind::device_link || attached) {
            t.timing_only = false;
            return;
        }
        ++t.events;
        // A counter's value is written from the records too (chrome_trace_records.hpp).
        if (where.payload != payload_kind::none && where.payload != payload_kind::runtime_name &&
            where.payload != payload_kind::counter) {
            t.timing_only = false;
        }
        if (where.kind != event_kind::instant && !is_point_kind(where.kind) &&
            where.kind != event_kind::counter) {
            t.first_start_ticks = std::min(t.first_start_ticks, r.begin_ticks);
        }
    });
}

void record_store::prepend(record_store&& earlier) {
    for (thread_records& e : earlier.threads_) {
        if (e.chunks == nullptr) continue;  // given back, or never any
        thread_records* t = nullptr;
        for (thread_records& mine : threads_) {
            if (mine.node == e.node) t = &mine;
        }
        if (t == nullptr) {
            threads_.push_back(std::move(e));
            e.chunks = nullptr;  // the store here owns them now
            continue;
        }
        chunk* last = e.chunks;
        while (last->next.load(std::memory_order_relaxed) != nullptr) last = last->next.load(std::memory_order_relaxed);
        last->next.store(t->chunks, std::memory_order_relaxed);
        t->chunks = std::exchange(e.chunks, nullptr);
        t->counts.recorded += e.counts.recorded;
        t->counts.overhead += e.counts.overhead;
        t->events += e.events;
        t->first_start_ticks = std::min(t->first_start_ticks, e.first_start_ticks);
        t->timing_only = t->timing_only && e.timing_only;
    }
}

std::uint64_t record_store::events() const noexcept {
    std::uint64_t n = 0;
    for (const thread_records& t : threads_) n += t.events;
    return n;
}

std::vector<std::pair<const std::byte*, const std::byte*>> record_store::ranges(const thread_records& t) const {
    std::vector<std::pair<const std::byte*, const std::byte*>> out;
    for (chunk* c = t.chunks; c != nullptr; c = c->next.load(std::memory_order_relaxed)) {
        out.emplace_back(c->data(), c->published.load(std::memory_order_acquire));
    }
    out.emplace_back(t.tail.data(), t.tail.data() + t.tail.size());
    return out;
}

chunk* record_store::take_chunks(thread_records& t) noexcept {
    partly_released_ = partly_released_ || t.chunks != nullptr || !t.tail.empty();
    std::vector<std::byte>().swap(t.tail);
    return std::exchange(t.chunks, nullptr);
}

void record_store::release(thread_records& t) noexcept {
    partly_released_ = partly_released_ || t.chunks != nullptr || !t.tail.empty();
    for (chunk* c = std::exchange(t.chunks, nullptr); c != nullptr;) {
        chunk* next = c->next.load(std::memory_order_relaxed);
        the_registry().release_chunk(c);
        c = next;
    }
    std::vector<std::byte>().swap(t.tail);
}

void record_store::release_all() noexcept {
    for (thread_records& t : threads_) release(t);
}

}  // namespace stint::detail
