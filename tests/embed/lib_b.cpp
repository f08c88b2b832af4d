// A framework library built with -fvisibility=hidden: its copy of stint must still join the
// process's one registry and session.
#include "stint/stint.hpp"

extern "C" __attribute__((visibility("default"))) void embed_b_work() {
    STINT_OP(stint::config<>, "lib_b::op", 1);
}
extern "C" __attribute__((visibility("default"))) bool embed_b_is_recording() { return stint::is_recording(); }
