// CUDA dropout with the mask of ops/cpu/dropout.cpp: one thread per Philox4x32-10 block
// (core/philox.h, the CPU's own host-device function), element i kept when its uniform
// (bernoulli's mapping, ops/random_kernels.h) is below keep_prob in x's precision, and
// out = x * (kept ? scale : 0) as on the CPU, so masks and outputs are bit-identical. Under a
// sample shard, one thread per element takes the word of its global element (core/sample_shard.h).
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "core/philox.h"
#include "ops/dropout_kernels.h"
#include "ops/random_kernels.h"

namespace lumen::cuda {
namespace {

template <typename T>
__global__ void dropout_forward_kernel(uint64_t seed, uint64_t offset, T keep_prob, T scale,
                                       const T* x, T* out, uint8_t* mask, int64_t numel) {
    constexpr int kPer = kUniformsPerBlock<T>;
    const int64_t blocks = (numel + kPer - 1) / kPer;
    for (int64_t block = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; block < blocks;
         block += int64_t(gridDim.x) * blockDim.x) {
        const Philox4 bits = philox4x32(seed, offset + uint64_t(block));
#pragma unroll
        for (int w = 0; w < kPer; ++w) {
            const int64_t i = block * kPer + w;
            if (i >= numel) continue;
            const bool kept = uniform_at<T>(bits.x, w) < keep_prob;
            mask[i] = uint8_t(kept);
            out[i] = x[i] * (kept ? scale : T(0));
        }
    }
}

// Sharded: element i takes word global % kPer of block offset + global / kPer, global =
// shard.global(i). Its block is drawn per element (the neighbours' words may belong to other
// ranks), which costs 4 (float32) or 2 (float64) times the Philox work of the kernel above.
template <typename T>
__global__ void dropout_forward_sharded_kernel(uint64_t seed, uint64_t offset, T keep_prob, T scale,
                                               ShardMap shard, const T* x, T* out, uint8_t* mask,
                                               int64_t numel) {
    constexpr int kPer = kUniformsPerBlock<T>;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t global = shard.global(i);
        const Philox4 bits = philox4x32(seed, offset + uint64_t(global / kPer));
        const bool kept = uniform_at<T>(bits.x, global % kPer) < keep_prob;
        mask[i] = uint8_t(kept);
        out[i] = x[i] * (kept ? scale : T(0));
    }
}

template <typename T>
__global__ void dropout_backward_kernel(const T* grad_out, const uint8_t* mask, T scale, T* grad_x,
                                        int64_t numel) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
         i += int64_t(gridDim.x) * blockDim.x)
        grad_x[i] = grad_out[i] * (mask[i] ? scale : T(0));
}

}  // namespace

void dropout_forward(uint64_t seed, uint64_t offset, double keep_prob, double scale,
                     const ShardMap& shard, const StridedView& x, const StridedView& out,
                     const StridedView& mask) {
    const int64_t numel = x.numel();
    if (numel == 0) return;
    dispatch_floating(x.dtype, "dropout", [&]<typename T>() {
        if (!shard.is_identity()) {
            dropout_forward_sharded_kernel<T><<<grid_for(numel), 256>>>(
                seed, offset, T(keep_prob), T(scale), shard, x.ptr<const T>(), out.ptr<T>(),
                mask.ptr<uint8_t>(), numel);
            return;
        }
        const unsigned grid = grid_for(int64_t(philox_blocks(numel, kUniformsPerBlock<T>)));
        dropout_forward_kernel<T><<<grid, 256>>>(seed, offset, T(keep_prob), T(scale),
                                                 x.ptr<const T>(), out.ptr<T>(),
                                                 mask.ptr<uint8_t>(), numel);
    });
    LUMEN_CUDA_CHECK_LAUNCH("dropout_forward_kernel");
}

void dropout_backward(const StridedView& grad_out, const StridedView& mask, double scale,
                      const StridedView& grad_x) {
    const int64_t numel = grad_out.numel();
    if (numel == 0) return;
    dispatch_floating(grad_out.dtype, "dropout", [&]<typename T>() {
        dropout_backward_kernel<T><<<grid_for(numel), 256>>>(
            grad_out.ptr<const T>(), mask.ptr<const uint8_t>(), T(scale), grad_x.ptr<T>(), numel);
    });
    LUMEN_CUDA_CHECK_LAUNCH("dropout_backward_kernel");
}

}  // namespace lumen::cuda
