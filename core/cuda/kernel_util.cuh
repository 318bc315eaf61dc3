// Device helpers shared by every CUDA kernel: the accumulation type of each storage type,
// loads and stores of float16/bfloat16 (computed in float, rounded to nearest even on the way
// back), and warp/block reductions built on shuffles. Launch shapes are in strided.cuh.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/dtype.h"

namespace lumen::cuda {

constexpr int kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// The type a kernel computes and accumulates in: double for float64, float for everything
// narrower (float32, float16, bfloat16). A half-precision running sum would drop terms below
// ~1/1000 (float16) or ~1/256 (bfloat16) of its value.
template <typename T>
struct AccType {
    using type = T;
};
template <>
struct AccType<Half> {
    using type = float;
};
template <>
struct AccType<BFloat16> {
    using type = float;
};
template <typename T>
using acc_t = typename AccType<T>::type;

// Whether T is one of the 16-bit float storage types.
template <typename T>
constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

__device__ __forceinline__ float bf16_bits_to_float(uint16_t bits) {
    return __uint_as_float(uint32_t(bits) << 16);
}

// Round to nearest even; a NaN stays a quiet NaN (truncation could turn it into infinity).
__device__ __forceinline__ uint16_t float_to_bf16_bits(float value) {
    uint32_t bits = __float_as_uint(value);
    if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x007fffffu) != 0)
        return uint16_t((bits >> 16) | 0x40);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return uint16_t(bits >> 16);
}

// A stored value in its accumulation type.
template <typename T>
__device__ __forceinline__ acc_t<T> to_acc(T value) {
    if constexpr (std::is_same_v<T, Half>) {
        return __half2float(__ushort_as_half(value.bits));
    } else if constexpr (std::is_same_v<T, BFloat16>) {
        return bf16_bits_to_float(value.bits);
    } else {
        return value;
    }
}

// An accumulated value back to storage (rounded to nearest even for the half types).
template <typename T>
__device__ __forceinline__ T from_acc(acc_t<T> value) {
    if constexpr (std::is_same_v<T, Half>) {
        T out;
        out.bits = __half_as_ushort(__float2half_rn(value));
        return out;
    } else if constexpr (std::is_same_v<T, BFloat16>) {
        T out;
        out.bits = float_to_bf16_bits(value);
        return out;
    } else {
        return T(value);
    }
}

// NaN-propagating max and min, as torch.amax: a NaN anywhere wins.
template <typename T>
__device__ __forceinline__ T nan_max(T a, T b) {
    return (a != a || a > b) ? a : b;
}
template <typename T>
__device__ __forceinline__ T nan_min(T a, T b) {
    return (a != a || a < b) ? a : b;
}

// Reductions across the 32 lanes of a warp; every lane gets the result.
template <typename T>
__device__ __forceinline__ T warp_sum(T value) {
    for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
        value += __shfl_xor_sync(kFullMask, value, offset);
    return value;
}
template <typename T>
__device__ __forceinline__ T warp_max(T value) {
    for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
        value = nan_max(value, __shfl_xor_sync(kFullMask, value, offset));
    return value;
}
template <typename T>
__device__ __forceinline__ T warp_min(T value) {
    for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
        value = nan_min(value, __shfl_xor_sync(kFullMask, value, offset));
    return value;
}

// A reduction over the whole block (blockDim.x a multiple of 32, at most 1024); every thread
// gets the result. `scratch` holds kWarpSize values in shared memory; the leading and trailing
// barriers make back-to-back calls with the same scratch safe. Call from every thread.
template <typename T, typename WarpReduce>
__device__ __forceinline__ T block_reduce(T value, T* scratch, T identity, WarpReduce reduce) {
    int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    int warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
    value = reduce(value);
    __syncthreads();
    if (lane == 0) scratch[warp] = value;
    __syncthreads();
    value = lane < warps ? scratch[lane] : identity;
    return reduce(value);
}

template <typename T>
__device__ __forceinline__ T block_sum(T value, T* scratch) {
    return block_reduce(value, scratch, T(0), [](T v) { return warp_sum(v); });
}
template <typename T>
__device__ __forceinline__ T block_max(T value, T* scratch) {
    return block_reduce(value, scratch, T(-INFINITY), [](T v) { return warp_max(v); });
}
template <typename T>
__device__ __forceinline__ T block_min(T value, T* scratch) {
    return block_reduce(value, scratch, T(INFINITY), [](T v) { return warp_min(v); });
}

}  // namespace lumen::cuda
