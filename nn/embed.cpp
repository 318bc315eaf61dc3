// PatchEmbed, the sinusoidal table and class-token prepending.
#include "nn/embed.h"

#include <cmath>

#include "ops/shape.h"

namespace lumen::nn {

PatchEmbed::PatchEmbed(int nd, int64_t in_chans, int64_t embed_dim,
                       const std::vector<int64_t>& patch, bool bias)
    : Module("PatchEmbed"), patch_size(patch), nd_(nd) {
    LUMEN_CHECK(nd == 2 || nd == 3, "PatchEmbed", "supports 2-D and 3-D inputs, got nd = ", nd);
    if (patch_size.size() == 1) patch_size.assign(size_t(nd), patch[0]);
    LUMEN_CHECK(int(patch_size.size()) == nd, "PatchEmbed", "patch_size needs 1 or ", nd,
                " values, got ", patch);
    ConvOptions options{.stride = patch_size, .bias = bias};
    proj = register_module(
        "proj",
        nd == 2 ? std::shared_ptr<Conv>(make<Conv2d>(in_chans, embed_dim, patch_size, options))
                : std::shared_ptr<Conv>(make<Conv3d>(in_chans, embed_dim, patch_size, options)));
}

std::vector<int64_t> PatchEmbed::grid_size(const Shape& shape) const {
    LUMEN_CHECK(int64_t(shape.size()) == nd_ + 2, "PatchEmbed", "expects input of rank ", nd_ + 2,
                " (B, C, spatial...), got shape ", shape);
    std::vector<int64_t> grid;
    for (int d = 0; d < nd_; ++d) {
        int64_t size = shape[size_t(d + 2)], p = patch_size[size_t(d)];
        LUMEN_CHECK(size % p == 0, "PatchEmbed", "spatial size ", size, " (dim ", d + 2,
                    " of input ", shape, ") is not a multiple of the patch size ", p);
        grid.push_back(size / p);
    }
    return grid;
}

Tensor PatchEmbed::forward(const Tensor& x) {
    grid_size(x.shape());
    LUMEN_CHECK(x.size(1) == proj->in_channels, "PatchEmbed", "expects ", proj->in_channels,
                " input channels, got shape ", x.shape());
    // (B, D, *grid) -> (B, D, N) -> (B, N, D)
    return proj->forward(x).flatten(2).transpose(1, 2);
}

Tensor sinusoidal_position_table(int64_t length, int64_t dim, double base, Device device) {
    LUMEN_CHECK(length >= 0 && dim > 0, "sinusoidal_position_table",
                "needs length >= 0 and dim > 0, got ", length, " x ", dim);
    std::vector<float> values(size_t(length * dim));
    for (int64_t t = 0; t < length; ++t) {
        for (int64_t c = 0; c < dim; ++c) {
            double angle = double(t) / std::pow(base, double(2 * (c / 2)) / double(dim));
            values[size_t(t * dim + c)] = float(c % 2 == 0 ? std::sin(angle) : std::cos(angle));
        }
    }
    return from_vector(values, {length, dim}, device);
}

Tensor prepend_token(const Tensor& x, const Tensor& token) {
    LUMEN_CHECK(x.ndim() == 3 && token.ndim() == 3 && token.size(0) == 1 && token.size(1) == 1 &&
                    token.size(2) == x.size(2),
                "prepend_token", "expects x (B, N, D) and token (1, 1, D), got ", x.shape(),
                " and ", token.shape());
    return cat({token.expand({x.size(0), 1, x.size(2)}), x}, 1);
}

}  // namespace lumen::nn
