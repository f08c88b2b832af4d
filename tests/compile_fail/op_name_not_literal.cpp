// expect: STINT_OP needs a name known at compile time
// expect: stint::begin_event(stint::event_kind::cpu_op, name)
// An op named by a value known only at run time (a framework's op schema) fails with stint's message,
// which names the API for such names, instead of "not a constant expression" alone.
#include <stint/stint.hpp>

struct schema {
    const char* name() const { return "aten::mm"; }
};

void observe(const schema& fn) { STINT_OP(stint::config<>, fn.name()); }
