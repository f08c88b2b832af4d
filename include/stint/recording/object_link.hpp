#pragma once
// One object's link table: where its copies of stint's process-wide state are, the record that
// <stint/this_object_link.hpp> exports from every object that records and that the registry's object
// links (recording/object_links.hpp) read. Kept apart from object_links.hpp so that every file that
// includes annotate.hpp reads only this struct, not the session side's <mutex>, <vector> and loader
// headers.

#include <atomic>   // std::atomic
#include <cstdint>  // std::uint32_t, std::uint64_t

#include "stint/detail/export_macros.hpp"

#define STINT_DETAIL_LINK_CAT_(a, b) a##b
#define STINT_DETAIL_LINK_CAT(a, b) STINT_DETAIL_LINK_CAT_(a, b)
#define STINT_DETAIL_LINK_STRING_(a) #a
#define STINT_DETAIL_LINK_STRING(a) STINT_DETAIL_LINK_STRING_(a)
/// The C name of an object's link table: one per stint ABI, so two versions never link.
#define STINT_DETAIL_OBJECT_LINK STINT_DETAIL_LINK_CAT(stint_detail_object_link_, STINT_DETAIL_ABI_NAMESPACE)

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

struct slow_path;             // recording/slow_path.hpp
struct recording_hook_table;  // annotations/recording_hook.hpp
struct capture_switches;      // capture/inputs.hpp

/// Where one object's copies of the process-wide state are (the ones its own code reads).
struct object_link {
    std::uint32_t size;                              ///< sizeof(object_link) where it was compiled
    std::atomic<std::uint32_t>* recording;           ///< recording/state.hpp
    std::atomic<const slow_path*>* installed_path;   ///< recording/slow_path.hpp
    recording_hook_table* hooks;                     ///< annotations/recording_hook.hpp
    capture_switches* capture;                       ///< capture/inputs.hpp
    std::atomic<std::uint32_t>* memory_state;        ///< memory/report.hpp
    std::atomic<std::uint64_t>* next_point_id;       ///< annotations/detail/point_record.hpp
};

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
