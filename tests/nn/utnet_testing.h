// Helpers for the UTNet module tests: a float64 gradient check of a module's inputs and
// parameters for any forward signature, and naive-loop references of the relative positions.
#pragma once

#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "support/gradcheck.h"

namespace lumen::testing {

// bias[0, m, y W + x, a r + c] by its definition, from the table values.
inline Tensor naive_bias(const Tensor& table, int64_t heads, int64_t r, int64_t H, int64_t W) {
    std::vector<double> out(size_t(heads * H * W * r * r));
    for (int64_t m = 0; m < heads; ++m)
        for (int64_t y = 0; y < H; ++y)
            for (int64_t x = 0; x < W; ++x)
                for (int64_t a = 0; a < r; ++a)
                    for (int64_t c = 0; c < r; ++c) {
                        int64_t row =
                            (y / (H / r) - a + r - 1) * (2 * r - 1) + x / (W / r) - c + r - 1;
                        out[size_t(((m * H + y) * W + x) * r * r + a * r + c)] =
                            table.at<double>({row, m});
                    }
    return from_vector(out, {1, heads, H * W, r * r});
}

// rel_w, rel_h by their definition (Gao et al. 2021, Sec. 2.3, eq. 3-4) with loops over every
// index.
inline std::pair<Tensor, Tensor> naive_relative_logits(const Tensor& q, const Tensor& key_rel_w,
                                                       const Tensor& key_rel_h, int64_t r,
                                                       int64_t H, int64_t W) {
    const int64_t B = q.size(0), heads = q.size(1), d = q.size(3);
    std::vector<double> rel_w(size_t(B * heads * H * W * r * r)), rel_h(rel_w.size());
    for (int64_t b = 0; b < B; ++b)
        for (int64_t m = 0; m < heads; ++m)
            for (int64_t p = 0; p < H * W; ++p)
                for (int64_t k = 0; k < r * r; ++k) {
                    int64_t y = p / W, x = p % W, a = k / r, c = k % r;
                    double sw = 0, sh = 0;
                    for (int64_t j = 0; j < d; ++j) {
                        double qv = q.at<double>({b, m, p, j});
                        sw += qv * key_rel_w.at<double>({c - x / (W / r) + r - 1, j});
                        sh += qv * key_rel_h.at<double>({a - y / (H / r) + r - 1, j});
                    }
                    size_t at = size_t(((b * heads + m) * H * W + p) * r * r + k);
                    rel_w[at] = sw;
                    rel_h[at] = sh;
                }
    Shape shape{B, heads, H * W, r * r};
    return {from_vector(rel_w, shape), from_vector(rel_h, shape)};
}

}  // namespace lumen::testing
