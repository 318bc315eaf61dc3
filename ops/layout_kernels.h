// Internal: the kernels of the layout family (flip, tril/triu, cumsum), on the CPU
// (ops/cpu/layout.cpp) and on CUDA (ops/cuda/layout.cu) with the same signatures. flip and
// tril/triu move elements of any dtype by size; cumsum adds float32/float64 (accumulated in
// double) and integer dtypes (accumulated and stored as int64). Checks are the caller's
// (ops/layout.cpp).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/cuda_guard.h"
#include "core/strided.h"

namespace lumen {

// cumsum's accumulation and output types for input T: float32 and float64 add in double and
// keep their dtype (as PyTorch's CPU cumsum); integers and bool give int64; float16 and
// bfloat16 (CUDA only) add in float and keep their dtype.
template <typename T>
struct CumsumTypes {
    static constexpr bool kHalf = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
    static constexpr bool kFloat = kHalf || std::is_floating_point_v<T>;
    using acc = std::conditional_t<kHalf, float, std::conditional_t<kFloat, double, int64_t>>;
    using out = std::conditional_t<kFloat, T, int64_t>;
};

namespace cpu {

// out = x with the dims whose bit is set in `flipped` reversed. x any strides, out contiguous
// of the same shape and dtype.
void flip_forward(const StridedView& x, const StridedView& out, uint32_t flipped);

// Over the last two dims (rows, cols) of contiguous x and out: keep x where
// col - row <= diagonal (lower) or col - row >= diagonal (upper), zero elsewhere.
void tril_forward(const StridedView& x, const StridedView& out, int64_t diagonal, bool lower);

// out = running sum of x along `dim` (from the end when `reverse`), one sequential sum per
// line. x and out contiguous of the same shape; out is x's dtype for floating x, int64 for
// integer and bool x.
void cumsum_forward(const StridedView& x, const StridedView& out, int dim, bool reverse);

}  // namespace cpu

// The same kernels on the tensors' CUDA device (ops/cuda/layout.cu). cumsum also takes float16
// and bfloat16 there (accumulated in float, stored in the input's dtype); its lines are summed
// in a different order than on the CPU for lines that are contiguous and long (a warp scan).
namespace cuda {
LUMEN_CUDA_API void flip_forward(const StridedView& x, const StridedView& out, uint32_t flipped);
LUMEN_CUDA_API void tril_forward(const StridedView& x, const StridedView& out, int64_t diagonal,
                                 bool lower);
LUMEN_CUDA_API void cumsum_forward(const StridedView& x, const StridedView& out, int dim,
                                   bool reverse);
}  // namespace cuda

}  // namespace lumen
