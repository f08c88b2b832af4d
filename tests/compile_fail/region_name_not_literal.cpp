// expect: stint: STINT_REGION needs a string literal name
// expect: region_name_must_be_a_literal<std::basic_string_view<char
// A region named by anything but a string literal fails to compile with stint's message (its event
// name is built at compile time), and the diagnostic names the rejected type.
#include <stint/stint.hpp>

struct dynamo_timed {
    static constexpr std::string_view label = "dynamo_timed";
};

constexpr std::string_view name = "inner_fn";

void use() { STINT_REGION(dynamo_timed, name); }
