// The two single headers in one file, the full one first: the light one adds nothing after it.
#include <stint/stint.hpp>
#include <stint/annotate.hpp>

int single_header_annotated_scope() {
    STINT_SCOPE("framework::scope");
    return 1;
}
