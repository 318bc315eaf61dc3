// Where a tensor lives: Device::cpu() or Device::cuda(i).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "core/cuda_guard.h"

namespace lumen {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
    DeviceType type = DeviceType::cpu;
    int index = 0;

    static Device cpu() { return {DeviceType::cpu, 0}; }
    static Device cuda(int index = 0) { return {DeviceType::cuda, index}; }
    // Parses "cpu", "cuda", "cuda:1"; throws [device] on anything else.
    static Device parse(const std::string& text);

    bool is_cpu() const { return type == DeviceType::cpu; }
    bool is_cuda() const { return type == DeviceType::cuda; }
    bool operator==(const Device& other) const {
        return type == other.type && (type == DeviceType::cpu || index == other.index);
    }
    bool operator!=(const Device& other) const { return !(*this == other); }
    std::string str() const;
};

std::ostream& operator<<(std::ostream& os, const Device& device);

// True when this program contains lumen's CUDA backend (lumen built with LUMEN_CUDA=ON and the
// program linked with lumen::cuda; see core/cuda_guard.h).
bool cuda_built();
// Number of visible CUDA devices; 0 without CUDA or without a GPU (never throws).
int cuda_device_count();
inline bool cuda_available() { return cuda_device_count() > 0; }
// Waits until all work queued on the current CUDA device has finished (for timing); a no-op
// without CUDA.
void cuda_synchronize();

// Which x86 instruction sets lumen's CPU code was compiled to use (fixed when lumen was built:
// portable, or native with LUMEN_NATIVE) and which this CPU has, for `lumen info`, e.g.
// "native: sse4.2 avx avx2 fma (this CPU: sse4.2 avx avx2 fma avx512f)".
std::string cpu_code_info();

// The backend's device queries (core/cuda/runtime.cu), weak: see core/cuda_guard.h.
namespace cuda {
LUMEN_CUDA_API int device_count();
LUMEN_CUDA_API void synchronize();
// CUDA events for the profiler (core/profiler.h): one created and recorded now on the current
// device's stream; the milliseconds from start to end (waits for end); destroy.
LUMEN_CUDA_API void* timing_event_record();
LUMEN_CUDA_API float timing_event_elapsed_ms(void* start, void* end);
LUMEN_CUDA_API void timing_event_destroy(void* event);
}  // namespace cuda

}  // namespace lumen
