// expect: stint: no input_traits for this type; specialise stint::input_traits<T> or give it sizes() and dtype()
// expect: no_input_traits_for_this_type<widget>
// An op input with no input_traits, no sizes()/dtype() and not an aggregate fails to compile with
// stint's message, and the diagnostic names the rejected type.
#include <stint/stint.hpp>

struct widget {
    explicit widget(int v) : value(v) {}
    int value;
};

using shapes = stint::config<stint::record_shapes>;

void use(const widget& w) { STINT_OP(shapes, "op", w); }
