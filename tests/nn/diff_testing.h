// Helpers for the tests of the DGSA paper (attentions, blocks, models): a float64 gradient check of
// a module's inputs and parameters for any forward signature, and head-by-head references of the
// three attentions written from the papers' channel formulas (masks by masked_fill, RMSNorm by its
// formula) rather than the modules' batched views.
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "support/gradcheck.h"

namespace lumen::testing::diff_check {

// Fills every parameter with uniform values in [-scale, scale) (seeded), keeping identity.
inline void randomize(nn::Module& m, uint64_t seed, double scale = 0.5) {
    NoGradGuard no_grad;
    for (auto& [name, p] : m.named_parameters()) {
        p.copy_(random_input(p.shape(), seed++, -scale, scale));
    }
}

// scores (B, N, N) of one head -> softmax with padded keys and, if causal, future keys removed.
inline Tensor masked_softmax(const Tensor& scores, const Tensor& key_padding_mask, bool causal) {
    double minus_inf = -std::numeric_limits<double>::infinity();
    Tensor s = scores;
    int64_t batch = s.size(0), n = s.size(1);
    if (key_padding_mask.defined())
        s = masked_fill(s, key_padding_mask.view({batch, 1, n}), minus_inf);
    if (causal) s = masked_fill(s, triu(ones({n, n}, DType::bool_), 1), minus_inf);
    return softmax(s, -1);
}

// Channels [start, start + width) of the last dim.
inline Tensor channels(const Tensor& x, int64_t start, int64_t width) {
    return x.narrow(-1, start, width);
}

// RMSNorm over the last dim by its formula.
inline Tensor rms_formula(const Tensor& u, const Tensor& weight, double eps) {
    return mul(mul(u, rsqrt(add(mean(square(u), {-1}, true), eps))), weight);
}

// timm Attention, head by head: q/k/v of head h are qkv channels [s inner + h Hd, +Hd).
inline Tensor reference_mhsa(const nn::attention::MHSA& m, const Tensor& x, const Tensor& mask,
                             bool causal = false) {
    int64_t inner = m.num_heads * m.head_dim, hd = m.head_dim;
    Tensor qkv = linear(x, m.qkv->weight, m.qkv->bias);
    std::vector<Tensor> heads;
    for (int64_t h = 0; h < m.num_heads; ++h) {
        Tensor q = channels(qkv, h * hd, hd), k = channels(qkv, inner + h * hd, hd);
        Tensor v = channels(qkv, 2 * inner + h * hd, hd);
        Tensor p =
            masked_softmax(div(matmul(q, k.transpose(1, 2)), std::sqrt(double(hd))), mask, causal);
        heads.push_back(matmul(p, v));
    }
    return linear(cat(heads, -1), m.proj->weight, m.proj->bias);
}

// The two maps of differential head h: Q1/K1 = channels [2hd, +d), Q2/K2 = [2hd + d, +d).
inline std::pair<Tensor, Tensor> differential_maps(const Tensor& q, const Tensor& k, int64_t h,
                                                   int64_t d, const Tensor& mask, bool causal) {
    double scale = 1.0 / std::sqrt(double(d));
    Tensor p1 = masked_softmax(
        mul(matmul(channels(q, 2 * h * d, d), channels(k, 2 * h * d, d).transpose(1, 2)), scale),
        mask, causal);
    Tensor p2 = masked_softmax(
        mul(matmul(channels(q, 2 * h * d + d, d), channels(k, 2 * h * d + d, d).transpose(1, 2)),
            scale),
        mask, causal);
    return {p1, p2};
}

// Official MultiheadDiffAttn (no RoPE) with the fused map A = P1 - lambda P2 formed explicitly.
inline Tensor reference_diff(const nn::attention::MultiheadDiffAttn& m, const Tensor& x,
                             const Tensor& mask, bool causal = false) {
    int64_t d = m.head_dim;
    Tensor q = linear(x, m.q_proj->weight), k = linear(x, m.k_proj->weight);
    Tensor v = linear(x, m.v_proj->weight);
    Tensor lambda =
        add(sub(exp(sum(mul(m.lambda_q1, m.lambda_k1))), exp(sum(mul(m.lambda_q2, m.lambda_k2)))),
            m.lambda_init);
    std::vector<Tensor> heads;
    for (int64_t h = 0; h < m.num_heads; ++h) {
        auto [p1, p2] = differential_maps(q, k, h, d, mask, causal);
        Tensor a = sub(p1, mul(p2, lambda));
        Tensor o =
            rms_formula(matmul(a, channels(v, 2 * h * d, 2 * d)), m.subln->weight, m.subln->eps);
        heads.push_back(mul(o, 1.0 - m.lambda_init));
    }
    return linear(cat(heads, -1), m.out_proj->weight);
}

// M-DGSA by Algorithm 1: A = g A+ - (1 - g) A- with g = sigmoid(gate_proj(x)) per row and head.
inline Tensor reference_dgsa(const nn::attention::MultiheadDGSA& m, const Tensor& x,
                             const Tensor& mask, bool causal = false) {
    int64_t d = m.head_dim;
    Tensor q = linear(x, m.q_proj->weight), k = linear(x, m.k_proj->weight);
    Tensor v = linear(x, m.v_proj->weight);
    Tensor gates = sigmoid(linear(x, m.gate_proj->weight, m.gate_proj->bias));  // (B, N, nh)
    std::vector<Tensor> heads;
    for (int64_t h = 0; h < m.num_heads; ++h) {
        auto [plus, minus] = differential_maps(q, k, h, d, mask, causal);
        Tensor g = channels(gates, h, 1);  // (B, N, 1): scales query rows
        Tensor a = sub(mul(g, plus), mul(1.0 - g, minus));
        Tensor o =
            rms_formula(matmul(a, channels(v, 2 * h * d, 2 * d)), m.subln->weight, m.subln->eps);
        heads.push_back(mul(o, 1.0 - m.lambda_init));
    }
    Tensor y = linear(cat(heads, -1), m.out_proj->weight);
    return m.options.q_residual ? add(y, q) : y;
}

// (B, N) bool mask with sample b padded from lengths[b] on.
inline Tensor padding_mask(int64_t n, const std::vector<int64_t>& lengths) {
    std::vector<uint8_t> values;
    for (int64_t length : lengths)
        for (int64_t t = 0; t < n; ++t) values.push_back(t >= length ? 1 : 0);
    return from_vector(values, {int64_t(lengths.size()), n}).to(DType::bool_);
}

}  // namespace lumen::testing::diff_check
