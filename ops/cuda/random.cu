// CUDA random kernels with the element-to-block mapping of ops/random_kernels.h: one thread per
// Philox4x32-10 block in a grid-stride loop, with the CPU's own host-device philox4x32 and
// uniform_float / uniform_double (core/philox.h) and the same Box-Muller and multiply-shift
// formulas, so a seed and an offset give the CPU's numbers (randn up to the last bits of the
// device's log / sin / cos).
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/cuda/scratch.cuh"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "core/philox.h"
#include "ops/random_kernels.h"

namespace lumen::cuda {
namespace {

constexpr double kTwoPi = 6.283185307179586476925;

// First and stride of a grid-stride loop over Philox blocks.
__device__ int64_t first_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ int64_t grid_stride() { return int64_t(gridDim.x) * blockDim.x; }

template <typename T>
__global__ void rand_kernel(uint64_t seed, uint64_t offset, T* out, int64_t numel) {
    constexpr int kPer = kUniformsPerBlock<T>;
    const int64_t blocks = (numel + kPer - 1) / kPer;
    for (int64_t block = first_index(); block < blocks; block += grid_stride()) {
        const Philox4 bits = philox4x32(seed, offset + uint64_t(block));
#pragma unroll
        for (int w = 0; w < kPer; ++w)
            if (block * kPer + w < numel) out[block * kPer + w] = uniform_at<T>(bits.x, w);
    }
}

// Box-Muller in double, as the CPU: r = sqrt(-2 ln u1), z = r (cos 2 pi u2, sin 2 pi u2) with
// u1 in (0, 1] so the logarithm is finite; elements 2j and 2j + 1 from block j.
template <typename T>
__global__ void randn_kernel(uint64_t seed, uint64_t offset, T* out, int64_t numel) {
    const int64_t blocks = (numel + 1) / 2;
    for (int64_t block = first_index(); block < blocks; block += grid_stride()) {
        const Philox4 bits = philox4x32(seed, offset + uint64_t(block));
        const double u1 = 1.0 - uniform_double(bits.x[0], bits.x[1]);
        const double u2 = uniform_double(bits.x[2], bits.x[3]);
        const double radius = sqrt(-2.0 * log(u1));
        out[2 * block] = T(radius * cos(kTwoPi * u2));
        if (2 * block + 1 < numel) out[2 * block + 1] = T(radius * sin(kTwoPi * u2));
    }
}

// low + floor(x range / 2^64) for the 64-bit x of words (2w, 2w + 1): the high half of the
// 128-bit product (Lemire), as the CPU's unsigned __int128.
template <typename T>
__global__ void randint_kernel(uint64_t seed, uint64_t offset, int64_t low, uint64_t range, T* out,
                               int64_t numel) {
    const int64_t blocks = (numel + 1) / 2;
    for (int64_t block = first_index(); block < blocks; block += grid_stride()) {
        const Philox4 bits = philox4x32(seed, offset + uint64_t(block));
#pragma unroll
        for (int w = 0; w < 2; ++w) {
            if (2 * block + w >= numel) continue;
            const uint64_t x = (uint64_t(bits.x[2 * w]) << 32) | bits.x[2 * w + 1];
            const uint64_t value = __umul64hi(x, range);
            out[2 * block + w] = T(int64_t(uint64_t(low) + value));
        }
    }
}

// out[i] = uniform_i < p[i]; the lowest index whose p is outside [0, 1] or NaN goes to
// *first_invalid by atomicMin (initialized to all ones).
template <typename P, typename T>
__global__ void bernoulli_kernel(uint64_t seed, uint64_t offset, const P* prob, T* out,
                                 int64_t numel, unsigned long long* first_invalid) {
    constexpr int kPer = kUniformsPerBlock<P>;
    const int64_t blocks = (numel + kPer - 1) / kPer;
    for (int64_t block = first_index(); block < blocks; block += grid_stride()) {
        const Philox4 bits = philox4x32(seed, offset + uint64_t(block));
#pragma unroll
        for (int w = 0; w < kPer; ++w) {
            const int64_t i = block * kPer + w;
            if (i >= numel) continue;
            const P p = prob[i];
            if (!(p >= P(0) && p <= P(1))) atomicMin(first_invalid, (unsigned long long)i);
            out[i] = T(uniform_at<P>(bits.x, w) < p);
        }
    }
}

template <typename P, typename T>
__global__ void bernoulli_scalar_kernel(uint64_t seed, uint64_t offset, P threshold, T* out,
                                        int64_t numel) {
    constexpr int kPer = kUniformsPerBlock<P>;
    const int64_t blocks = (numel + kPer - 1) / kPer;
    for (int64_t block = first_index(); block < blocks; block += grid_stride()) {
        const Philox4 bits = philox4x32(seed, offset + uint64_t(block));
#pragma unroll
        for (int w = 0; w < kPer; ++w)
            if (block * kPer + w < numel)
                out[block * kPer + w] = T(uniform_at<P>(bits.x, w) < threshold);
    }
}

// Blocks for `numel` elements at `per_block` each: one thread per Philox block.
unsigned grid_for_blocks(int64_t numel, int64_t per_block) {
    return grid_for(int64_t(philox_blocks(numel, per_block)));
}

}  // namespace

void rand_forward(uint64_t seed, uint64_t offset, const StridedView& out) {
    const int64_t numel = out.numel();
    if (numel == 0) return;
    dispatch_floating(out.dtype, "rand", [&]<typename T>() {
        rand_kernel<T><<<grid_for_blocks(numel, kUniformsPerBlock<T>), 256>>>(seed, offset,
                                                                              out.ptr<T>(), numel);
    });
    LUMEN_CUDA_CHECK_LAUNCH("rand_kernel");
}

void randn_forward(uint64_t seed, uint64_t offset, const StridedView& out) {
    const int64_t numel = out.numel();
    if (numel == 0) return;
    dispatch_floating(out.dtype, "randn", [&]<typename T>() {
        randn_kernel<T><<<grid_for_blocks(numel, 2), 256>>>(seed, offset, out.ptr<T>(), numel);
    });
    LUMEN_CUDA_CHECK_LAUNCH("randn_kernel");
}

void randint_forward(uint64_t seed, uint64_t offset, int64_t low, int64_t high,
                     const StridedView& out) {
    const int64_t numel = out.numel();
    if (numel == 0) return;
    // Unsigned arithmetic: high - low may exceed INT64_MAX, and low + value wraps correctly.
    const uint64_t range = uint64_t(high) - uint64_t(low);
    dispatch_numeric(out.dtype, "randint", [&]<typename T>() {
        randint_kernel<T>
            <<<grid_for_blocks(numel, 2), 256>>>(seed, offset, low, range, out.ptr<T>(), numel);
    });
    LUMEN_CUDA_CHECK_LAUNCH("randint_kernel");
}

int64_t bernoulli_forward(uint64_t seed, uint64_t offset, const StridedView& p,
                          const StridedView& out) {
    const int64_t numel = out.numel();
    if (numel == 0) return -1;
    Scratch flag = Scratch::of<unsigned long long>(1);
    LUMEN_CUDA_CHECK(cudaMemsetAsync(flag.data(), 0xff, sizeof(unsigned long long)));
    dispatch_floating(p.dtype, "bernoulli", [&]<typename P>() {
        dispatch_numeric_bool(out.dtype, "bernoulli", [&]<typename T>() {
            bernoulli_kernel<P, T><<<grid_for_blocks(numel, kUniformsPerBlock<P>), 256>>>(
                seed, offset, p.ptr<const P>(), out.ptr<T>(), numel, flag.as<unsigned long long>());
        });
    });
    LUMEN_CUDA_CHECK_LAUNCH("bernoulli_kernel");
    // A synchronous copy on the default stream: it waits for the kernel.
    unsigned long long first = 0;
    LUMEN_CUDA_CHECK(cudaMemcpy(&first, flag.data(), sizeof first, cudaMemcpyDeviceToHost));
    return first == ~0ull ? -1 : int64_t(first);
}

void bernoulli_scalar_forward(uint64_t seed, uint64_t offset, double p, DType precision,
                              const StridedView& out) {
    const int64_t numel = out.numel();
    if (numel == 0) return;
    dispatch_floating(precision, "bernoulli", [&]<typename P>() {
        dispatch_numeric_bool(out.dtype, "bernoulli", [&]<typename T>() {
            bernoulli_scalar_kernel<P, T><<<grid_for_blocks(numel, kUniformsPerBlock<P>), 256>>>(
                seed, offset, P(p), out.ptr<T>(), numel);
        });
    });
    LUMEN_CUDA_CHECK_LAUNCH("bernoulli_scalar_kernel");
}

}  // namespace lumen::cuda
