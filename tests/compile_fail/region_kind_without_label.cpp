// expect: stint: STINT_REGION's kind needs `static constexpr std::string_view label`
// A region kind without a label fails to compile with stint's message.
#include <stint/stint.hpp>

struct unlabelled {};

void use() { STINT_REGION(unlabelled, "inner_fn"); }
