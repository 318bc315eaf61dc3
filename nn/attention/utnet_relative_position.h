// UTNet's 2-D relative positions between full-resolution queries and the r x r reduced keys
// (Gao et al. 2021, Sec. 2.3, eqs. 3-4): the official input-independent bias table (default) and
// the paper's input-dependent relative logits (eq. 3-4, the official class with its W == r crash
// fixed). A query at (y, x) of an H x W map sits in reduced cell (y / (H/r), x / (W/r)).
#pragma once

#include <utility>

#include "nn/module.h"

namespace lumen::nn::attention {

// bias[0, m, y W + x, a r + c] = table[(yr - a + r - 1)(2r - 1) + (xr - c + r - 1), m]
// with (yr, xr) = (y / (H/r), x / (W/r)). Parameter relative_position_bias_table
// ((2r-1)^2, heads), init N(0, 0.02^2); int64 buffer relative_position_index (r^2, r^2).
// Gradients of all (query, key) pairs that share a table entry add up in it (embedding /
// index_select backward). Built for a square r x r key grid (UTNet's h = w = r).
class RelativePositionBias : public Module {
  public:
    RelativePositionBias(int64_t num_heads, int64_t reduce_size);
    // Shapes: -> (1, heads, H W, r^2), on the table's device and dtype. `scale` multiplies
    // the table first (the attention folds its 1/sqrt(d) in here, on (2r-1)^2 numbers).
    // Throws [RelativePositionBias] unless H and W are positive multiples of r.
    Tensor forward(int64_t H, int64_t W, double scale = 1.0);
    using Module::forward;
    std::string extra_repr() const override;

    Tensor relative_position_bias_table, relative_position_index;
    int64_t num_heads, reduce_size;
};

// For q (B, heads, H W, d) (rows row-major over the map), with (yr, xr) as above:
//   rel_w[b, m, (y, x), (a, c)] = q[b, m, (y, x)] . key_rel_w[c - xr + r - 1]
//   rel_h[b, m, (y, x), (a, c)] = q[b, m, (y, x)] . key_rel_h[a - yr + r - 1]
// Parameters key_rel_w, key_rel_h ((2r - 1), d), init N(0, 0.02^2), shared by all heads;
// int64 buffer relative_position_index (r, r) = j - i + r - 1. Gradients reach q and both
// tables (gather -> scatter_add backward).
class RelativePositionEmbedding : public Module {
  public:
    RelativePositionEmbedding(int64_t dim, int64_t reduce_size);
    // Returns (rel_w, rel_h), each (B, heads, H W, r^2) (materialised, as the official).
    // Throws [RelativePositionEmbedding] for a q that is not (B, heads, H W, dim) or an H, W
    // that is not a positive multiple of r.
    std::pair<Tensor, Tensor> forward(const Tensor& q, int64_t heads, int64_t H, int64_t W);
    using Module::forward;
    // The same logits before broadcasting, times `scale`: rel_w (B, heads, H, W, 1, r)
    // (varies with the key column c) and rel_h (B, heads, H, W, r, 1) (key row a); the
    // attention adds them to its (B, heads, H, W, r, r) logits by broadcasting, so no
    // (B, heads, HW, r^2) copy of either is made.
    std::pair<Tensor, Tensor> factors(const Tensor& q, int64_t heads, int64_t H, int64_t W,
                                      double scale = 1.0);
    std::string extra_repr() const override;

    Tensor key_rel_w, key_rel_h, relative_position_index;
    int64_t dim, reduce_size;
};

}  // namespace lumen::nn::attention
