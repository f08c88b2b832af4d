#pragma once
// Reading a crash dump back (profiler/crash_dump.hpp writes it, profiler/crash_dump_format.hpp lays it
// out): what stint-crashdump (tools/stint_crashdump.cpp) runs, and a service that reads its own dump. It
// decodes the threads' records as recording/buffer.hpp lays them out, naming them by the dump's own site
// table (the dead process's addresses mean nothing here), draws each scope still open at the crash as
// ending there, and says what the dump could not hold.

#include <cstdint>  // std::uint32_t, std::uint64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "stint/detail/separate_compilation.hpp"

namespace stint {

/// A crash dump, read back.
struct crash_dump_contents {
    struct event {
        std::string name;
        bool overhead = false;    ///< stint's own work (category "overhead")
        bool instant = false;     ///< a point in time (no duration)
        std::int64_t start_ns = 0;  ///< since the session's anchor
        std::int64_t end_ns = 0;
        bool still_open = false;  ///< a scope open at the crash, drawn ending there
        std::uint32_t depth = 0;  ///< an open scope's nesting depth on its thread
    };
    struct thread {
        std::uint64_t tid = 0;
        std::string name;          ///< as the thread was named, else "thread <tid>"
        bool crashed = false;      ///< the thread whose signal wrote the dump
        std::vector<event> events;  ///< its records, oldest first, then its open scopes, outermost first
        std::vector<std::string> inside;  ///< the open scopes' names, outermost first
        std::uint64_t deeper_not_kept = 0;  ///< open scopes deeper than the dump keeps
        std::uint64_t overwritten = 0;      ///< older records the ring overwrote before the crash
        std::uint64_t dropped = 0;          ///< records dropped (the budget, or the ring standing still)
        std::uint64_t after_crash = 0;      ///< records that ended after the crash, left out
        bool records_left_out = false;      ///< it held its ring lock at the crash: no records written
        std::int64_t complete_from_ns = 0;  ///< its records are complete from here (0: from the start)
    };
    std::uint64_t pid = 0;
    std::uint64_t signal = 0;  ///< 0: std::terminate
    std::uint64_t crashed_tid = 0;
    std::uint64_t base_time_ns = 0;  ///< the anchor on the system clock (the trace's baseTimeNanoseconds)
    std::int64_t crash_ns = 0;       ///< the crash, since the anchor
    bool complete = false;           ///< false: the file was cut short (a full disk, a fault in the handler)
    std::uint64_t bytes = 0;         ///< the file's size
    std::uint64_t bytes_read = 0;    ///< what could be decoded
    std::vector<thread> threads;
    std::vector<std::string> lost;   ///< what the dump could not hold, one line each
};

/// Reads a crash dump (crash_dump_version, what this stint writes). Throws std::runtime_error naming the path and
/// the byte offset when the file is not one, or is cut inside its header; a dump cut short later is read
/// as far as it goes (`complete` false, `lost` says what is missing).
STINT_DECL crash_dump_contents read_crash_dump(const std::string& path);

/// Writes the dump as a Chrome trace ("crash" in its metadata: per thread where it was and its last events).
STINT_DECL void write_crash_dump_trace(const crash_dump_contents& dump, const std::string& path);

/// The lines stint-crashdump prints: how the process died, where each thread was, what was lost.
STINT_DECL std::string crash_dump_summary(const crash_dump_contents& dump);

}  // namespace stint

#if defined(STINT_HEADER_ONLY)
#include "stint/profiler/impl/crash_dump_reader.ipp"
#endif
