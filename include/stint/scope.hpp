#pragma once
// RAII scopes and the STINT_* macros. Entry and exit below are the whole hot path together with
// buffer.hpp's append_record; review them on one screen.

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "stint/buffer.hpp"
#include "stint/clock.hpp"
#include "stint/config.hpp"
#include "stint/registry.hpp"
#include "stint/site.hpp"

namespace stint::detail {

/// Times one static site: one relaxed load on entry when nothing records; two tick reads and one
/// 24-byte append when a session records.
class scope_timer {
public:
    STINT_DETAIL_ALWAYS_INLINE explicit scope_timer(const site& where) noexcept
        : state_(recording.value.load(std::memory_order_relaxed)) {
        if (is_recording_state(state_)) {
            where_ = &where;
            begin_ = read_ticks();
        }
    }
    STINT_DETAIL_ALWAYS_INLINE ~scope_timer() {
        if (is_recording_state(state_)) append_record(where_, begin_, read_ticks(), state_);
    }
    scope_timer(const scope_timer&) = delete;
    scope_timer& operator=(const scope_timer&) = delete;

private:
    std::uint32_t state_;
    const site* where_ = nullptr;
    std::uint64_t begin_ = 0;
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
using scope_or_site = std::conditional_t<Config::enabled, scope<Config>, const site&>;

/// Gives an op's inputs to its scope. `Inputs` is a callable that produces them; it runs only when a
/// capture policy needs them while recording (never for timing-only configs). STINT_OP builds it for
/// enabled configs only: its closure holds references to the arguments, a local object as above.
template <class Scope, class Inputs>
STINT_DETAIL_ALWAYS_INLINE void op_inputs(Scope&, Inputs&&) noexcept {}

/// Writes a zero-length event now.
STINT_DETAIL_ALWAYS_INLINE void instant(const site& where) noexcept {
    const std::uint32_t state = recording.value.load(std::memory_order_relaxed);
    if (is_recording_state(state)) {
        const std::uint64_t now = read_ticks();
        append_record(&where, now, now, state);
    }
}

/// A scope whose name is known only at run time; the name is copied into the record at exit, so
/// the string must live until then (STINT_SCOPE_NAMED keeps a temporary alive for the block).
class named_scope {
public:
    explicit named_scope(std::string_view name) noexcept
        : state_(recording.value.load(std::memory_order_relaxed)), name_(name) {
        if (is_recording_state(state_)) begin_ = read_ticks();
    }
    ~named_scope() {
        if (is_recording_state(state_)) append_record_slow(&runtime_named_site, begin_, read_ticks(), state_, name_);
    }
    named_scope(const named_scope&) = delete;
    named_scope& operator=(const named_scope&) = delete;

private:
    std::uint32_t state_;
    std::string_view name_;
    std::uint64_t begin_ = 0;
};

}  // namespace stint::detail

namespace stint {

/// RAII annotation with a name built at run time, for frameworks (torch's `record_function`). The
/// name is copied only while a session records.
///
///     stint::record_function rf(layer.name() + ".forward");
///     run(layer);
class record_function {
public:
    explicit record_function(std::string_view name)
        : state_(detail::recording.value.load(std::memory_order_relaxed)) {
        if (detail::is_recording_state(state_)) {
            name_.assign(name);
            begin_ = read_ticks();
        }
    }
    ~record_function() { end(); }
    record_function(const record_function&) = delete;
    record_function& operator=(const record_function&) = delete;

    /// Ends the annotation early (as torch's `__exit__`); later calls do nothing.
    void end() noexcept {
        if (detail::is_recording_state(state_)) {
            detail::append_record_slow(&detail::runtime_named_site, begin_, read_ticks(), state_, name_);
            state_ = 0;
        }
    }

private:
    std::uint32_t state_;
    std::uint64_t begin_ = 0;
    std::string name_;
};

}  // namespace stint

// ---- macros ----------------------------------------------------------------------------------------

#define STINT_DETAIL_CAT2(a, b) a##b
#define STINT_DETAIL_CAT(a, b) STINT_DETAIL_CAT2(a, b)

/// The configuration STINT_SCOPE and STINT_INSTANT use; define it before including stint to change it
/// for a translation unit (e.g. `#define STINT_CONFIG stint::disabled`).
#ifndef STINT_CONFIG
#define STINT_CONFIG ::stint::config<>
#endif

#if defined(STINT_DISABLE)
#if (0 - STINT_DISABLE - 1) == -1
#error "stint: STINT_DISABLE=0 does not enable stint. Fix: 1. remove the definition to record, or 2. define STINT_DISABLE (or =1) to compile every STINT_* macro out."
#endif
// Compiled out: no argument is evaluated, each use still needs its semicolon.
#define STINT_SCOPE(name) static_assert(true, "")
#define STINT_SCOPE_NAMED(name) static_assert(true, "")
#define STINT_OP(config, name, ...) static_assert(true, "")
#define STINT_INSTANT(name) static_assert(true, "")
#else
#define STINT_DETAIL_SITE(var, name, kind)                                                                   \
    static constexpr ::stint::detail::site var {                                                             \
        name, kind, ::stint::detail::payload_kind::none,                                                    \
            ::stint::detail::source_location{__builtin_FILE(), __builtin_FUNCTION(), __builtin_LINE()}           \
    }

/// Times the rest of the enclosing block as a user annotation named by a string literal.
///
///     void parse(Input& in) { STINT_SCOPE("parse"); ... }
#define STINT_SCOPE(name) STINT_DETAIL_SCOPE(name, __COUNTER__)
// [[maybe_unused]]: with stint::disabled the declaration is only a reference to the site.
#define STINT_DETAIL_SCOPE(name, id)                                                                         \
    STINT_DETAIL_SITE(STINT_DETAIL_CAT(stint_site_, id), name, ::stint::event_kind::user_annotation);       \
    [[maybe_unused]] ::stint::detail::scope_or_site<STINT_CONFIG> STINT_DETAIL_CAT(stint_scope_, id) {        \
        STINT_DETAIL_CAT(stint_site_, id)                                                                    \
    }

/// Times the rest of the block under a name computed at run time (copied into the record; a
/// temporary string is kept alive until the block ends).
#define STINT_SCOPE_NAMED(name) STINT_DETAIL_SCOPE_NAMED(name, __COUNTER__)
#define STINT_DETAIL_SCOPE_NAMED(name, id)                                                                   \
    auto&& STINT_DETAIL_CAT(stint_name_, id) = (name);                                                       \
    ::stint::detail::named_scope STINT_DETAIL_CAT(stint_scope_, id) {                                        \
        ::std::string_view { STINT_DETAIL_CAT(stint_name_, id) }                                             \
    }

/// Times the rest of the block as an operator (`cat: cpu_op`) of the given configuration. The inputs
/// are evaluated only when the configuration captures them and a session records.
///
///     STINT_OP(my_config, "aten::mm", a, b);
#define STINT_OP(config, name, ...) STINT_DETAIL_OP(__COUNTER__, config, name __VA_OPT__(, ) __VA_ARGS__)
#define STINT_DETAIL_OP(id, config, name, ...)                                                               \
    STINT_DETAIL_SITE(STINT_DETAIL_CAT(stint_site_, id), name, ::stint::event_kind::cpu_op);                \
    [[maybe_unused]] ::stint::detail::scope_or_site<config> STINT_DETAIL_CAT(stint_scope_, id) {              \
        STINT_DETAIL_CAT(stint_site_, id)                                                                    \
    };                                                                                                       \
    if constexpr (config::enabled)                                                                           \
        ::stint::detail::op_inputs(STINT_DETAIL_CAT(stint_scope_, id),                                       \
                                   [&](auto&& stint_sink) { stint_sink(__VA_ARGS__); })

/// Records a zero-length event now.
#define STINT_INSTANT(name)                                                                                  \
    do {                                                                                                     \
        STINT_DETAIL_SITE(stint_instant_site_, name, ::stint::event_kind::instant);                          \
        if constexpr (STINT_CONFIG::enabled) ::stint::detail::instant(stint_instant_site_);                  \
    } while (false)
#endif
