// Swin block and stage: pre-norm windowed mixing (nn/attention/window.h's window_mix) and a GELU
// MLP on a channels-last map; the stage builds the shift mask once for its blocks.
#include "nn/swin/swin_block.h"

#include "nn/checkpoint.h"
#include "ops/elementwise.h"

namespace lumen::nn::swin {

namespace {

std::vector<int64_t> spatial_of(const Tensor& x, int64_t first, int64_t count) {
    return std::vector<int64_t>(x.shape().begin() + first, x.shape().begin() + first + count);
}

}  // namespace

MLPBlock::MLPBlock(int64_t dim, int64_t hidden) : Module("MLPBlock") {
    linear1 = register_module("linear1", make<Linear>(dim, hidden));
    linear2 = register_module("linear2", make<Linear>(hidden, dim));
}

Tensor MLPBlock::forward(const Tensor& x) { return linear2->forward(gelu(linear1->forward(x))); }

SwinTransformerBlock::SwinTransformerBlock(int64_t dim_, int64_t num_heads,
                                           std::vector<int64_t> window_size_,
                                           std::vector<int64_t> shift_size_, double mlp_ratio,
                                           bool qkv_bias, SwinMixer mixer)
    : Module("SwinTransformerBlock"),
      dim(dim_),
      window_size(std::move(window_size_)),
      shift_size(std::move(shift_size_)) {
    const char* who = "SwinTransformerBlock";
    LUMEN_CHECK(shift_size.size() == window_size.size(), who, "shift_size ", shift_size,
                " must have one entry per window dim ", window_size);
    for (size_t d = 0; d < shift_size.size(); ++d)
        LUMEN_CHECK(shift_size[d] >= 0 && shift_size[d] < window_size[d], who, "shift_size ",
                    shift_size, " must lie in [0, window) for window_size ", window_size);
    bool shifted = false;
    for (int64_t s : shift_size) shifted = shifted || s > 0;
    LUMEN_CHECK(!shifted || mixer.type == "attn", who, "the \"", mixer.type,
                "\" mixer never shifts its windows, got shift_size ", shift_size);
    LUMEN_CHECK(mlp_ratio > 0, who, "mlp_ratio must be positive, got ", mlp_ratio);
    norm1 = register_module("norm1", make<LayerNorm>(Shape{dim}));
    attn = register_module(
        "attn", make<attention::WindowAttention>(dim, num_heads, window_size, qkv_bias, mixer.type,
                                                 mixer.options));
    norm2 = register_module("norm2", make<LayerNorm>(Shape{dim}));
    mlp = register_module("mlp", make<MLPBlock>(dim, int64_t(double(dim) * mlp_ratio)));
}

Tensor SwinTransformerBlock::forward(const Tensor& x, const Tensor& mask) {
    int64_t k = int64_t(window_size.size());
    LUMEN_CHECK(x.ndim() == k + 2 && x.size(-1) == dim, "SwinTransformerBlock",
                "expects x (B, *S, ", dim, ") with ", k, " spatial dims, got shape ", x.shape());
    attention::WindowShift ws =
        attention::get_window_size(spatial_of(x, 1, k), window_size, shift_size);
    bool shifted = false;
    for (int64_t s : ws.shift) shifted = shifted || s > 0;
    LUMEN_CHECK(!shifted || mask.defined(), "SwinTransformerBlock",
                "a shifted block needs the mask of its padded grid");
    Tensor windowed = attention::window_mix(
        norm1->forward(x), ws.window, ws.shift,
        [&](const Tensor& w) { return attn->forward_windows(w, shifted ? mask : Tensor()); });
    Tensor h = add(x, windowed);
    return add(h, mlp->forward(norm2->forward(h)));
}

Tensor SwinTransformerBlock::forward(const Tensor& x) {
    int64_t k = int64_t(window_size.size());
    LUMEN_CHECK(x.ndim() == k + 2, "SwinTransformerBlock", "expects x (B, *S, ", dim, ") with ", k,
                " spatial dims, got shape ", x.shape());
    std::vector<int64_t> spatial = spatial_of(x, 1, k);
    attention::MaskCache once;
    return forward(x,
                   once.get(spatial, attention::get_window_size(spatial, window_size, shift_size),
                            x.dtype(), x.device()));
}

std::string SwinTransformerBlock::extra_repr() const {
    std::string w, s;
    for (int64_t v : window_size) w += (w.empty() ? "" : ", ") + std::to_string(v);
    for (int64_t v : shift_size) s += (s.empty() ? "" : ", ") + std::to_string(v);
    return "dim=" + std::to_string(dim) + ", window_size=(" + w + "), shift_size=(" + s + ")";
}

BasicLayer::BasicLayer(int64_t dim_, int64_t depth, int64_t num_heads,
                       std::vector<int64_t> window_size_, double mlp_ratio, bool qkv_bias,
                       SwinMixer mixer)
    : Module("BasicLayer"), dim(dim_), window_size(std::move(window_size_)) {
    LUMEN_CHECK(depth >= 1, "BasicLayer", "depth must be at least 1, got ", depth);
    std::vector<int64_t> no_shift(window_size.size(), 0);
    shift_size = no_shift;
    if (mixer.type == "attn")
        for (size_t d = 0; d < window_size.size(); ++d) shift_size[d] = window_size[d] / 2;
    blocks = register_module("blocks", make<ModuleList<SwinTransformerBlock>>());
    for (int64_t i = 0; i < depth; ++i)
        blocks->push_back(make<SwinTransformerBlock>(dim, num_heads, window_size,
                                                     i % 2 == 0 ? no_shift : shift_size, mlp_ratio,
                                                     qkv_bias, mixer));
    downsample =
        register_module("downsample", make<PatchMergingV2>(dim, int64_t(window_size.size())));
}

Tensor BasicLayer::forward(const Tensor& x) {
    int64_t k = int64_t(window_size.size());
    LUMEN_CHECK(x.ndim() == k + 2 && x.size(1) == dim, "BasicLayer", "expects x (B, ", dim,
                ", *S) with ", k, " spatial dims, got shape ", x.shape());
    std::vector<int64_t> spatial = spatial_of(x, 2, k);
    // Only the odd blocks shift: a single block needs no mask.
    Tensor mask;
    if (blocks->size() > 1)
        mask = masks_.get(spatial, attention::get_window_size(spatial, window_size, shift_size),
                          x.dtype(), x.device());
    // Channels-first -> channels-last for the blocks, and back after the merge.
    std::vector<int64_t> to_last = {0}, to_first = {0, k + 1};
    for (int64_t d = 0; d < k; ++d) {
        to_last.push_back(d + 2);
        to_first.push_back(d + 1);
    }
    to_last.push_back(1);
    Tensor h = x.permute(to_last);
    int64_t index = first_block;
    for (const auto& block : *blocks)
        h = checkpoint_every(
            grad_checkpointing, index++,
            [block, mask](const std::vector<Tensor>& in) { return block->forward(in[0], mask); },
            {h}, block->parameters());
    return downsample->forward(h).permute(to_first);
}

}  // namespace lumen::nn::swin
