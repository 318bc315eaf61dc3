// The one interface every attention variant implements, so that blocks and models swap
// variants by name in their config (the papers' ablations are config changes, not code changes):
// tokens (B, N, C) in, (B, N, C) out, plus an AttentionContext carrying what some variants
// need: the token grid (UTNet, Swin, LPI, spatial reduction), a key padding mask (text
// models), causality. A registry maps names ("mhsa", "diff", "dgsa", "seqnorm", "sima", ...)
// to factories; a new variant registers itself from its own file (see
// examples/custom_attention.cpp).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace lumen::nn::attention {

struct AttentionContext {
    // Spatial layout of the N tokens, row-major: {H, W} or {D, H, W}; empty when the tokens
    // have none (text) or the variant does not need it. Tokens not on the grid (a class
    // token) come first: N = prefix_tokens + prod(grid).
    std::vector<int64_t> grid;
    int64_t prefix_tokens = 0;
    // (B, N) bool, true = padded key (ignored by every query); undefined for none.
    Tensor key_padding_mask;
    // Query i attends to keys j <= i only.
    bool causal = false;
};

class Attention : public Module {
  public:
    using Module::Module;
    // Shapes: x (B, N, C) -> (B, N, C). Throws [<type_name>] for a wrong shape or a context
    // entry the variant cannot honour (e.g. a mask for a softmax-free variant).
    virtual Tensor forward(const Tensor& x, const AttentionContext& context) = 0;
    Tensor forward(const Tensor& x) override { return forward(x, AttentionContext{}); }
};

// What a factory gets: the common settings of every variant, and the variant's own options
// by name (numbers; booleans as 0/1) for anything else (lambda_init, reduce_size, ...).
struct AttentionConfig {
    std::string type;  // registry name
    int64_t dim = 0;   // C, the token width
    int64_t num_heads = 1;
    int64_t head_dim = -1;  // -1: dim / num_heads
    bool qkv_bias = true;
    double attn_drop = 0.0;
    double proj_drop = 0.0;
    int64_t layer_index = 0;  // position of the block in its stack (Diff/DGSA lambda_init)
    std::vector<std::pair<std::string, double>> options;

    // The option `name`, or `fallback` when absent.
    double option(const std::string& name, double fallback) const;
};

using AttentionFactory = std::function<std::shared_ptr<Attention>(const AttentionConfig&)>;

// Adds a variant; throws [attention] if the name is taken.
void register_attention(const std::string& name, AttentionFactory factory);
// Builds config.type; throws [attention] naming the registered variants for an unknown name.
std::shared_ptr<Attention> make_attention(const AttentionConfig& config);
// Registered names, sorted.
std::vector<std::string> attention_names();

// Registers at static-initialization time from the variant's own .cpp. In a static library
// the linker keeps such an object only if something else in it is referenced, so the
// built-in variants are also listed in nn/attention/attention.cpp's ensure_builtins().
struct AttentionRegistration {
    AttentionRegistration(const std::string& name, AttentionFactory factory) {
        register_attention(name, std::move(factory));
    }
};

}  // namespace lumen::nn::attention
