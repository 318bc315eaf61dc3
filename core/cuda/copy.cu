// The strided copy kernel on one CUDA device: any dtype to any dtype, the source broadcast to
// the destination's shape (stride 0), both strided. One thread per destination element (grid
// stride loop); offsets come from the row-major index through each view's shape and strides.
// Integers and bool convert through int64 (exact), everything else through double; float16
// and bfloat16 round to nearest even as on the CPU.
#include <cuda_fp16.h>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/cuda/strided.cuh"

namespace lumen::cuda {
namespace {

__device__ bool integral_dtype(DType dtype) {
    return dtype == DType::int64 || dtype == DType::int32 || dtype == DType::uint8 ||
           dtype == DType::bool_;
}

__device__ double load_double(const void* data, DType dtype, int64_t i) {
    switch (dtype) {
        case DType::float32: return static_cast<const float*>(data)[i];
        case DType::float64: return static_cast<const double*>(data)[i];
        case DType::float16:
            return __half2float(__ushort_as_half(static_cast<const uint16_t*>(data)[i]));
        case DType::bfloat16: return bf16_bits_to_float(static_cast<const uint16_t*>(data)[i]);
        case DType::int64: return double(static_cast<const int64_t*>(data)[i]);
        case DType::int32: return static_cast<const int32_t*>(data)[i];
        case DType::uint8: return static_cast<const uint8_t*>(data)[i];
        case DType::bool_: return static_cast<const uint8_t*>(data)[i] != 0;
    }
    return 0;
}

__device__ int64_t load_int(const void* data, DType dtype, int64_t i) {
    switch (dtype) {
        case DType::int64: return static_cast<const int64_t*>(data)[i];
        case DType::int32: return static_cast<const int32_t*>(data)[i];
        case DType::uint8: return static_cast<const uint8_t*>(data)[i];
        case DType::bool_: return static_cast<const uint8_t*>(data)[i] != 0;
        default: return int64_t(load_double(data, dtype, i));
    }
}

__device__ void store_double(void* data, DType dtype, int64_t i, double value) {
    switch (dtype) {
        case DType::float32: static_cast<float*>(data)[i] = float(value); return;
        case DType::float64: static_cast<double*>(data)[i] = value; return;
        case DType::float16:
            static_cast<uint16_t*>(data)[i] = __half_as_ushort(__float2half_rn(float(value)));
            return;
        case DType::bfloat16: static_cast<uint16_t*>(data)[i] = float_to_bf16_bits(float(value)); return;
        case DType::int64: static_cast<int64_t*>(data)[i] = int64_t(value); return;
        case DType::int32: static_cast<int32_t*>(data)[i] = int32_t(value); return;
        case DType::uint8: static_cast<uint8_t*>(data)[i] = uint8_t(int64_t(value)); return;
        case DType::bool_: static_cast<uint8_t*>(data)[i] = value != 0; return;
    }
}

__device__ void store_int(void* data, DType dtype, int64_t i, int64_t value) {
    switch (dtype) {
        case DType::int64: static_cast<int64_t*>(data)[i] = value; return;
        case DType::int32: static_cast<int32_t*>(data)[i] = int32_t(value); return;
        case DType::uint8: static_cast<uint8_t*>(data)[i] = uint8_t(value); return;
        case DType::bool_: static_cast<uint8_t*>(data)[i] = value != 0; return;
        default: store_double(data, dtype, i, double(value));
    }
}

__global__ void copy_kernel(StridedView dst, StridedView src, int64_t count) {
    bool integral = integral_dtype(dst.dtype) && integral_dtype(src.dtype);
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t to = strided_offset(dst, i), from = strided_offset(src, i);
        if (integral) {
            store_int(dst.data, dst.dtype, to, load_int(src.data, src.dtype, from));
        } else {
            store_double(dst.data, dst.dtype, to, load_double(src.data, src.dtype, from));
        }
    }
}

}  // namespace

void copy_strided(const StridedView& dst, const StridedView& src) {
    int64_t count = dst.numel();
    if (count == 0) return;
    copy_kernel<<<grid_for(count), 256>>>(dst, src, count);
    LUMEN_CUDA_CHECK_LAUNCH("copy_kernel");
}

}  // namespace lumen::cuda
