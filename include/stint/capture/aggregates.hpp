#pragma once
// Capturing plain structs as op inputs, field by field (Boost.PFR): included by stint.hpp where
// Boost.PFR is found (`-DSTINT_USE_PFR=0` leaves it out), and by hand in a file that includes only
// annotate.hpp and passes a struct to STINT_OP. Kept apart because Boost.PFR costs every file that
// includes it.


#include "stint/capture/inputs.hpp"

#if !defined(STINT_USE_PFR)
#if __has_include(<boost/pfr/core.hpp>)
#define STINT_USE_PFR 1
#else
#define STINT_USE_PFR 0
#endif
#endif

#if STINT_USE_PFR
#include <boost/pfr/core.hpp>  // boost::pfr::for_each_field

namespace stint::detail {

template <class T>
    requires is_aggregate_input<T>
struct aggregate_capture<T> {
    static constexpr bool available = true;
    static void capture(input_writer& w, const T& v) {
        boost::pfr::for_each_field(v, [&w](const auto& field) { w.value(field); });
    }
};

}  // namespace stint::detail
#endif
