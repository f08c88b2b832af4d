// stint/stint.hpp includes no CUDA header even where the toolkit's are on the include path: only
// stint/device/cuda_activities.hpp brings them (this file is compiled with CUPTI's include folder).

#include <doctest/doctest.h>

#include "stint/stint.hpp"

#if defined(CUPTI_API_VERSION) || defined(CUDA_VERSION)
#error "stint/stint.hpp pulled in a CUDA header"
#endif

TEST_CASE("cupti: stint/stint.hpp alone declares no CUDA type") {
    CHECK(stint::detail::has_device_backend<stint::config<>> == false);
}
