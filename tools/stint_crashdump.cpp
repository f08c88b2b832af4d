// stint-crashdump: turns a flight recorder's crash dump into a Chrome trace, on stint's own reader
// (profiler/crash_dump_reader.hpp), so the tool and a service reading its own dump decode it alike.
//
//     stint-crashdump CRASH_DUMP OUT.pt.trace.json
//
// Exit status: 0 written from a complete dump; 1 the file is not a crash dump, is cut short, or the trace
// cannot be written; 2 bad usage.

#include <cstdio>       // stderr
#include <exception>    // std::exception
#include <string>       // std::string
#include <string_view>  // std::string_view

#include <fmt/format.h>  // fmt::print

#include "stint/profiler/crash_dump_reader.hpp"

namespace {

constexpr std::string_view usage_line = "stint-crashdump CRASH_DUMP OUT.pt.trace.json";

constexpr std::string_view help_text = R"(Turns a stint flight recorder's crash dump into a Chrome trace (Perfetto and chrome://tracing
open it).

    stint-crashdump CRASH_DUMP OUT.pt.trace.json

It also prints where each thread was: the scopes it was inside and its newest events, the crashing thread
marked, and what the dump could not hold. The dump holds the raw records of every thread, each thread's
open scopes (a record is written at a scope's end, so those left none) and the sites they point to
(include/stint/profiler/crash_dump_format.hpp has the layout, include/stint/profiler/crash_dump.hpp says
what a dump holds while threads keep running). In the trace an open scope ends at the crash, with
"still open at the crash": true in its args.
Exit status 0 when written from a complete dump; 1 when the file is not a crash dump, is cut short (a
full disk, a second fault in the handler: the trace then holds what was read, and this says what was lost)
or the trace cannot be written; 2 on bad usage. The same reader is in the library:
stint::read_crash_dump (profiler/crash_dump_reader.hpp).
)";

/// The reader's message without its "stint: " prefix: this tool names itself.
std::string_view without_prefix(std::string_view message) {
    constexpr std::string_view prefix = "stint: ";
    if (message.substr(0, prefix.size()) == prefix) message.remove_prefix(prefix.size());
    return message;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && (std::string_view(argv[1]) == "-h" || std::string_view(argv[1]) == "--help")) {
        fmt::print("{}", help_text);
        return 0;
    }
    if (argc != 3) {
        fmt::print(stderr, "usage: {}\n", usage_line);
        return 2;
    }
    const std::string dump_path = argv[1];
    const std::string trace_path = argv[2];
    stint::crash_dump_contents dump;
    try {
        dump = stint::read_crash_dump(dump_path);
    } catch (const std::exception& e) {
        fmt::print(stderr, "stint-crashdump: {}: nothing converted\n", without_prefix(e.what()));
        return 1;
    }
    try {
        stint::write_crash_dump_trace(dump, trace_path);
    } catch (const std::exception& e) {
        fmt::print(stderr, "stint-crashdump: {}\n", without_prefix(e.what()));  // names the trace and why
        return 1;
    }
    fmt::print("{}", stint::crash_dump_summary(dump));
    if (!dump.complete) {
        fmt::print(stderr, "stint-crashdump: {}: the dump was cut short; {} holds what could be read\n", dump_path,
                   trace_path);
        return 1;
    }
    return 0;
}
