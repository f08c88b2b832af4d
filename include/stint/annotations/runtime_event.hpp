#pragma once
// stint::begin_event: an event whose name and kind a framework knows only at run time (its operator
// observer's callback: the op's schema name, cpu_op), begun in one callback and ended in another. A
// name that lives for the process (a `const char*`) is interned once by its address, a std::string_view
// once by its text, each into a site of its own, so that each event is a plain 24-byte record pointing
// to it (no allocation, no copy); copy_name copies the name into each event's record instead.

#include <atomic>            // std::memory_order
#include <concepts>          // std::invocable, std::same_as
#include <cstddef>           // std::size_t, std::byte
#include <cstdint>           // std::uint64_t, std::uint32_t, std::uint8_t, std::uintptr_t
#include <cstring>           // std::memcpy
#include <initializer_list>  // std::initializer_list
#include <new>               // std::nothrow
#include <stdexcept>         // std::invalid_argument
#include <string_view>       // std::string_view
#include <utility>           // std::exchange

#include "stint/annotations/event_args.hpp"
#include "stint/capture/detail/config_traits.hpp"
#include "stint/capture/inputs.hpp"
#include "stint/common/event_kind.hpp"
#include "stint/config.hpp"
#include "stint/detail/platform.hpp"
#include "stint/recording/buffer.hpp"
#include "stint/recording/open_scopes.hpp"
#include "stint/recording/site.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/recording/ticks.hpp"

namespace stint {

/// Asks begin_event to copy a name that does not live for the process.
struct copy_name_t {
    explicit copy_name_t() = default;
};
inline constexpr copy_name_t copy_name{};

class event_token;
event_token begin_event(event_kind kind, std::string_view name, copy_name_t);
namespace detail {
template <class Config, class Name, class WriteInputs>
event_token begin_named_event(event_kind kind, Name name, WriteInputs& write_inputs);
}  // namespace detail

namespace detail {

/// The kinds an event begun at run time may have: what scopes record.
inline void check_runtime_event_kind(event_kind kind) {
    if (kind != event_kind::cpu_op && kind != event_kind::user_annotation && kind != event_kind::module) {
        throw std::invalid_argument("stint: begin_event: the kind must be event_kind::cpu_op, user_annotation "
                                    "or module");
    }
}

/// Each thread's cache of interned names (per object, like its buffer): direct-mapped by address and
/// kind, so that a framework's few hundred op names each take the table's lock once per thread.
struct named_site_slot {
    const char* name = nullptr;
    event_kind kind = event_kind::user_annotation;
    std::uint8_t variant = 0;  // 2: captures inputs, 1: has flops
    const site* where = nullptr;
};
inline constexpr std::size_t named_site_slots = 256;
inline thread_local named_site_slot named_site_cache[named_site_slots];

/// The slow half of named_site(): the process's table through the installed slow path. Null when none
/// is installed or the table could not grow (the caller then copies the name instead).
STINT_DETAIL_COLD inline const site* intern_named_site(const char* name, event_kind kind, std::uint8_t variant,
                                                named_site_slot& slot) noexcept {
    const slow_path* path = installed_slow_path.load(std::memory_order_acquire);
    if (path == nullptr) return nullptr;
    try {
        const site* where = path->intern_named_site(name, kind, (variant & 2U) != 0, (variant & 1U) != 0);
        slot = {name, kind, variant, where};
        return where;
    } catch (...) {
        return nullptr;
    }
}

/// The interned site of a process-lifetime name.
inline const site* named_site(const char* name, event_kind kind, std::uint8_t variant = 0) noexcept {
    const auto bits = reinterpret_cast<std::uintptr_t>(name) ^ static_cast<std::uintptr_t>(kind);
    named_site_slot& slot = named_site_cache[(bits * 0x9E3779B97F4A7C15ULL) >> 56 & (named_site_slots - 1)];
    if (slot.name == name && slot.kind == kind && slot.variant == variant) return slot.where;
    return intern_named_site(name, kind, variant, slot);
}

/// Each thread's cache of names interned by their text: direct-mapped by the text's hash, kind and
/// variant, checked against the site's own copy of the text.
struct text_site_slot {
    std::uint64_t hash = 0;
    std::uint8_t variant = 0;
    const site* where = nullptr;
};
inline thread_local text_site_slot text_site_cache[named_site_slots];
/// Set once the process's table refused a text (max_interned_texts): this thread then copies the names
/// its cache does not hold, without taking the table's lock per event.
inline thread_local bool text_table_full = false;

/// A name's hash, 8 bytes at a time (a byte-wise hash is serial in its multiplies and cost a 25-byte
/// name 15 ns); the cache confirms every hit against the text itself, so collisions only cost a miss.
inline std::uint64_t hash_text(std::string_view text) noexcept {
    constexpr std::uint64_t k = 0x9E3779B97F4A7C15ULL;
    std::uint64_t hash = text.size() * k;
    const char* at = text.data();
    std::size_t left = text.size();
    for (; left >= 8; left -= 8, at += 8) {
        std::uint64_t word;
        std::memcpy(&word, at, 8);
        hash = (hash ^ word) * k;
        hash ^= hash >> 29;
    }
    if (left != 0) {
        std::uint64_t word = 0;
        std::memcpy(&word, at, left);
        hash = (hash ^ word) * k;
    }
    return hash ^ (hash >> 32);
}

STINT_DETAIL_COLD inline const site* intern_text_site(std::string_view name, event_kind kind, std::uint8_t variant,
                                               std::uint64_t hash, text_site_slot& slot) noexcept {
    const slow_path* path = installed_slow_path.load(std::memory_order_acquire);
    if (path == nullptr) return nullptr;
    try {
        const site* where = path->intern_text_site(name, kind, (variant & 2U) != 0, (variant & 1U) != 0);
        if (where == nullptr) {
            text_table_full = true;
            return nullptr;
        }
        slot = {hash, variant, where};
        return where;
    } catch (...) {
        return nullptr;
    }
}

/// The interned site of a name given by its text; null when it cannot be interned (the caller copies it).
inline const site* named_site(std::string_view name, event_kind kind, std::uint8_t variant = 0) noexcept {
    const std::uint64_t hash = hash_text(name) ^ (static_cast<std::uint64_t>(kind) << 2 | variant);
    text_site_slot& slot = text_site_cache[(hash * 0x9E3779B97F4A7C15ULL) >> 56 & (named_site_slots - 1)];
    if (slot.hash == hash && slot.variant == variant && slot.where != nullptr && slot.where->kind == kind &&
        slot.where->name == name) {
        return slot.where;
    }
    if (text_table_full) return nullptr;
    return intern_text_site(name, kind, variant, hash, slot);
}

/// The site of a copied name of `kind`: the name travels in the record.
inline const site& copied_name_site(event_kind kind) noexcept {
    return kind == event_kind::cpu_op   ? runtime_named_op_site
           : kind == event_kind::module ? runtime_named_module_site
                                        : runtime_named_site;
}

}  // namespace detail

/// An event begun by begin_event, open until end() or its destruction. Movable, so that a framework
/// keeps it in its per-op context and ends it from its end callback. It nests like a scope on the thread
/// that began it: events and scopes begun after it and ended before it are inside it. Ended on another
/// thread, it is recorded there, at that thread's current depth (as stint::record_function is).
class event_token {
public:
    event_token() noexcept = default;
    event_token(event_token&& other) noexcept
        : state_(std::exchange(other.state_, 0)),
          where_(other.where_),
          opened_on_(other.opened_on_),
          inside_depth_(other.inside_depth_),
          begin_(other.begin_),
          copy_(std::exchange(other.copy_, nullptr)),
          copy_size_(other.copy_size_),
          inputs_(std::exchange(other.inputs_, nullptr)),
          inputs_size_(other.inputs_size_),
          aux_(other.aux_) {}
    event_token& operator=(event_token&& other) noexcept {
        if (this != &other) {
            end();
            state_ = std::exchange(other.state_, 0);
            where_ = other.where_;
            opened_on_ = other.opened_on_;
            inside_depth_ = other.inside_depth_;
            begin_ = other.begin_;
            copy_ = std::exchange(other.copy_, nullptr);
            copy_size_ = other.copy_size_;
            inputs_ = std::exchange(other.inputs_, nullptr);
            inputs_size_ = other.inputs_size_;
            aux_ = other.aux_;
        }
        return *this;
    }
    event_token(const event_token&) = delete;
    event_token& operator=(const event_token&) = delete;
    ~event_token() { end(); }

    /// Ends the event and records it; later calls do nothing.
    void end() noexcept {
        if (!detail::is_recording_state(state_)) return;
        const std::uint64_t end = read_ticks();
        const std::uint32_t depth = detail::leave_scope_on(opened_on_);
        detail::note_scope_left_on(state_, opened_on_, depth);
        if (copy_ != nullptr) {
            detail::append_record_slow(where_, depth, begin_, end, state_, std::string_view(copy_, copy_size_));
            delete[] copy_;
            copy_ = nullptr;
        } else if (where_->payload == detail::payload_kind::inputs) {
            detail::append_record_payload(where_, depth, begin_, end, state_, aux_,
                                          detail::payload_bytes{inputs_, inputs_size_});
            delete[] inputs_;
            inputs_ = nullptr;
        } else {
            detail::append_record(where_, depth, begin_, end, state_);
        }
        state_ = 0;
    }
    /// Whether it will be recorded: a session recorded when it began and it has not ended.
    [[nodiscard]] bool recording() const noexcept { return detail::is_recording_state(state_); }

    /// Adds named arguments to this event (as stint::add_args does to the innermost one), also while
    /// events begun after it are open. On the thread that began it; elsewhere, and once ended, it does
    /// nothing. Reads no clock: the record takes the event's begin.
    ///
    ///     stint::event_token op = stint::begin_event(stint::event_kind::cpu_op, fn.name());
    ///     op.add_args({{"Sequence number", fn.seqNr()}, {"Fwd thread id", fn.forwardThreadId()}});
    void add_args(std::initializer_list<arg> args) noexcept {
        if (detail::is_recording_state(state_) && opened_on_ == &detail::tls_buffer) {
            detail::append_args_at(state_, inside_depth_, begin_, args.begin(), args.size());
        }
    }

private:
    friend event_token begin_event(event_kind kind, std::string_view name, copy_name_t);
    template <class Config, class Name, class WriteInputs>
    friend event_token detail::begin_named_event(event_kind kind, Name name, WriteInputs& write_inputs);

    void open(const detail::site* where) noexcept {
        where_ = where;
        opened_on_ = detail::enter_scope_on_this_thread();
        inside_depth_ = detail::current_depth();
        begin_ = read_ticks();
        if (copy_ != nullptr) {
            detail::note_named_scope_entered(state_, where_, begin_, std::string_view(copy_, copy_size_));
        } else {
            detail::note_scope_entered(state_, where_, begin_);
        }
    }

    std::uint32_t state_ = 0;
    const detail::site* where_ = nullptr;
    const void* opened_on_ = nullptr;  // the thread whose depth it entered
    std::uint32_t inside_depth_ = 0;   // that thread's depth inside it: where its args records go
    std::uint64_t begin_ = 0;
    // A copied name (copy_name), else null. const: a string_view made from a char* would cost each
    // file that includes this header gcc's check that char* is a contiguous iterator (design §15).
    const char* copy_ = nullptr;
    std::size_t copy_size_ = 0;
    std::byte* inputs_ = nullptr;  // the encoded inputs of a site that captures them
    std::uint32_t inputs_size_ = 0;
    std::uint32_t aux_ = 0;  // the input writer's aux word
};

/// Begins an event of `kind` (event_kind::cpu_op, user_annotation or module) named by `name`, a string
/// that lives for the process (an op schema's name, a string literal, an interned string): interned
/// once by its address, then each event is a 24-byte record. Costs one relaxed load when nothing
/// records. Throws std::invalid_argument for another kind or a null name.
///
///     stint::event_token op = stint::begin_event(stint::event_kind::cpu_op, schema.name());
///     ... // later, perhaps in another callback on the same thread:
///     op.end();
inline event_token begin_event(event_kind kind, const char* name) {
    const auto none = [](input_writer&) {};
    return detail::begin_named_event<config<>>(kind, name, none);  // a config that captures nothing
}

/// begin_event for a name that need not outlive the call (a std::string a framework builds, an autograd
/// node's name): interned by its text, copied once into the process's table, so that each later event
/// of the same name is a 24-byte record too. It costs a hash of the name per event. Past
/// stint::detail::max_interned_texts distinct texts in the process, the names not yet interned are
/// copied into each event's record, as copy_name does.
inline event_token begin_event(event_kind kind, std::string_view name) {
    const auto none = [](input_writer&) {};
    return detail::begin_named_event<config<>>(kind, name, none);
}

/// begin_event that copies the name into the event's record: for names that seldom repeat (a step
/// number in the name). Copied once, at begin, only while a session records. A name longer than the
/// records hold is cut and counted, as STINT_SCOPE_NAMED's.
inline event_token begin_event(event_kind kind, std::string_view name, copy_name_t) {
    detail::check_runtime_event_kind(kind);
    event_token token;
    token.state_ = detail::recording.value.load(std::memory_order_relaxed);
    if (!detail::is_recording_state(token.state_)) return token;
    // One byte over the records' bound, when longer, so that the end cuts it and counts the cut.
    const std::size_t size =
        name.size() <= detail::max_runtime_name_bytes ? name.size() : detail::max_runtime_name_bytes + 1;
    char* const copy = new (std::nothrow) char[size == 0 ? 1 : size];
    if (copy == nullptr) {  // the event is lost: counted as a drop where this thread can count
        if (detail::tls_buffer.node != nullptr && detail::tls_buffer.state == token.state_) {
            detail::bump(detail::tls_buffer.node->dropped);
        }
        token.state_ = 0;
        return token;
    }
    std::memcpy(copy, name.data(), size);
    token.copy_ = copy;
    token.copy_size_ = size;
    token.open(&detail::copied_name_site(kind));
    return token;
}

/// begin_event for an op whose inputs the framework lists at run time. Where `Config` has
/// record_shapes, `write_inputs(stint::input_writer& w)` is called once at begin, while a session records,
/// and writes each input with `w.value(x)` (tensors through their traits, scalars, strings, lists,
/// `w.none()` for an absent one), encoded as STINT_OP encodes its arguments, within Config's limits;
/// with with_flops the formula of the op's name applies. `name` is a `const char*` that lives for the
/// process, or a std::string_view interned by its text (see the overloads above); a name that cannot
/// be interned is copied, and its inputs are then left out. Native frames (with_stack<native>) are not
/// taken. With a disabled Config nothing is recorded.
///
///     using shapes = stint::config<stint::record_shapes, stint::with_flops>;
///     auto op = stint::begin_event<shapes>(stint::event_kind::cpu_op, schema_name,
///                                          [&](stint::input_writer& w) { for (auto& t : inputs) w.value(t); });
template <class Config, class WriteInputs>
    requires std::invocable<WriteInputs&, input_writer&>
event_token begin_event(event_kind kind, const char* name, WriteInputs&& write_inputs) {
    return detail::begin_named_event<Config>(kind, name, write_inputs);
}
template <class Config, class WriteInputs>
    requires std::invocable<WriteInputs&, input_writer&>
event_token begin_event(event_kind kind, std::string_view name, WriteInputs&& write_inputs) {
    return detail::begin_named_event<Config>(kind, name, write_inputs);
}

namespace detail {

/// The begin_events of an interned name: `name` is a const char* (by address) or a std::string_view
/// (by text).
template <class Config, class Name, class WriteInputs>
event_token begin_named_event(event_kind kind, Name name, WriteInputs& write_inputs) {
    check_runtime_event_kind(kind);
    if constexpr (std::same_as<Name, const char*>) {
        if (name == nullptr) throw std::invalid_argument("stint: begin_event: the name is null");
    }
    event_token token;
    if constexpr (Config::enabled) {
        token.state_ = recording.value.load(std::memory_order_relaxed);
        if (!is_recording_state(token.state_)) return token;
        constexpr bool inputs = captures_inputs<Config>;
        constexpr bool flops = Config::template has<with_flops>;
        const site* where = named_site(name, kind, (inputs ? 2U : 0U) | (flops ? 1U : 0U));
        if (where == nullptr) {  // not interned: copy the name instead
            token.state_ = 0;
            return begin_event(kind, std::string_view(name), copy_name);
        }
        if constexpr (inputs) {
            using limits = shapes_limits_t<Config>;
            token.inputs_ = new (std::nothrow) std::byte[limits::max_bytes];
            if (token.inputs_ != nullptr) {
                input_writer writer(token.inputs_, limits::max_bytes, limits::max_inputs, limits::max_dims,
                                    limits::max_bytes / 4, record_concrete_inputs(),
                                    capture_state.identities.load(std::memory_order_relaxed));
                try {
                    write_inputs(writer);
                } catch (...) {
                    writer.mark_truncated();  // an input's accessor threw: keep what was captured
                }
                token.inputs_size_ = static_cast<std::uint32_t>(writer.size());
                token.aux_ = writer.aux();
            } else {
                input_writer none(nullptr, 0, 0, 0, 0, false);
                none.mark_truncated();  // no room for the inputs: the op says so
                token.aux_ = none.aux();
            }
        }
        token.open(where);
    }
    return token;
}

}  // namespace detail

}  // namespace stint
