// DType tables, promotion and the IEEE half conversions.
#include "core/dtype.h"

#include <cmath>

#include "core/error.h"

namespace lumen {

size_t itemsize(DType dtype) {
    switch (dtype) {
        case DType::float64:
        case DType::int64: return 8;
        case DType::float32:
        case DType::int32: return 4;
        case DType::float16:
        case DType::bfloat16: return 2;
        case DType::uint8:
        case DType::bool_: return 1;
    }
    LUMEN_ASSERT(false);
    return 0;
}

const char* dtype_name(DType dtype) {
    switch (dtype) {
        case DType::float32: return "float32";
        case DType::float64: return "float64";
        case DType::float16: return "float16";
        case DType::bfloat16: return "bfloat16";
        case DType::int64: return "int64";
        case DType::int32: return "int32";
        case DType::uint8: return "uint8";
        case DType::bool_: return "bool";
    }
    return "?";
}

bool is_floating(DType dtype) {
    return dtype == DType::float32 || dtype == DType::float64 || dtype == DType::float16 ||
           dtype == DType::bfloat16;
}

bool is_integral(DType dtype) { return !is_floating(dtype); }

static int rank(DType dtype) {
    switch (dtype) {
        case DType::bool_: return 0;
        case DType::uint8: return 1;
        case DType::int32: return 2;
        case DType::int64: return 3;
        case DType::float16:
        case DType::bfloat16: return 4;
        case DType::float32: return 5;
        case DType::float64: return 6;
    }
    return 0;
}

DType promote_types(DType a, DType b) {
    if (a == b) return a;
    if ((a == DType::float16 && b == DType::bfloat16) ||
        (a == DType::bfloat16 && b == DType::float16))
        return DType::float32;
    return rank(a) >= rank(b) ? a : b;
}

std::ostream& operator<<(std::ostream& os, DType dtype) { return os << dtype_name(dtype); }

float half_to_float(Half value) {
    uint32_t sign = uint32_t(value.bits & 0x8000u) << 16;
    uint32_t exponent = (value.bits >> 10) & 0x1fu;
    uint32_t mantissa = value.bits & 0x3ffu;
    uint32_t bits;
    if (exponent == 0x1f) {
        bits = sign | 0x7f800000u | (mantissa << 13);  // inf / NaN
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
    } else if (mantissa == 0) {
        bits = sign;
    } else {
        // Subnormal half: shift the mantissa up until its leading one becomes implicit.
        int shift = 0;
        while (!(mantissa & 0x400u)) {
            mantissa <<= 1;
            ++shift;
        }
        bits = sign | uint32_t(113 - shift) << 23 | ((mantissa & 0x3ffu) << 13);
    }
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
}

Half float_to_half(float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
    uint32_t abs_bits = bits & 0x7fffffffu;
    if (abs_bits > 0x7f800000u) return Half{uint16_t(sign | 0x7e00u)};  // NaN
    if (abs_bits >= 0x477ff000u) return Half{uint16_t(sign | 0x7c00u)}; // overflow to inf
    if (abs_bits < 0x38800000u) {
        // Subnormal or zero: add 0.5 so that the float adder does the rounding for us.
        float magnitude;
        std::memcpy(&magnitude, &abs_bits, 4);
        float scaled = magnitude * 16777216.0f;  // 2^24: one half-subnormal ulp becomes 1
        return Half{uint16_t(sign | uint16_t(std::lrint(scaled)))};
    }
    uint32_t rounded = abs_bits + 0xfffu + ((abs_bits >> 13) & 1u);  // nearest even
    return Half{uint16_t(sign | ((rounded - 0x38000000u) >> 13))};
}

}  // namespace lumen
