#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "stint/stint.hpp"
#include "stint/recording/registry.hpp"
#include "test_util.hpp"

TEST_CASE("a program that leaves main during a session exits cleanly") {
    for (const char* mode : {"return", "exit", "quick_exit", "static"}) {
        CAPTURE(mode);
        const stint_test::program_result run = stint_test::run_exit_program(mode);
        INFO(run.output);
        CHECK(run.status == 0);
        CHECK(run.output.empty());  // not even a warning
    }
}

TEST_CASE("a child after fork inherits no in-flight records, can profile, and does not deadlock") {
    std::atomic<bool> stop{false};
    // A thread hammering the registry's slow paths while the fork happens.
    std::thread noisy([&] {
        while (!stop.load()) {
            std::thread([] { STINT_SCOPE("short-lived"); }).join();
        }
    });
    stint::profiler<> prof;
    prof.start();
    pid_t pid = 0;
    {
        STINT_SCOPE("open across fork");
        pid = fork();
        if (pid == 0) {
            // Child: the parent's session is not ours; a new one records only the child's events.
            int code = 0;
            if (stint::is_recording()) code = 10;
            stint::profiler<> child_prof;
            child_prof.start();
            // A forked child starts no thread of stint's (POSIX allows only async-signal-safe calls
            // until exec): no prefault thread here.
            if (stint::detail::the_registry().prefaulting()) code = 12;
            {
                STINT_SCOPE("child work");
            }
            child_prof.stop();
            if (child_prof.events().size() != 1 || child_prof.events()[0].name != "child work") code = 11;
            prof.stop();  // the parent's profiler in the child: a no-op, never a crash
            _exit(code);
        }
    }
    REQUIRE(pid > 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    stop.store(true);
    noisy.join();
    prof.stop();
    bool found = false;
    for (const auto& e : prof.events()) found = found || e.name == "open across fork";
    CHECK(found);  // the parent's session is intact
}
