// Text classifiers of the DGSA paper (Lygizou et al. 2025, Sec. 4.3 and 5.2): the vanilla
// Transformer encoder (TransformerCls), the Differential Transformer (DiffTransformerCls) and DGT,
// one skeleton with the block chosen by config: scaled token embedding + fixed sinusoidal
// positions, pre-norm blocks under a key padding mask, final norm, mean over the non-pad tokens,
// linear head.
#pragma once

#include <memory>
#include <string>

#include "nn/activation.h"
#include "nn/block.h"
#include "nn/container.h"
#include "nn/linear.h"

namespace lumen::models {

struct TextTransformerConfig {
    std::string name = "DGT";  // the type name in messages and str()
    int64_t vocab_size = 0;
    int64_t num_classes = 2;
    int64_t embed_dim = 256;
    int64_t depth = 6;  // number of blocks
    int64_t num_heads = 8;
    int64_t pad_idx = 0;      // the <pad> token: zero embedding row, masked key, not pooled
    bool embed_scale = true;  // multiply the embeddings by sqrt(embed_dim)
    int64_t max_len = 512;    // longest sequence (the position table is built for it)
    double emb_drop = 0.0;    // dropout on the embedded tokens
    // Every block (block i gets layer_index i); block.norm_type/norm_eps also make the final
    // norm.
    nn::BlockOptions block = nn::dgt_layer_options();
    // k > 0: every k-th block recomputes its forward in backward (nn/checkpoint.h); 0: none.
    int64_t grad_checkpointing = 0;

    // Throws [<name>] for non-positive sizes or a pad_idx outside the vocabulary.
    void validate() const;
};

// Seed 004's text models (Table 4): D 256, 8 heads, depth 6 (Rotten Tomatoes 4), dropout 0.1
// on the embeddings, attention projections and FFN. TransformerCls: LayerNorm eps 1e-5, "mhsa"
// with qkv bias, GELU MLP 4 D. DiffTransformerCls: RMSNorm eps 1e-5, "diff" (layer_index = i),
// SwiGLU. DGT: RMSNorm eps 1e-5, "dgsa" (lambda_init 0.8, no residual), SwiGLU. The SwiGLU
// expansion k is 2, 4 or 16/3 (gated width floor(k D / 2)).
TextTransformerConfig transformer_cls_config(int64_t vocab_size, int64_t num_classes,
                                             int64_t depth = 6, double drop = 0.1);
TextTransformerConfig diff_transformer_cls_config(int64_t vocab_size, int64_t num_classes,
                                                  double k = 16.0 / 3.0, int64_t depth = 6,
                                                  double drop = 0.1);
TextTransformerConfig dgt_config(int64_t vocab_size, int64_t num_classes, double k = 16.0 / 3.0,
                                 int64_t depth = 6, double drop = 0.1);

// tokens (B, N) int64, N <= max_len; pad = (tokens == pad_idx) is the key padding mask of
// every block; x = tok_embed(tokens) * sqrt(D) + PE[:N] (PE[t, 2i] = sin(t / 10000^(2i/D)),
// PE[t, 2i+1] = cos(same); fixed, not a parameter) -> emb_drop -> blocks -> norm ->
// pooled = mean of x over the non-pad tokens (B, D) -> head -> logits (B, num_classes).
// Parameters: tok_embed.weight (V, D) (padding row zero, never updated), blocks.i.*, norm.*,
// head.{weight, bias}; PyTorch's default init. A sample made only of padding gives
// NaN. Throws [<name>] for tokens that are not (B, N) integers or N > max_len.
class TextTransformer : public nn::Module {
  public:
    explicit TextTransformer(const TextTransformerConfig& config);
    Tensor forward(const Tensor& tokens) override;
    // The normalised tokens (B, N, D) before pooling.
    Tensor forward_features(const Tensor& tokens);
    const TextTransformerConfig& config() const { return config_; }

    std::shared_ptr<nn::Embedding> tok_embed;
    std::shared_ptr<nn::Dropout> emb_drop;
    std::shared_ptr<nn::ModuleList<nn::Block>> blocks;
    std::shared_ptr<nn::Module> norm;
    std::shared_ptr<nn::Linear> head;
    Tensor position_table;  // (max_len, D), a non-persistent buffer "pe"

  private:
    void check_tokens(const Tensor& tokens) const;
    TextTransformerConfig config_;
};

}  // namespace lumen::models
