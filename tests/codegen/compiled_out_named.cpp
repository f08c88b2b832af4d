// STINT_SCOPE_NAMED, STINT_TRACK_GLOBAL_NEW and STINT_OUTPUTS, compared without instrumentation and with
// -DSTINT_DISABLE only: they take no configuration (STINT_CONFIG does not apply to them), so
// stint::disabled does not compile them out. Compiled out, the program keeps its own operator new.
// Every STINT_* use is a whole statement on a line of its own; the extern functions are defined
// nowhere (see compiled_out.cpp).
#include <string>
#include <vector>

#include "stint/stint.hpp"

void load(const std::string& name);
std::string layer_name(int index);
std::vector<int> make_result(int n);

STINT_TRACK_GLOBAL_NEW();

// The name expressions allocate and call out: a compiled-out scope evaluates neither.
void load_all(const std::vector<std::string>& names) {
    for (const auto& name : names) {
        STINT_SCOPE_NAMED(name + ".load");
        STINT_SCOPE("load");
        load(name);
    }
}

int count_layers(int n) {
    int loaded = 0;
    for (int i = 0; i < n; ++i) {
        STINT_SCOPE_NAMED(layer_name(i));
        STINT_INSTANT("layer");
        ++loaded;
    }
    return loaded;
}

// The outputs expression allocates and calls out: compiled out, it is not evaluated.
int produce(int n) {
    STINT_SCOPE("produce");
    STINT_OUTPUTS(make_result(n));
    return n + 1;
}
