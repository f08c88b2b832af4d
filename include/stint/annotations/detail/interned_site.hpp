#pragma once
// Sites made at run time (a name from an object's dynamic type, a compiled region's ids) and kept for
// the life of the process, so that a record points to one exactly as to a static site: 24 bytes per
// event, and the name is made once, not per call.

#include <string>   // std::string
#include <utility>  // std::move

#include "stint/detail/export_macros.hpp"
#include "stint/recording/site.hpp"

namespace stint::detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// A site and the name it points to. Never freed: records of any later session, and the events
/// drained from them, may point to it. The tables that make them keep them reachable.
struct interned_site {
    std::string name;
    site where;

    interned_site(std::string text, const site& like) : name(std::move(text)), where(like) { where.name = name; }
    interned_site(const interned_site&) = delete;
    interned_site& operator=(const interned_site&) = delete;
};

}  // namespace STINT_DETAIL_ABI_NAMESPACE
}  // namespace stint::detail
