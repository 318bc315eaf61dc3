// Helpers for the PVT-GDLA tests: references written from the paper's formulas head by head (linear
// attention through the explicit N x M kernel matrix, the GDLA mixer with plain NCHW convolutions,
// RoPE by its pair formula), independent of the modules' batched views.
#pragma once

#include <cmath>
#include <vector>

#include "diff_testing.h"
#include "nn/attention/gdla.h"
#include "nn/attention/linear_attention.h"
#include "nn/attention/pvt_baselines.h"

namespace lumen::testing::gdla_check {

using diff_check::channels;
using diff_check::randomize;
using diff_check::rms_formula;

// y = (phi(q) phi(k)^T) v / ((phi(q) phi(k)^T) 1 + eps), the kernel matrix formed explicitly.
inline Tensor quadratic_linear_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                         double eps = 1e-6) {
    Tensor fq = add(elu(q), 1.0), fk = add(elu(k), 1.0);
    Tensor kernel = matmul(fq, fk.transpose(-2, -1));  // (..., N, M)
    return div(matmul(kernel, v), add(sum(kernel, {-1}, true), eps));
}

// tokens (B, N, C) <-> NCHW by the spec's row-major rule, written with permute/reshape.
inline Tensor to_map(const Tensor& t, int64_t height, int64_t width) {
    return t.permute({0, 2, 1}).contiguous().view({t.size(0), t.size(2), height, width});
}
inline Tensor to_tokens(const Tensor& m) {
    return m.reshape({m.size(0), m.size(1), m.size(2) * m.size(3)}).permute({0, 2, 1});
}

// GDLA Branch(T, lambda) head by head (Zheng et al. 2026, Sec. 3.2.1).
inline Tensor reference_branch(const nn::attention::GatedDiffLinearAttn& m, const Tensor& t,
                               const Tensor& lambda) {
    int64_t c = m.dim, dh = m.head_dim, d = dh / 2;
    std::vector<Tensor> heads;
    for (int64_t j = 0; j < m.n_heads; ++j) {
        Tensor q = channels(t, j * dh, dh), k = channels(t, c + j * dh, dh);
        Tensor v = channels(t, 2 * c + j * dh, dh), g = channels(t, 3 * c + j * dh, dh);
        Tensor a1 = quadratic_linear_attention(channels(q, 0, d), channels(k, 0, d), v);
        Tensor a2 = quadratic_linear_attention(channels(q, d, d), channels(k, d, d), v);
        Tensor diff = sub(a1, mul(a2, lambda.select(0, j)));
        heads.push_back(mul(rms_formula(diff, m.ln->weight, 1e-5), sigmoid(g)));
    }
    return cat(heads, -1);
}

inline Tensor reference_gdla(const nn::attention::GatedDiffLinearAttn& m, const Tensor& x,
                             int64_t height, int64_t width) {
    Tensor t = linear(x, m.qkvg->weight, m.qkvg->bias);
    Tensor map = to_map(t, height, width);
    Tensor local = conv2d(map, m.dwc->weight, m.dwc->bias, {1}, {1}, {1}, 4 * m.dim);
    Tensor aux = to_tokens(conv2d(local, m.pwc->weight, m.pwc->bias));
    Tensor y = cat(
        {reference_branch(m, t, m.lambda_scale_main), reference_branch(m, aux, m.lambda_scale_aux)},
        -1);
    return linear(y, m.out_proj->weight, m.out_proj->bias);
}

// Interleaved RoPE of x (B, N, D) over the token index, by the interleaved-pair formula.
inline Tensor reference_rope(const Tensor& x, double base = 10000.0) {
    int64_t n = x.size(1), dim = x.size(2);
    std::vector<Tensor> pairs;
    for (int64_t i = 0; i < dim / 2; ++i) {
        std::vector<double> cos_values, sin_values;
        for (int64_t p = 0; p < n; ++p) {
            double angle = double(p) * std::pow(base, -2.0 * double(i) / double(dim));
            cos_values.push_back(std::cos(angle));
            sin_values.push_back(std::sin(angle));
        }
        Tensor c = from_vector(cos_values, {1, n, 1}).to(x.dtype());
        Tensor s = from_vector(sin_values, {1, n, 1}).to(x.dtype());
        Tensor even = channels(x, 2 * i, 1), odd = channels(x, 2 * i + 1, 1);
        pairs.push_back(sub(mul(even, c), mul(odd, s)));
        pairs.push_back(add(mul(odd, c), mul(even, s)));
    }
    return cat(pairs, -1);
}

}  // namespace lumen::testing::gdla_check
