#pragma once
// A flight recorder's crash dump (design §7 "Crash dumps"): on SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT
// and from std::terminate, the raw records of every thread and the table of the sites they point to are
// written to a file named in advance, then the previous handler runs. The handler is async-signal-safe:
// everything it uses was allocated at install (the path, a write buffer, the site set); it calls no
// stdio, allocates nothing and takes no lock: open, write, close.
//
// What a dump holds while other threads keep running (they do: a signal stops only its own thread):
// - The ring stands still while it is copied: no thread overwrites or hands over a chunk until the
//   dump is written (a thread that would need one drops its records, counted as drops); appending to a
//   thread's current chunk goes on, and only what was published is copied. A thread caught holding its
//   ring lock for 100 ms (crashed while overwriting a chunk) has its records left out, and said so.
// - It is a snapshot at the crash: the crash's tick is read first, then every thread's open scopes,
//   then the records; records that ended after the crash tick are left out and counted, so every scope
//   drawn ends at or before the crash, and an open scope (drawn ending at the crash) holds its children.
// - Two threads crashing at once write one dump: the second waits (up to 60 s) for the first to finish
//   before its own fault ends the process. A fault inside the handler leaves the file cut short.
// - A forked child does not write: its session ended at the fork (recording/registry.hpp), and the file
//   is the parent's.
// - A thread that overflows its stack runs the handler on an alternate signal stack, made for each thread
//   that records while the dump is installed (recording/signal_stack.hpp), unless it has one already.
// tools/stint_crashdump.cpp (stint-crashdump) and read_crash_dump() (profiler/crash_dump_reader.hpp) turn
// the file into a trace; profiler/crash_dump_format.hpp lays it out.

#include <array>      // std::array
#include <atomic>     // std::atomic
#include <csignal>    // struct sigaction, siginfo_t, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT
#include <cstddef>    // std::size_t, std::byte
#include <cstdint>    // std::int64_t, std::uint8_t, std::uint64_t
#include <exception>  // std::terminate_handler
#include <string>     // std::string
#include <vector>     // std::vector

#include "stint/detail/separate_compilation.hpp"
#include "stint/profiler/crash_dump_format.hpp"
#include "stint/recording/clock.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

/// The process's crash dump writer: at most one installed (one flight recorder records at a time).
class crash_dump {
public:
    static constexpr std::array<int, 5> signals{SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

    /// Installs the handlers, checking now that `path` can be written (a file made there and removed). A
    /// relative path is taken against the working directory now, not at the crash (a daemon may chdir).
    /// Throws std::system_error when it cannot, std::logic_error when another is installed.
    STINT_DECL static void install(const std::string& path, const tick_calibration& calibration);

    /// The signals whose handler is no longer stint's (another crash handler installed over it), and
    /// std::terminate's: one line each, empty when all are stint's. A dump then never runs for them.
    STINT_DECL static std::vector<std::string> overridden();

    /// Puts the previous handlers back where stint's are still installed (a handler installed over
    /// stint's stays, and overridden() named it).
    STINT_DECL static void uninstall() noexcept;

    /// Writes the dump now (the handlers' work), for signal `sig`. Async-signal-safe; once per install.
    /// A second thread that calls it while the first writes waits for the dump to be complete.
    STINT_DECL static void write_now(int sig) noexcept;

    /// The path the dump goes to, made absolute at install (empty when none is installed).
    STINT_DECL static std::string path();

    /// How long a crashing thread waits for another's dump to finish, and for a thread's ring lock.
    static constexpr std::int64_t wait_for_writer_ns = 60'000'000'000;
    static constexpr std::int64_t wait_for_ring_lock_ns = 100'000'000;

private:
    static constexpr std::size_t buffer_bytes = 64 * 1024;
    static constexpr std::size_t site_slots = 1 << 14;  // distinct sites kept; more are written unnamed

    STINT_DECL static crash_dump& instance() noexcept;
    crash_dump() = default;

    STINT_DECL static void on_signal(int sig, siginfo_t* info, void* context);
    STINT_DECL static void on_terminate();

    /// Runs what was there before stint's handler: its function, or its disposition. A fault re-raised by
    /// the kernel (si_code > 0) comes back when the handler returns; a sent signal (raise, abort) is sent again.
    STINT_DECL static void chain(int sig, siginfo_t* info, void* context);

    // --- the writer: fixed buffers only ---
    STINT_DECL void put(const void* data, std::size_t size) noexcept;
    template <class T>
    void put_value(T value) noexcept {
        put(&value, sizeof value);
    }
    STINT_DECL void flush() noexcept;
    /// Notes a site the records point to; false when the set is full (the site is then written unnamed).
    STINT_DECL void note_site(const site* where) noexcept;
    STINT_DECL static crash_site_shape shape_of(const site& where) noexcept;
    STINT_DECL static crash_site_payload payload_of(const site& where) noexcept;
    void put_tag(crash_section tag) noexcept { put_value(tag); }

    STINT_DECL void write_file(int sig) noexcept;
    /// Writes the records of [from, end) that ended by `crash_ticks`, as records sections; counts them.
    STINT_DECL void write_records(const std::byte* from, const std::byte* end, std::uint64_t crash_ticks,
                                  std::uint64_t& written, std::uint64_t& after_crash) noexcept;

    /// writer_: none yet, the tid of the thread writing, or done.
    static constexpr std::uint64_t dump_done = ~std::uint64_t{0};

    std::atomic<bool> installed_{false};
    std::atomic<std::uint64_t> writer_{0};
    std::vector<char> path_;
    std::vector<std::byte> buffer_;
    std::vector<const site*> sites_;
    std::size_t used_ = 0;
    int fd_ = -1;
    std::uint64_t pid_ = 0;
    tick_calibration calibration_;
    std::array<struct sigaction, signals.size()> previous_{};
    std::terminate_handler previous_terminate_ = nullptr;
};

}  // namespace stint::detail

namespace stint {

/// Whether another crash handler was installed over a flight recorder's crash dump (signals or
/// std::terminate): one line per handler replaced, empty when stint's are all in place.
///
///     for (const std::string& line : stint::check_crash_handlers()) std::cerr << line << '\n';
STINT_DECL std::vector<std::string> check_crash_handlers();

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/profiler/impl/crash_dump.ipp"
#endif
