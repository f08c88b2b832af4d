#pragma once
// The placeholders the sketches of README.md and docs/ use (tools/check_readme.py includes this header
// before every ```cpp block that does not start with an #include; a block that does is a complete
// program and is compiled, linked and run on its own).

#include <stint/stint.hpp>

#include <array>
#include <cstdint>
#include <string_view>

// A tensor as stint captures it with no stint code: sizes() and dtype().
struct Tensor {
    std::array<std::int64_t, 2> dims{};
    const std::array<std::int64_t, 2>& sizes() const { return dims; }
    std::string_view dtype() const { return "float"; }
};

// An optimizer with a virtual step(), for STINT_SCOPE_DYNAMIC's dynamic type.
struct SGD {
    virtual ~SGD() = default;
    virtual void step();
};

inline void train_step() {}
inline void run() {}
template <class... T>
void use(const T&...) {}

// A thread pool and a job, for the flows sketch.
struct job {
    void operator()() {}
};
struct pool {
    template <class F>
    void push(F&&) {}
};

// A coroutine type, a request and threads to resume on, for the async span sketch.
#include <coroutine>
#include <exception>
struct detached {
    struct promise_type {
        detached get_return_object() noexcept { return {}; }
        std::suspend_never initial_suspend() noexcept { return {}; }
        std::suspend_never final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { std::terminate(); }
    };
};
struct request {};
struct executor {};
inline executor io;
inline executor cpu;
inline std::suspend_always resume_on(executor&) { return {}; }

// A framework's observer, for the recording hook sketch.
inline void install_observer() {}
inline void remove_observer() {}

// An engine's observer API, for the embedding sketch (guide 6).
template <class Begin, class End>
void engine_register_observer(Begin, End) {}
inline void engine_unregister_observer() {}
