// TextTransformer: embedding front end, masked pre-norm blocks, masked mean pooling, presets.
#include "models/text_transformer.h"

#include <cmath>

#include "nn/embed.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduce.h"

namespace lumen::models {

void TextTransformerConfig::validate() const {
    LUMEN_CHECK(vocab_size > 0 && num_classes > 0 && embed_dim > 0 && num_heads > 0 && depth >= 0 &&
                    max_len > 0,
                name, "vocab_size, num_classes, embed_dim, num_heads and max_len must be positive ",
                "and depth >= 0, got ", vocab_size, ", ", num_classes, ", ", embed_dim, ", ",
                num_heads, ", ", max_len, ", depth ", depth);
    LUMEN_CHECK(pad_idx >= 0 && pad_idx < vocab_size, name, "pad_idx ", pad_idx,
                " is outside the vocabulary [0, ", vocab_size, ")");
}

namespace {

TextTransformerConfig text_config(const std::string& name, int64_t vocab_size, int64_t num_classes,
                                  int64_t depth, double drop, nn::BlockOptions block) {
    block.drop = drop;
    return TextTransformerConfig{.name = name,
                                 .vocab_size = vocab_size,
                                 .num_classes = num_classes,
                                 .depth = depth,
                                 .emb_drop = drop,
                                 .block = std::move(block)};
}

}  // namespace

TextTransformerConfig transformer_cls_config(int64_t vocab_size, int64_t num_classes, int64_t depth,
                                             double drop) {
    nn::BlockOptions block = nn::vit_block_options();
    block.norm_eps = 1e-5;  // PyTorch's LayerNorm default in the text baseline
    return text_config("TransformerCls", vocab_size, num_classes, depth, drop, block);
}

TextTransformerConfig diff_transformer_cls_config(int64_t vocab_size, int64_t num_classes, double k,
                                                  int64_t depth, double drop) {
    return text_config("DiffTransformerCls", vocab_size, num_classes, depth, drop,
                       nn::diff_transformer_layer_options(k));
}

TextTransformerConfig dgt_config(int64_t vocab_size, int64_t num_classes, double k, int64_t depth,
                                 double drop) {
    return text_config("DGT", vocab_size, num_classes, depth, drop, nn::dgt_layer_options(k));
}

TextTransformer::TextTransformer(const TextTransformerConfig& config)
    : Module(config.name), config_(config) {
    config_.validate();
    int64_t dim = config_.embed_dim;
    tok_embed = register_module("tok_embed",
                                nn::make<nn::Embedding>(config_.vocab_size, dim, config_.pad_idx));
    emb_drop = register_module("emb_drop", nn::make<nn::Dropout>(config_.emb_drop));
    blocks = register_module("blocks", nn::make<nn::ModuleList<nn::Block>>());
    for (int64_t i = 0; i < config_.depth; ++i)
        blocks->push_back(nn::make<nn::Block>(dim, config_.num_heads, i, config_.block));
    norm = register_module(
        "norm", nn::make_norm(config_.block.norm_type, dim, config_.block.norm_eps, config_.name));
    head = register_module("head", nn::make<nn::Linear>(dim, config_.num_classes));
    // Not persistent: it is a fixed function of the config, absent from the reference weights.
    position_table = register_buffer("pe", nn::sinusoidal_position_table(config_.max_len, dim),
                                     /*persistent=*/false);
}

void TextTransformer::check_tokens(const Tensor& tokens) const {
    LUMEN_CHECK(
        tokens.ndim() == 2 && (tokens.dtype() == DType::int64 || tokens.dtype() == DType::int32),
        config_.name, "expects tokens (B, N) int64, got ", tokens.dtype(), " of shape ",
        tokens.shape());
    LUMEN_CHECK(tokens.size(1) <= config_.max_len, config_.name, "sequence length ", tokens.size(1),
                " exceeds max_len ", config_.max_len);
}

Tensor TextTransformer::forward_features(const Tensor& tokens) {
    check_tokens(tokens);
    int64_t n = tokens.size(1);
    nn::attention::AttentionContext context{.key_padding_mask =
                                                eq(tokens, double(config_.pad_idx))};
    Tensor x = tok_embed->forward(tokens);
    if (config_.embed_scale) x = mul(x, std::sqrt(double(config_.embed_dim)));
    x = emb_drop->forward(add(x, position_table.narrow(0, 0, n)));
    x = nn::run_blocks(*blocks, x, context, config_.grad_checkpointing);
    return norm->forward(x);
}

Tensor TextTransformer::forward(const Tensor& tokens) {
    Tensor x = forward_features(tokens);  // (B, N, D)
    // Masked mean over tokens as one product: valid (B, 1, N) @ x (B, N, D) / count.
    Tensor valid = ne(tokens, double(config_.pad_idx)).to(x.dtype()).unsqueeze(1);
    Tensor pooled = div(matmul(valid, x), sum(valid, {-1}, true)).squeeze(1);  // (B, D)
    return head->forward(pooled);
}

}  // namespace lumen::models
