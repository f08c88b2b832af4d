// expect: stint: config<...> takes stint's policy tags only
// expect: policy_tag
// expect: stint::config<record_shapes>
// A config of a type that is not one of stint's policy tags, here a user's own `record_shapes`, would
// record nothing: it fails to compile with stint's message, the compiler naming the type.
#include <stint/stint.hpp>

struct record_shapes {};

void use() {
    stint::profiler<stint::config<record_shapes>> prof;
    prof.start();
}
