// Element types: DType, their sizes and names, type promotion, and the 16-bit float formats.
// Compute kernels dispatch on DType with dispatch.h; float16/bfloat16 are storage and
// conversion types on CPU (CUDA kernels compute with them).
#pragma once

#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>

namespace lumen {

enum class DType : uint8_t { float32, float64, float16, bfloat16, int64, int32, uint8, bool_ };

constexpr DType kDefaultFloat = DType::float32;

size_t itemsize(DType dtype);
const char* dtype_name(DType dtype);  // "float32", "int64", "bool", ...
bool is_floating(DType dtype);        // float32, float64, float16, bfloat16
bool is_integral(DType dtype);        // int64, int32, uint8, bool

// PyTorch's promotion for two tensors: bool < uint8 < int32 < int64 < half types < float32
// < float64; float16 with bfloat16 gives float32.
DType promote_types(DType a, DType b);

std::ostream& operator<<(std::ostream& os, DType dtype);

// IEEE half and bfloat16 as 16-bit payloads with round-to-nearest-even conversion.
struct Half {
    uint16_t bits = 0;
};
struct BFloat16 {
    uint16_t bits = 0;
};

inline float bf16_to_float(BFloat16 value) {
    uint32_t bits = uint32_t(value.bits) << 16;
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

inline BFloat16 float_to_bf16(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return BFloat16{uint16_t((bits >> 16) | 0x40)};  // NaN
    bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
    return BFloat16{uint16_t(bits >> 16)};
}

float half_to_float(Half value);
Half float_to_half(float value);

// The C++ type stored for each DType (bool is stored as one byte, 0 or 1).
template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::float32; }
template <> constexpr DType dtype_of<double>() { return DType::float64; }
template <> constexpr DType dtype_of<Half>() { return DType::float16; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::bfloat16; }
template <> constexpr DType dtype_of<int64_t>() { return DType::int64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::int32; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::uint8; }
template <> constexpr DType dtype_of<bool>() { return DType::bool_; }

}  // namespace lumen
