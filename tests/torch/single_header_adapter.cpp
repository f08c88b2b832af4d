// The adapter as a user who copied single_include/ meets it: single_include/stint/adapters/torch.hpp,
// which includes the single annotation header beside it (this file sees only single_include/).
#include <ATen/core/ivalue.h>
#include <torch/torch.h>

#include <stint/adapters/torch.hpp>

#if !defined(STINT_SINGLE_STINT_ADAPTERS_TORCH_HPP)
#error "this file must see single_include/, not include/"
#endif

/// Makes an observer from the single header for as long as `body` runs (torch_adapter_test.cpp).
void with_single_header_observer(void (*body)()) {
    stint::torch_observer<stint::config<stint::record_shapes>> observe;
    body();
}
