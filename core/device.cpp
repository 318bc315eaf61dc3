// Device parsing and printing, and the CUDA queries, answered by core/cuda/runtime.cu when the
// program links the CUDA backend.
#include "core/device.h"

#include <string>
#include <utility>

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

std::string cpu_code_info() {
#if defined(__x86_64__)
    // Fixed by the compiler flags this file was built with, as the rest of the library.
    std::string compiled = ""
#ifdef __SSE4_2__
                           " sse4.2"
#endif
#ifdef __AVX__
                           " avx"
#endif
#ifdef __AVX2__
                           " avx2"
#endif
#ifdef __FMA__
                           " fma"
#endif
#ifdef __AVX512F__
                           " avx512f"
#endif
        ;
    __builtin_cpu_init();
    std::string cpu;
    for (auto [name, present] : {std::pair{"sse4.2", __builtin_cpu_supports("sse4.2")},
                                 std::pair{"avx", __builtin_cpu_supports("avx")},
                                 std::pair{"avx2", __builtin_cpu_supports("avx2")},
                                 std::pair{"fma", __builtin_cpu_supports("fma")},
                                 std::pair{"avx512f", __builtin_cpu_supports("avx512f")}}) {
        if (present) cpu += std::string(" ") + name;
    }
    return (compiled.empty() ? std::string("portable x86-64 (sse2)") : "native:" + compiled) +
           " (this CPU:" + (cpu.empty() ? std::string(" sse2") : cpu) + ")";
#else
    return "this architecture's baseline";
#endif
}

// A weak function's address is null when its definition was not linked in.
bool cuda_built() { return &cuda::device_count != nullptr; }
int cuda_device_count() { return cuda_built() ? cuda::device_count() : 0; }
void cuda_synchronize() {
    if (cuda_built()) cuda::synchronize();
}

}  // namespace lumen
