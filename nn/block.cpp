// Block: builds norm1/attn/norm2/mlp from BlockOptions and runs the two pre-norm residual
// branches; the presets of Lygizou et al. 2025.
#include "nn/block.h"

#include <cmath>

#include "nn/checkpoint.h"
#include "nn/mlp.h"
#include "nn/norm.h"
#include "ops/elementwise.h"

namespace lumen::nn {

std::shared_ptr<Module> make_norm(const std::string& type, int64_t dim, double eps,
                                  const std::string& who) {
    if (type == "layernorm") return make<LayerNorm>(Shape{dim}, eps);
    if (type == "rmsnorm") return make<RMSNorm>(Shape{dim}, eps);
    LUMEN_FAIL(who, "unknown norm_type '", type, "' (known: layernorm, rmsnorm)");
}

namespace {

std::shared_ptr<Module> make_ffn(int64_t dim, const BlockOptions& options) {
    if (options.mlp_type == "gelu") {
        int64_t hidden =
            options.mlp_hidden > 0 ? options.mlp_hidden : int64_t(options.mlp_ratio * double(dim));
        LUMEN_CHECK(hidden > 0, "Block", "mlp hidden width must be positive, got ", hidden);
        return make<Mlp>(dim, hidden, dim, "gelu", options.drop, options.mlp_bias);
    }
    if (options.mlp_type == "swiglu") {
        int64_t hidden = options.mlp_hidden > 0
                             ? options.mlp_hidden
                             : int64_t(std::floor(options.mlp_ratio * double(dim) / 2.0 + 1e-9));
        LUMEN_CHECK(hidden > 0, "Block", "swiglu gated width must be positive, got ", hidden);
        LUMEN_CHECK(options.ffn_dropouts == 1 || options.ffn_dropouts == 2, "Block",
                    "ffn_dropouts must be 1 or 2, got ", options.ffn_dropouts);
        double drop2 = options.ffn_dropouts == 2 ? options.drop : 0.0;
        return make<SwiGLU>(dim, hidden, dim, options.drop, drop2, options.mlp_bias);
    }
    LUMEN_FAIL("Block", "unknown mlp_type '", options.mlp_type, "' (known: gelu, swiglu)");
}

}  // namespace

Block::Block(int64_t dim_, int64_t num_heads_, int64_t layer_index_, const BlockOptions& options_)
    : Module("Block"),
      dim(dim_),
      num_heads(num_heads_),
      layer_index(layer_index_),
      options(options_) {
    LUMEN_CHECK(dim > 0 && num_heads > 0 && layer_index >= 0, "Block",
                "dim and num_heads must be positive and layer_index >= 0, got dim ", dim,
                ", num_heads ", num_heads, ", layer_index ", layer_index);
    norm1 = register_module("norm1", make_norm(options.norm_type, dim, options.norm_eps, "Block"));
    attention::AttentionConfig config{.type = options.attn_type,
                                      .dim = dim,
                                      .num_heads = num_heads,
                                      .qkv_bias = options.qkv_bias,
                                      .attn_drop = options.attn_drop,
                                      .proj_drop = options.drop,
                                      .layer_index = layer_index,
                                      .options = options.attn_options};
    attn = register_module("attn", attention::make_attention(config));
    drop_path1 = register_module("drop_path1", make<DropPath>(options.drop_path));
    norm2 = register_module("norm2", make_norm(options.norm_type, dim, options.norm_eps, "Block"));
    mlp = register_module("mlp", make_ffn(dim, options));
    drop_path2 = register_module("drop_path2", make<DropPath>(options.drop_path));
}

Tensor Block::forward(const Tensor& x, const attention::AttentionContext& context) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim, "Block", "expects x (B, N, ", dim,
                "), got shape ", x.shape());
    Tensor h = add(x, drop_path1->forward(attn->forward(norm1->forward(x), context)));
    return add(h, drop_path2->forward(mlp->forward(norm2->forward(h))));
}

std::string Block::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", num_heads=" + std::to_string(num_heads) +
           ", layer_index=" + std::to_string(layer_index) + ", attn=" + options.attn_type +
           ", mlp=" + options.mlp_type + ", norm=" + options.norm_type;
}

BlockOptions vit_block_options() { return BlockOptions{}; }

BlockOptions diff_transformer_layer_options(double k) {
    return BlockOptions{.attn_type = "diff",
                        .mlp_type = "swiglu",
                        .norm_type = "rmsnorm",
                        .norm_eps = 1e-5,
                        .mlp_ratio = k};
}

BlockOptions dgvit_block_options(double k) {
    return BlockOptions{.attn_type = "dgsa",
                        .mlp_type = "swiglu",
                        .norm_type = "layernorm",
                        .norm_eps = 1e-6,
                        .mlp_ratio = k,
                        .attn_options = {{"lambda_init", 0.8}, {"q_residual", 1.0}}};
}

BlockOptions dgt_layer_options(double k) {
    return BlockOptions{.attn_type = "dgsa",
                        .mlp_type = "swiglu",
                        .norm_type = "rmsnorm",
                        .norm_eps = 1e-5,
                        .mlp_ratio = k,
                        .attn_options = {{"lambda_init", 0.8}, {"q_residual", 0.0}}};
}

Tensor run_blocks(const ModuleList<Block>& blocks, Tensor x,
                  const attention::AttentionContext& context, int64_t grad_checkpointing) {
    int64_t index = 0;
    for (const auto& block : blocks)
        x = checkpoint_every(
            grad_checkpointing, index++,
            [block, context](const std::vector<Tensor>& in) {
                return block->forward(in[0], context);
            },
            {x}, block->parameters());
    return x;
}

}  // namespace lumen::nn
