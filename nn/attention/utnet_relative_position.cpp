// UTNet relative positions: index tables built once on the host, lookups through embedding /
// index_select / gather so that the backward (index_add / scatter_add) comes from the ops.
#include "nn/attention/utnet_relative_position.h"

#include <vector>

#include "nn/init.h"
#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/matmul.h"

namespace lumen::nn::attention {

namespace {

void check_grid(const char* who, int64_t H, int64_t W, int64_t r) {
    LUMEN_CHECK(H >= r && W >= r && H % r == 0 && W % r == 0, who,
                "the map H x W must be a positive multiple of reduce_size ", r,
                " in both dims, got ", H, " x ", W);
}

// The reduced-grid coordinate of each of `size` full-resolution positions: i / (size / r).
Tensor reduced_coordinate(int64_t size, int64_t r, Device device) {
    std::vector<int64_t> cell(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i) cell[size_t(i)] = i / (size / r);
    return from_vector(cell, {size}, device);
}

// The reduced cell y_r r + x_r of every full-resolution query y W + x of an H x W map.
Tensor query_cells(int64_t H, int64_t W, int64_t r, Device device) {
    std::vector<int64_t> cell(static_cast<size_t>(H * W));
    for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) cell[size_t(y * W + x)] = y / (H / r) * r + x / (W / r);
    return from_vector(cell, {H * W}, device);
}

}  // namespace

RelativePositionBias::RelativePositionBias(int64_t heads, int64_t r)
    : Module("RelativePositionBias"), num_heads(heads), reduce_size(r) {
    LUMEN_CHECK(heads > 0 && r > 0, "RelativePositionBias",
                "num_heads and reduce_size must be positive, got ", heads, " and ", r);
    relative_position_bias_table = register_parameter("relative_position_bias_table",
                                                      empty({(2 * r - 1) * (2 * r - 1), heads}));
    init::normal_(relative_position_bias_table, 0.0, 0.02);
    // index[i, j] for reduced positions i = (a_i, c_i), j = (a_j, c_j), flat a r + c.
    std::vector<int64_t> index(static_cast<size_t>(r * r * r * r));
    for (int64_t i = 0; i < r * r; ++i) {
        for (int64_t j = 0; j < r * r; ++j) {
            int64_t da = i / r - j / r + r - 1, dc = i % r - j % r + r - 1;
            index[size_t(i * r * r + j)] = da * (2 * r - 1) + dc;
        }
    }
    relative_position_index =
        register_buffer("relative_position_index", from_vector(index, {r * r, r * r}));
}

Tensor RelativePositionBias::forward(int64_t H, int64_t W, double scale) {
    const int64_t r = reduce_size;
    check_grid("RelativePositionBias", H, W, r);
    Device device = relative_position_bias_table.device();
    Tensor table =
        scale == 1.0 ? relative_position_bias_table : mul(relative_position_bias_table, scale);
    // (r^2 queries, r^2 keys, heads) -> (heads, r^2, r^2): tiny, made contiguous so that the
    // full-resolution lookup below copies whole rows of r^2 keys.
    Tensor reduced = embedding(table, relative_position_index).permute({2, 0, 1}).contiguous();
    // Full-resolution query (y, x) reads the row of its reduced cell (y_r, x_r).
    return index_select(reduced, 1, query_cells(H, W, r, device)).unsqueeze(0);
}

std::string RelativePositionBias::extra_repr() const {
    return "num_heads=" + std::to_string(num_heads) +
           ", reduce_size=" + std::to_string(reduce_size);
}

RelativePositionEmbedding::RelativePositionEmbedding(int64_t d, int64_t r)
    : Module("RelativePositionEmbedding"), dim(d), reduce_size(r) {
    LUMEN_CHECK(d > 0 && r > 0, "RelativePositionEmbedding",
                "dim and reduce_size must be positive, got ", d, " and ", r);
    key_rel_w = register_parameter("key_rel_w", empty({2 * r - 1, d}));
    key_rel_h = register_parameter("key_rel_h", empty({2 * r - 1, d}));
    init::normal_(key_rel_w, 0.0, 0.02);
    init::normal_(key_rel_h, 0.0, 0.02);
    std::vector<int64_t> index(static_cast<size_t>(r * r));
    for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < r; ++j) index[size_t(i * r + j)] = j - i + r - 1;
    relative_position_index =
        register_buffer("relative_position_index", from_vector(index, {r, r}));
}

std::pair<Tensor, Tensor> RelativePositionEmbedding::factors(const Tensor& q, int64_t heads,
                                                             int64_t H, int64_t W, double scale) {
    const int64_t r = reduce_size;
    LUMEN_CHECK(q.ndim() == 4 && q.size(1) == heads && q.size(2) == H * W && q.size(3) == dim,
                "RelativePositionEmbedding", "expects q of shape (B, ", heads, ", ", H * W, ", ",
                dim, ") for a ", H, " x ", W, " map, got ", q.shape());
    check_grid("RelativePositionEmbedding", H, W, r);
    const int64_t B = q.size(0);
    Device device = q.device();
    Tensor grid_q = q.reshape({B, heads, H, W, dim});
    Tensor rel_w = scale == 1.0 ? key_rel_w : mul(key_rel_w, scale);
    Tensor rel_h = scale == 1.0 ? key_rel_h : mul(key_rel_h, scale);
    // Logits against all 2r - 1 offsets, (B, heads, H, W, 2r - 1); then each query keeps the
    // r offsets c - x_r + r - 1 (resp. a - y_r + r - 1) of its reduced cell.
    Tensor logits_w = matmul(grid_q, rel_w.t());
    Tensor logits_h = matmul(grid_q, rel_h.t());
    Tensor index_w = index_select(relative_position_index, 0, reduced_coordinate(W, r, device));
    Tensor index_h = index_select(relative_position_index, 0, reduced_coordinate(H, r, device));
    Tensor by_col = gather(logits_w, 4, index_w.view({1, 1, 1, W, r}).expand({B, heads, H, W, r}));
    Tensor by_row = gather(logits_h, 4, index_h.view({1, 1, H, 1, r}).expand({B, heads, H, W, r}));
    return {by_col.unsqueeze(4), by_row.unsqueeze(5)};
}

std::pair<Tensor, Tensor> RelativePositionEmbedding::forward(const Tensor& q, int64_t heads,
                                                             int64_t H, int64_t W) {
    auto [by_col, by_row] = factors(q, heads, H, W);
    const int64_t B = q.size(0), r = reduce_size;
    Shape full{B, heads, H, W, r, r};
    return {by_col.expand(full).reshape({B, heads, H * W, r * r}),
            by_row.expand(full).reshape({B, heads, H * W, r * r})};
}

std::string RelativePositionEmbedding::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", reduce_size=" + std::to_string(reduce_size);
}

}  // namespace lumen::nn::attention
