// SfreeViTConfig checks and the patchify steps of the softmax-free paper's ViT (Khader et al.).
#include "models/sfree_vit.h"

namespace lumen::models {

namespace {
const char* kName = "SfreeViT";
}  // namespace

void SfreeViTConfig::validate() const {
    LUMEN_CHECK(tokenizer == "patch2d" || tokenizer == "patch3d" || tokenizer == "bag", kName,
                "tokenizer must be patch2d, patch3d or bag, got '", tokenizer, "'");
    attention_name(attn);
    LUMEN_CHECK(pool == "cls" || pool == "mean", kName, "pool must be cls or mean, got '", pool,
                "'");
    LUMEN_CHECK(
        num_classes > 0 && dim > 0 && depth >= 0 && heads > 0 && dim_head > 0 && mlp_dim > 0, kName,
        "sizes must be positive, got num_classes ", num_classes, ", dim ", dim, ", depth ", depth,
        ", heads ", heads, ", dim_head ", dim_head, ", mlp_dim ", mlp_dim);
    LUMEN_CHECK(seqnorm_eps > 0, kName, "seqnorm_eps must be positive, got ", seqnorm_eps);
    if (tokenizer == "bag") {
        LUMEN_CHECK(feat_dim > 0, kName, "a bag needs feat_dim > 0, got ", feat_dim);
        return;
    }
    LUMEN_CHECK(channels > 0 && image_size.size() == 2 && patch_size.size() == 2, kName,
                "needs channels > 0, image_size [H, W] and patch_size [p1, p2], got channels ",
                channels, ", image_size ", image_size, ", patch_size ", patch_size);
    for (size_t i = 0; i < 2; ++i) {
        LUMEN_CHECK(image_size[i] > 0 && patch_size[i] > 0 && image_size[i] % patch_size[i] == 0,
                    kName, "image_size ", image_size, " must be positive multiples of patch_size ",
                    patch_size);
    }
    if (tokenizer == "patch3d") {
        LUMEN_CHECK(frames > 0 && frame_patch_size > 0 && frames % frame_patch_size == 0, kName,
                    "frames ", frames, " must be a positive multiple of frame_patch_size ",
                    frame_patch_size);
    }
}

int64_t SfreeViTConfig::num_patches() const {
    if (tokenizer == "bag") return 0;
    int64_t n = (image_size[0] / patch_size[0]) * (image_size[1] / patch_size[1]);
    return tokenizer == "patch3d" ? n * (frames / frame_patch_size) : n;
}

int64_t SfreeViTConfig::patch_dim() const {
    if (tokenizer == "bag") return feat_dim;
    int64_t d = channels * patch_size[0] * patch_size[1];
    return tokenizer == "patch3d" ? d * frame_patch_size : d;
}

Tensor patchify2d(const Tensor& x, int64_t p1, int64_t p2) {
    LUMEN_CHECK(x.ndim() == 4 && p1 > 0 && p2 > 0 && x.size(2) % p1 == 0 && x.size(3) % p2 == 0,
                "patchify2d", "expects x (B, C, H, W) with H % ", p1, " == 0 and W % ", p2,
                " == 0, got shape ", x.shape());
    int64_t b = x.size(0), c = x.size(1), h = x.size(2) / p1, w = x.size(3) / p2;
    // (b, c, h, p1, w, p2) -> (b, h, w, p1, p2, c): channel fastest inside a token
    return x.reshape({b, c, h, p1, w, p2})
        .permute({0, 2, 4, 3, 5, 1})
        .reshape({b, h * w, p1 * p2 * c});
}

Tensor patchify3d(const Tensor& x, int64_t pf, int64_t p1, int64_t p2) {
    LUMEN_CHECK(x.ndim() == 5 && pf > 0 && p1 > 0 && p2 > 0 && x.size(2) % pf == 0 &&
                    x.size(3) % p1 == 0 && x.size(4) % p2 == 0,
                "patchify3d", "expects x (B, C, F, H, W) with F % ", pf, ", H % ", p1, ", W % ", p2,
                " == 0, got shape ", x.shape());
    int64_t b = x.size(0), c = x.size(1), f = x.size(2) / pf, h = x.size(3) / p1,
            w = x.size(4) / p2;
    // (b, c, f, pf, h, p1, w, p2) -> (b, f, h, w, p1, p2, pf, c): feature ((i p2 + j) pf + t) C + c
    return x.reshape({b, c, f, pf, h, p1, w, p2})
        .permute({0, 2, 4, 6, 5, 7, 3, 1})
        .reshape({b, f * h * w, p1 * p2 * pf * c});
}

}  // namespace lumen::models
