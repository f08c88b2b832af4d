// Faults at the export: unwritable and missing directories, a full disk, special files, links, long
// names. Each fault gives a clear error naming the path and the OS reason, leaves nothing partial
// under the final name and no temporary in the directory, keeps the previous file byte for byte,
// and leaves the profiler able to export the same trace again.
//
// Root ignores permission bits, so the refusals that rest on them run in a forked child that drops
// to the unprivileged user "nobody" (uid/gid 65534) when the suite runs as root, and what root
// itself gets (the write goes ahead, as open() would let it) is asserted beside them.

#include <doctest/doctest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../child_process.hpp"
#include <stint/export/output_file.hpp>
#include "../test_util.hpp"
#include "size.hpp"

namespace {

namespace fs = std::filesystem;
using stint::detail::output_file;
using stack_profiler = stint::profiler<stint::config<stint::with_stack<>>>;

constexpr uid_t nobody = 65534;

bool is_root() { return ::geteuid() == 0; }

using stint_test::spin_for;

// A fresh directory that "nobody" may enter (so a child dropped to it reaches what is inside).
struct temp_dir : stint_test::temp_dir {
    temp_dir() : stint_test::temp_dir(others::may_enter) {}
};
using stint_test::entries;

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
    REQUIRE(out.good());
}

using stint_test::write_error_text;

// A directory the child may write in, whoever it runs as.
std::string child_dir(const temp_dir& dir, const std::string& name) {
    const std::string path = dir / name;
    fs::create_directory(path);
    if (is_root()) REQUIRE(::chown(path.c_str(), nobody, nobody) == 0);
    return path;
}

// Runs `body` in a forked child (stint_test::in_child), as "nobody" when the suite runs as root.
std::string in_child(const std::function<std::string()>& body, bool unprivileged = false) {
    return stint_test::in_child([&]() -> std::string {
        if (unprivileged && is_root() && (::setgid(nobody) != 0 || ::setuid(nobody) != 0)) {
            return "cannot drop privileges";
        }
        return body();
    });
}

// A stopped session with `scopes` outer/inner pairs, and what its exports hold: exported once to
// a good path before any fault, read back and checked, so that a later export can be compared byte
// for byte.
struct recorded_session {
    stack_profiler prof;
    int scopes;
    pid_t recorded_pid = ::getpid();
    std::string trace;   // export_chrome_trace, plain
    std::string stacks;  // export_stacks with stack_frames::names

    explicit recorded_session(int scope_count) : scopes(scope_count) {
        prof.start();
        for (int i = 0; i < scopes; ++i) {
            STINT_SCOPE("outer");
            spin_for(std::chrono::microseconds(2));
            STINT_SCOPE("inner");
            spin_for(std::chrono::microseconds(2));
        }
        prof.stop();
        REQUIRE(prof.stats().dropped == 0);
        temp_dir dir;
        prof.export_chrome_trace(dir / "trace.json");
        prof.export_stacks(dir / "trace.stacks", "self_cpu_time_total", stint::stack_frames::names);
        trace = stint_test::read_file(dir / "trace.json");
        stacks = stint_test::read_file(dir / "trace.stacks");
        check_trace(trace);
        // One row per scope (each spins 2 us of self time), beside stint's own overhead rows.
        std::size_t rows = 0;
        std::istringstream lines(stacks);
        for (std::string line; std::getline(lines, line);) {
            const std::string path = line.substr(0, line.rfind(' '));
            rows += path == "outer" || path == "outer;inner" ? 1 : 0;
        }
        REQUIRE(rows == 2 * static_cast<std::size_t>(scopes));
    }

    void check_trace(const std::string& text) const {
        const auto events = stint_test::timed_events(nlohmann::json::parse(text));
        const auto named = [&](const char* name) {
            return std::count_if(events.begin(), events.end(), [&](const auto& e) { return e.at("name") == name; });
        };
        REQUIRE(named("outer") == scopes);
        REQUIRE(named("inner") == scopes);
    }

    // A trace names the exporting process ("pid", and its "sort_index"): one exported in a forked
    // child, with the recording process's pid.
    std::string as_recorded(std::string text) const {
        for (const std::string key : {"\"pid\": ", "\"sort_index\": "}) {
            const std::string now = key + std::to_string(::getpid());
            const std::string then = key + std::to_string(recorded_pid);
            for (std::size_t at = 0; (at = text.find(now, at)) != std::string::npos; at += then.size()) {
                text.replace(at, now.size(), then);
            }
        }
        return text;
    }

    // Exports both forms, plain and gzip, into `dir` and checks every byte; "" when all is well,
    // so that a child can report it.
    std::string export_again(const std::string& dir) const {
        prof.export_chrome_trace(dir + "/again.json");
        prof.export_chrome_trace(dir + "/again.json.gz");
        prof.export_stacks(dir + "/again.stacks", "self_cpu_time_total", stint::stack_frames::names);
        if (as_recorded(stint_test::read_file(dir + "/again.json")) != trace) return "the trace differs";
        if (as_recorded(stint_test::read_gzip(dir + "/again.json.gz")) != trace) return "the gzip trace differs";
        if (stint_test::read_file(dir + "/again.stacks") != stacks) return "the stacks differ";
        for (const char* name : {"/again.json", "/again.json.gz", "/again.stacks"}) fs::remove(dir + name);
        return "";
    }
};

// What a failed export must leave: the previous bytes (or no file), and nothing else.
std::string left_as_it_was(const fs::path& dir, const std::vector<std::string>& names_before,
                           const std::string& path, const std::string* previous) {
    if (previous != nullptr && stint_test::read_file(path) != *previous) return "the previous file changed";
    if (previous == nullptr && fs::exists(fs::symlink_status(path))) return "a file appeared at the path";
    const std::vector<std::string> now = entries(dir);
    if (now != names_before) return "the directory holds " + std::to_string(now.size()) + " entries";
    return "";
}

// Calls `export_to`, which must throw std::system_error `code` with the exact text for `reason`.
template <class Export>
std::string expect_os_error(Export export_to, const std::string& path, std::errc code, const std::string& reason) {
    try {
        export_to(path);
        return "no exception for " + path;
    } catch (const std::system_error& e) {
        if (e.code() != code) return "wrong code: " + e.code().message();
        if (e.what() != write_error_text(path, reason)) return std::string("wrong text: ") + e.what();
    }
    return "";
}

// The two exports a user calls, each a fault target.
std::vector<std::function<void(const std::string&)>> exports_of(const recorded_session& s) {
    return {[&](const std::string& p) { s.prof.export_chrome_trace(p); },
            [&](const std::string& p) { s.prof.export_stacks(p, "self_cpu_time_total", stint::stack_frames::names); }};
}

}  // namespace

TEST_CASE("an unwritable directory is refused with the OS reason and the session exports afterwards") {
    const recorded_session session(20);
    temp_dir dir;
    const std::string ro = child_dir(dir, "ro");
    const std::string good = child_dir(dir, "good");
    const std::string previous = "previous trace\n";
    for (const std::string name : {"trace.json", "trace.json.gz", "new.json", "new.stacks"}) {
        const std::string path = ro + "/" + name;
        if (!name.starts_with("new")) write_bytes(path, previous);
    }
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                            fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
    const std::vector<std::string> before = entries(ro);
    int faults = 0;
    const std::string result = in_child(
        [&]() -> std::string {
            for (const std::string name : {"trace.json", "trace.json.gz", "new.json", "new.stacks"}) {
                const std::string path = ro + "/" + name;
                const auto export_to = exports_of(session)[name.ends_with(".stacks") ? 1 : 0];
                std::string problem =
                    expect_os_error(export_to, path, std::errc::permission_denied, "Permission denied");
                if (problem.empty()) {
                    problem = left_as_it_was(ro, before, path, name.starts_with("new") ? nullptr : &previous);
                }
                if (!problem.empty()) return name + ": " + problem;
                ++faults;
            }
            return session.export_again(good) + "faults " + std::to_string(faults);
        },
        true);
    CHECK(result == "faults 4");
    if (is_root()) {
        // Root may create files in a 0555 directory, so export goes ahead as open() would.
        session.prof.export_chrome_trace(ro + "/trace.json");
        CHECK(stint_test::read_file(ro + "/trace.json") == session.trace);
    }
}

TEST_CASE("a missing parent directory is reported with the path and nothing is created") {
    const recorded_session session(20);
    temp_dir dir;
    for (const std::string name : {"missing/trace.json", "missing/trace.json.gz", "missing/deeper/t.stacks"}) {
        CAPTURE(name);
        const std::string path = dir / name;
        const auto export_to = exports_of(session)[name.ends_with(".stacks") ? 1 : 0];
        CHECK(expect_os_error(export_to, path, std::errc::no_such_file_or_directory, "No such file or directory") ==
              "");
        CHECK(entries(dir.path()).empty());
    }
    CHECK(session.export_again(dir / "") == "");
    CHECK(entries(dir.path()).empty());
}

TEST_CASE("a full disk fails the write with EFBIG, keeps the previous file and removes the temporary") {
    // RLIMIT_FSIZE stands in for a full disk: a write past the limit fails with EFBIG (SIGXFSZ
    // ignored). The limit is process-wide, so it is set, and restored, in a child.
    const recorded_session session(stint_test::sized(5000, 2000));
    REQUIRE(session.trace.size() > 64 * 1024);
    temp_dir dir;
    const std::string previous = "previous trace, well under the limit\n";
    const std::string result = in_child([&]() -> std::string {
        std::signal(SIGXFSZ, SIG_IGN);
        rlimit saved{};
        if (::getrlimit(RLIMIT_FSIZE, &saved) != 0) return "getrlimit failed";
        const rlimit small{4096, saved.rlim_max};
        if (::setrlimit(RLIMIT_FSIZE, &small) != 0) return "setrlimit failed";
        int faults = 0;
        for (const std::string name : {"trace.json", "trace.json.gz", "trace.stacks", "new.json.gz"}) {
            const std::string path = dir / name;
            if (!name.starts_with("new")) write_bytes(path, previous);
            const std::vector<std::string> before = entries(dir.path());
            const auto export_to = exports_of(session)[name.ends_with(".stacks") ? 1 : 0];
            std::string problem = expect_os_error(export_to, path, std::errc::file_too_large, "File too large");
            if (problem.empty()) {
                problem = left_as_it_was(dir.path(), before, path, name.starts_with("new") ? nullptr : &previous);
            }
            if (!problem.empty()) return name + ": " + problem;
            ++faults;
        }
        if (::setrlimit(RLIMIT_FSIZE, &saved) != 0) return "cannot restore the limit";
        const std::string good = dir / "good";
        fs::create_directory(good);
        return session.export_again(good) + "faults " + std::to_string(faults);
    });
    CHECK(result == "faults 4");
    CHECK(entries(dir.path()) == std::vector<std::string>{"good", "trace.json", "trace.json.gz", "trace.stacks"});
}

TEST_CASE("a character device is written through and stays the device") {
    // As root the test writes to its own node of /dev/null's device (1, 3), so that a regression
    // replaces that node and not the system's /dev/null.
    const recorded_session session(20);
    temp_dir dir;
    std::string null = "/dev/null";
    if (is_root()) {
        null = dir / "null";
        REQUIRE(::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0);
    }
    struct stat before {};
    REQUIRE(::stat(null.c_str(), &before) == 0);
    REQUIRE(S_ISCHR(before.st_mode));
    session.prof.export_chrome_trace(null);
    session.prof.export_stacks(null, "self_cpu_time_total", stint::stack_frames::names);
    {
        output_file out(null);
        out.write("through");
        out.commit();
    }
    struct stat after {};
    REQUIRE(::lstat(null.c_str(), &after) == 0);
    CHECK(S_ISCHR(after.st_mode));
    CHECK(after.st_ino == before.st_ino);
    CHECK(after.st_rdev == before.st_rdev);
    CHECK(entries(dir.path()) == (is_root() ? std::vector<std::string>{"null"} : std::vector<std::string>{}));
    CHECK(session.export_again(dir / "") == "");
}

TEST_CASE("a FIFO is written through: its reader gets the whole trace and it stays a FIFO") {
    const recorded_session session(stint_test::sized(5000, 2000));
    temp_dir dir;
    for (const std::string name : {"trace.fifo", "trace.fifo.gz", "trace.stacks.fifo"}) {
        CAPTURE(name);
        const std::string path = dir / name;
        REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
        std::string received;
        // The export's open() blocks until this reader opens the FIFO, as a plain open() would.
        std::thread reader([&] {
            const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) return;
            char chunk[65536];
            for (;;) {
                const ssize_t n = ::read(fd, chunk, sizeof chunk);
                if (n > 0) {
                    received.append(chunk, static_cast<std::size_t>(n));
                } else if (n == 0 || errno != EINTR) {
                    break;
                }
            }
            ::close(fd);
        });
        try {
            if (name.starts_with("trace.stacks")) {
                session.prof.export_stacks(path, "self_cpu_time_total", stint::stack_frames::names);
            } else {
                session.prof.export_chrome_trace(path);
            }
        } catch (...) {
            ::close(::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));  // release the reader
            reader.join();
            throw;
        }
        reader.join();
        if (name.ends_with(".gz")) {
            write_bytes(dir / "received.gz", received);
            received = stint_test::read_gzip(dir / "received.gz");
            fs::remove(dir / "received.gz");
        }
        CHECK(received == (name.starts_with("trace.stacks") ? session.stacks : session.trace));
        struct stat info {};
        REQUIRE(::lstat(path.c_str(), &info) == 0);
        CHECK(S_ISFIFO(info.st_mode));
    }
    CHECK(entries(dir.path()) == std::vector<std::string>{"trace.fifo", "trace.fifo.gz", "trace.stacks.fifo"});
}

TEST_CASE("/dev/fd/N and /proc/self/fd/N write to the open file, a pipe or a regular file, in place") {
    // A link in /proc names an open file, not a directory entry: its text is no name to rename over.
    const recorded_session session(20);
    temp_dir dir;
    const std::string held = dir / "held.json";
    write_bytes(held, "previous, longer than nothing");
    const int file = ::open(held.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(file >= 0);
    struct stat before {};
    REQUIRE(::fstat(file, &before) == 0);
    session.prof.export_chrome_trace("/proc/self/fd/" + std::to_string(file));
    struct stat after {};
    REQUIRE(::stat(held.c_str(), &after) == 0);
    CHECK(after.st_ino == before.st_ino);
    CHECK(stint_test::read_file(held) == session.trace);
    ::close(file);
    CHECK(entries(dir.path()) == std::vector<std::string>{"held.json"});

    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    std::string received;
    std::thread reader([&] {
        char chunk[65536];
        for (;;) {
            const ssize_t n = ::read(pipe_fds[0], chunk, sizeof chunk);
            if (n > 0) {
                received.append(chunk, static_cast<std::size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                break;
            }
        }
    });
    const std::string dev_fd = fs::exists("/dev/fd") ? "/dev/fd/" : "/proc/self/fd/";
    session.prof.export_stacks(dev_fd + std::to_string(pipe_fds[1]), "self_cpu_time_total",
                               stint::stack_frames::names);
    ::close(pipe_fds[1]);
    reader.join();
    ::close(pipe_fds[0]);
    CHECK(received == session.stacks);
    CHECK(entries(dir.path()) == std::vector<std::string>{"held.json"});
}

TEST_CASE("a FIFO whose reader leaves fails with EPIPE instead of ending the program with SIGPIPE") {
    // The trace is larger than a pipe's 64 KiB, so the export is still writing when the reader has
    // closed its end, or starts writing after: either way the next write fails with EPIPE.
    const recorded_session session(stint_test::sized(5000, 2000));
    REQUIRE(session.trace.size() > 256 * 1024);
    temp_dir dir;
    const std::string path = dir / "trace.fifo";
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    std::thread reader([&] {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return;
        char chunk[1000];
        [[maybe_unused]] const ssize_t some = ::read(fd, chunk, sizeof chunk);
        ::close(fd);
    });
    CHECK(expect_os_error([&](const std::string& p) { session.prof.export_chrome_trace(p); }, path,
                          std::errc::broken_pipe, "Broken pipe") == "");
    reader.join();
    sigset_t pending;
    REQUIRE(::sigpending(&pending) == 0);
    CHECK(sigismember(&pending, SIGPIPE) == 0);
    struct stat info {};
    REQUIRE(::lstat(path.c_str(), &info) == 0);
    CHECK(S_ISFIFO(info.st_mode));
    CHECK(session.export_again(dir / "") == "");
}

TEST_CASE("a symbolic link, or a chain of them, is followed: the target is replaced and the links stay") {
    const recorded_session session(20);
    temp_dir dir;
    fs::create_directory(dir / "sub");
    fs::create_directory(dir / "other");
    const std::string target = dir / "other/real.json";
    const std::string stacks_target = dir / "other/real.stacks";
    const std::string gzip_target = dir / "other/real.json.gz";
    // a -> b (relative, same directory) -> sub/c (relative) -> ../other/real.json (relative to sub)
    fs::create_symlink("b", dir / "a");
    fs::create_symlink("sub/c", dir / "b");
    fs::create_symlink("../other/real.json", dir / "sub/c");
    fs::create_symlink(stacks_target, dir / "absolute.stacks");
    fs::create_symlink("../other/real.json.gz", dir / "sub/link.gz");
    for (const std::string& file : {target, stacks_target, gzip_target}) {
        write_bytes(file, "previous");
        fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
    }

    session.prof.export_chrome_trace(dir / "a");
    session.prof.export_stacks(dir / "absolute.stacks", "self_cpu_time_total", stint::stack_frames::names);
    session.prof.export_chrome_trace(dir / "sub/link.gz");

    CHECK(stint_test::read_file(target) == session.trace);
    CHECK(stint_test::read_file(stacks_target) == session.stacks);
    CHECK(stint_test::read_gzip(gzip_target) == session.trace);
    CHECK(fs::read_symlink(dir / "a") == "b");
    CHECK(fs::read_symlink(dir / "b") == "sub/c");
    CHECK(fs::read_symlink(dir / "sub/c") == "../other/real.json");
    CHECK(fs::read_symlink(dir / "absolute.stacks") == stacks_target);
    CHECK(fs::read_symlink(dir / "sub/link.gz") == "../other/real.json.gz");
    for (const std::string& file : {target, stacks_target, gzip_target}) {
        CHECK(fs::status(file).permissions() ==
              (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
    }
    CHECK(entries(dir.path()) == std::vector<std::string>{"a", "absolute.stacks", "b", "other", "sub"});
    CHECK(entries(dir / "sub") == std::vector<std::string>{"c", "link.gz"});
    CHECK(entries(dir / "other") == std::vector<std::string>{"real.json", "real.json.gz", "real.stacks"});

    SUBCASE("a loop of links is reported as one") {
        fs::create_symlink("loop2", dir / "loop1");
        fs::create_symlink("loop1", dir / "loop2");
        CHECK(expect_os_error([&](const std::string& p) { session.prof.export_chrome_trace(p); }, dir / "loop1",
                              std::errc::too_many_symbolic_link_levels, "Too many levels of symbolic links") == "");
        CHECK(fs::is_symlink(dir / "loop1"));
        CHECK(entries(dir.path()).size() == 7);
    }
}

TEST_CASE("a dangling symbolic link gets its target created, as open(O_CREAT) would") {
    const recorded_session session(20);
    temp_dir dir;
    fs::create_symlink("new.json", dir / "link.json");
    session.prof.export_chrome_trace(dir / "link.json");
    CHECK(fs::read_symlink(dir / "link.json") == "new.json");
    CHECK(stint_test::read_file(dir / "new.json") == session.trace);
    CHECK(entries(dir.path()) == std::vector<std::string>{"link.json", "new.json"});

    SUBCASE("and a target in a missing directory is reported under the link's path") {
        fs::create_symlink("missing/new.json", dir / "nowhere.json");
        CHECK(expect_os_error([&](const std::string& p) { session.prof.export_chrome_trace(p); },
                              dir / "nowhere.json", std::errc::no_such_file_or_directory,
                              "No such file or directory") == "");
        CHECK(entries(dir.path()) == std::vector<std::string>{"link.json", "new.json", "nowhere.json"});
        CHECK(session.export_again(dir / "") == "");
    }
}

TEST_CASE("a read-only file is refused to a caller who could not open it for writing") {
    const recorded_session session(20);
    temp_dir dir;
    // The directory is the caller's to write in, so only the file's own permission can refuse: a
    // rename alone would have replaced it.
    const std::string open_dir = child_dir(dir, "open");
    const std::string previous = "someone else's trace\n";
    const std::string mine = open_dir + "/mine.json";
    const std::string theirs = open_dir + "/theirs.json.gz";
    const std::string stacks = open_dir + "/theirs.stacks";
    write_bytes(mine, previous);
    write_bytes(theirs, previous);
    write_bytes(stacks, previous);
    fs::permissions(mine, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    if (is_root()) REQUIRE(::chown(mine.c_str(), nobody, nobody) == 0);
    // Another user's files (root's), readable by all, writable only by their owner.
    for (const std::string& file : {theirs, stacks}) {
        fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::others_read);
        if (!is_root()) fs::permissions(file, fs::perms::owner_write, fs::perm_options::remove);
    }
    const std::vector<std::string> before = entries(open_dir);
    const std::string result = in_child(
        [&]() -> std::string {
            int faults = 0;
            for (const std::string& path : {mine, theirs, stacks}) {
                const auto export_to = exports_of(session)[path.ends_with(".stacks") ? 1 : 0];
                std::string problem =
                    expect_os_error(export_to, path, std::errc::permission_denied, "Permission denied");
                if (problem.empty()) problem = left_as_it_was(open_dir, before, path, &previous);
                if (!problem.empty()) return path + ": " + problem;
                ++faults;
            }
            return session.export_again(open_dir) + "faults " + std::to_string(faults);
        },
        true);
    CHECK(result == "faults 3");
    CHECK(entries(open_dir) == before);
    if (is_root()) {
        // Root may open any of them for writing, so export replaces them, keeping owner and mode.
        session.prof.export_chrome_trace(mine);
        CHECK(stint_test::read_file(mine) == session.trace);
        struct stat info {};
        REQUIRE(::stat(mine.c_str(), &info) == 0);
        CHECK((info.st_mode & 07777) == 0444);
        CHECK(info.st_uid == nobody);
        CHECK(info.st_gid == nobody);
        CHECK(entries(open_dir) == before);
    }
}

TEST_CASE("a replaced file keeps its permission bits") {
    const recorded_session session(20);
    temp_dir dir;
    const mode_t saved = ::umask(022);
    for (const mode_t mode : {0600, 0640, 0664, 0604}) {
        CAPTURE(mode);
        const std::string path = dir / "trace.json";
        write_bytes(path, "previous");
        REQUIRE(::chmod(path.c_str(), mode) == 0);
        session.prof.export_chrome_trace(path);
        struct stat info {};
        REQUIRE(::stat(path.c_str(), &info) == 0);
        CHECK((info.st_mode & 07777) == mode);
        CHECK(stint_test::read_file(path) == session.trace);
    }
    ::umask(saved);
}

TEST_CASE("file names of 245 and 255 bytes are written; 256 bytes is reported as too long") {
    const recorded_session session(20);
    temp_dir dir;
    const std::string name245 = std::string(240, 'a') + ".json";
    const std::string name255 = std::string(247, 'b') + ".json.gz";
    const std::string stacks255 = std::string(248, 'c') + ".stacks";
    REQUIRE(name245.size() == 245);
    REQUIRE(name255.size() == 255);
    REQUIRE(stacks255.size() == 255);
    session.prof.export_chrome_trace(dir / name245);
    session.prof.export_chrome_trace(dir / name255);
    session.prof.export_stacks(dir / stacks255, "self_cpu_time_total", stint::stack_frames::names);
    CHECK(stint_test::read_file(dir / name245) == session.trace);
    CHECK(stint_test::read_gzip(dir / name255) == session.trace);
    CHECK(stint_test::read_file(dir / stacks255) == session.stacks);
    // Replacing works as well: the temporary's name does not grow with the final name.
    session.prof.export_chrome_trace(dir / name255);
    CHECK(stint_test::read_gzip(dir / name255) == session.trace);
    CHECK(entries(dir.path()) == std::vector<std::string>{name245, name255, stacks255});

    const std::string name256 = std::string(251, 'd') + ".json";
    const std::string gzip256 = std::string(248, 'e') + ".json.gz";
    for (const std::string& name : {name256, gzip256}) {
        REQUIRE(name.size() == 256);
        CHECK(expect_os_error([&](const std::string& p) { session.prof.export_chrome_trace(p); }, dir / name,
                              std::errc::filename_too_long, "File name too long") == "");
    }
    CHECK(entries(dir.path()) == std::vector<std::string>{name245, name255, stacks255});
    CHECK(session.export_again(dir / "") == "");
}

TEST_CASE("a directory, a block device and a socket are refused before anything is written") {
    const recorded_session session(20);
    temp_dir dir;
    fs::create_directory(dir / "d");
    CHECK(expect_os_error([&](const std::string& p) { session.prof.export_chrome_trace(p); }, dir / "d",
                          std::errc::is_a_directory, "Is a directory") == "");
    CHECK(expect_os_error([&](const std::string& p) { session.prof.export_chrome_trace(p); }, dir / "new/",
                          std::errc::is_a_directory, "Is a directory") == "");

    const std::string socket_path = dir / "sock";
    const int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(sock >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    REQUIRE(socket_path.size() < sizeof address.sun_path);
    std::copy(socket_path.begin(), socket_path.end(), address.sun_path);
    REQUIRE(::bind(sock, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    CHECK_THROWS_WITH_AS(session.prof.export_chrome_trace(socket_path),
                         (write_error_text(socket_path, "it is a socket") +
                          "; a trace goes to a file, a character device or a FIFO").c_str(),
                         std::invalid_argument);
    ::close(sock);

    // A block device: root makes its own node (the loop device 7, 0; never opened); otherwise the
    // first one in /dev, which lstat reads without permission to open it.
    std::string block;
    if (is_root()) {
        block = dir / "block";
        REQUIRE(::mknod(block.c_str(), S_IFBLK | 0600, makedev(7, 0)) == 0);
    } else {
        std::error_code ignored;
        for (const auto& entry : fs::directory_iterator("/dev", ignored)) {
            if (entry.is_block_file(ignored)) {
                block = entry.path().string();
                break;
            }
        }
    }
    if (block.empty()) {
        MESSAGE("no block device to try: /dev has none and the suite is not root");
    } else {
        struct stat before {};
        REQUIRE(::lstat(block.c_str(), &before) == 0);
        CHECK_THROWS_WITH_AS(session.prof.export_chrome_trace(block),
                             (write_error_text(block, "it is a block device") +
                              "; a trace goes to a file, a character device or a FIFO").c_str(),
                             std::invalid_argument);
        struct stat after {};
        REQUIRE(::lstat(block.c_str(), &after) == 0);
        CHECK(S_ISBLK(after.st_mode));
        CHECK(after.st_rdev == before.st_rdev);
    }
    CHECK(entries(dir.path()) == (is_root() ? std::vector<std::string>{"block", "d", "sock"}
                                          : std::vector<std::string>{"d", "sock"}));
    CHECK(entries(dir / "d").empty());
    CHECK(session.export_again(dir / "") == "");
}
