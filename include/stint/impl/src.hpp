#pragma once
// The session side of stint, compiled once: include this header in exactly one file of a program built
// with STINT_SEPARATE_COMPILATION defined in every file (or link stint::compiled, which does).
// detail/separate_compilation.hpp says why and how.

#if !defined(STINT_SEPARATE_COMPILATION)
#error "stint: <stint/impl/src.hpp> compiles the session side for a program built with STINT_SEPARATE_COMPILATION. Fix: 1. define STINT_SEPARATE_COMPILATION in every file of the program (a build flag), or 2. don't include this file: a header-only build needs nothing more than <stint/stint.hpp>"
#endif

#include "stint/stint.hpp"

// Every impl/*.ipp file, in the order of the headers that declare them (tools/check_layout.py checks
// that none is missing).
#include "stint/recording/impl/chunk_pool.ipp"
#include "stint/recording/detail/impl/dynamic_name_table.ipp"
#include "stint/recording/detail/impl/named_site_table.ipp"
#include "stint/recording/impl/ring.ipp"
#include "stint/recording/impl/signal_stack.ipp"
#include "stint/recording/impl/object_links.ipp"
#include "stint/recording/impl/registry.ipp"
#include "stint/annotations/impl/region_counters.ipp"
#include "stint/analysis/detail/impl/event_store.ipp"
#include "stint/analysis/impl/event_list.ipp"
#include "stint/analysis/detail/impl/call_stacks.ipp"
#include "stint/analysis/detail/impl/module_hierarchy.ipp"
#include "stint/analysis/impl/event_tree.ipp"
#include "stint/analysis/impl/table.ipp"
#include "stint/analysis/impl/key_averages.ipp"
#include "stint/analysis/impl/trace_reader.ipp"
#include "stint/analysis/impl/trace_analysis.ipp"
#include "stint/analysis/impl/trace_diff.ipp"
#include "stint/common/impl/warning.ipp"
#include "stint/impl/schedule.ipp"
#include "stint/profiler/impl/step_tracker.ipp"
#include "stint/profiler/impl/distributed.ipp"
#include "stint/capture/detail/impl/input_decoding.ipp"
#include "stint/drain/impl/record_store.ipp"
#include "stint/drain/impl/session.ipp"
#include "stint/export/impl/json_writer.ipp"
#include "stint/export/detail/impl/gzip_members.ipp"
#include "stint/export/impl/output_file.ipp"
#include "stint/export/impl/execution_trace.ipp"
#include "stint/profiler/impl/execution_trace_observer.ipp"
#include "stint/export/impl/collapsed_stacks.ipp"
#include "stint/export/impl/device_trace.ipp"
#include "stint/export/impl/trace_time.ipp"
#include "stint/export/impl/chrome_trace.ipp"
#include "stint/export/impl/counter_tracks.ipp"
#include "stint/export/detail/impl/protobuf.ipp"
#include "stint/export/impl/perfetto_trace.ipp"
#include "stint/profiler/impl/crash_dump.ipp"
#include "stint/profiler/impl/crash_dump_reader.ipp"
#include "stint/profiler/impl/flight_recorder.ipp"
#include "stint/profiler/impl/profiler_core.ipp"
#include "stint/export/impl/tensorboard.ipp"
#include "stint/export/impl/memory_timeline.ipp"
#include "stint/capture/detail/impl/native_symbols.ipp"
#include "stint/distributed/impl/clock_alignment.ipp"
#include "stint/drain/impl/device_join.ipp"
#include "stint/export/impl/chrome_trace_records.ipp"
#include "stint/export/impl/json_validate.ipp"
#include "stint/export/impl/trace_stream.ipp"
#include "stint/profiler/impl/exit_trace.ipp"
#include "stint/profiler/impl/on_demand_server.ipp"

namespace stint::detail {
void stint_impl_src_hpp_must_be_included_in_one_file_of_a_program_built_with_STINT_SEPARATE_COMPILATION() noexcept {}
}  // namespace stint::detail
