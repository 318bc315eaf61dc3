// Where a tensor lives: Device::cpu() or Device::cuda(i).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

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

// True when lumen was built with CUDA (LUMEN_CUDA=ON).
bool cuda_built();
// Number of visible CUDA devices; 0 without CUDA or without a GPU (never throws).
int cuda_device_count();
inline bool cuda_available() { return cuda_device_count() > 0; }
// Waits until all work queued on the current CUDA device has finished (for timing); a no-op
// without CUDA.
void cuda_synchronize();

}  // namespace lumen
