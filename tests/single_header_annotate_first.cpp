// The two single headers in one file, the light one first (a framework's header, then the program's).
#include <stint/annotate.hpp>
#include <stint/stint.hpp>

#include <span>

int single_header_annotated_op(std::span<const float> v) {
    STINT_OP(stint::config<stint::record_shapes>, "framework::op", v);  // a 1-d tensor of v.size()
    return static_cast<int>(v.size());
}
