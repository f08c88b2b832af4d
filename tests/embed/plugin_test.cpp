// Plugins loaded with dlopen(RTLD_LOCAL) by this program, which is not linked with -rdynamic: each
// includes only <stint/annotate.hpp> and is built with hidden visibility (plugin.cpp), so it holds
// copies of its own of stint's state, which the profiler links when a session starts.
#include <doctest/doctest.h>

#include <dlfcn.h>
#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <stint/stint.hpp>
#include <stint/recording/registry.hpp>  // the_registry(): a scan and the list of links, driven directly

namespace {

// A plugin module built beside this program (tests/meson.build), loaded RTLD_LOCAL.
struct plugin {
    explicit plugin(const std::string& name) {
        const std::filesystem::path dir = std::filesystem::read_symlink("/proc/self/exe").parent_path();
        const std::string path = (dir / ("libstint_plugin_" + name + ".so")).string();
        handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        REQUIRE_MESSAGE(handle != nullptr, ::dlerror());
        work = reinterpret_cast<std::uint64_t (*)(std::int64_t)>(::dlsym(handle, "plugin_work"));
        hook_recording = reinterpret_cast<bool (*)()>(::dlsym(handle, "plugin_hook_recording"));
        REQUIRE(static_cast<bool>(work));
        REQUIRE(static_cast<bool>(hook_recording));
    }
    void* handle = nullptr;  // never closed: a linked plugin stays loaded anyway
    std::uint64_t (*work)(std::int64_t) = nullptr;
    bool (*hook_recording)() = nullptr;
};

using profiled = stint::config<stint::record_shapes>;

std::vector<stint::event> named(const stint::event_list& events, std::string_view name) {
    std::vector<stint::event> found;
    for (const stint::event& e : events) {
        if (e.name == name) found.push_back(e);
    }
    return found;
}

// The plugin's op, nested in its scope under the program's `outer` scope, with its shapes.
void check_plugin_op(const stint::event_list& events, const stint::event& outer, std::int64_t rows) {
    for (const stint::event& op : named(events, "plugin::matmul")) {
        const std::optional<stint::event> work = events.parent(op);
        REQUIRE(work.has_value());
        if (events.parent(*work) != outer) continue;
        CHECK(work->name == "plugin::work");
        CHECK(op.kind == stint::event_kind::cpu_op);
        const stint::event_args* args = events.args(op);
        REQUIRE(args != nullptr);
        CHECK(args->input_dims == std::vector<std::vector<std::int64_t>>{{rows, 3}, {3, 3}});
        return;
    }
    FAIL("no plugin::matmul under " << outer.name);
}

}  // namespace

TEST_CASE("a plugin loaded RTLD_LOCAL before the profiler starts records into its session, hooks and all") {
    plugin p("before");
    stint::profiler<profiled> prof;
    CHECK_FALSE(p.hook_recording());
    prof.start();
    CHECK(p.hook_recording());  // the plugin's own hook table was told
    std::uint64_t id = 0;
    const std::uint64_t program_id_before = stint::new_flow_id();
    {
        STINT_SCOPE("program::before");
        id = p.work(4);
    }
    const std::uint64_t program_id_after = stint::new_flow_id();
    prof.stop();
    CHECK_FALSE(p.hook_recording());
    const stint::event_list& events = prof.events();
    const auto outer = named(events, "program::before");
    REQUIRE(outer.size() == 1);
    check_plugin_op(events, outer[0], 4);
    // Flow ids never collide with the program's: a block of its own, or the program's counter itself (gcc's
    // unique symbols may bind the plugin's to it).
    CHECK(((id >> 48) != 0 || (program_id_before < id && id < program_id_after)));
    p.work(5);  // stopped: nothing records
    prof.start();
    prof.stop();
    CHECK(named(prof.events(), "plugin::work").empty());
}

TEST_CASE("a plugin loaded RTLD_LOCAL after the profiler stopped records into its next session") {
    stint::profiler<profiled> prof;
    prof.start();
    prof.stop();
    plugin p("after");
    p.work(6);  // no session: nothing
    prof.start();
    {
        STINT_SCOPE("program::after");
        p.work(7);
    }
    prof.stop();
    const stint::event_list& events = prof.events();
    const auto outer = named(events, "program::after");
    REQUIRE(outer.size() == 1);
    CHECK(named(events, "plugin::work").size() == 1);
    check_plugin_op(events, outer[0], 7);
}

TEST_CASE("two plugins loaded RTLD_LOCAL both record into the session") {
    plugin a("two_a");
    plugin b("two_b");
    stint::profiler<profiled> prof;
    prof.start();
    {
        STINT_SCOPE("program::a");
        a.work(2);
    }
    {
        STINT_SCOPE("program::b");
        b.work(3);
    }
    prof.stop();
    const stint::event_list& events = prof.events();
    const auto in_a = named(events, "program::a");
    const auto in_b = named(events, "program::b");
    REQUIRE(in_a.size() == 1);
    REQUIRE(in_b.size() == 1);
    CHECK(named(events, "plugin::matmul").size() == 2);
    check_plugin_op(events, in_a[0], 2);
    check_plugin_op(events, in_b[0], 3);
}

TEST_CASE("a plugin loaded RTLD_LOCAL while a session records records in it, or says so and records in the next") {
    std::vector<std::string> warnings;
    auto previous = stint::set_warning_handler([&](std::string_view text) { warnings.emplace_back(text); });
    stint::profiler<profiled> prof;
    prof.start();
    plugin p("during");
    p.work(8);
    prof.stop();
    stint::set_warning_handler(std::move(previous));
    // Its copies were not linked when the session began, unless the loader bound them to copies that were
    // (gcc's unique symbols, shared with the plugins loaded earlier): either it recorded, or it says so.
    const bool recorded = named(prof.events(), "plugin::work").size() == 1;
    if (recorded) {
        CHECK(warnings.empty());
    } else {
        REQUIRE(warnings.size() == 1);
        CHECK(warnings[0].find("libstint_plugin_during.so") != std::string::npos);
        CHECK(warnings[0].find("its events start with the next session") != std::string::npos);
    }
    prof.start();
    p.work(9);
    prof.stop();
    CHECK(named(prof.events(), "plugin::work").size() == 1);
}

TEST_CASE("a child after fork profiles a linked plugin") {
    plugin p("fork");
    stint::profiler<profiled> prof;
    prof.start();  // links it
    prof.stop();
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // The child: its flags start clear (no session), and its own profiler links them again.
        stint::profiler<profiled> in_child;
        p.work(1);
        in_child.start();
        {
            STINT_SCOPE("program::child");
            p.work(2);
        }
        in_child.stop();
        const auto outer = named(in_child.events(), "program::child");
        const bool ok = outer.size() == 1 && named(in_child.events(), "plugin::work").size() == 1;
        std::_Exit(ok ? 0 : 1);
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
}

TEST_CASE("the list of linked objects stays free while a scan for new ones waits for the loader") {
    // A thread inside dl_iterate_phdr holds the loader's lock, as a library's static initializer does
    // inside dlopen, and a scan (a session's start) waits for that lock. What takes the list of links
    // under the registry's lock (a start, a stop, a fork) must not wait for the scan: the thread holding
    // the loader's lock may be waiting for the registry's (naming its thread).
    struct held {
        std::thread scan;
        std::thread reader;
        std::atomic<bool> read{false};
        bool read_while_held = false;
    } state;
    (void)stint::detail::the_registry();  // made before the loader's lock is held
    ::dl_iterate_phdr(
        [](dl_phdr_info*, std::size_t, void* data) -> int {
            auto& s = *static_cast<held*>(data);
            s.scan = std::thread([] { (void)stint::detail::the_registry().link_objects_loaded_since(); });
            // Time for the scan to reach the loader's lock (with the fault, holding the list's lock).
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            s.reader = std::thread([&s] {
                (void)stint::detail::the_registry().linked_objects();
                s.read.store(true);
            });
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (!s.read.load() && std::chrono::steady_clock::now() < deadline) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
            s.read_while_held = s.read.load();
            return 1;  // the loader's lock is let go: the scan, and a reader it held, go on
        },
        &state);
    state.scan.join();
    state.reader.join();
    CHECK(state.read_while_held);
}
