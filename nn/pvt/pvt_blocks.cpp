// PVTv2 patch embedding, depthwise-conv MLP, block and stage, composed of lumen layers.
#include "nn/pvt/pvt_blocks.h"

#include "nn/checkpoint.h"
#include "ops/elementwise.h"

namespace lumen::nn::pvt {

OverlapPatchEmbed::OverlapPatchEmbed(int64_t patch_size_, int64_t stride_, int64_t in_chans_,
                                     int64_t embed_dim_)
    : Module("OverlapPatchEmbed"),
      patch_size(patch_size_),
      stride(stride_),
      in_chans(in_chans_),
      embed_dim(embed_dim_) {
    LUMEN_CHECK(patch_size > 0 && stride > 0 && in_chans > 0 && embed_dim > 0, type_name(),
                "sizes must be positive, got patch_size ", patch_size, ", stride ", stride,
                ", in_chans ", in_chans, ", embed_dim ", embed_dim);
    proj = register_module(
        "proj", make<Conv2d>(in_chans, embed_dim, std::vector<int64_t>{patch_size},
                             ConvOptions{.stride = {stride}, .padding = {patch_size / 2}}));
    norm = register_module("norm", make<LayerNorm>(Shape{embed_dim}, 1e-5));
}

Tensor OverlapPatchEmbed::forward(const Tensor& x) {
    LUMEN_CHECK(x.ndim() == 4 && x.size(1) == in_chans, type_name(), "expects x (B, ", in_chans,
                ", H, W), got shape ", x.shape());
    return norm->forward(proj->forward(x).permute({0, 2, 3, 1}));
}

std::string OverlapPatchEmbed::extra_repr() const {
    return "patch_size=" + std::to_string(patch_size) + ", stride=" + std::to_string(stride) +
           ", in_chans=" + std::to_string(in_chans) + ", embed_dim=" + std::to_string(embed_dim);
}

MlpWithDepthwiseConv::MlpWithDepthwiseConv(int64_t in_features_, int64_t hidden_features_,
                                           bool extra_relu_, double drop_p)
    : Module("MlpWithDepthwiseConv"),
      in_features(in_features_),
      hidden_features(hidden_features_),
      extra_relu(extra_relu_) {
    LUMEN_CHECK(in_features > 0 && hidden_features > 0, type_name(),
                "widths must be positive, got in_features ", in_features, ", hidden_features ",
                hidden_features);
    fc1 = register_module("fc1", make<Linear>(in_features, hidden_features));
    dwconv = register_module("dwconv",
                             make<Conv2d>(hidden_features, hidden_features, std::vector<int64_t>{3},
                                          ConvOptions{.padding = {1}, .groups = hidden_features}));
    fc2 = register_module("fc2", make<Linear>(hidden_features, in_features));
    drop = register_module("drop", make<Dropout>(drop_p));
}

Tensor MlpWithDepthwiseConv::forward(const Tensor& x, int64_t height, int64_t width) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == in_features && x.size(1) == height * width,
                type_name(), "expects x (B, H*W, ", in_features, ") with H = ", height,
                ", W = ", width, ", got shape ", x.shape());
    Tensor map = attention::tokens_to_map(fc1->forward(x), height, width);
    if (extra_relu) map = relu(map);
    Tensor hidden = gelu(attention::map_to_tokens(dwconv->forward(map)));
    return drop->forward(fc2->forward(drop->forward(hidden)));
}

std::string MlpWithDepthwiseConv::extra_repr() const {
    return "in_features=" + std::to_string(in_features) +
           ", hidden_features=" + std::to_string(hidden_features) +
           (extra_relu ? ", extra_relu=true" : "");
}

PVTBlock::PVTBlock(int64_t dim_, int64_t num_heads_, const PVTBlockOptions& options)
    : Module("PVTBlock"), dim(dim_), num_heads(num_heads_) {
    auto hidden = int64_t(double(dim) * options.mlp_ratio);
    norm1 = register_module("norm1", make<LayerNorm>(Shape{dim}, 1e-6));
    attn = register_module("attn", make<attention::SRAttention>(
                                       dim, num_heads, options.sr_ratio, options.linear,
                                       options.qkv_bias, options.attn_drop, options.proj_drop));
    drop_path1 = register_module("drop_path1", make<DropPath>(options.drop_path));
    norm2 = register_module("norm2", make<LayerNorm>(Shape{dim}, 1e-6));
    mlp = register_module(
        "mlp", make<MlpWithDepthwiseConv>(dim, hidden, options.linear, options.proj_drop));
    drop_path2 = register_module("drop_path2", make<DropPath>(options.drop_path));
}

Tensor PVTBlock::forward(const Tensor& x, int64_t height, int64_t width) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim && x.size(1) == height * width, type_name(),
                "expects x (B, H*W, ", dim, ") with H = ", height, ", W = ", width, ", got shape ",
                x.shape());
    Tensor y = add(x, drop_path1->forward(attn->forward(norm1->forward(x), height, width)));
    return add(y, drop_path2->forward(mlp->forward(norm2->forward(y), height, width)));
}

std::string PVTBlock::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", num_heads=" + std::to_string(num_heads);
}

PVTStage::PVTStage(int64_t dim_, int64_t dim_out_, int64_t depth, bool with_downsample,
                   int64_t num_heads, const PVTBlockOptions& options,
                   const std::vector<double>& drop_paths)
    : Module("PVTStage"), dim(dim_), dim_out(dim_out_) {
    LUMEN_CHECK(with_downsample || dim == dim_out, type_name(),
                "without downsample dim must equal dim_out, got ", dim, " and ", dim_out);
    LUMEN_CHECK(depth >= 0, type_name(), "depth must be >= 0, got ", depth);
    LUMEN_CHECK(drop_paths.empty() || int64_t(drop_paths.size()) == depth, type_name(),
                "drop_paths has ", drop_paths.size(), " rates for ", depth, " blocks");
    if (with_downsample)
        downsample = register_module("downsample", make<OverlapPatchEmbed>(3, 2, dim, dim_out));
    blocks = register_module("blocks", make<ModuleList<PVTBlock>>());
    for (int64_t i = 0; i < depth; ++i) {
        PVTBlockOptions block = options;
        block.drop_path = drop_paths.empty() ? 0.0 : drop_paths[size_t(i)];
        blocks->push_back(make<PVTBlock>(dim_out, num_heads, block));
    }
    norm = register_module("norm", make<LayerNorm>(Shape{dim_out}, 1e-6));
}

Tensor PVTStage::forward(const Tensor& x) {
    Tensor nhwc = x;
    if (downsample) {
        nhwc = downsample->forward(x);
    } else {
        LUMEN_CHECK(x.ndim() == 4 && x.size(3) == dim_out, type_name(),
                    "without downsample expects NHWC x (B, H, W, ", dim_out, "), got shape ",
                    x.shape());
    }
    int64_t batch = nhwc.size(0), height = nhwc.size(1), width = nhwc.size(2);
    Tensor tokens = nhwc.reshape({batch, height * width, dim_out});
    int64_t index = first_block;
    for (const auto& block : *blocks)
        tokens = checkpoint_every(
            grad_checkpointing, index++,
            [block, height, width](const std::vector<Tensor>& in) {
                return block->forward(in[0], height, width);
            },
            {tokens}, block->parameters());
    // NHWC back to NCHW, stored contiguously: the next stage's conv and the decoders read it.
    return norm->forward(tokens)
        .view({batch, height, width, dim_out})
        .permute({0, 3, 1, 2})
        .contiguous();
}

std::string PVTStage::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", dim_out=" + std::to_string(dim_out) +
           ", depth=" + std::to_string(blocks->size());
}

}  // namespace lumen::nn::pvt
