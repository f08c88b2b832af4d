#pragma once
// deferred_t<T, Unused>: the type T, named through a template's parameter.

namespace stint::detail {

template <class T, class>
struct deferred {
    using type = T;
};

/// T, but dependent on a template's (otherwise unused) parameter. In C++20 every member of std::vector
/// and std::string is constexpr, and clang instantiates a constexpr function as soon as a template's
/// body names it, even when nothing ever instantiates that template. An expression on an object of
/// type deferred_t<T, Unused> depends on Unused, so the compiler checks it, and instantiates what it
/// calls, only when the template is used: a file that includes stint.hpp but never runs a profiler
/// does not pay for the session side's containers.
///
///     template <class Unused> class basic_event_tree { deferred_t<std::vector<event>, Unused> events_; };
///     template <class Unused = void> void write(deferred_t<const event_list, Unused>& list);  // not deduced
template <class T, class Unused>
using deferred_t = typename deferred<T, Unused>::type;

}  // namespace stint::detail
