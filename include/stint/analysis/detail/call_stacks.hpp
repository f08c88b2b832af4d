#pragma once
// with_stack at drain: each event's stack, innermost frame first, from its site's source location
// and its ancestors' (or from the native frames it recorded). Stacks are interned as a tree: events on
// the same call path share one stack, and a stack costs one node over its caller's, so a million
// events cost at most a million nodes however deep they nest.

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "stint/analysis/detail/event_store.hpp"
#include "stint/analysis/event.hpp"
#include "stint/analysis/event_list.hpp"
#include "stint/capture/detail/native_symbols.hpp"
#include "stint/detail/deferred.hpp"

namespace stint::detail {

// Both functions name their strings, containers and arguments as deferred_t<T, Unused> (exactly T;
// stint/detail/deferred.hpp): their bodies are checked only when stacks are built.

/// A source file as stacks show it (collapsed stacks, the trace's "Call stack", the table's Source
/// Location). `__FILE__` is the path the build gave the compiler, relative to the build directory
/// (meson, make: "../examples/quickstart.cpp") or absolute (CMake). Shown instead:
/// 1. "." components and "dir/.." pairs removed ("src/./a/../b.cpp" -> "src/b.cpp");
/// 2. an absolute path under `cwd` (the working directory when the stacks are built) made relative to
///    it ("/home/u/proj/src/a.cpp" in /home/u/proj -> "src/a.cpp"); other absolute paths stay whole;
/// 3. a relative path that climbs out of the build directory ("../src/a.cpp") and names a file from
///    `cwd` (a program run in its build directory, as tests are): from the source root where the
///    directory it climbs to looks like one (meson.build, CMakeLists.txt, Makefile or .git: a build
///    directory inside the source tree), else absolute (a build directory elsewhere: "/tmp/build"
///    and "../work/proj/src/a.cpp" show "/work/proj/src/a.cpp");
/// 4. otherwise its leading ".." components dropped ("../../src/a.cpp" -> "src/a.cpp"): the common
///    build directory inside the source tree, run from elsewhere.
/// A path that a build already shortened with -fmacro-prefix-map passes through unchanged.
template <class Unused = void>
[[nodiscard]] std::string readable_source_path(std::string_view file, std::string_view cwd) {
    const bool absolute = file.starts_with('/');
    deferred_t<std::vector<std::string_view>, Unused> parts;
    for (std::size_t at = 0; at <= file.size();) {
        std::size_t end = file.find('/', at);
        if (end == std::string_view::npos) end = file.size();
        const std::string_view part = file.substr(at, end - at);
        at = end + 1;
        if (part.empty() || part == ".") continue;
        if (part == ".." && !parts.empty() && parts.back() != "..") {
            parts.pop_back();
        } else if (part != ".." || !absolute) {  // "/.." is "/"
            parts.push_back(part);
        }
    }
    std::size_t first = 0;
    if (absolute) {
        // Compare component-wise, so "/home/u/proj2" is not under "/home/u/proj".
        std::size_t matched = 0;
        bool under = cwd.starts_with('/');
        for (std::size_t at = 1; under && at < cwd.size();) {
            std::size_t end = cwd.find('/', at);
            if (end == std::string_view::npos) end = cwd.size();
            const std::string_view part = cwd.substr(at, end - at);
            at = end + 1;
            if (part.empty()) continue;
            under = matched + 1 < parts.size() && parts[matched] == part;
            ++matched;
        }
        if (under && matched > 0) first = matched;
    } else {
        while (first + 1 < parts.size() && parts[first] == "..") ++first;
        if (first > 0 && cwd.starts_with('/')) {
            // Where the ".." lead from cwd: the directory the build climbed to, and the file itself.
            deferred_t<std::string, Unused> climbed(cwd);
            for (std::size_t up = 0; up < first; ++up) climbed.resize(std::max<std::size_t>(climbed.rfind('/'), 1));
            const deferred_t<std::string, Unused> root = climbed == "/" ? "" : climbed;  // joined with "/..." below
            deferred_t<std::string, Unused> whole = root;
            for (std::size_t i = first; i < parts.size(); ++i) whole.append("/").append(parts[i]);
            const auto exists = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
            if (exists(whole)) {
                const bool source_root = exists(root + "/meson.build") || exists(root + "/CMakeLists.txt") ||
                                         exists(root + "/Makefile") || exists(root + "/.git");
                if (!source_root) return whole;
            }
        }
    }
    deferred_t<std::string, Unused> out = absolute && first == 0 ? "/" : "";
    for (std::size_t i = first; i < parts.size(); ++i) {
        if (i != first) out.push_back('/');
        out.append(parts[i]);
    }
    return out;
}

/// Sets `events[i].stack` for every event to its node in `stacks`, innermost frame first. On entry,
/// an event whose `stack` is not no_index recorded native frames: `native[stack]`, innermost first.
/// Events must be ordered parents first (as event_list_builder orders them). Stacks are interned as a
/// tree: a stack is its innermost frame on top of its parent's stack, the frame the site's location
/// (one per site) or, for names made at run time, the name; (frame, parent stack) -> stack. Memory is
/// linear in the events whatever their depth.
template <class Unused = void>
void assign_call_stacks(deferred_t<event_store, Unused>& events,
                        const deferred_t<std::vector<std::vector<std::uint64_t>>, Unused>& native,
                        deferred_t<stack_tree, Unused>& stacks) {
    deferred_t<std::unordered_map<const source_location*, std::uint32_t>, Unused> location_frames;
    deferred_t<std::unordered_map<std::string_view, std::uint32_t>, Unused> text_frames;  // views into stacks.frames
    deferred_t<std::unordered_map<std::uint64_t, event_index>, Unused> by_frame;          // frame << 32 | parent stack
    deferred_t<std::map<std::vector<std::uint64_t>, event_index>, Unused> by_native;
    deferred_t<native_symbolizer, Unused> symbols;
    // A drain never throws: without a working directory, absolute paths stay. getcwd, not <filesystem>,
    // which costs every file that includes stint.hpp.
    deferred_t<std::string, Unused> cwd;
    if (char buffer[4096]; ::getcwd(buffer, sizeof buffer) != nullptr) cwd = buffer;
    const auto frame_of_text = [&](std::string_view text) {
        if (const auto found = text_frames.find(text); found != text_frames.end()) return found->second;
        const auto id = static_cast<std::uint32_t>(stacks.frames.size());
        text_frames.emplace(stacks.frames.emplace_back(text), id);
        return id;
    };
    const auto intern = [&](std::uint32_t frame, event_index parent) {
        const std::uint64_t key = std::uint64_t{frame} << 32 | parent;
        auto [it, added] = by_frame.try_emplace(key, no_index);
        if (added) it->second = stacks.push(frame, parent);
        return it->second;
    };
    for (event_index i = 0; i < events.size(); ++i) {
        const event_index parent = events.row(i).parent;
        const event_index parent_stack = parent == no_index ? no_index : events.extra(parent).stack;
        const event_index recorded = events.extra(i).stack;
        if (recorded != no_index && recorded < native.size()) {
            const deferred_t<std::vector<std::uint64_t>, Unused>& frames = native[recorded];
            auto [it, added] = by_native.try_emplace(frames, no_index);
            if (added) {
                // Outermost first onto the tree; different return addresses in the same functions
                // are one stack by name.
                event_index at = no_index;
                for (auto address = frames.rbegin(); address != frames.rend(); ++address) {
                    at = intern(frame_of_text(symbols.name_of(*address)), at);
                }
                it->second = at;
            }
            events.extra_to_write(i).stack = it->second;
            continue;
        }
        std::uint32_t frame = 0;
        const event_name& name = events.name(i);
        if (name.location != nullptr) {
            auto [at, added] = location_frames.try_emplace(name.location, 0);
            if (added) {
                at->second = frame_of_text(fmt::format("{}({}): {}", readable_source_path(name.location->file, cwd),
                                                       name.location->line, name.location->function));
            }
            frame = at->second;
        } else {
            frame = frame_of_text(name.text);
        }
        const event_index stack = intern(frame, parent_stack);
        events.extra_to_write(i).stack = stack;
    }
}

}  // namespace stint::detail
