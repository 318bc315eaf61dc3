// RoPE tables and the interleaved-pair rotation, composed from elementwise and shape ops.
#include "nn/rope.h"

#include <cmath>
#include <vector>

#include "ops/elementwise.h"
#include "ops/shape.h"

namespace lumen::nn {

std::pair<Tensor, Tensor> rope_cos_sin(int64_t length, int64_t rot_dim, double base, DType dtype,
                                       Device device) {
    LUMEN_CHECK(length >= 0 && rot_dim > 0 && rot_dim % 2 == 0, "rope",
                "needs length >= 0 and a positive even rot_dim, got length ", length, ", rot_dim ",
                rot_dim);
    int64_t half = rot_dim / 2;
    std::vector<double> cos_values(size_t(length * half)), sin_values(size_t(length * half));
    for (int64_t i = 0; i < half; ++i) {
        double inv_freq = 1.0 / std::pow(base, double(2 * i) / double(rot_dim));
        for (int64_t t = 0; t < length; ++t) {
            double angle = double(t) * inv_freq;
            cos_values[size_t(t * half + i)] = std::cos(angle);
            sin_values[size_t(t * half + i)] = std::sin(angle);
        }
    }
    Tensor cos = from_vector(cos_values, {length, half}).to(dtype).to(device);
    Tensor sin = from_vector(sin_values, {length, half}).to(dtype).to(device);
    return {cos, sin};
}

Tensor apply_rope_interleaved(const Tensor& x, const Tensor& cos, const Tensor& sin) {
    LUMEN_CHECK(x.ndim() == 4 && x.size(3) % 2 == 0, "rope",
                "expects x (B, N, heads, d) with d even, got shape ", x.shape());
    int64_t n = x.size(1), half = x.size(3) / 2;
    LUMEN_CHECK(cos.shape() == Shape({n, half}) && sin.shape() == Shape({n, half}), "rope",
                "tables must be (N, d/2) = (", n, ", ", half, "), got cos ", cos.shape(),
                " and sin ", sin.shape());
    // Even and odd channels as strided views; the tables broadcast over batch and heads.
    Tensor x0 = x.slice(3, 0, 2 * half, 2), x1 = x.slice(3, 1, 2 * half, 2);
    Tensor c = cos.view({1, n, 1, half}), s = sin.view({1, n, 1, half});
    Tensor y0 = sub(mul(x0, c), mul(x1, s));
    Tensor y1 = add(mul(x0, s), mul(x1, c));
    return stack({y0, y1}, -1).flatten(-2);  // interleave back: y0[i], y1[i] -> 2i, 2i+1
}

}  // namespace lumen::nn
