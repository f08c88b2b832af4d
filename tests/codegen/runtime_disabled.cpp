// One scope around an opaque call, normal configuration: check_codegen.py follows the path the
// function takes when the recording flag is clear (see check_runtime_disabled there).
#include "stint/stint.hpp"

void opaque() noexcept;

void scoped_call() {
    STINT_SCOPE("scoped_call");
    opaque();
}
