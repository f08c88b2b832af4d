#pragma once
// RAII scopes and the STINT_* macros. Entry and exit below are the whole hot path together with
// buffer.hpp's append_record; review them on one screen.

#include <cstddef>           // std::size_t, std::byte
#include <cstdint>           // std::uint32_t, std::uint64_t
#include <cstring>           // std::memcpy
#include <initializer_list>  // std::initializer_list
#include <string>            // std::string
#include <string_view>       // std::string_view
#include <type_traits>       // std::conditional_t, std::enable_if_t

#include "stint/recording/buffer.hpp"
#include "stint/recording/open_scopes.hpp"
#include "stint/annotations/range_mirror.hpp"
#include "stint/capture/detail/config_traits.hpp"
#include "stint/capture/inputs.hpp"
#include "stint/capture/native_stack.hpp"
#include "stint/recording/ticks.hpp"
#include "stint/config.hpp"
#include "stint/device/device_link.hpp"
#include "stint/policies.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

/// Times one static site: one relaxed load on entry when nothing records; two tick reads and one
/// 24-byte append when a session records.
class scope_timer {
public:
    STINT_DETAIL_ALWAYS_INLINE explicit scope_timer(const site& where) noexcept
        : state_(recording.value.load(std::memory_order_relaxed)) {
        if (is_recording_state(state_)) {
            where_ = &where;
            enter_recorded_scope();
            begin_ = read_ticks();
            note_scope_entered(state_, where_, begin_);
        }
    }
    STINT_DETAIL_ALWAYS_INLINE ~scope_timer() {
        if (is_recording_state(state_)) append_scope_record(where_, begin_, read_ticks(), state_);
    }
    scope_timer(const scope_timer&) = delete;
    scope_timer& operator=(const scope_timer&) = delete;

private:
    std::uint32_t state_;
    const site* where_ = nullptr;
    std::uint64_t begin_ = 0;
};

/// scope_timer for a config with a device backend (cuda_activities): while a device session is live it
/// also links the device work launched inside it (device/device_link.hpp); otherwise it costs one more
/// relaxed load than scope_timer, and only while a session records.
template <class Config>
class linked_scope {
public:
    STINT_DETAIL_ALWAYS_INLINE explicit linked_scope(const site& where) noexcept
        : state_(recording.value.load(std::memory_order_relaxed)), where_(&where) {
        if (is_recording_state(state_)) {
            enter_recorded_scope();
            link_.open();
            begin_ = read_ticks();
            note_scope_entered(state_, where_, begin_);
        }
    }
    STINT_DETAIL_ALWAYS_INLINE ~linked_scope() {
        if (is_recording_state(state_)) {
            const std::uint64_t end = read_ticks();
            link_.close();
            const std::uint32_t depth = leave_noted_scope(state_);
            append_record(where_, depth, begin_, end, state_);
            link_.record(depth, end, state_);
        }
    }
    linked_scope(const linked_scope&) = delete;
    linked_scope& operator=(const linked_scope&) = delete;

private:
    std::uint32_t state_;
    const site* where_;
    std::uint64_t begin_ = 0;
    device_link<device_backend_t<Config>> link_;
};

/// A scope for configuration Config; a disabled configuration gets an empty type that vanishes.
template <class Config, class = void>
class scope : public scope_timer {
public:
    using scope_timer::scope_timer;
};
template <class Config>
class scope<Config, std::enable_if_t<!Config::enabled>> {
public:
    constexpr explicit scope(const site&) noexcept {}
};

/// What STINT_SCOPE and STINT_OP declare: the scope, or for a disabled configuration a reference to
/// the site. A local object, even an empty one, gets a cleanup on the exception path that gcc 12
/// removes only after its early tail-recursion pass, so a recursive function would compile
/// differently from the uninstrumented one (tests/codegen checks that it does not).
template <class Config>
using plain_scope_or_site = std::conditional_t<Config::enabled, scope<Config>, const site&>;

/// Adapts the input writer to the STINT_OP inputs lambda: `stint_sink(a, b, c)` captures each.
struct input_sink {
    input_writer* writer;
    template <class... Args>
    void operator()(const Args&... args) const {
        (writer->value(args), ...);
    }
};

/// Bytes of slack after an op's inputs in capturing_scope's buffer, so that append_inputs_record may
/// copy them in whole 16-byte blocks.
inline constexpr std::size_t inputs_copy_slack = 16;

/// Appends a record whose payload is an op's inputs (`size` bytes at `inputs`, readable up to the next
/// multiple of 16): the common case inline, with fixed 16-byte copies where append_record_payload calls
/// memcpy through the PLT (3 rank-2 tensors: 42.0 -> 34.4 ns median, bench/scope_bench.cpp); a new
/// session or a full chunk goes to append_record_payload.
STINT_DETAIL_ALWAYS_INLINE void append_inputs_record(const site* where, std::uint32_t depth, std::uint64_t begin,
                                                     std::uint64_t end, std::uint32_t state, std::uint32_t aux,
                                                     const std::byte* inputs, std::size_t size) noexcept {
    thread_buffer& buffer = tls_buffer;
    const std::size_t padded = (size + 7) & ~std::size_t{7};
    const std::size_t bytes = sizeof(record) + sizeof(payload_header) + padded;
    std::byte* at = buffer.cursor;
    // The copy below may write up to 15 bytes past the record, into the chunk's free room.
    if (buffer.state != state || static_cast<std::size_t>(buffer.limit - at) < bytes + inputs_copy_slack)
        [[unlikely]] {
        append_record_payload(where, depth, begin, end, state, aux, payload_bytes{inputs, size});
        return;
    }
    // An op with inputs writes one to two cache lines of the chunk: asking for the lines 1 KiB ahead
    // for writing keeps the stores from waiting on memory (3 rank-2 tensors: 43.8 -> 38.3 ns, one run).
    __builtin_prefetch(at + 1024, 1);
    __builtin_prefetch(at + 1024 + 64, 1);
    ::new (at) record{where, depth, begin, end};
    const payload_header header{static_cast<std::uint32_t>(bytes - sizeof(record)), aux};
    std::memcpy(at + sizeof(record), &header, sizeof(header));
    std::byte* out = at + sizeof(record) + sizeof(header);
    for (std::size_t i = 0; i < size; i += 16) std::memcpy(out + i, inputs + i, 16);
    buffer.cursor = at + bytes;
    buffer.current->ring_mixed = true;  // a payload (recording/ring.hpp); the header line published writes
    // release: pairs with the acquire in drain_node(); the record's bytes are visible before its end.
    buffer.current->published.store(buffer.cursor, std::memory_order_release);
}

/// What capturing_scope::capture calls between encoding the inputs and the begin tick by default.
struct no_capture_hook {
    STINT_DETAIL_ALWAYS_INLINE void operator()(payload_bytes, std::uint32_t) const noexcept {}
};

/// The scope of a configuration whose records carry a payload: native frames (with_stack<native>),
/// taken at entry, and an op's inputs (record_shapes; `Inputs`), which capture_op_inputs() encodes
/// right after the constructor. Both go into a bounded buffer in this object while a session
/// records, before the begin tick, so capturing is not charged to the scope; at exit the record and
/// the payload are appended together.
template <class Config, bool Inputs>
class capturing_scope {
    static constexpr std::size_t frames_bytes = native_stack_bytes(native_stack_depth<Config>);
    static constexpr std::size_t inputs_bytes = Inputs ? shapes_limits_t<Config>::max_bytes : 0;

public:
    STINT_DETAIL_ALWAYS_INLINE explicit capturing_scope(const site& where) noexcept
        : state_(recording.value.load(std::memory_order_relaxed)), where_(&where) {
        if (!is_recording_state(state_)) return;
        enter_recorded_scope();
        link_.open();
        if constexpr (frames_bytes > 0) {
            frames_used_ = static_cast<std::uint32_t>(capture_native_stack(buffer_, native_stack_depth<Config>));
        }
        if constexpr (!Inputs) {
            begin_ = read_ticks();
            note_scope_entered(state_, where_, begin_);
        }
    }
    STINT_DETAIL_ALWAYS_INLINE ~capturing_scope() {
        if (is_recording_state(state_)) {
            const std::uint64_t end = read_ticks();
            link_.close();
            const std::uint32_t depth = leave_noted_scope(state_);
            if constexpr (frames_bytes == 0) {
                append_inputs_record(where_, depth, begin_, end, state_, aux_, buffer_, inputs_used_);
            } else {
                append_record_payload(where_, depth, begin_, end, state_, aux_,
                                      payload_bytes{buffer_, frames_used_},
                                      payload_bytes{buffer_ + frames_bytes, inputs_used_});
            }
            link_.record(depth, end, state_);
        }
    }
    capturing_scope(const capturing_scope&) = delete;
    capturing_scope& operator=(const capturing_scope&) = delete;

    /// Encodes the op's inputs, calls `before_begin(encoded inputs, aux)` (a range mirror pushes its
    /// range there), then reads the begin tick.
    template <class Produce, class BeforeBegin = no_capture_hook>
    STINT_DETAIL_ALWAYS_INLINE void capture(Produce& inputs, BeforeBegin&& before_begin = {}) noexcept {
        if (!is_recording_state(state_)) return;
        using limits = shapes_limits_t<Config>;
        input_writer writer(buffer_ + frames_bytes, limits::max_bytes, limits::max_inputs, limits::max_dims,
                            limits::max_bytes / 4, record_concrete_inputs(),
                            capture_state.identities.load(std::memory_order_relaxed));
        try {
            inputs(input_sink{&writer});
        } catch (...) {
            writer.mark_truncated();  // an input's accessor threw: keep what was captured
        }
        inputs_used_ = static_cast<std::uint32_t>(writer.size());
        aux_ = writer.aux();
        before_begin(payload_bytes{buffer_ + frames_bytes, inputs_used_}, aux_);
        begin_ = read_ticks();
        note_scope_entered(state_, where_, begin_);
    }

private:
    std::uint32_t state_;
    std::uint32_t aux_ = 0;
    std::uint32_t frames_used_ = 0;
    std::uint32_t inputs_used_ = 0;
    const site* where_;
    std::uint64_t begin_ = 0;
    [[no_unique_address]] device_link<device_backend_t<Config>> link_;
    alignas(16) std::byte buffer_[frames_bytes + inputs_bytes + (Inputs ? inputs_copy_slack : 0)];
};

/// The scope of a config before a range mirror: plain_scope_or_site, the linked scope when Config has a
/// device backend, or the capturing scope when Config takes native frames.
template <class Config>
using unmirrored_scope_or_site = std::conditional_t<
    Config::enabled && native_stack_depth<Config> != 0, capturing_scope<Config, false>,
    std::conditional_t<has_device_backend<Config>, linked_scope<Config>, plain_scope_or_site<Config>>>;

/// What STINT_SCOPE declares: unmirrored_scope_or_site, inside a range of Config's range mirror when it
/// has one (stint::emit_nvtx).
template <class Config>
using scope_or_site = std::conditional_t<has_range_mirror<Config>,
                                         mirrored_scope<range_mirror_t<Config>, unmirrored_scope_or_site<Config>>,
                                         unmirrored_scope_or_site<Config>>;

/// What STINT_OP declares: scope_or_site, or the capturing scope when Config captures inputs (inside a
/// mirrored range that carries their shapes, when Config has a range mirror).
template <class Config>
using op_scope_or_site = std::conditional_t<
    captures_inputs<Config>,
    std::conditional_t<has_range_mirror<Config>,
                       mirrored_op_scope<range_mirror_t<Config>, capturing_scope<Config, true>>,
                       capturing_scope<Config, true>>,
    scope_or_site<Config>>;

/// Gives an op's inputs to its scope. `Inputs` is a callable that produces them; it runs only when a
/// capture policy needs them while recording (never for timing-only configs). STINT_OP builds it for
/// enabled configs only: its closure holds references to the arguments, a local object as above.
template <class Scope, class Inputs>
STINT_DETAIL_ALWAYS_INLINE void capture_op_inputs(Scope&, Inputs&&) noexcept {}
template <class Config, class Inputs>
STINT_DETAIL_ALWAYS_INLINE void capture_op_inputs(capturing_scope<Config, true>& scope, Inputs&& inputs) noexcept {
    scope.capture(inputs);
}
template <class Mirror, class Inner, class Inputs>
void capture_op_inputs(mirrored_op_scope<Mirror, Inner>& scope, Inputs&& inputs) noexcept {
    scope.capture(inputs);
}

/// Writes a zero-length event now.
STINT_DETAIL_ALWAYS_INLINE void instant(const site& where) noexcept {
    const std::uint32_t state = recording.value.load(std::memory_order_relaxed);
    if (is_recording_state(state)) {
        const std::uint64_t now = read_ticks();
        append_record(&where, current_depth(), now, now, state);
    }
}

/// A scope whose name is known only at run time; the name is copied into the record at exit, so
/// the string must live until then (STINT_SCOPE_NAMED keeps a temporary alive for the block).
class named_scope {
public:
    explicit named_scope(std::string_view name) noexcept
        : state_(recording.value.load(std::memory_order_relaxed)), name_(name) {
        if (is_recording_state(state_)) {
            enter_recorded_scope();
            begin_ = read_ticks();
            note_named_scope_entered(state_, &runtime_named_site, begin_, name_);
        }
    }
    ~named_scope() {
        if (is_recording_state(state_)) {
            const std::uint64_t end = read_ticks();
            append_record_slow(&runtime_named_site, leave_noted_scope(state_), begin_, end, state_, name_);
        }
    }
    named_scope(const named_scope&) = delete;
    named_scope& operator=(const named_scope&) = delete;

private:
    std::uint32_t state_;
    std::string_view name_;
    std::uint64_t begin_ = 0;
};

/// named_scope inside a range of Mirror named by the same runtime name.
template <class Mirror>
class mirrored_named_scope {
public:
    explicit mirrored_named_scope(std::string_view name) noexcept : range_(name), inner_(name) {}

private:
    struct named_range {
        explicit named_range(std::string_view name) noexcept { Mirror::push_named(name); }
        ~named_range() { Mirror::pop(); }
        named_range(const named_range&) = delete;
        named_range& operator=(const named_range&) = delete;
    };
    named_range range_;
    named_scope inner_;
};

/// What STINT_SCOPE_NAMED declares for Config: named_scope, mirrored when Config has a range mirror.
template <class Config>
using named_scope_of =
    std::conditional_t<has_range_mirror<Config>, mirrored_named_scope<range_mirror_t<Config>>, named_scope>;

}  // namespace stint::detail

namespace stint {

/// RAII annotation with a name built at run time, for frameworks (torch's `record_function`). The
/// name is copied only while a session records.
///
///     stint::record_function rf(layer.name() + ".forward");
///     run(layer);
///
/// An args string (torch's `record_function(name, args)`) is recorded as the annotation's one input,
/// a string: the trace shows `"Input type": ["String"]` and, with concrete inputs on, the text in
/// `"Concrete Inputs"`; `event_args::record_args` holds it.
///
///     stint::record_function rf("## TEST 1 ##", "1, 2, 3");
class record_function {
public:
    explicit record_function(std::string_view name) : record_function(detail::runtime_named_site, {name}) {}
    record_function(std::string_view name, std::string_view args)
        : state_(detail::recording.value.load(std::memory_order_relaxed)), where_(&detail::runtime_named_args_site) {
        if (detail::is_recording_state(state_)) {
            name_.assign(name);
            if (name_.size() > detail::max_runtime_name_bytes) {
                name_.resize(detail::max_runtime_name_bytes);
                name_cut_ = true;  // counted in end(), on the thread whose buffer takes the record
            }
            // The payload after the (padded) name: u32 inputs aux, u32 inputs bytes, the inputs.
            const std::size_t text =
                args.size() < detail::max_runtime_name_bytes ? args.size() : detail::max_runtime_name_bytes;
            args_.resize(8 + 4 + text);
            input_writer writer(reinterpret_cast<std::byte*>(args_.data()) + 8, args_.size() - 8, 1, 1, text,
                                record_concrete_inputs());
            writer.string(args);
            const std::uint32_t aux = writer.aux();
            const auto used = static_cast<std::uint32_t>(writer.size());
            std::memcpy(args_.data(), &aux, 4);
            std::memcpy(args_.data() + 4, &used, 4);
            args_.resize(8 + used);
            opened_on_ = detail::enter_scope_on_this_thread();
            begin_ = read_ticks();
            detail::note_named_scope_entered(state_, where_, begin_, name_);
        }
    }
    ~record_function() { end(); }
    record_function(const record_function&) = delete;
    record_function& operator=(const record_function&) = delete;

    /// Ends the annotation early (as torch's `__exit__`); later calls do nothing.
    void end() noexcept {
        if (detail::is_recording_state(state_)) {
            const std::uint64_t end = read_ticks();
            const std::uint32_t depth = detail::leave_scope_on(opened_on_);
            detail::note_scope_left_on(state_, opened_on_, depth);
            if (where_->payload == detail::payload_kind::runtime_name_inputs) {
                detail::append_record_payload(where_, depth, begin_, end, state_,
                                              static_cast<std::uint32_t>(name_.size()),
                                              detail::payload_bytes{name_.data(), name_.size()},
                                              detail::payload_bytes{args_.data(), args_.size()});
                // As append_record_slow counts the names it cuts (single writer: this thread's node).
                detail::thread_buffer& buffer = detail::tls_buffer;
                if (name_cut_ && buffer.node != nullptr && buffer.state == state_) detail::bump(buffer.node->truncated);
            } else {
                detail::append_record_slow(where_, depth, begin_, end, state_, name_);
            }
            state_ = 0;
        }
    }

protected:
    /// An annotation of `where`'s kind (a runtime-named site) named by `parts` joined, built only
    /// while a session records (stint::module_scope names a module call this way).
    record_function(const detail::site& where, std::initializer_list<std::string_view> parts)
        : state_(detail::recording.value.load(std::memory_order_relaxed)), where_(&where) {
        if (detail::is_recording_state(state_)) {
            std::size_t size = 0;
            for (std::string_view part : parts) size += part.size();
            name_.reserve(size);
            for (std::string_view part : parts) name_.append(part);
            opened_on_ = detail::enter_scope_on_this_thread();
            begin_ = read_ticks();
            detail::note_named_scope_entered(state_, where_, begin_, name_);
        }
    }

private:
    std::uint32_t state_;
    const detail::site* where_;  // runtime_named_site, runtime_named_args_site, or a subclass's
    const void* opened_on_ = nullptr;  // the thread whose depth it entered (it may end on another)
    std::uint64_t begin_ = 0;
    std::string name_;
    std::string args_;  // bytes (std::string: libstdc++ compiles it once, not in every file as a vector)
    bool name_cut_ = false;  // the name passed with args was longer than max_runtime_name_bytes
};

}  // namespace stint

// ---- macros ----------------------------------------------------------------------------------------

#if defined(STINT_DISABLE)
// Compiled out: every macro, no argument evaluated (one header for all of them).
#include "stint/detail/compiled_out.hpp"
#else
#define STINT_DETAIL_CAT2(a, b) a##b
#define STINT_DETAIL_CAT(a, b) STINT_DETAIL_CAT2(a, b)

/// The configuration STINT_SCOPE and STINT_INSTANT use; define it before including stint to change it
/// for a translation unit (e.g. `#define STINT_CONFIG stint::disabled`).
#ifndef STINT_CONFIG
#define STINT_CONFIG ::stint::config<>
#endif

#define STINT_DETAIL_SITE(var, name, kind, payload)                                                          \
    static constexpr ::stint::detail::site var {                                                             \
        name, kind, payload,                                                                                 \
            ::stint::detail::source_location{__builtin_FILE(), __builtin_FUNCTION(), __builtin_LINE()}           \
    }

/// Times the rest of the enclosing block as a user annotation named by a string literal.
///
///     void parse(Input& in) { STINT_SCOPE("parse"); ... }
#define STINT_SCOPE(name) STINT_DETAIL_SCOPE(name, __COUNTER__)
// [[maybe_unused]]: with stint::disabled the declaration is only a reference to the site.
#define STINT_DETAIL_SCOPE(name, id)                                                                         \
    STINT_DETAIL_SITE(STINT_DETAIL_CAT(stint_site_, id), name, ::stint::event_kind::user_annotation,        \
                      ::stint::detail::scope_payload_kind<STINT_CONFIG>());                                  \
    [[maybe_unused]] ::stint::detail::scope_or_site<STINT_CONFIG> STINT_DETAIL_CAT(stint_scope_, id) {        \
        STINT_DETAIL_CAT(stint_site_, id)                                                                    \
    }

/// Times the rest of the block under a name computed at run time (copied into the record; a
/// temporary string is kept alive until the block ends).
#define STINT_SCOPE_NAMED(name) STINT_DETAIL_SCOPE_NAMED(name, __COUNTER__)
#define STINT_DETAIL_SCOPE_NAMED(name, id)                                                                   \
    auto&& STINT_DETAIL_CAT(stint_name_, id) = (name);                                                       \
    ::stint::detail::named_scope_of<STINT_CONFIG> STINT_DETAIL_CAT(stint_scope_, id) {                       \
        ::std::string_view { STINT_DETAIL_CAT(stint_name_, id) }                                             \
    }

/// Times the rest of the block as an operator (`cat: cpu_op`) of the given configuration. The inputs
/// are evaluated only when the configuration captures them (record_shapes) and a session records;
/// with with_flops, the op's name picks its flop formula ("aten::mm", or a registered one). A config
/// with several policies must be named by an alias (the macro would split `config<a, b>` at its comma).
///
///     using shapes = stint::config<stint::record_shapes>;
///     STINT_OP(shapes, "aten::mm", a, b);
#define STINT_OP(config, name, ...) STINT_DETAIL_OP(__COUNTER__, config, name, name __VA_OPT__(, ) __VA_ARGS__)

/// STINT_OP whose flops (with_flops) come from `formula`: a formula name ("aten::mm", or one given
/// to stint::register_flop_formula) or a `std::int64_t(const stint::op_inputs&)` function (a lambda
/// in parentheses). Without with_flops in the config the formula is ignored.
///
///     STINT_OP_FLOPS(cfg, "my::gemm", "aten::mm", a, b);
#define STINT_OP_FLOPS(config, name, formula, ...)                                                           \
    STINT_DETAIL_OP(__COUNTER__, config, name, formula __VA_OPT__(, ) __VA_ARGS__)

#define STINT_DETAIL_OP(id, config, name, formula, ...)                                                     \
    static_assert(__builtin_constant_p(::std::string_view(name).size()),                                     \
                  "stint: STINT_OP needs a name known at compile time (a string literal); for an op named at " \
                  "run time use stint::begin_event(stint::event_kind::cpu_op, name)");                       \
    static constexpr ::stint::detail::site STINT_DETAIL_CAT(stint_site_, id) {                               \
        name, ::stint::event_kind::cpu_op, ::stint::detail::op_payload_kind<config>(),                     \
            ::stint::detail::source_location{__builtin_FILE(), __builtin_FUNCTION(), __builtin_LINE()},      \
            ::stint::detail::op_flop_formula<config>(formula)                                               \
    };                                                                                                       \
    [[maybe_unused]] ::stint::detail::op_scope_or_site<config> STINT_DETAIL_CAT(stint_scope_, id) {           \
        STINT_DETAIL_CAT(stint_site_, id)                                                                    \
    };                                                                                                       \
    if constexpr (config::enabled)                                                                           \
        ::stint::detail::capture_op_inputs(STINT_DETAIL_CAT(stint_scope_, id),                               \
                                           [&](auto&& stint_sink) { stint_sink(__VA_ARGS__); })

/// Records a zero-length event now.
#define STINT_INSTANT(name)                                                                                  \
    do {                                                                                                     \
        STINT_DETAIL_SITE(stint_instant_site_, name, ::stint::event_kind::instant,                           \
                          ::stint::detail::payload_kind::none);                                              \
        if constexpr (STINT_CONFIG::enabled) ::stint::detail::instant(stint_instant_site_);                  \
    } while (false)
#endif
