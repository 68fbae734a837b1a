// A stand-in for a compiler's native code, for the harness's own tests: one rewrite pattern
// that deadlocks and one pass that dereferences null. Built with g++ by the tests that use it;
// the harness must name these frames when it reports the hang and the crash.
#include <pthread.h>

namespace mlir {
namespace {

struct ConvolutionBackwardPattern {
  // Locks a non-recursive mutex twice: stuck in native code, deaf to Python signal handlers.
  __attribute__((noinline)) static void matchAndRewrite() {
    static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mutex);
    pthread_mutex_lock(&mutex);
  }
};

struct FakeLoweringPass {
  __attribute__((noinline)) static void runOnOperation(volatile int *operation) { *operation = 1; }
};

}  // namespace
}  // namespace mlir

extern "C" void fake_pattern_hang() { mlir::ConvolutionBackwardPattern::matchAndRewrite(); }
extern "C" void fake_pass_crash() { mlir::FakeLoweringPass::runOnOperation(nullptr); }
