#pragma once
// A flight recorder's crash dump (design §7 "Crash dumps"): on SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT
// and from std::terminate, the raw records of every thread and the table of the sites they point to are
// written to a file named in advance, then the previous handler runs. The handler is async-signal-safe:
// everything it uses was allocated at install (the path, a write buffer, the site set); it takes no lock
// (it reads the chains as they are: a thread caught mid-chunk-change may lose that chunk), calls no
// stdio and allocates nothing: open, write, close. tools/stint-crashdump turns the file into a trace.
//
// File layout (little-endian): "STINTCRASH" u16 version (2); u64 pid, signal, crashing tid, anchor ticks,
// anchor system ns; f64 ns per tick; u64 ticks at the crash; then sections, each a u8 tag: 'T' a thread
// (u64 tid, overwritten, overwritten_until, u32 name length, name, u64 bytes, its records as written),
// 'O' a thread's open scopes (u64 tid, u32 depth, u32 entries, then per entry, outermost first: u64 site
// address, u64 begin ticks, u64 name size, 24 bytes of the name: a name given at run time), 'S' a site (u64 address,
// u8 shape: 0 a span, 1 a point in time, 2 stint's own, 3 no event; u8 payload: 0 none, 1 a runtime name
// first, 2 a point's id then a name, 3 other; u32 name length, name), 'E' the end.

#include <array>      // std::array
#include <atomic>     // std::atomic
#include <csignal>    // struct sigaction, siginfo_t, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT
#include <cstddef>    // std::size_t, std::byte
#include <cstdint>    // std::uint8_t, std::uint64_t
#include <exception>  // std::terminate_handler
#include <string>     // std::string
#include <vector>     // std::vector

#include "stint/detail/separate_compilation.hpp"
#include "stint/recording/clock.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {

/// The process's crash dump writer: at most one installed (one flight recorder records at a time).
class crash_dump {
public:
    static constexpr std::array<int, 5> signals{SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

    /// Installs the handlers, checking now that `path` can be written (a file made there and removed).
    /// Throws std::system_error when it cannot, std::logic_error when another is installed.
    STINT_DECL static void install(const std::string& path, const tick_calibration& calibration);

    /// The signals whose handler is no longer stint's (another crash handler installed over it), and
    /// std::terminate's: one line each, empty when all are stint's. A dump then never runs for them.
    STINT_DECL static std::vector<std::string> overridden();

    /// Puts the previous handlers back where stint's are still installed (a handler installed over
    /// stint's stays, and overridden() named it).
    STINT_DECL static void uninstall() noexcept;

    /// Writes the dump now (the handlers' work), for signal `sig`. Async-signal-safe; once per install.
    STINT_DECL static void write_now(int sig) noexcept;

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
    STINT_DECL static std::uint8_t shape_of(const site& where) noexcept;
    STINT_DECL static std::uint8_t payload_of(const site& where) noexcept;

    STINT_DECL void write_file(int sig) noexcept;

    std::atomic<bool> installed_{false};
    std::atomic<bool> dumped_{false};
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
