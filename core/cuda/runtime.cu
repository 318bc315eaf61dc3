// The CUDA side of core: device queries, host<->device copies and fill (device memory is
// core/cuda/allocator.cu). Part of lumen_cuda (core/cuda_guard.h).
#include <cstdint>

#include "core/cuda/cuda_check.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/storage.h"

namespace lumen::cuda {

int device_count() {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        cudaGetLastError();  // clear the sticky "no device" error
        return 0;
    }
    return count;
}

void synchronize() { LUMEN_CUDA_CHECK(cudaDeviceSynchronize()); }

void* timing_event_record() {
    cudaEvent_t event = nullptr;
    LUMEN_CUDA_CHECK(cudaEventCreate(&event));
    LUMEN_CUDA_CHECK(cudaEventRecord(event, 0));
    return event;
}

float timing_event_elapsed_ms(void* start, void* end) {
    auto stop = static_cast<cudaEvent_t>(end);
    LUMEN_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    LUMEN_CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), stop));
    return ms;
}

void timing_event_destroy(void* event) { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

void memcpy(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
    cudaMemcpyKind kind = dst_device.is_cpu() ? cudaMemcpyDeviceToHost
                          : src_device.is_cpu() ? cudaMemcpyHostToDevice
                                                : cudaMemcpyDeviceToDevice;
    LUMEN_CUDA_CHECK(cudaMemcpy(dst, src, nbytes, kind));
}

void memcpy_async(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
    cudaMemcpyKind kind = dst_device.is_cpu() ? cudaMemcpyDeviceToHost
                          : src_device.is_cpu() ? cudaMemcpyHostToDevice
                                                : cudaMemcpyDeviceToDevice;
    LUMEN_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, kind, cudaStream_t(0)));
}

void* host_allocate(size_t nbytes) {
    void* data = nullptr;
    cudaError_t status = cudaHostAlloc(&data, nbytes, cudaHostAllocDefault);
    if (status != cudaSuccess) {
        cudaGetLastError();  // reset the error so later calls do not report it
        LUMEN_FAIL("cuda", "cannot allocate ", nbytes, " bytes of pinned host memory: ",
                   cudaGetErrorString(status));
    }
    return data;
}

void host_free(void* data) { cudaFreeHost(data); }

template <typename T>
__global__ void fill_kernel(T* data, int64_t count, T value) {
    int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    for (; i < count; i += int64_t(gridDim.x) * blockDim.x) data[i] = value;
}

template <typename T>
void launch_fill(void* data, int64_t count, T value) {
    int threads = 256;
    int64_t blocks = (count + threads - 1) / threads;
    int grid = int(blocks < 65535 ? blocks : 65535);
    fill_kernel<T><<<grid, threads>>>(static_cast<T*>(data), count, value);
    LUMEN_CUDA_CHECK_LAUNCH("fill_kernel");
}

void fill(void* data, DType dtype, int64_t count, double value) {
    switch (dtype) {
        case DType::float32: return launch_fill<float>(data, count, float(value));
        case DType::float64: return launch_fill<double>(data, count, value);
        case DType::float16: return launch_fill<uint16_t>(data, count, float_to_half(float(value)).bits);
        case DType::bfloat16: return launch_fill<uint16_t>(data, count, float_to_bf16(float(value)).bits);
        case DType::int64: return launch_fill<int64_t>(data, count, int64_t(value));
        case DType::int32: return launch_fill<int32_t>(data, count, int32_t(value));
        case DType::uint8: return launch_fill<uint8_t>(data, count, uint8_t(value));
        case DType::bool_: return launch_fill<uint8_t>(data, count, uint8_t(value != 0));
    }
}

}  // namespace lumen::cuda
