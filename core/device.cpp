// Device parsing and printing; the CUDA queries live in core/cuda/runtime.cu when built.
#include "core/device.h"

#include "core/error.h"

namespace lumen {

Device Device::parse(const std::string& text) {
    if (text == "cpu") return cpu();
    if (text == "cuda") return cuda(0);
    if (text.rfind("cuda:", 0) == 0) {
        const std::string digits = text.substr(5);
        LUMEN_CHECK(!digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos,
                    "device", "bad device string '", text, "', expected cpu, cuda or cuda:N");
        return cuda(std::stoi(digits));
    }
    LUMEN_FAIL("device", "bad device string '", text, "', expected cpu, cuda or cuda:N");
}

std::string Device::str() const {
    return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

std::ostream& operator<<(std::ostream& os, const Device& device) { return os << device.str(); }

#if !LUMEN_CUDA
bool cuda_built() { return false; }
int cuda_device_count() { return 0; }
void cuda_synchronize() {}
#endif

}  // namespace lumen
