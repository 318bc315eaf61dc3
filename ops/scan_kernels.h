// Internal: the CPU and CUDA kernels of the selective scan, with the same signatures. They take
// contiguous tensors in one dtype, with Bm and Cm transposed to (B, G, L, N) so that the state
// loop reads contiguous memory.
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/dtype.h"

namespace lumen {

// Pointers to contiguous arrays; D, z and delta_bias may be null (absent).
// Shapes: u, delta, z (batch, channels, length); A (channels, state); Bm, Cm (batch, groups,
// length, state); D, delta_bias (channels).
struct ScanInputs {
    DType dtype = DType::float32;
    int64_t batch = 0, channels = 0, length = 0, state = 0, groups = 1;
    bool delta_softplus = false;
    const void* u = nullptr;
    const void* delta = nullptr;
    const void* A = nullptr;
    const void* Bm = nullptr;
    const void* Cm = nullptr;
    const void* D = nullptr;
    const void* z = nullptr;
    const void* delta_bias = nullptr;
};

// Gradients, laid out like the inputs; grad_D, grad_z and grad_delta_bias are written only
// when the input exists (their pointers are ignored otherwise).
struct ScanGrads {
    void* u = nullptr;
    void* delta = nullptr;
    void* A = nullptr;
    void* Bm = nullptr;
    void* Cm = nullptr;
    void* D = nullptr;
    void* z = nullptr;
    void* delta_bias = nullptr;
};

namespace cpu {
// y (batch, channels, length) = selective_scan(inputs), see ops/scan.h.
void selective_scan_forward(const ScanInputs& in, void* y);

// All gradients from grad_out (batch, channels, length): recomputes the states of each
// (batch, channel) into per-thread scratch, then runs the adjoint recurrence backwards in time.
void selective_scan_backward(const ScanInputs& in, const void* grad_out, const ScanGrads& grads);
}  // namespace cpu

// The same on the inputs' CUDA device (ops/cuda/scan.cu), float32 and float64, state <= 256:
// a chunked scan over L, parallel over batch x channel x state x chunk. Backward recomputes
// the chunk-start states (O(B D N L / 64) scratch); grad_Bm / grad_Cm are summed over the
// channels of a group with atomics, so they may differ in the last bits from run to run.
namespace cuda {
// The largest state size the CUDA kernels take.
constexpr int64_t kMaxScanState = 256;
LUMEN_CUDA_API void selective_scan_forward(const ScanInputs& in, void* y);
LUMEN_CUDA_API void selective_scan_backward(const ScanInputs& in, const void* grad_out,
                                            const ScanGrads& grads);
}  // namespace cuda

}  // namespace lumen
