// expect: stint: STINT_SCOPE_DYNAMIC names the object's type, not a pointer's; pass *this, not this
// STINT_SCOPE_DYNAMIC given a pointer (whose type would name the pointer, never the dynamic type)
// fails to compile with stint's message.
#include <stint/stint.hpp>

struct optimizer {
    virtual ~optimizer() = default;
    virtual void step() { STINT_SCOPE_DYNAMIC("Optimizer.step", "step", this); }
};
