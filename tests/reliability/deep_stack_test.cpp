// Deep nesting under with_stack<> (issue 14, found broken 2). Stacks are interned as a tree (a stack
// is one frame on top of its caller's), so N nested scopes cost memory linear in N: 100,000 nested
// scopes drain, link and analyse within a bounded peak RSS; at a smaller depth the trace's "Call stack"
// and the collapsed stacks (whose size is the square of the depth by nature) read back whole.

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include <stint/analysis/detail/call_stacks.hpp>
#include "../test_util.hpp"
#include "size.hpp"

namespace {

using deep = stint::config<stint::with_stack<>>;

// A /proc/self/status field in bytes ("VmRSS:", "VmHWM:"), or -1.
std::int64_t status_bytes(const std::string& key) {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with(key)) return std::strtoll(line.c_str() + key.size(), nullptr, 10) * 1024;
    }
    return -1;
}

// How far the peak resident memory rose above the resident memory at construction. The peak (VmHWM)
// restarts from the current size when /proc/self/clear_refs takes "5" (Linux 4.0+); where it does not,
// the old peak stands in, so growth() is an upper bound, exact when a new peak was set.
class peak_rss_growth {
public:
    peak_rss_growth() {
        std::ofstream("/proc/self/clear_refs") << "5";
        rss_ = status_bytes("VmRSS:");
        peak_ = status_bytes("VmHWM:");
    }
    [[nodiscard]] std::int64_t growth() const { return status_bytes("VmHWM:") - rss_; }
    // Whether growth() is exact: the peak was reset, or a new one was set since.
    [[nodiscard]] bool exact() const { return peak_ <= rss_ + (1 << 20) || status_bytes("VmHWM:") > peak_; }
    [[nodiscard]] bool available() const { return rss_ > 0 && peak_ > 0; }

private:
    std::int64_t rss_ = 0;
    std::int64_t peak_ = 0;
};

// Spins for at least `us` microseconds, so that a level's self time is a whole microsecond or more.
using stint_test::spin_for;

// Opens `depth` scopes, each inside the previous one, then closes them innermost first. Two sites
// alternate level by level, so no level folds into its parent as recursion; the scopes live on the
// heap, not in 100,000 recursive calls, so the test's own stack stays flat.
void nest(std::size_t depth, int spin) {
    STINT_DETAIL_SITE(even_site, "even", ::stint::event_kind::user_annotation,
                      ::stint::detail::scope_payload_kind<deep>());
    STINT_DETAIL_SITE(odd_site, "odd", ::stint::event_kind::user_annotation,
                      ::stint::detail::scope_payload_kind<deep>());
    auto scopes = std::make_unique<std::optional<stint::detail::scope<deep>>[]>(depth);
    for (std::size_t i = 0; i < depth; ++i) {
        scopes[i].emplace(i % 2 == 0 ? even_site : odd_site);
        if (spin > 0) spin_for(std::chrono::microseconds(spin));
    }
    for (std::size_t i = depth; i-- > 0;) scopes[i].reset();
}

// The program's events (not stint's overhead events), in the list's order: outermost first.
std::vector<std::optional<stint::event>> program_events(const stint::event_list& list) {
    std::vector<std::optional<stint::event>> out;
    for (const stint::event& e : list) {
        if (e.kind != stint::event_kind::overhead) out.push_back(e);
    }
    return out;
}

// An event's own frame, as with_stack<> shows a site: "file(line): function".
std::string frame_of(const stint::event& e) {
    REQUIRE(e.location != nullptr);
    return fmt::format("{}({}): {}",
                       stint::detail::readable_source_path(e.location->file, std::filesystem::current_path().string()),
                       e.location->line, e.location->function);
}

// Checks that level k of the chain is the k-th scope opened: its parent is level k - 1, its name
// alternates, and its stack is its own frame on its parent's stack. Counts, then reports the first
// wrong level (one assertion per level would dominate the run time).
void check_chain(const stint::event_list& list, const std::vector<std::optional<stint::event>>& levels) {
    std::size_t wrong = 0;
    std::size_t first_wrong = 0;
    for (std::size_t k = 0; k < levels.size(); ++k) {
        const stint::event& e = *levels[k];
        std::optional<stint::event> parent = list.parent(e);
        bool right = e.name == (k % 2 == 0 ? "even" : "odd") && e.depth == std::min<std::size_t>(k, 0xffff) &&
                     list.stack(e).size() == k + 1;  // event::depth stops at 65535
        if (k == 0) {
            right = right && parent == std::nullopt;
        } else {
            right = right && parent == levels[k - 1] && parent->start_ns <= e.start_ns && e.end_ns <= parent->end_ns &&
                    list.stack(e).outer() == list.stack(*parent);
        }
        if (!right && wrong++ == 0) first_wrong = k;
    }
    INFO("first wrong level: " << first_wrong);
    CHECK(wrong == 0);
}

// Checks a stack frame by frame: level k's frames are the frames of levels k, k-1, ..., 0.
void check_stack_content(const stint::event_list& list, const std::vector<std::optional<stint::event>>& levels,
                         std::size_t k) {
    const std::string frames[2] = {frame_of(*levels[0]), frame_of(*levels[1])};
    REQUIRE(frames[0] != frames[1]);
    const stint::call_stack stack = list.stack(*levels[k]);
    REQUIRE(stack.size() == k + 1);
    CHECK(stack.front() == frames[k % 2]);
    std::size_t level = k;
    std::size_t wrong = 0;
    for (const std::string& frame : stack) wrong += frame == frames[level-- % 2] ? 0 : 1;
    CHECK(wrong == 0);
    CHECK(level + 1 == 0);  // walked exactly k + 1 frames
}

}  // namespace

TEST_CASE("100,000 nested scopes with with_stack<> drain, link and analyse in memory linear in the depth") {
    const std::size_t depth = stint_test::sized<std::size_t>(100000, 100000);
    stint::profiler<deep> prof;
    prof.start();
    nest(depth, 0);

    const peak_rss_growth rss;
    const auto before_stop = std::chrono::steady_clock::now();
    prof.stop();
    const auto after_stop = std::chrono::steady_clock::now();
    const stint::event_list& list = prof.events();
    const stint::averaged_event_list by_name = prof.key_averages();
    const stint::averaged_event_list by_stack = prof.key_averages({.group_by_stack_n = 3});
    const std::string name_table = by_name.table();
    const std::string stack_table = by_stack.table({.sort_by = "count"});
    const std::int64_t growth = rss.growth();
    const double stop_ms = std::chrono::duration<double, std::milli>(after_stop - before_stop).count();
    MESSAGE(depth << " nested scopes: stop() " << stop_ms << " ms, peak RSS +" << growth / 1024
                  << " KiB over stop() and the analyses");

    CHECK(prof.stats().recorded == depth);
    CHECK(prof.stats().dropped == 0);
    const std::vector<std::optional<stint::event>> levels = program_events(list);
    REQUIRE(levels.size() == depth);

    // Memory: records are 24 bytes (2.4 MB for 100,000); the drain and the analyses stay under 100 MB.
    if (stint_test::sanitized) {
        MESSAGE("peak RSS not asserted under a sanitizer");
    } else if (!rss.available()) {
        MESSAGE("peak RSS not asserted: no /proc/self/status");
    } else if (growth >= std::int64_t{100} << 20 && !rss.exact()) {
        MESSAGE("peak RSS not asserted: the peak could not be reset and an older one is higher");
    } else {
        CHECK(growth < std::int64_t{100} << 20);
    }

    // The tree: each level's parent is the scope it was opened in, past the 65,536 levels that the
    // records' 16-bit depths wrap at.
    check_chain(list, levels);

    // Stacks, frame by frame: the outermost, a middle one, one past 2^16, the innermost.
    check_stack_content(list, levels, 0);
    check_stack_content(list, levels, depth / 2);
    if (depth > 70000) check_stack_content(list, levels, 70000);
    check_stack_content(list, levels, depth - 1);
    // One node per level: the innermost stack's caller is its parent's very stack.
    CHECK(list.stack(*levels[depth - 1]).outer() == list.stack(*levels[depth - 2]));

    // key_averages: two names (besides stint's own overhead events); by the innermost three frames,
    // the two outermost levels are groups of their own (fewer frames).
    std::unordered_map<std::string, std::int64_t> counts;
    for (const stint::averaged_event& a : by_name) counts[a.key] = a.count;
    CHECK(counts["even"] == static_cast<std::int64_t>((depth + 1) / 2));
    CHECK(counts["odd"] == static_cast<std::int64_t>(depth / 2));
    CHECK(name_table.find("even") != std::string::npos);
    CHECK(name_table.find("Source Location") == std::string::npos);
    std::unordered_map<std::string, std::int64_t> groups;
    for (const stint::averaged_event& a : by_stack) {
        if (a.key != "even" && a.key != "odd") continue;
        groups[a.key + "/" + std::to_string(a.stack.size())] = a.count;
        REQUIRE_FALSE(a.stack.empty());
        CHECK(a.stack.front() == frame_of(*levels[a.key == "even" ? 0 : 1]));
    }
    CHECK(groups.size() == 4);
    CHECK(groups["even/1"] == 1);
    CHECK(groups["odd/2"] == 1);
    CHECK(groups["even/3"] == static_cast<std::int64_t>((depth + 1) / 2 - 1));
    CHECK(groups["odd/3"] == static_cast<std::int64_t>(depth / 2 - 1));
    CHECK(stack_table.find("Source Location") != std::string::npos);
    CHECK(stack_table.find(frame_of(*levels[0]).substr(0, 20)) != std::string::npos);
}

TEST_CASE("a deep stack's trace Call stack and collapsed stacks read back frame by frame") {
    // Each event lists its whole stack (as torch does), so these outputs grow with the square of
    // the depth: 1,000 levels write about 24 MB of Call stack text.
    const std::size_t depth = stint_test::sized<std::size_t>(1000, 400);
    stint_test::temp_dir dir;
    stint::profiler<deep> prof;
    prof.start();
    nest(depth, 2);
    prof.stop();
    const stint::event_list& list = prof.events();
    const std::vector<std::optional<stint::event>> levels = program_events(list);
    REQUIRE(levels.size() == depth);
    check_chain(list, levels);

    // What each level's stack reads as, root first and innermost first.
    std::vector<std::string> root_first(depth);
    std::vector<std::string> call_stack(depth);
    std::vector<std::string> names(depth);
    for (std::size_t k = 0; k < depth; ++k) {
        const std::string frame = frame_of(*levels[k]);
        std::string sanitised = frame;
        for (char& c : sanitised) c = c == ' ' ? '_' : c;
        root_first[k] = k == 0 ? sanitised : root_first[k - 1] + ";" + sanitised;
        call_stack[k] = k == 0 ? frame + ";" : frame + ";" + call_stack[k - 1];
        names[k] = k == 0 ? std::string(levels[k]->name) : names[k - 1] + ";" + std::string(levels[k]->name);
    }

    SUBCASE("the trace's Call stack lists every frame, innermost first") {
        const std::string path = dir.file("deep.json");
        prof.export_chrome_trace(path);
        std::size_t seen = 0;
        std::size_t level = 0;
        for (const auto& e : stint_test::timed_events(stint_test::read_json(path))) {
            if (e.at("name") != "even" && e.at("name") != "odd") continue;
            INFO("level " << level);
            REQUIRE(level < depth);  // the trace lists events by start: outermost first
            CHECK(e.at("name") == std::string(levels[level]->name));
            CHECK(e.at("args").at("Call stack") == call_stack[level]);
            ++level;
            ++seen;
        }
        CHECK(seen == depth);
    }

    SUBCASE("collapsed stacks: one line per level, root first, by locations and by names") {
        for (const stint::stack_frames frames : {stint::stack_frames::locations, stint::stack_frames::names}) {
            const bool by_names = frames == stint::stack_frames::names;
            INFO("frames: " << (by_names ? "names" : "locations"));
            const std::string path = dir.file(by_names ? "names.stacks" : "locations.stacks");
            prof.export_stacks(path, "self_cpu_time_total", frames);
            std::unordered_map<std::string, int> lines;
            std::istringstream in(stint_test::read_file(path));
            for (std::string line; std::getline(in, line);) ++lines[line];
            std::size_t missing = 0;
            for (std::size_t k = 0; k < depth; ++k) {
                const auto value = static_cast<std::int64_t>(std::floor(levels[k]->self_cpu_time_total()));
                REQUIRE(value > 0);  // every level spun for 2 µs
                const auto found = lines.find((by_names ? names[k] : root_first[k]) + " " + std::to_string(value));
                if (found == lines.end() || found->second == 0) {
                    ++missing;
                } else {
                    --found->second;
                }
            }
            CHECK(missing == 0);
        }
    }
}
