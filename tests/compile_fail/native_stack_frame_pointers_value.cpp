// expect: stint: STINT_NATIVE_STACK_FRAME_POINTERS must be 1 (walk frame pointers) or 0 (use the unwinder). Fix:
// expect: 1. define it 1 where the program is built with -fno-omit-frame-pointer
// A value other than 0 or 1 (here 2, which a reader might take for "on") stops at stint's #error
// instead of picking a method silently.
#define STINT_NATIVE_STACK_FRAME_POINTERS 2
#include <stint/stint.hpp>

int main() { return 0; }
