#pragma once
// with_stack at drain: each event's stack, innermost frame first, from its site's source location
// and its ancestors' (or from the native frames it recorded). Stacks are interned: events on the
// same call path share one stack, so a million events cost as many stacks as there are paths.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "stint/analysis/event.hpp"
#include "stint/capture/detail/native_symbols.hpp"

namespace stint::detail {

/// A source file as stacks show it (collapsed stacks, the trace's "Call stack", the table's Source
/// Location). `__FILE__` is the path the build gave the compiler, relative to the build directory
/// (meson, make: "../examples/quickstart.cpp") or absolute (CMake). Shown instead:
/// 1. "." components and "dir/.." pairs removed ("src/./a/../b.cpp" -> "src/b.cpp");
/// 2. an absolute path under `cwd` (the working directory when the stacks are built) made relative to
///    it ("/home/u/proj/src/a.cpp" in /home/u/proj -> "src/a.cpp"); other absolute paths stay whole;
/// 3. the leading ".." components of a relative path dropped ("../../src/a.cpp" -> "src/a.cpp"), so
///    a build directory inside the source tree shows paths from the source root.
/// A path that a build already shortened with -fmacro-prefix-map passes through unchanged.
[[nodiscard]] inline std::string readable_source_path(std::string_view file, std::string_view cwd) {
    const bool absolute = file.starts_with('/');
    std::vector<std::string_view> parts;
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
    }
    std::string out = absolute && first == 0 ? "/" : "";
    for (std::size_t i = first; i < parts.size(); ++i) {
        if (i != first) out.push_back('/');
        out.append(parts[i]);
    }
    return out;
}

/// Sets `events[i].stack` for every event and fills `stacks` with the distinct stacks. On entry,
/// an event whose `stack` is not no_index recorded native frames: `native[stack]`, innermost first.
/// Events must be ordered parents first (as event_list_builder orders them).
inline void assign_call_stacks(std::vector<event>& events, const std::vector<std::vector<std::uint64_t>>& native,
                               std::vector<std::vector<std::string>>& stacks) {
    // A stack is its innermost frame on top of its parent's stack. The frame is the site's location
    // (one per site) or, for names made at run time, the name: (frame, parent stack) -> stack.
    struct key_hash {
        std::size_t operator()(const std::pair<std::string_view, event_index>& k) const noexcept {
            return std::hash<std::string_view>{}(k.first) * 31 + k.second;
        }
    };
    std::unordered_map<const source_location*, std::string> location_frames;
    std::unordered_map<std::pair<std::string_view, event_index>, event_index, key_hash> by_frame;
    std::map<std::vector<std::uint64_t>, event_index> by_native;
    std::map<std::vector<std::string>, event_index> by_names;
    native_symbolizer symbols;
    std::error_code no_cwd;  // a drain never throws: without a working directory, absolute paths stay
    const std::string cwd = std::filesystem::current_path(no_cwd).string();
    for (event& e : events) {
        const event_index parent_stack = e.parent == no_index ? no_index : events[e.parent].stack;
        if (e.stack != no_index && e.stack < native.size()) {
            const std::vector<std::uint64_t>& frames = native[e.stack];
            auto [it, added] = by_native.try_emplace(frames, no_index);
            if (added) {
                // Different return addresses in the same functions are one stack by name.
                std::vector<std::string> names;
                names.reserve(frames.size());
                for (std::uint64_t address : frames) names.push_back(symbols.name_of(address));
                const auto next = static_cast<event_index>(stacks.size());
                auto [named, new_names] = by_names.try_emplace(std::move(names), next);
                if (new_names) stacks.push_back(named->first);
                it->second = named->second;
            }
            e.stack = it->second;
            continue;
        }
        std::string_view frame = e.name;
        if (e.location != nullptr) {
            auto [at, added] = location_frames.try_emplace(e.location);
            if (added) {
                at->second = fmt::format("{}({}): {}", readable_source_path(e.location->file, cwd), e.location->line,
                                         e.location->function);
            }
            frame = at->second;  // node-based map: the string stays put
        }
        auto [it, added] = by_frame.try_emplace({frame, parent_stack}, static_cast<event_index>(stacks.size()));
        if (added) {
            std::vector<std::string> frames{std::string(frame)};
            if (parent_stack != no_index) {
                const std::vector<std::string>& outer = stacks[parent_stack];
                frames.insert(frames.end(), outer.begin(), outer.end());
            }
            stacks.push_back(std::move(frames));
        }
        e.stack = it->second;
    }
}

}  // namespace stint::detail
