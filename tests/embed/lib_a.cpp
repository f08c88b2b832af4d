// A framework library built with default visibility.
#include "stint/stint.hpp"

extern "C" __attribute__((visibility("default"))) void embed_a_work() {
    STINT_SCOPE("lib_a::work");
}
