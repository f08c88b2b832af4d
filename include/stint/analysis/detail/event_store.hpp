#pragma once
// How an event_list keeps its events: 48 bytes per event, with what few events carry (arguments,
// stacks, device and memory details, times that do not fit 32 bits) in a side table. An event is
// assembled from these when it is read (design §1 step 5).

#include <cstddef>      // std::size_t
#include <cstdint>      // std::int64_t, std::uint32_t, std::uint64_t
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "stint/analysis/event.hpp"
#include "stint/detail/separate_compilation.hpp"

namespace stint::detail {

/// What every event has. Times are kept as a start and a 32-bit duration and self time; an event
/// whose times do not fit (a scope longer than 4.29 s, a self time below its children's sum) keeps
/// them in its extra instead (`long_times`).
struct event_row {
    std::int64_t start_ns = 0;
    std::uint32_t duration_ns = 0;  // unless long_times
    std::int32_t self_ns = 0;       // unless long_times
    event_index parent = no_index;
    event_index first_child = no_index;
    event_index next_sibling = no_index;
    std::uint32_t name = 0;         // into event_store::names
    std::uint32_t added = 0;        // its place in the order added: its id minus its window's first id
    event_index extra = no_index;   // into event_store::extras
    std::uint32_t thread = 0;
    std::uint16_t depth = 0;
    event_kind kind = event_kind::user_annotation;
    std::uint8_t flags = 0;

    static constexpr std::uint8_t long_times = 1;
};
static_assert(sizeof(event_row) == 48, "an event costs 48 bytes in a list (issue 18)");

/// What only some events carry; defaults mean "none", as in stint::event.
struct event_extra {
    std::int64_t end_ns = 0;   // with event_row::long_times
    std::int64_t self_ns = 0;  // with event_row::long_times
    std::int64_t flops = -1;
    std::int64_t device_ns = 0;
    std::int64_t self_device_ns = 0;
    stint::device device = {};
    std::uint32_t stream = 0;
    event_index args = no_index;
    event_index stack = no_index;
    event_index linked = no_index;
    event_index first_linked = no_index;
    event_index next_linked = no_index;
    event_index device_info = no_index;
    event_index memory_info = no_index;
};

/// A name as events refer to it: the text (static, or in the list's arena) and the site's location.
struct event_name {
    std::string_view text;
    const source_location* location = nullptr;
};

/// The events of a list, in list order.
class event_store {
public:
    [[nodiscard]] std::size_t size() const noexcept { return rows_.size(); }
    void reserve(std::size_t events) { rows_.reserve(events); }

    /// Appends an event named names()[name]; returns its index.
    STINT_DECL event_index push(event_kind kind, std::uint32_t name, std::uint32_t thread, std::int64_t start_ns,
                                std::int64_t end_ns);
    std::uint32_t add_name(event_name name) {
        names_.push_back(name);
        return static_cast<std::uint32_t>(names_.size() - 1);
    }

    [[nodiscard]] event_row& row(event_index i) noexcept { return rows_[i]; }
    [[nodiscard]] const event_row& row(event_index i) const noexcept { return rows_[i]; }
    [[nodiscard]] const event_name& name(event_index i) const noexcept { return names_[rows_[i].name]; }

    [[nodiscard]] std::int64_t start(event_index i) const noexcept { return rows_[i].start_ns; }
    [[nodiscard]] std::int64_t end(event_index i) const noexcept {
        const event_row& r = rows_[i];
        return (r.flags & event_row::long_times) != 0 ? extras_[r.extra].end_ns
                                                      : r.start_ns + std::int64_t{r.duration_ns};
    }
    [[nodiscard]] std::int64_t duration(event_index i) const noexcept { return end(i) - start(i); }
    [[nodiscard]] std::int64_t self(event_index i) const noexcept {
        const event_row& r = rows_[i];
        return (r.flags & event_row::long_times) != 0 ? extras_[r.extra].self_ns : std::int64_t{r.self_ns};
    }
    STINT_DECL void set_times(event_index i, std::int64_t start_ns, std::int64_t end_ns);
    STINT_DECL void set_self(event_index i, std::int64_t self_ns);

    /// Event i's extra, or the defaults when it has none.
    [[nodiscard]] const event_extra& extra(event_index i) const noexcept {
        static const event_extra none;
        return rows_[i].extra == no_index ? none : extras_[rows_[i].extra];
    }
    /// Event i's extra, made first when it has none.
    STINT_DECL event_extra& extra_to_write(event_index i);
    [[nodiscard]] bool on_device(event_index i) const noexcept {
        return rows_[i].extra != no_index && extras_[rows_[i].extra].device.type != device_type::cpu;
    }

    /// Ids are first id + place added; a list appended from several windows has one first id each.
    void set_first_id(std::uint64_t id) { windows_.assign(1, {0, id}); }
    [[nodiscard]] std::uint64_t id(event_index i) const noexcept {
        return (windows_.empty() ? 0 : window_of(i).first_id) + rows_[i].added;
    }

    /// Event i whole, as readers see it.
    [[nodiscard]] event assemble(event_index i) const {
        event e;
        assemble_into(e, i);
        return e;
    }
    /// assemble() into an event that already exists (an iterator's own): no temporary to copy.
    STINT_DECL void assemble_into(event& e, event_index i) const;

    /// Moves event order[i] to place i, in place (following the permutation's cycles); `order` ends
    /// as the identity.
    STINT_DECL void permute(std::vector<event_index>& order);

    /// Appends a later list's events: their indices move by this store's size, thread t becomes
    /// `thread_map[t]`, and the side tables' offsets are given. Times move by `shift_ns`.
    STINT_DECL void append(const event_store& later, const std::vector<std::uint32_t>& thread_map,
                           std::int64_t shift_ns, event_index args_offset, event_index stacks_offset,
                           event_index device_offset, event_index memory_offset);

    /// Bytes held per event and in the side tables (capacity, not size: what the list costs).
    [[nodiscard]] std::size_t bytes() const noexcept {
        return rows_.capacity() * sizeof(event_row) + extras_.capacity() * sizeof(event_extra) +
               names_.capacity() * sizeof(event_name) + windows_.capacity() * sizeof(window);
    }

private:
    struct window {
        event_index first;       // its first event in the list
        std::uint64_t first_id;  // the id of the event it added first
    };

    // The window event i was added in; windows_ is not empty.
    [[nodiscard]] STINT_DECL const window& window_of(event_index i) const noexcept;

    STINT_DECL event_extra& make_long(event_index i, std::int64_t self_ns);

    std::vector<event_row> rows_;
    std::vector<event_extra> extras_;
    std::vector<event_name> names_;
    std::vector<window> windows_;  // none: ids are the places added
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/analysis/detail/impl/event_store.ipp"
#endif
