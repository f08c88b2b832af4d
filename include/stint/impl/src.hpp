#pragma once
// The session side of stint, compiled once: include this header in exactly one file of a program built
// with STINT_SEPARATE_COMPILATION defined in every file (or link stint::compiled, which does).
// detail/separate_compilation.hpp says why and how.

#if !defined(STINT_SEPARATE_COMPILATION)
#error "stint: <stint/impl/src.hpp> compiles the session side for a program built with STINT_SEPARATE_COMPILATION. Fix: 1. define STINT_SEPARATE_COMPILATION in every file of the program (a build flag), or 2. don't include this file: a header-only build needs nothing more than <stint/stint.hpp>"
#endif

#include "stint/stint.hpp"

// Every impl/*.ipp file (tools/check_layout.py checks that none is missing), in parts that compile in
// parallel: a file that defines STINT_COMPILED_PART as N (1 to 6) before including this header compiles
// part N alone (meson's stint_compiled_dep and CMake's stint::compiled build the six so, src/); without it,
// all of them. Part 1 holds the check that the program includes this header.
#if !defined(STINT_COMPILED_PART)
#define STINT_DETAIL_ALL_PARTS 1
#elif STINT_COMPILED_PART < 1 || STINT_COMPILED_PART > 6
#error "stint: STINT_COMPILED_PART is a part of the session side, 1 to 6 (or undefined: all of it)"
#endif

// 1. the recording side, and what every part of the session side calls
#if defined(STINT_DETAIL_ALL_PARTS) || STINT_COMPILED_PART == 1
#include "stint/recording/impl/chunk_pool.ipp"
#include "stint/recording/detail/impl/dynamic_name_table.ipp"
#include "stint/recording/detail/impl/named_site_table.ipp"
#include "stint/recording/impl/ring.ipp"
#include "stint/recording/impl/signal_stack.ipp"
#include "stint/recording/impl/object_links.ipp"
#include "stint/recording/impl/registry.ipp"
#include "stint/annotations/impl/region_counters.ipp"
#include "stint/common/impl/warning.ipp"
#include "stint/impl/schedule.ipp"
#include "stint/profiler/impl/step_tracker.ipp"
#include "stint/profiler/impl/distributed.ipp"
#include "stint/distributed/impl/clock_alignment.ipp"
#include "stint/capture/detail/impl/native_symbols.ipp"
#include "stint/profiler/impl/exit_trace.ipp"
#endif

// 2. the event model and the table
#if defined(STINT_DETAIL_ALL_PARTS) || STINT_COMPILED_PART == 2
#include "stint/analysis/detail/impl/event_store.ipp"
#include "stint/analysis/impl/event_list.ipp"
#include "stint/analysis/detail/impl/call_stacks.ipp"
#include "stint/analysis/detail/impl/module_hierarchy.ipp"
#include "stint/analysis/impl/event_tree.ipp"
#include "stint/analysis/impl/table.ipp"
#include "stint/analysis/impl/key_averages.ipp"
#include "stint/capture/detail/impl/input_decoding.ipp"
#include "stint/drain/impl/record_store.ipp"
#include "stint/drain/impl/device_join.ipp"
#endif

// 3. the drain and the profiler
#if defined(STINT_DETAIL_ALL_PARTS) || STINT_COMPILED_PART == 3
#include "stint/drain/impl/session.ipp"
#include "stint/profiler/impl/profiler_core.ipp"
#include "stint/profiler/impl/running_flight_recorder.ipp"
#include "stint/export/impl/tensorboard.ipp"
#include "stint/export/impl/memory_timeline.ipp"
#include "stint/export/impl/collapsed_stacks.ipp"
#endif

// 4. the Chrome trace's writers, and the JSON check of metadata
#if defined(STINT_DETAIL_ALL_PARTS) || STINT_COMPILED_PART == 4
#include "stint/export/impl/json_writer.ipp"
#include "stint/export/detail/impl/gzip_members.ipp"
#include "stint/export/impl/output_file.ipp"
#include "stint/export/impl/trace_time.ipp"
#include "stint/export/impl/chrome_trace.ipp"
#include "stint/export/impl/counter_tracks.ipp"
#include "stint/export/impl/chrome_trace_records.ipp"
#include "stint/export/impl/trace_stream.ipp"
#include "stint/export/impl/device_trace.ipp"
#include "stint/export/impl/json_validate.ipp"
#endif

// 5. the flight recorder, crash dumps, Perfetto's writer, the execution trace
#if defined(STINT_DETAIL_ALL_PARTS) || STINT_COMPILED_PART == 5
#include "stint/export/detail/impl/protobuf.ipp"
#include "stint/export/impl/perfetto_trace.ipp"
#include "stint/profiler/impl/crash_dump.ipp"
#include "stint/profiler/impl/crash_dump_reader.ipp"
#include "stint/profiler/impl/flight_recorder.ipp"
#include "stint/export/impl/execution_trace.ipp"
#include "stint/profiler/impl/execution_trace_observer.ipp"
#endif

// 6. reading traces, their analyses, on-demand capture
#if defined(STINT_DETAIL_ALL_PARTS) || STINT_COMPILED_PART == 6
#include "stint/analysis/impl/trace_reader.ipp"
#include "stint/analysis/impl/trace_analysis.ipp"
#include "stint/analysis/impl/trace_diff.ipp"
#include "stint/profiler/impl/on_demand_server.ipp"
#endif

#if defined(STINT_DETAIL_ALL_PARTS) || STINT_COMPILED_PART == 1
namespace stint::detail {
void stint_impl_src_hpp_must_be_included_in_one_file_of_a_program_built_with_STINT_SEPARATE_COMPILATION() noexcept {}
}  // namespace stint::detail
#endif
#undef STINT_DETAIL_ALL_PARTS
