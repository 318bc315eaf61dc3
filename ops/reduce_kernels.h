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
// These helpers are always inlined: a call per element keeps the caller's loop scalar (GCC
// left exp_nonpositive out of line in the elementwise kernels, 10x slower).
[[gnu::always_inline]] inline float madd(float a, float b, float c) {
#ifdef __FMA__
    return std::fma(a, b, c);
#else
    return a * b + c;
#endif
}

// e^c for c in [-104, 89] (the callers clamp), in plain arithmetic so that loops calling it
// vectorize (std::exp does not). Cephes' expf: c = n ln2 + r with |r| <= ln2 / 2, a degree-6
// polynomial for e^r (max relative error ~1.2e-7 measured), and 2^n built in the exponent bits
// in two halves so that results underflow to 0 and overflow to inf by themselves. n is read
// from the bits of the rounded sum (the 1.5 * 2^23 trick), so no float->int conversion is
// needed. NaN propagates through the polynomial.
[[gnu::always_inline]] inline float exp_clamped(float c) {
    constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
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

// exp(x) for x <= 88, the range that softmax and logsumexp need (they pass x - max <= 0):
// only the lower end is clamped (clamping both ends costs a quarter of the time in GCC's
// selects). e^-104 is below half the least denormal, so x = -inf gives exactly 0, as masked
// softmax entries must. NaN stays NaN: the clamp keeps it.
[[gnu::always_inline]] inline float exp_nonpositive(float x) {
    constexpr float kLo = -104.0f;
    return exp_clamped(kLo > x ? kLo : x);
}

// exp(x) over the whole float range: e^89 overflows to inf as e^x does above ~88.72.
[[gnu::always_inline]] inline float exp(float x) {
    constexpr float kLo = -104.0f, kHi = 89.0f;
    float c = kLo > x ? kLo : x;
    return exp_clamped(c > kHi ? kHi : c);
}

// log(1 + e^x) = max(x, 0) + log(1 + e^-|x|) in plain float arithmetic (log1pf is a library
// call). With y = 1 + e^-|x| in (1, 2] and s = (y - 1) / (y + 1) in (0, 1/3],
// log y = 2 atanh s = 2 (s + s^3/3 + ... + s^15/15), the truncation below 2e-9 relative.
// Never overflows; NaN stays NaN.
[[gnu::always_inline]] inline float log1p_exp(float x) {
    float e = exp_nonpositive(-std::fabs(x));
    float s = e / (2.0f + e), s2 = s * s;
    float p = madd(1.0f / 15, s2, 1.0f / 13);
    p = madd(p, s2, 1.0f / 11);
    p = madd(p, s2, 1.0f / 9);
    p = madd(p, s2, 1.0f / 7);
    p = madd(p, s2, 1.0f / 5);
    p = madd(p, s2, 1.0f / 3);
    p = madd(p, s2, 1.0f);
    return std::max(x, 0.0f) + 2.0f * s * p;
}

// tanh(x) as Eigen's float tanh computes it: x P(x^2) / Q(x^2), odd degree 13 over even
// degree 6, on x clamped to the point where the ratio rounds to +-1 (7.9988 with fused
// multiply-adds, 7.9053 without; tanh is +-1 in float beyond), and x itself for |x| < 0.0004
// (tanh x = x - x^3/3 rounds to x there). At most 4.8 ulp from tanh (measured); NaN
// stays NaN.
[[gnu::always_inline]] inline float tanh(float v) {
#ifdef __FMA__
    constexpr float kClamp = 7.99881172180175781f;
#else
    constexpr float kClamp = 7.90531110763549805f;
#endif
    float x = v > kClamp ? kClamp : v;
    x = x < -kClamp ? -kClamp : x;
    float x2 = x * x;
    float p = madd(x2, -2.76076847742355e-16f, 2.00018790482477e-13f);
    p = madd(x2, p, -8.60467152213735e-11f);
    p = madd(x2, p, 5.12229709037114e-08f);
    p = madd(x2, p, 1.48572235717979e-05f);
    p = madd(x2, p, 6.37261928875436e-04f);
    p = madd(x2, p, 4.89352455891786e-03f);
    float q = madd(x2, 1.19825839466702e-06f, 1.18534705686654e-04f);
    q = madd(x2, q, 2.26843463243900e-03f);
    q = madd(x2, q, 4.89352518554385e-03f);
    float ratio = x * p / q;
    bool tiny = (std::bit_cast<int32_t>(v) & 0x7fffffff) < std::bit_cast<int32_t>(0.0004f);
    return tiny ? v : ratio;
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
