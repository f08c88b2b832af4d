#pragma once
// stint's annotation header: what a framework puts in its own headers, and what ordinary code needs to
// be recorded. STINT_SCOPE, STINT_SCOPE_NAMED, STINT_OP and STINT_OP_FLOPS with input capture,
// STINT_INSTANT, record_function, begin_event (events named at run time), STINT_REGION, module scopes,
// dynamic names, flows and async spans, op outputs, memory reports, the config and policy tags,
// is_recording(), recording hooks, set_thread_name() and counters (STINT_COUNTER, stint::counter).
//
// It includes only what the hot path and the capture encoders need (no fmt, iostreams, <filesystem>,
// zlib, <thread>, Boost.PFR), so a file pays little to include it. Sessions, the drain, analysis and the
// exporters are in <stint/stint.hpp>, which the program that runs the profiler includes: nothing
// records before a profiler exists, and a profiler's file brings the registry the scopes here reach
// (recording/slow_path.hpp). Structs captured field by field need <stint/capture/aggregates.hpp>.

#include "stint/detail/require_cxx20.hpp"
#include "stint/config.hpp"
#include "stint/policies.hpp"

#if defined(STINT_DISABLE)
// Compiled out: the macros expand to nothing, and only the config and policy tags (which a framework's
// headers name in their own types) remain. The rest of the API (record_function, flows' and async spans'
// classes, memory reports) is stint.hpp's in such a file.
#include "stint/detail/compiled_out.hpp"
#else
#include "stint/detail/export_macros.hpp"
#include "stint/recording/state.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/scope.hpp"
#include "stint/capture/outputs.hpp"
#include "stint/annotations/module.hpp"
#include "stint/annotations/region.hpp"
#include "stint/annotations/dynamic_name.hpp"
#include "stint/annotations/flow.hpp"
#include "stint/annotations/async_scope.hpp"
#include "stint/annotations/recording_hook.hpp"
#include "stint/annotations/runtime_event.hpp"
#include "stint/annotations/event_args.hpp"
#include "stint/annotations/counter.hpp"
#include "stint/memory/report.hpp"
#include "stint/this_object_link.hpp"
#endif
