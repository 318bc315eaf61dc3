// LUMEN_CUDA_CHECK wraps every CUDA runtime call; LUMEN_CUDA_CHECK_LAUNCH follows every
// kernel launch. Both throw lumen::Error naming the call and CUDA's error string.
#pragma once

#include <cuda_runtime.h>

#include "core/error.h"

#define LUMEN_CUDA_CHECK(call)                                                          \
    do {                                                                                \
        cudaError_t lumen_status_ = (call);                                             \
        if (lumen_status_ != cudaSuccess)                                               \
            LUMEN_FAIL("cuda", #call, " failed: ", cudaGetErrorString(lumen_status_),   \
                       " (", __FILE__, ":", __LINE__, ")");                             \
    } while (0)

// A launch error (bad configuration), or with CUDA_LAUNCH_BLOCKING=1 also a fault while the
// kernel ran, is reported naming the kernel; otherwise faults surface at the next synchronizing
// call.
#define LUMEN_CUDA_CHECK_LAUNCH(kernel_name)                                            \
    do {                                                                                \
        cudaError_t lumen_status_ = cudaGetLastError();                                 \
        if (lumen_status_ != cudaSuccess)                                               \
            LUMEN_FAIL("cuda", "kernel ", kernel_name, " failed: ",                     \
                       cudaGetErrorString(lumen_status_), " (", __FILE__, ":", __LINE__, \
                       ")");                                                            \
    } while (0)
