#pragma once
// stint::emit_itt: every scope and op of a config with this policy is also an Intel ITT task (torch's
// emit_itt), so that VTune's timeline shows stint's annotations: domain "PyTorch", a task begun with
// the name's string handle (made once per name) at entry and ended at exit. The collector is the library
// INTEL_LIBITTNOTIFY64 names (VTune sets it); stint loads it itself (detail/itt_collector.hpp), so no
// ITT header or library is needed. Without one, each push and pop is one load and a branch.
//
//     #include <stint/annotations/itt.hpp>
//     using cfg = stint::config<stint::emit_itt, stint::record_shapes>;
//     STINT_OP(cfg, "aten::mm", a, b);   // ITT task "aten::mm, sizes = [[64, 32], [32, 16]]"

#include <atomic>       // std::memory_order_relaxed
#include <cstdint>      // std::uint32_t
#include <string_view>  // std::string_view

#include <fmt/format.h>  // fmt::memory_buffer

#include "stint/annotations/detail/itt_collector.hpp"
#include "stint/annotations/detail/range_message.hpp"
#include "stint/annotations/range_mirror.hpp"
#include "stint/detail/export_macros.hpp"
#include "stint/recording/site.hpp"

namespace stint {
namespace detail {

/// Begins and ends ITT tasks for stint's scopes (the range mirror of emit_itt).
struct itt_mirror {
    static constexpr bool enabled = true;

    static void push(const site& where) noexcept { push_named(where.name); }

    static void push_named(std::string_view name) noexcept {
        // relaxed: written once, by the first push; a push that reads `unknown` loads the collector
        // through instance()'s guarded initialisation, which orders the rest.
        if (itt::the_state.load(std::memory_order_relaxed) == itt::state::off) [[likely]] return;
        begin(name);
    }

    /// An op's task, with its inputs' sizes as torch's emit_itt(record_shapes=True) describes them:
    /// "aten::mm, sizes = [[64, 32], [32, 16]]" (a non-tensor input is []; no sizes without inputs).
    static void push_op(const site& where, payload_bytes inputs, std::uint32_t aux) noexcept {
        if (itt::the_state.load(std::memory_order_relaxed) == itt::state::off) [[likely]] return;
        if (!ready()) return;
        try {
            fmt::memory_buffer text;
            if (!format_op_range(text, where.name, inputs, aux)) return itt::collector::instance().begin(where.name);
            itt::collector::instance().begin({text.data(), text.size()});
        } catch (...) {
            itt::collector::instance().begin(where.name);  // out of memory formatting: the op's name
        }
    }

    static void pop() noexcept {
        if (itt::the_state.load(std::memory_order_relaxed) == itt::state::off) [[likely]] return;
        itt::collector::instance().end();
    }

private:
    STINT_DETAIL_NOINLINE static void begin(std::string_view name) noexcept {
        if (ready()) itt::collector::instance().begin(name);
    }

    // Loads the collector at the first push (once per process) and says whether it takes tasks.
    static bool ready() noexcept {
        const bool active = itt::collector::instance().active();
        if (itt::the_state.load(std::memory_order_relaxed) == itt::state::unknown) {
            itt::the_state.store(active ? itt::state::on : itt::state::off, std::memory_order_relaxed);
        }
        return active;
    }
};

}  // namespace detail

/// The policy: scopes and ops of the config are also ITT tasks in the domain "PyTorch" (names made at
/// run time with STINT_SCOPE_NAMED too; an op that captures inputs carries their sizes while a session
/// records). Tasks are begun whether or not a session records, as VTune collects the whole run.
struct emit_itt {
    using range_mirror = detail::itt_mirror;
};

}  // namespace stint
