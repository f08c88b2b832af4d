#pragma once
// The bodies of analysis/detail/call_stacks.hpp: readable source paths and interning the stacks.

#include "stint/analysis/detail/call_stacks.hpp"

#include <unistd.h>  // ::access, ::getcwd

#include <algorithm>      // std::max
#include <map>            // std::map
#include <unordered_map>  // std::unordered_map

#include <fmt/format.h>  // fmt::format

#include "stint/analysis/event.hpp"
#include "stint/capture/detail/native_symbols.hpp"

namespace stint::detail {

std::string readable_source_path(std::string_view file, std::string_view cwd) {
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
        if (first > 0 && cwd.starts_with('/')) {
            // Where the ".." lead from cwd: the directory the build climbed to, and the file itself.
            std::string climbed(cwd);
            for (std::size_t up = 0; up < first; ++up) climbed.resize(std::max<std::size_t>(climbed.rfind('/'), 1));
            const std::string root = climbed == "/" ? "" : climbed;  // joined with "/..." below
            std::string whole = root;
            for (std::size_t i = first; i < parts.size(); ++i) whole.append("/").append(parts[i]);
            const auto exists = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
            if (exists(whole)) {
                const bool source_root = exists(root + "/meson.build") || exists(root + "/CMakeLists.txt") ||
                                         exists(root + "/Makefile") || exists(root + "/.git");
                if (!source_root) return whole;
            }
        }
    }
    std::string out = absolute && first == 0 ? "/" : "";
    for (std::size_t i = first; i < parts.size(); ++i) {
        if (i != first) out.push_back('/');
        out.append(parts[i]);
    }
    return out;
}

void assign_call_stacks(event_store& events, const std::vector<std::vector<std::uint64_t>>& native,
                        stack_tree& stacks) {
    std::unordered_map<const source_location*, std::uint32_t> location_frames;
    std::unordered_map<std::string_view, std::uint32_t> text_frames;  // views into stacks.frames
    std::unordered_map<std::uint64_t, event_index> by_frame;          // frame << 32 | parent stack
    std::map<std::vector<std::uint64_t>, event_index> by_native;
    native_symbolizer symbols;
    // A drain never throws: without a working directory, absolute paths stay. getcwd, not <filesystem>,
    // which costs every file that includes stint.hpp.
    std::string cwd;
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
            const std::vector<std::uint64_t>& frames = native[recorded];
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
