// The framework's library: its files include only the framework's header (and so stint's annotation
// header), never stint.hpp; the program that profiles brings the registry.
#include "framework.hpp"

// What the annotation header must leave out (issue 31): each is a cost every framework file would pay.
#if defined(FMT_VERSION) || defined(_GLIBCXX_IOSTREAM) || defined(_GLIBCXX_FILESYSTEM) || defined(ZLIB_H) ||         \
    defined(_GLIBCXX_THREAD) || defined(_GLIBCXX_CONDITION_VARIABLE) || defined(BOOST_PFR_HPP) ||                    \
    defined(BOOST_PFR_CORE_HPP) || defined(_GLIBCXX_SSTREAM) || defined(_GLIBCXX_LOCALE) ||                          \
    defined(_GLIBCXX_MUTEX) || defined(_GLIBCXX_ALGORITHM) || defined(_LINK_H) || defined(_DLFCN_H)
#error "stint/annotate.hpp included a header it must leave out (the list above): each costs every framework file"
#endif

#include <thread>

namespace {

framework::tensor matmul(const framework::tensor& a, const framework::tensor& b) {
    STINT_OP(framework::profiled, "framework::matmul", a, b);
    return {{a.shape.at(0), b.shape.at(1)}};
}

}  // namespace

extern "C" void framework_linear(std::int64_t rows, std::int64_t cols) {
    STINT_SCOPE("framework::linear");
    const framework::tensor x{{rows, cols}};
    const framework::tensor w{{cols, cols}};
    const framework::tensor y = matmul(x, w);
    framework::add(y, y);
}

extern "C" void framework_linear_on_worker() {
    std::thread([] {
        stint::set_thread_name("framework worker");
        framework_linear(2, 3);
    }).join();
}
