// stint::emit_itt against an ITT collector: the fake collector next to this test (collector.cpp), which
// stint loads from INTEL_LIBITTNOTIFY64 at its first push, records every call. Task names and nesting
// must be stint's own events'; each name's string handle is made once. Without a collector, and with one
// that cannot be loaded, the same program runs in a child process of this test (the collector is loaded
// once per process).

#include <dlfcn.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

// Set before anything in this process pushes a task; a child run by the test sets its own.
static const bool in_child = std::getenv("STINT_TEST_ITT_CHILD") != nullptr;
static const bool collector_set = in_child || ::setenv("INTEL_LIBITTNOTIFY64", STINT_TEST_ITT_COLLECTOR, 1) == 0;
// The three "child: ..." cases are skipped here and run in the children that the case "without a
// collector, or with one that cannot be used, ..." starts, each with its own INTEL_LIBITTNOTIFY64 (the
// collector is chosen once per process). tools/run_tests.py prints this reason beside the skip count.
static const bool skip_reason_said =
    in_child || std::printf("skipped: the 3 \"child: ...\" cases run in the child processes that \"without a "
                            "collector, or with one that cannot be used, recording goes on\" starts, one per "
                            "INTEL_LIBITTNOTIFY64 (a process loads its collector once)\n") > 0;

#include <doctest/doctest.h>

#include <stint/annotations/itt.hpp>
#define STINT_CONFIG ::stint::config<::stint::emit_itt>
#include <stint/stint.hpp>

#include "itt_log.hpp"

namespace {

using mirrored = stint::config<stint::emit_itt>;
using mirrored_shapes = stint::config<stint::emit_itt, stint::record_shapes>;
using stint_test::itt_call;

struct tensor {
    std::vector<std::int64_t> dims;
    const std::vector<std::int64_t>& sizes() const { return dims; }
    const char* dtype() const { return "float"; }
};

stint_test::itt_log& itt_log() {
    void* library = ::dlopen(STINT_TEST_ITT_COLLECTOR, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE_MESSAGE(library != nullptr, "stint did not load the collector");
    using get_log = stint_test::itt_log* (*)();
    auto* get = reinterpret_cast<get_log>(::dlsym(library, "stint_test_itt_log"));
    REQUIRE(reinterpret_cast<void*>(get) != nullptr);
    return *get();
}

std::vector<itt_call> calls_since(std::size_t from) {
    stint_test::itt_log& log = itt_log();
    std::lock_guard lock(log.mutex);
    return {log.calls.begin() + static_cast<std::ptrdiff_t>(from), log.calls.end()};
}

std::size_t calls_now() {
    stint_test::itt_log& log = itt_log();
    std::lock_guard lock(log.mutex);
    return log.calls.size();
}

void workload(const tensor& a, const tensor& b) {
    STINT_SCOPE("outer");
    {
        STINT_SCOPE("inner");
        STINT_OP(mirrored_shapes, "aten::mm", a, b, 3);
    }
    STINT_SCOPE_NAMED(std::string("layer") + std::to_string(2));
    STINT_OP(mirrored, "aten::relu", a);
}

// The pre-order of one thread's stint events: "<name" at a task's begin, ">" at its end.
void pre_order(const stint::event_list& list, const stint::event& e, std::vector<std::string>& out) {
    out.push_back("<" + std::string(e.name));
    for (const stint::event& c : list.children(e)) pre_order(list, c, out);
    out.push_back(">");
}

std::vector<std::string> tasks(const std::vector<itt_call>& calls) {
    std::vector<std::string> out;
    for (const itt_call& c : calls) {
        if (c.kind == itt_call::task_begin) out.push_back("<" + c.name);
        if (c.kind == itt_call::task_end) out.push_back(">");
    }
    return out;
}

// Runs this test binary's case `name` in a child process with INTEL_LIBITTNOTIFY64 = `collector` (unset
// when null) and returns its exit status and output.
std::pair<int, std::string> run_child(const char* name, const char* collector, bool fill_nothing = false) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::dup2(fds[1], 1);
        ::dup2(fds[1], 2);
        ::close(fds[0]);
        ::setenv("STINT_TEST_ITT_CHILD", "1", 1);
        if (fill_nothing) ::setenv("STINT_TEST_ITT_FILL_NOTHING", "1", 1);
        if (collector != nullptr) {
            ::setenv("INTEL_LIBITTNOTIFY64", collector, 1);
        } else {
            ::unsetenv("INTEL_LIBITTNOTIFY64");
        }
        const std::string filter = std::string("--test-case=") + name;
        char* const argv[] = {const_cast<char*>("itt_tests"), const_cast<char*>(filter.c_str()),
                              const_cast<char*>("--no-skip"), nullptr};
        ::execv("/proc/self/exe", argv);
        ::_exit(127);
    }
    ::close(fds[1]);
    std::string out;
    char chunk[4096];
    for (;;) {
        const ssize_t n = ::read(fds[0], chunk, sizeof chunk);
        if (n > 0) {
            out.append(chunk, static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    ::close(fds[0]);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : 128, out};
}

// The same program, in a child whose collector is missing or absent: it records all its events, and
// says at most once that the collector could not be used.
std::string child_program() {
    std::vector<std::string> warnings;
    auto previous = stint::set_warning_handler([&](std::string_view text) { warnings.emplace_back(text); });
    const tensor a{{2, 3}};
    stint::profiler<> prof;
    prof.start();
    for (int i = 0; i < 3; ++i) workload(a, a);
    prof.stop();
    stint::set_warning_handler(std::move(previous));
    std::size_t events = 0;
    for (const stint::event& e : prof.events()) events += e.kind != stint::event_kind::overhead ? 1 : 0;
    CHECK(events == 15);
    CHECK(stint::detail::itt::the_state.load() == stint::detail::itt::state::off);
    CHECK(warnings.size() <= 1);
    return warnings.empty() ? "" : warnings.front();
}

}  // namespace

TEST_CASE("emit_itt mirrors every scope and op as an ITT task in domain PyTorch, nested as stint's events") {
    REQUIRE(collector_set);
    const tensor a{{64, 32}};
    const tensor b{{32, 16}};
    workload(a, b);  // the first push loads the collector
    {
        stint_test::itt_log& log = itt_log();
        std::lock_guard lock(log.mutex);
        CHECK(log.descriptor_ok);
        REQUIRE(log.calls.size() >= 2);
        CHECK(log.calls[0].kind == itt_call::api_init);
        CHECK(log.calls[1].kind == itt_call::domain_create);
        CHECK(log.calls[1].name == "PyTorch");
    }
    const std::size_t from = calls_now();
    stint::profiler<> prof;
    prof.start();
    workload(a, b);
    prof.stop();
    const std::vector<itt_call> calls = calls_since(from);

    std::vector<std::string> expected;
    for (const stint::event& e : prof.events()) {
        if (e.is_top_level()) pre_order(prof.events(), e, expected);
    }
    // The op that captured shapes carries them in its task's name, as torch's message.
    for (std::string& name : expected) {
        if (name == "<aten::mm") name = "<aten::mm, sizes = [[64, 32], [32, 16], []]";
    }
    CHECK(tasks(calls) == expected);
    CHECK(expected.size() == 10);  // outer, inner, aten::mm, layer2, aten::relu: begun and ended
    for (const itt_call& c : calls) {
        CHECK(c.thread == static_cast<std::uint64_t>(pthread_self()));
        if (c.kind == itt_call::task_begin || c.kind == itt_call::task_end) CHECK(c.domain == "PyTorch");
    }
}

TEST_CASE("emit_itt makes one string handle per name, across calls and threads, and one domain") {
    const tensor a{{2, 3}};
    for (int i = 0; i < 3; ++i) workload(a, a);
    std::thread worker([&] {
        for (int i = 0; i < 3; ++i) workload(a, a);
    });
    worker.join();
    std::map<std::string, int> handles;
    int domains = 0;
    for (const itt_call& c : calls_since(0)) {
        if (c.kind == itt_call::string_handle_create) ++handles[c.name];
        if (c.kind == itt_call::domain_create) ++domains;
    }
    CHECK(domains == 1);
    for (const char* name : {"outer", "inner", "aten::mm", "layer2", "aten::relu"}) {
        CHECK_MESSAGE(handles[name] == 1, name);
    }
    for (const auto& entry : handles) CHECK_MESSAGE(entry.second == 1, entry.first);
}

TEST_CASE("emit_itt tasks begin without a session too, on the thread that runs the scope") {
    const tensor a{{2, 3}};
    const std::size_t from = calls_now();
    std::uint64_t worker_thread = 0;
    std::thread worker([&] {
        worker_thread = static_cast<std::uint64_t>(pthread_self());
        workload(a, a);
    });
    worker.join();
    const std::vector<itt_call> calls = calls_since(from);
    for (const itt_call& c : calls) CHECK(c.thread == worker_thread);
    // Without a session no inputs are captured: the op's task has its name alone.
    const std::vector<std::string> expected{"<outer", "<inner", "<aten::mm", ">", ">", "<layer2", "<aten::relu",
                                            ">", ">", ">"};
    CHECK(tasks(calls) == expected);
}

TEST_CASE("a config without emit_itt begins no ITT task") {
    const std::size_t from = calls_now();
    stint::profiler<> prof;
    prof.start();
    {
        STINT_OP(stint::config<>, "aten::add", 1);
        STINT_OP(stint::config<stint::record_shapes>, "aten::mul", 2);
    }
    prof.stop();
    CHECK(prof.events().size() == 2);
    CHECK(calls_since(from).empty());
}

TEST_CASE("child: no collector" * doctest::skip(!in_child)) { CHECK(child_program().empty()); }

TEST_CASE("child: a collector that cannot be loaded" * doctest::skip(!in_child)) {
    const std::string warning = child_program();
    CHECK(warning.find("emit_itt: cannot use the ITT collector '/nonexistent/libittnotify_collector.so' named by "
                       "INTEL_LIBITTNOTIFY64: ") == 0);
    CHECK(warning.find("; ITT tasks are off, recording goes on") != std::string::npos);
}

TEST_CASE("child: a collector without the four functions" * doctest::skip(!in_child)) {
    const std::string warning = child_program();
    CHECK(warning == std::string("emit_itt: cannot use the ITT collector '") + STINT_TEST_ITT_COLLECTOR +
                         "' named by INTEL_LIBITTNOTIFY64: it does not provide __itt_domain_create, "
                         "__itt_string_handle_create, __itt_task_begin and __itt_task_end; ITT tasks are off, "
                         "recording goes on");
}

TEST_CASE("without a collector, or with one that cannot be used, recording goes on (one warning)") {
    const std::pair<int, std::string> absent = run_child("child: no collector", nullptr);
    CHECK_MESSAGE(absent.first == 0, absent.second);
    CHECK(absent.second.find("1 passed") != std::string::npos);
    const std::pair<int, std::string> bad =
        run_child("child: a collector that cannot be loaded", "/nonexistent/libittnotify_collector.so");
    CHECK_MESSAGE(bad.first == 0, bad.second);
    CHECK(bad.second.find("1 passed") != std::string::npos);
    const std::pair<int, std::string> empty =
        run_child("child: a collector without the four functions", STINT_TEST_ITT_COLLECTOR, true);
    CHECK_MESSAGE(empty.first == 0, empty.second);
    CHECK(empty.second.find("1 passed") != std::string::npos);
}
