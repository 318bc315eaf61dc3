// Runs a templated lambda for the C++ type behind a DType:
//   dispatch_floating(x.dtype(), "exp", [&]<typename T>() { exp_kernel<T>(...); });
// Each helper lists the dtypes it accepts and throws [op] naming the dtype for the others.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/dtype.h"
#include "core/error.h"

namespace lumen {

// float32, float64.
template <typename F>
decltype(auto) dispatch_floating(DType dtype, const char* op, F&& body) {
    switch (dtype) {
        case DType::float32: return body.template operator()<float>();
        case DType::float64: return body.template operator()<double>();
        default:
            LUMEN_FAIL(op, "not implemented for dtype ", dtype, " (expected float32 or float64",
                       dtype == DType::float16 || dtype == DType::bfloat16
                           ? "; half types compute on CUDA only)" : ")");
    }
}

// float32, float64, float16, bfloat16: CUDA kernels that compute the half types (in float,
// see core/cuda/kernel_util.cuh).
template <typename F>
decltype(auto) dispatch_floating_half(DType dtype, const char* op, F&& body) {
    switch (dtype) {
        case DType::float16: return body.template operator()<Half>();
        case DType::bfloat16: return body.template operator()<BFloat16>();
        case DType::float32: return body.template operator()<float>();
        case DType::float64: return body.template operator()<double>();
        default:
            LUMEN_FAIL(op, "not implemented for dtype ", dtype,
                       " (expected float32, float64, float16 or bfloat16)");
    }
}

// float32, float64, int64, int32, uint8.
template <typename F>
decltype(auto) dispatch_numeric(DType dtype, const char* op, F&& body) {
    switch (dtype) {
        case DType::float32: return body.template operator()<float>();
        case DType::float64: return body.template operator()<double>();
        case DType::int64: return body.template operator()<int64_t>();
        case DType::int32: return body.template operator()<int32_t>();
        case DType::uint8: return body.template operator()<uint8_t>();
        default:
            LUMEN_FAIL(op, "not implemented for dtype ", dtype,
                       " (expected float32, float64, int64, int32 or uint8)");
    }
}

// Every numeric dtype and bool (comparisons, where, copies within the same type).
template <typename F>
decltype(auto) dispatch_numeric_bool(DType dtype, const char* op, F&& body) {
    if (dtype == DType::bool_) return body.template operator()<bool>();
    return dispatch_numeric(dtype, op, static_cast<F&&>(body));
}

// Every dtype, the 16-bit float storage types included (copies and conversions).
template <typename F>
decltype(auto) dispatch_all(DType dtype, const char* op, F&& body) {
    switch (dtype) {
        case DType::float16: return body.template operator()<Half>();
        case DType::bfloat16: return body.template operator()<BFloat16>();
        default: return dispatch_numeric_bool(dtype, op, static_cast<F&&>(body));
    }
}

// An unsigned integer type of the dtype's size, for kernels that only move bits (gather,
// index_select, flips): every dtype, half types included, then needs one instantiation per size.
template <typename F>
decltype(auto) dispatch_bits(DType dtype, F&& body) {
    switch (itemsize(dtype)) {
        case 1: return body.template operator()<uint8_t>();
        case 2: return body.template operator()<uint16_t>();
        case 4: return body.template operator()<uint32_t>();
        default: return body.template operator()<uint64_t>();
    }
}

// Value conversion between any two storage types (half types go through float).
template <typename To, typename From>
inline To convert(From value) {
    if constexpr (std::is_same_v<From, Half>) {
        return convert<To>(half_to_float(value));
    } else if constexpr (std::is_same_v<From, BFloat16>) {
        return convert<To>(bf16_to_float(value));
    } else if constexpr (std::is_same_v<To, Half>) {
        return float_to_half(float(value));
    } else if constexpr (std::is_same_v<To, BFloat16>) {
        return float_to_bf16(float(value));
    } else if constexpr (std::is_same_v<To, bool>) {
        return value != From(0);
    } else {
        return static_cast<To>(value);
    }
}

}  // namespace lumen
