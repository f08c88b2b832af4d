// The two single headers in one file, the light one first (a framework's header, then the program's).
#include <stint/annotate.hpp>
#include <stint/stint.hpp>

#include <vector>

int single_header_annotated_op(const std::vector<float>& v) {
    STINT_OP(stint::config<stint::record_shapes>, "framework::op", v);
    return static_cast<int>(v.size());
}
