#pragma once
// This object's link table (recording/object_link.hpp): where its copies of stint's process-wide state
// are, exported under a C name, so that a profiler in another object finds them with dlsym even when
// this object was loaded with RTLD_LOCAL into a program not linked with -rdynamic. Data only, constant
// initialized: it costs an object nothing at load and nothing when it records.

#include "stint/detail/export_macros.hpp"
#include "stint/annotations/detail/point_record.hpp"
#include "stint/annotations/recording_hook.hpp"
#include "stint/capture/inputs.hpp"
#include "stint/memory/report.hpp"
#include "stint/recording/object_link.hpp"
#include "stint/recording/slow_path.hpp"
#include "stint/recording/state.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {
extern "C" {
// `used`: emitted in every file that includes this header, though nothing in it refers to the table.
#if defined(__GNUC__) || defined(__clang__)
__attribute__((used))
#endif
STINT_DETAIL_EXPORT inline constinit const object_link STINT_DETAIL_OBJECT_LINK{
    sizeof(object_link), &recording.value, &installed_slow_path, &recording_hooks, &capture_state,
    &memory_state,       &next_point_id};
}
}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
