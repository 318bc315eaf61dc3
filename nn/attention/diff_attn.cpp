// MultiheadDiffAttn: projections, the two softmax maps per head, the scalar lambda, the shared
// sub-layer RMSNorm. Autograd flows through the ops.
#include "nn/attention/diff_attn.h"

#include <cmath>

#include "core/autograd.h"
#include "nn/attention/mhsa.h"
#include "nn/init.h"
#include "nn/rope.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/reduce.h"

namespace lumen::nn::attention {

double diff_lambda_init(int64_t layer_index) {
    LUMEN_CHECK(layer_index >= 0, "diff", "layer_index must be >= 0, got ", layer_index);
    return 0.8 - 0.6 * std::exp(-0.3 * double(layer_index));
}

MultiheadDiffAttn::MultiheadDiffAttn(int64_t embed_dim_, int64_t num_heads_,
                                     const DiffAttnOptions& options_)
    : Attention("MultiheadDiffAttn"),
      embed_dim(embed_dim_),
      num_heads(num_heads_),
      options(options_) {
    LUMEN_CHECK(embed_dim > 0 && num_heads > 0 && embed_dim % (2 * num_heads) == 0,
                "MultiheadDiffAttn", "embed_dim must be a positive multiple of 2 * num_heads, got ",
                "embed_dim ", embed_dim, ", num_heads ", num_heads);
    head_dim = embed_dim / num_heads / 2;
    LUMEN_CHECK(!options.rope || head_dim % 2 == 0, "MultiheadDiffAttn",
                "RoPE rotates pairs: head dim embed_dim / (2 num_heads) = ", head_dim,
                " must be even");
    scale = 1.0 / std::sqrt(double(head_dim));
    lambda_init =
        options.lambda_init ? *options.lambda_init : diff_lambda_init(options.layer_index);
    q_proj = register_module("q_proj", make<Linear>(embed_dim, embed_dim, false));
    k_proj = register_module("k_proj", make<Linear>(embed_dim, embed_dim, false));
    v_proj = register_module("v_proj", make<Linear>(embed_dim, embed_dim, false));
    out_proj = register_module("out_proj", make<Linear>(embed_dim, embed_dim, false));
    lambda_q1 = register_parameter("lambda_q1", diff_lambda_vector(head_dim));
    lambda_k1 = register_parameter("lambda_k1", diff_lambda_vector(head_dim));
    lambda_q2 = register_parameter("lambda_q2", diff_lambda_vector(head_dim));
    lambda_k2 = register_parameter("lambda_k2", diff_lambda_vector(head_dim));
    subln = register_module("subln", make<RMSNorm>(Shape{2 * head_dim}, options.subln_eps));
    attn_drop = register_module("attn_drop", make<Dropout>(options.attn_drop));
    proj_drop = register_module("proj_drop", make<Dropout>(options.proj_drop));
}

Tensor diff_lambda_vector(int64_t head_dim) {
    Tensor t = empty({head_dim});
    init::normal_(t, 0.0, 0.1);
    return t;
}

Tensor diff_lambda(const Tensor& q1, const Tensor& k1, const Tensor& q2, const Tensor& k2,
                   double lambda_init) {
    Tensor first = exp(sum(mul(q1, k1)));
    Tensor second = exp(sum(mul(q2, k2)));
    return add(sub(first, second), lambda_init);
}

Tensor MultiheadDiffAttn::lambda_full() const {
    return diff_lambda(lambda_q1, lambda_k1, lambda_q2, lambda_k2, lambda_init);
}

std::pair<Tensor, Tensor> differential_products(const Tensor& q, const Tensor& k, const Tensor& v,
                                                double scale, const Tensor& padding, bool causal,
                                                const AttentionDropout& drop) {
    const int64_t batch = q.size(0), n = q.size(1), heads = v.size(1), d = q.size(3);
    // (B, N, 2nh, d) -> (B, nh, 2, N, d): slot 2h + s is map s of head h.
    Tensor qs = q.view({batch, n, heads, 2, d}).permute({0, 2, 3, 1, 4});
    Tensor ks = k.view({batch, k.size(1), heads, 2, d}).permute({0, 2, 3, 1, 4});
    AttentionOptions options{.scale = scale, .bias = padding, .causal = causal, .dropout = drop};
    return {scaled_dot_product_attention(qs.select(2, 0), ks.select(2, 0), v, options),
            scaled_dot_product_attention(qs.select(2, 1), ks.select(2, 1), v, options)};
}

Tensor MultiheadDiffAttn::forward(const Tensor& x, const AttentionContext& context) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == embed_dim, "MultiheadDiffAttn", "expects x (B, N, ",
                embed_dim, "), got shape ", x.shape());
    int64_t batch = x.size(0), n = x.size(1), d = head_dim, heads = num_heads;
    Tensor q = q_proj->forward(x).view({batch, n, 2 * heads, d});
    Tensor k = k_proj->forward(x).view({batch, n, 2 * heads, d});
    Tensor v = v_proj->forward(x).view({batch, n, heads, 2 * d}).transpose(1, 2);  // (B,nh,N,2d)
    if (options.rope) {
        auto [cos, sin] = rope_cos_sin(n, d, options.rope_base, x.dtype(), x.device());
        q = apply_rope_interleaved(q, cos, sin);
        k = apply_rope_interleaved(k, cos, sin);
    }
    Tensor lambda = lambda_full();
    Tensor mixed;  // A v, (B, nh, N, 2d)
    if (fused && !store_attn) {
        Tensor padding = attention_score_bias(context, false, batch, n, x.dtype(), x.device(),
                                              "MultiheadDiffAttn");
        AttentionDropout drop =
            attention_dropout_draw(*attn_drop, batch * heads * n * n, x.dtype());
        auto [first, second] =
            differential_products(q, k, v, scale, padding, options.causal || context.causal, drop);
        mixed = sub(first, mul(second, lambda));
    } else {
        mixed = unfused_mix(q, k, v, lambda, context);
    }
    // RMSNorm_2d(A v) * (1 - lambda_init), the constant folded into the norm's weight.
    Tensor normed = rms_norm(mixed, {2 * d}, mul(subln->weight, 1.0 - lambda_init), subln->eps);
    Tensor merged = normed.transpose(1, 2).reshape({batch, n, embed_dim});
    return proj_drop->forward(out_proj->forward(merged));
}

Tensor MultiheadDiffAttn::unfused_mix(const Tensor& q, const Tensor& k, const Tensor& v,
                                      const Tensor& lambda, const AttentionContext& context) {
    const int64_t batch = q.size(0), n = q.size(1), heads = num_heads;
    Tensor bias = attention_score_bias(context, options.causal, batch, n, q.dtype(), q.device(),
                                       "MultiheadDiffAttn");
    // Slots 2h and 2h+1 are adjacent, so (B, 2nh, N, N) views as (B, nh, 2, N, N).
    Tensor weights = softmax_attention_weights(q.transpose(1, 2), k.transpose(1, 2), scale, bias)
                         .view({batch, heads, 2, n, n});
    auto fused_map = [&] { return sub(weights.select(2, 0), mul(weights.select(2, 1), lambda)); };
    if (store_attn) {
        NoGradGuard no_grad;
        last_attn = fused_map().detach();
    }
    Tensor mixed;  // A v, (B, nh, N, 2d)
    if (is_training() && attn_drop->p > 0.0) {
        // Dropout acts on the fused map, so that map is formed here.
        mixed = matmul(attn_drop->forward(fused_map()), v);
    } else {
        // A v = P1 v - lambda (P2 v): both maps of a head times its values in one product.
        Tensor both = matmul(weights, v.unsqueeze(2));  // (B, nh, 2, N, 2d)
        mixed = sub(both.select(2, 0), mul(both.select(2, 1), lambda));
    }
    return mixed;
}

std::string MultiheadDiffAttn::extra_repr() const {
    return "embed_dim=" + std::to_string(embed_dim) + ", num_heads=" + std::to_string(num_heads) +
           ", head_dim=" + std::to_string(head_dim) +
           ", lambda_init=" + std::to_string(lambda_init) +
           (options.causal ? ", causal=true" : "") + (options.rope ? ", rope=true" : "");
}

void check_differential_head_dim(const AttentionConfig& config, const std::string& who) {
    int64_t width = config.num_heads > 0 ? config.dim / config.num_heads : 0;
    LUMEN_CHECK(config.head_dim < 0 || config.head_dim == width || 2 * config.head_dim == width,
                who, "head_dim must be -1, dim / num_heads = ", width,
                " (the channels of a head) or half of it (one map's q/k width), got ",
                config.head_dim);
}

std::shared_ptr<Attention> make_diff_attention(const AttentionConfig& config) {
    check_attention_options(config, {"causal", "rope", "rope_base", "subln_eps", "lambda_init"},
                            "diff");
    check_differential_head_dim(config, "diff");
    DiffAttnOptions options{.layer_index = config.layer_index,
                            .causal = config.option("causal", 0.0) != 0.0,
                            .rope = config.option("rope", 0.0) != 0.0,
                            .rope_base = config.option("rope_base", 10000.0),
                            .attn_drop = config.attn_drop,
                            .proj_drop = config.proj_drop,
                            .subln_eps = config.option("subln_eps", 1e-5)};
    for (const auto& [name, value] : config.options)
        if (name == "lambda_init") options.lambda_init = value;
    return make<MultiheadDiffAttn>(config.dim, config.num_heads, options);
}

}  // namespace lumen::nn::attention
