// PatchEmbed and PatchMergingV2: zero padding (ops/pad.h), a strided convolution, and
// stride-2 views concatenated on channels; gradients come from the ops.
#include "nn/swin/patch.h"

#include "ops/pad.h"
#include "ops/shape.h"

namespace lumen::nn::swin {

PatchEmbed::PatchEmbed(std::vector<int64_t> patch_size_, int64_t in_chans, int64_t embed_dim,
                       int64_t spatial_dims_)
    : Module("PatchEmbed"), patch_size(std::move(patch_size_)), spatial_dims(spatial_dims_) {
    LUMEN_CHECK(spatial_dims == 2 || spatial_dims == 3, "PatchEmbed",
                "spatial_dims must be 2 or 3, got ", spatial_dims);
    if (patch_size.size() == 1) patch_size.assign(size_t(spatial_dims), patch_size[0]);
    LUMEN_CHECK(int64_t(patch_size.size()) == spatial_dims, "PatchEmbed", "patch_size ", patch_size,
                " must have 1 or ", spatial_dims, " entries");
    for (int64_t p : patch_size)
        LUMEN_CHECK(p > 0, "PatchEmbed", "patch sizes must be positive, got ", patch_size);
    LUMEN_CHECK(in_chans > 0 && embed_dim > 0, "PatchEmbed",
                "in_chans and embed_dim must be positive, got ", in_chans, " and ", embed_dim);
    proj = register_module(
        "proj", make<Conv>(spatial_dims == 2 ? "Conv2d" : "Conv3d", int(spatial_dims), false,
                           in_chans, embed_dim, patch_size, ConvOptions{.stride = patch_size}));
}

Tensor PatchEmbed::forward(const Tensor& x) {
    LUMEN_CHECK(x.ndim() == spatial_dims + 2 && x.size(1) == proj->in_channels, "PatchEmbed",
                "expects x (B, ", proj->in_channels, ", *S) with ", spatial_dims,
                " spatial dims, got shape ", x.shape());
    // F.pad lists (before, after) from the last dim.
    Dims pads;
    bool any = false;
    for (int64_t d = spatial_dims - 1; d >= 0; --d) {
        int64_t p = patch_size[size_t(d)], extra = (p - x.size(d + 2) % p) % p;
        pads.insert(pads.end(), {0, extra});
        any = any || extra > 0;
    }
    return proj->forward(any ? pad(x, pads) : x);
}

PatchMergingV2::PatchMergingV2(int64_t dim_, int64_t spatial_dims_)
    : Module("PatchMergingV2"), dim(dim_), spatial_dims(spatial_dims_) {
    LUMEN_CHECK(spatial_dims == 2 || spatial_dims == 3, "PatchMergingV2",
                "spatial_dims must be 2 or 3, got ", spatial_dims);
    LUMEN_CHECK(dim > 0, "PatchMergingV2", "dim must be positive, got ", dim);
    int64_t merged = (int64_t(1) << spatial_dims) * dim;
    reduction = register_module("reduction", make<Linear>(merged, 2 * dim, false));
    norm = register_module("norm", make<LayerNorm>(Shape{merged}));
}

Tensor PatchMergingV2::forward(const Tensor& x) {
    LUMEN_CHECK(x.ndim() == spatial_dims + 2 && x.size(-1) == dim, "PatchMergingV2",
                "expects x (B, *S, ", dim, ") with ", spatial_dims, " spatial dims, got shape ",
                x.shape());
    Dims pads = {0, 0};
    bool any = false;
    for (int64_t d = spatial_dims; d >= 1; --d) {
        pads.insert(pads.end(), {0, x.size(d) % 2});
        any = any || x.size(d) % 2 != 0;
    }
    Tensor padded = any ? pad(x, pads) : x;
    // Sub-grid with offset bit b of `code` on spatial dim d: 2-D codes run w-major (h is the
    // low bit), 3-D codes are (d, h, w) lexicographic (w is the low bit).
    std::vector<Tensor> parts;
    for (int64_t code = 0; code < (int64_t(1) << spatial_dims); ++code) {
        Tensor part = padded;
        for (int64_t d = 0; d < spatial_dims; ++d) {
            int64_t bit = spatial_dims == 2 ? d : spatial_dims - 1 - d;
            int64_t offset = (code >> bit) & 1;
            part = part.slice(d + 1, offset, padded.size(d + 1), 2);
        }
        parts.push_back(part);
    }
    return reduction->forward(norm->forward(cat(parts, -1)));
}

}  // namespace lumen::nn::swin
