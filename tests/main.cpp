#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "stint/stint.hpp"

// The main thread records once before any test, so that whichever test runs first, its session does
// not hold the thread's registration (an overhead event). tests/overhead_test.cpp checks that event
// on threads of its own.
int main(int argc, char** argv) {
    {
        stint::profiler<> registers_main_thread;
        registers_main_thread.start();
        STINT_INSTANT("register the main thread");
        registers_main_thread.stop();
    }
    return doctest::Context(argc, argv).run();
}
