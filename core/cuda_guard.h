// LUMEN_ON_CUDA(op, call): the one place a CUDA kernel is called from an op's .cpp. Without
// CUDA it throws [op] instead of falling back to the CPU.
#pragma once

#include "core/error.h"

#if LUMEN_CUDA
#define LUMEN_ON_CUDA(op, ...) \
    do {                       \
        __VA_ARGS__;           \
    } while (0)
#else
#define LUMEN_ON_CUDA(op, ...)                                                             \
    LUMEN_FAIL(op, "the input is on a CUDA device but lumen was built without CUDA "       \
                   "(configure with -DLUMEN_CUDA=ON on a machine with the CUDA toolkit)")
#endif

// For ops whose CUDA kernel does not exist yet: a clear error, never a silent CPU fallback.
#define LUMEN_NO_CUDA_KERNEL(op) \
    LUMEN_FAIL(op, "has no CUDA kernel yet (issue #4); move the inputs to the CPU with .cpu()")
