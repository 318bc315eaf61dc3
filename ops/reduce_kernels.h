// Internal: the CPU reduction kernels (sum, mean, amax/amin, arg max/min, var, logsumexp) and
// the inline vector helpers that the reduce and softmax kernels share (a float exp, a
// NaN-propagating extremum and a lane sum, all of which GCC vectorizes without -ffast-math).
// The CUDA kernels (ops/cuda/reduce.cu) have the same signatures and semantics.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/cuda_guard.h"
#include "core/strided.h"

namespace lumen {

enum class ReduceOp { sum, mean, amax, amin };

namespace cpu {

// Every kernel here sees a reduction the same way: `x` with any strides, and each output
// viewed with x's shape and stride 0 along the reduced dims (bit d of `reduced` = dim d), so
// that out[position] receives every x element that maps to it. Outputs are contiguous in their
// own (kept) layout and share their strides. The caller has rejected empty reductions where
// they are an error (amax, arg max, ...).

// out = op over the reduced dims. sum: out is int64 for integer and bool x, x's dtype
// otherwise; mean, amax, amin: x's dtype (floating for mean). Reducing zero elements gives
// 0 (sum) or NaN (mean).
void reduce_forward(ReduceOp op, const StridedView& x, const StridedView& out, uint32_t reduced);

// values = max/min of x along `dim`, indices (int64) = position of its first occurrence;
// NaN counts as larger and smaller than everything, as in PyTorch.
void arg_reduce_forward(bool is_max, const StridedView& x, int dim, const StridedView& values,
                        const StridedView& indices);

// out = sum((x - mean)^2) / max(n - correction, 0) over the reduced dims (two passes, so no
// cancellation), or its square root when take_sqrt. Floating x; out has x's dtype.
void var_forward(const StridedView& x, const StridedView& out, uint32_t reduced, double correction,
                 bool take_sqrt);

// out = m + log(sum(exp(x - m))) with m the max over the reduced dims (m = +-inf is handled so
// that all -inf gives -inf and any +inf gives +inf). Floating x; out has x's dtype.
void logsumexp_forward(const StridedView& x, const StridedView& out, uint32_t reduced);

}  // namespace cpu

// The same kernels on the tensors' CUDA device (ops/cuda/reduce.cu): float32, float64 and
// float16/bfloat16 (accumulated in float, results in the input dtype), and for sum, amax/amin
// and arg max/min also int64, int32, uint8 and bool.
namespace cuda {
LUMEN_CUDA_API void reduce_forward(ReduceOp op, const StridedView& x, const StridedView& out,
                                   uint32_t reduced);
LUMEN_CUDA_API void arg_reduce_forward(bool is_max, const StridedView& x, int dim,
                                       const StridedView& values, const StridedView& indices);
LUMEN_CUDA_API void var_forward(const StridedView& x, const StridedView& out, uint32_t reduced,
                                double correction, bool take_sqrt);
LUMEN_CUDA_API void logsumexp_forward(const StridedView& x, const StridedView& out,
                                      uint32_t reduced);
}  // namespace cuda

namespace cpu {
namespace vec {

// a * b + c, fused when the target has FMA (std::fma would be a library call otherwise).
inline float madd(float a, float b, float c) {
#ifdef __FMA__
    return std::fma(a, b, c);
#else
    return a * b + c;
#endif
}

// exp(x) for x <= 88, the range that softmax and logsumexp need (they pass x - max <= 0),
// in plain arithmetic so that loops calling it vectorize (std::exp does not, and clamping
// both ends costs a quarter of the time in GCC's selects). Cephes' expf: x = n ln2 + r with
// |r| <= ln2 / 2, a degree-6 polynomial for e^r (max relative error ~1.2e-7 measured), and
// 2^n built in the exponent bits in two halves so that results underflow to 0 by themselves
// (x = -inf gives exactly 0, as masked softmax entries must). n is read from the bits of
// the rounded sum (the 1.5 * 2^23 trick), so no float->int conversion is needed. NaN stays
// NaN: the clamp keeps it and it propagates through the polynomial.
inline float exp_nonpositive(float x) {
    constexpr float kLo = -104.0f;         // e^-104 < half the least denormal: rounds to 0
    constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
    float c = kLo > x ? kLo : x;
    float shifted = madd(c, 1.44269504088896341f, kRound);  // c / ln2 + 1.5 * 2^23
    float n = shifted - kRound;
    int32_t exponent = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(kRound);
    float r = madd(n, -0.693359375f, c);  // ln2 split in two parts for an exact product
    r = madd(n, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = madd(p, r, 1.3981999507e-3f);
    p = madd(p, r, 8.3334519073e-3f);
    p = madd(p, r, 4.1665795894e-2f);
    p = madd(p, r, 1.6666665459e-1f);
    p = madd(p, r, 5.0000001201e-1f);
    p = madd(p, r * r, r + 1.0f);
    int32_t half = exponent >> 1;
    float scale_a = std::bit_cast<float>((half + 127) << 23);
    float scale_b = std::bit_cast<float>((exponent - half + 127) << 23);
    return p * scale_a * scale_b;
}

// Double precision serves gradient checks, where speed does not matter.
inline double exp_nonpositive(double x) { return std::exp(x); }

// The max (kMax) or min of x[0..n), n >= 1, or NaN if any element is NaN. 32 (16 for 8-byte
// types) lanes keep independent running extrema so the loop vectorizes; NaNs are flagged in
// integer lanes because an extremum via comparisons alone drops them.
template <bool kMax, typename T>
T extremum(const T* x, int64_t n) {
    constexpr int kLanes = sizeof(T) >= 8 ? 16 : 32;
    auto better = [](T v, T best) { return kMax ? v > best : v < best; };
    T lanes[kLanes];
    int32_t nan[kLanes] = {};
    for (int j = 0; j < kLanes; ++j) lanes[j] = x[0];
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) {
            T v = x[i + j];
            lanes[j] = better(v, lanes[j]) ? v : lanes[j];
            nan[j] |= v != v;
        }
    }
    T best = lanes[0];
    int32_t any_nan = 0;
    for (int j = 0; j < kLanes; ++j) {
        best = better(lanes[j], best) ? lanes[j] : best;
        any_nan |= nan[j];
    }
    for (; i < n; ++i) {
        best = better(x[i], best) ? x[i] : best;
        any_nan |= x[i] != x[i];
    }
    return any_nan ? std::numeric_limits<T>::quiet_NaN() : best;
}

// The sum of term(i) for i < n, in double; term returns T. Four AVX2 registers of running
// sums (independent lanes, so the loop vectorizes without -ffast-math); every block of 4096
// terms is folded into double totals, so each float lane adds only 128 terms and long runs
// keep their precision.
template <typename T, typename Term>
double lane_sum(int64_t n, Term term) {
    constexpr int kWidth = 32 / sizeof(T);  // elements per AVX2 register
    constexpr int kLanes = 4 * kWidth;
    constexpr int64_t kBlock = 4096;
    double totals[kWidth] = {};
    int64_t i = 0;
    while (n - i >= kLanes) {
        int64_t end = i + std::min<int64_t>(kBlock, (n - i) / kLanes * kLanes);
        T lanes[kLanes] = {};
        for (; i < end; i += kLanes)
            for (int j = 0; j < kLanes; ++j) lanes[j] += term(i + j);
        for (int j = 0; j < kWidth; ++j)
            totals[j] += double((lanes[j] + lanes[j + kWidth]) +
                                (lanes[j + 2 * kWidth] + lanes[j + 3 * kWidth]));
    }
    double total = 0;
    for (int j = 0; j < kWidth; ++j) total += totals[j];
    for (; i < n; ++i) total += double(term(i));
    return total;
}

}  // namespace vec
}  // namespace cpu
}  // namespace lumen
