#pragma once
// The placeholders README.md's sketches use (tools/check_readme.py includes this header before every
// ```cpp block that does not start with an #include; a block that does is a complete program and is
// compiled, linked and run on its own).

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
