//===- NoLlvmPoisoning.h - Force-included in the fuzz build -----*- C++ -*-===//
//
// Under ASan, LLVM's headers poison and unpoison the slabs of their bump
// allocators and recyclers (llvm/Support/Allocator.h). fusec's code compiles
// those inline functions instrumented, while Debian's libLLVM and libMLIR,
// which allocate from the same slabs, are not: a slab poisoned by an inlined
// call is then read by the library, and ASan reports a use-after-poison that
// is not one. The fuzz build force-includes this header so that the two
// calls are no-ops in LLVM's headers; every other ASan check stays.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TEST_FUZZ_NOLLVMPOISONING_H
#define FUSEC_TEST_FUZZ_NOLLVMPOISONING_H
#ifdef __cplusplus
#include <sanitizer/asan_interface.h>
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))
#endif
#endif
