#pragma once
// stint::emit_nvtx: every scope and op of a config with this policy is also an NVTX range (torch's
// emit_nvtx), so that Nsight Systems shows stint's annotations beside its own GPU rows. NVTX v3 is
// header-only and ships with the CUDA toolkit (its include/nvtx3/); this header is the only one of
// stint that includes it, so a config without the policy includes no NVTX header (design §12).
//
//     #include <stint/annotations/nvtx.hpp>
//     using cfg = stint::config<stint::emit_nvtx, stint::record_shapes>;
//     STINT_OP(cfg, "aten::mm", a, b);   // NVTX range "aten::mm, sizes = [[64, 32], [32, 16]]"

#include <nvtx3/nvToolsExt.h>  // nvtxRangePushA, nvtxRangePop, NVTX_NO_PUSH_POP_TRACKING

#include <algorithm>    // std::min
#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint32_t
#include <cstring>      // std::memcpy
#include <string_view>  // std::string_view

#include <fmt/format.h>  // fmt::memory_buffer

#include "stint/annotations/detail/range_message.hpp"
#include "stint/annotations/range_mirror.hpp"
#include "stint/recording/site.hpp"

namespace stint {
namespace detail {

/// Pushes and pops NVTX ranges for stint's scopes. NVTX wants NUL-terminated text and a site's name is
/// a string_view, so the name is copied into a per-thread buffer (cut at its size) -- only when a tool
/// is attached: without one, each push and pop is a load and a branch.
struct nvtx_mirror {
    static constexpr bool enabled = true;
    static constexpr std::size_t max_message = 1024;

    /// Whether an NVTX tool (Nsight Systems, an injection library) is attached. NVTX's pushes return
    /// NVTX_NO_PUSH_POP_TRACKING when none is; asked once per process, the first time a range is pushed.
    static bool tool_attached() noexcept {
        static const bool attached = [] {
            const int level = nvtxRangePushA("stint");
            if (level == NVTX_NO_PUSH_POP_TRACKING) return false;
            nvtxRangePop();
            return true;
        }();
        return attached;
    }

    static void push(const site& where) noexcept { push_named(where.name); }

    static void push_named(std::string_view name) noexcept {
        if (!tool_attached()) return;
        char* text = message_buffer();
        const std::size_t n = std::min(name.size(), max_message - 1);
        std::memcpy(text, name.data(), n);
        text[n] = '\0';
        nvtxRangePushA(text);
    }

    /// An op's range, with its inputs' sizes as torch's emit_nvtx(record_shapes=True) writes them:
    /// "aten::mm, sizes = [[64, 32], [32, 16]]" (a non-tensor input is []; no sizes without inputs).
    static void push_op(const site& where, payload_bytes inputs, std::uint32_t aux) noexcept {
        if (!tool_attached()) return;
        try {
            fmt::memory_buffer text;
            if (!format_op_range(text, where.name, inputs, aux)) return push(where);
            push_named({text.data(), text.size()});
        } catch (...) {
            push(where);  // out of memory formatting: the range keeps the op's name
        }
    }

    static void pop() noexcept {
        if (tool_attached()) nvtxRangePop();
    }

private:
    static char* message_buffer() noexcept {
        static thread_local char buffer[max_message];
        return buffer;
    }
};

}  // namespace detail

/// The policy: scopes and ops of the config are also NVTX ranges (names made at run time with
/// STINT_SCOPE_NAMED too; an op that captures inputs carries their sizes while a session records).
struct emit_nvtx {
    using range_mirror = detail::nvtx_mirror;
};

}  // namespace stint
