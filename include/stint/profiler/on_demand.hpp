#pragma once
// On-demand capture (Kineto's daemon mode): a running process accepts a request over a Unix-domain
// socket owned by its user -- from tools/stint-capture -- records for a duration or a number of steps,
// writes the trace atomically and answers with the path and the counts (design §13). A process whose
// flight recorder records answers a "dump" request instead: the window in memory, written while it
// keeps recording (profiler::dump). Nothing of it runs on the recording path: while nobody asks, a
// scope costs its one relaxed load, as always.
//
//     #include <stint/profiler/on_demand.hpp>   // in one translation unit of the program
//     stint::enable_on_demand();                 // or run the program with STINT_ON_DEMAND=1
//     // elsewhere: tools/stint-capture --pid 1234 --duration 5s --output trace.json
//
// stint.hpp does not include this header: its sockets and its start-up check would change how a
// compiler inlines the program's own code, and a config compiled out must leave that code as it was.

#include "stint/profiler/on_demand_server.hpp"

namespace stint::detail {
#if !defined(STINT_DISABLE)
/// STINT_ON_DEMAND=1 enables on-demand capture at start-up, in a program that includes this header.
inline const bool on_demand_from_environment = enable_on_demand_from_environment();
#endif
}  // namespace stint::detail
