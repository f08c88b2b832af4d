#pragma once
// How an event_list keeps its events: 48 bytes per event, with what few events carry (arguments,
// stacks, device and memory details, times that do not fit 32 bits) in a side table. An event is
// assembled from these when it is read (design §1 step 5).

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "stint/analysis/event.hpp"
#include "stint/detail/deferred.hpp"

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

template <class = void>
class basic_event_store;
/// basic_event_store's one form (a template only so that a file that does not use it does not compile it).
using event_store = basic_event_store<>;

/// The events of a list, in list order.
template <class Unused>
class basic_event_store {
public:
    [[nodiscard]] std::size_t size() const noexcept { return rows_.size(); }
    void reserve(std::size_t events) { rows_.reserve(events); }

    /// Appends an event named names()[name]; returns its index.
    event_index push(event_kind kind, std::uint32_t name, std::uint32_t thread, std::int64_t start_ns,
                     std::int64_t end_ns) {
        event_row r;
        r.kind = kind;
        r.name = name;
        r.thread = thread;
        r.added = static_cast<std::uint32_t>(rows_.size());
        rows_.push_back(r);
        const auto i = static_cast<event_index>(rows_.size() - 1);
        set_times(i, start_ns, std::max(end_ns, start_ns));
        return i;
    }
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
    void set_times(event_index i, std::int64_t start_ns, std::int64_t end_ns) {
        const std::int64_t self_ns = self(i);
        event_row& r = rows_[i];
        r.start_ns = start_ns;
        const std::int64_t span = end_ns - start_ns;
        if ((r.flags & event_row::long_times) == 0 && span >= 0 && span <= std::numeric_limits<std::uint32_t>::max()) {
            r.duration_ns = static_cast<std::uint32_t>(span);
            return;
        }
        make_long(i, self_ns).end_ns = end_ns;
    }
    void set_self(event_index i, std::int64_t self_ns) {
        event_row& r = rows_[i];
        if ((r.flags & event_row::long_times) == 0 && self_ns >= std::numeric_limits<std::int32_t>::min() &&
            self_ns <= std::numeric_limits<std::int32_t>::max()) {
            r.self_ns = static_cast<std::int32_t>(self_ns);
            return;
        }
        make_long(i, self_ns).self_ns = self_ns;
    }

    /// Event i's extra, or the defaults when it has none.
    [[nodiscard]] const event_extra& extra(event_index i) const noexcept {
        static const event_extra none;
        return rows_[i].extra == no_index ? none : extras_[rows_[i].extra];
    }
    /// Event i's extra, made first when it has none.
    event_extra& extra_to_write(event_index i) {
        event_row& r = rows_[i];
        if (r.extra == no_index) {
            r.extra = static_cast<event_index>(extras_.size());
            extras_.emplace_back();
        }
        return extras_[r.extra];
    }
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
    void assemble_into(event& e, event_index i) const {
        const event_row& r = rows_[i];
        e = event{};  // the defaults are what an event without an extra has
        e.index = i;
        e.name = names_[r.name].text;
        e.location = names_[r.name].location;
        e.id = id(i);
        e.thread = r.thread;
        e.kind = r.kind;
        e.depth = r.depth;
        e.start_ns = r.start_ns;
        e.end_ns = r.start_ns + std::int64_t{r.duration_ns};
        e.self_ns = r.self_ns;
        e.parent = r.parent;
        e.first_child = r.first_child;
        e.next_sibling = r.next_sibling;
        if (r.extra == no_index) return;
        const event_extra& x = extras_[r.extra];
        if ((r.flags & event_row::long_times) != 0) {
            e.end_ns = x.end_ns;
            e.self_ns = x.self_ns;
        }
        e.args = x.args;
        e.stack = x.stack;
        e.flops = x.flops;
        e.device = x.device;
        e.stream = x.stream;
        e.linked = x.linked;
        e.first_linked = x.first_linked;
        e.next_linked = x.next_linked;
        e.device_info = x.device_info;
        e.device_ns = x.device_ns;
        e.self_device_ns = x.self_device_ns;
        e.memory_info = x.memory_info;
    }

    /// Moves event order[i] to place i, in place (following the permutation's cycles); `order` ends
    /// as the identity.
    void permute(deferred_t<std::vector<event_index>, Unused>& order) {
        for (event_index i = 0; i < order.size(); ++i) {
            if (order[i] == i) continue;
            const event_row first = rows_[i];
            event_index j = i;
            for (;;) {
                const event_index k = order[j];
                order[j] = j;
                if (k == i) {
                    rows_[j] = first;
                    break;
                }
                rows_[j] = rows_[k];
                j = k;
            }
        }
    }

    /// Appends a later list's events; `relink` maps its event indices, `thread_of` its threads, and
    /// the side tables' offsets are given. Times move by `shift_ns`.
    template <class Relink, class Thread>
    void append(const basic_event_store& later, Relink relink, Thread thread_of, std::int64_t shift_ns,
                event_index args_offset, event_index stacks_offset, event_index device_offset,
                event_index memory_offset) {
        const auto offset = static_cast<event_index>(rows_.size());
        const auto name_offset = static_cast<std::uint32_t>(names_.size());
        const auto extra_offset = static_cast<event_index>(extras_.size());
        names_.insert(names_.end(), later.names_.begin(), later.names_.end());
        if (windows_.empty()) windows_.push_back({0, 0});
        if (later.windows_.empty()) {
            windows_.push_back({offset, 0});
        } else {
            for (const window& w : later.windows_) windows_.push_back({w.first + offset, w.first_id});
        }
        for (event_extra x : later.extras_) {
            x.end_ns += shift_ns;
            x.linked = relink(x.linked);
            x.first_linked = relink(x.first_linked);
            x.next_linked = relink(x.next_linked);
            if (x.args != no_index) x.args += args_offset;
            if (x.stack != no_index) x.stack += stacks_offset;
            if (x.device_info != no_index) x.device_info += device_offset;
            if (x.memory_info != no_index) x.memory_info += memory_offset;
            extras_.push_back(x);
        }
        for (event_row r : later.rows_) {
            r.start_ns += shift_ns;
            r.thread = thread_of(r.thread);
            r.parent = relink(r.parent);
            r.first_child = relink(r.first_child);
            r.next_sibling = relink(r.next_sibling);
            r.name += name_offset;
            if (r.extra != no_index) r.extra += extra_offset;
            rows_.push_back(r);
        }
    }

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
    [[nodiscard]] const window& window_of(event_index i) const noexcept {
        if (windows_.size() == 1) return windows_[0];
        return *(std::upper_bound(windows_.begin(), windows_.end(), i,
                                  [](event_index v, const window& x) { return v < x.first; }) - 1);
    }

    event_extra& make_long(event_index i, std::int64_t self_ns) {
        const std::int64_t end_ns = end(i);
        event_extra& x = extra_to_write(i);
        event_row& r = rows_[i];
        if ((r.flags & event_row::long_times) == 0) {
            x.end_ns = end_ns;
            x.self_ns = self_ns;
            r.flags |= event_row::long_times;
            r.duration_ns = 0;
            r.self_ns = 0;
        }
        return x;
    }

    // Named through Unused (exactly T; stint/detail/deferred.hpp): the bodies above are checked only when
    // a list is used.
    deferred_t<std::vector<event_row>, Unused> rows_;
    deferred_t<std::vector<event_extra>, Unused> extras_;
    deferred_t<std::vector<event_name>, Unused> names_;
    deferred_t<std::vector<window>, Unused> windows_;  // none: ids are the places added
};

}  // namespace stint::detail
