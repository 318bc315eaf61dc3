// MultiheadDGSA: the differential projections and maps of diff_attn.cpp, a sigmoid gate per
// token and head instead of lambda, and the optional query residual. Autograd flows through
// the ops.
#include "nn/attention/dgsa.h"

#include <cmath>

#include "core/autograd.h"
#include "nn/attention/diff_attn.h"
#include "nn/attention/mhsa.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/norm.h"

namespace lumen::nn::attention {

MultiheadDGSA::MultiheadDGSA(int64_t embed_dim_, int64_t num_heads_, const DGSAOptions& options_)
    : Attention("MultiheadDGSA"), embed_dim(embed_dim_), num_heads(num_heads_), options(options_) {
    LUMEN_CHECK(embed_dim > 0 && num_heads > 0 && embed_dim % (2 * num_heads) == 0, "MultiheadDGSA",
                "embed_dim must be a positive multiple of 2 * num_heads, got ", "embed_dim ",
                embed_dim, ", num_heads ", num_heads);
    head_dim = embed_dim / num_heads / 2;
    scale = 1.0 / std::sqrt(double(head_dim));
    lambda_init =
        options.lambda_schedule ? diff_lambda_init(options.layer_index) : options.lambda_init;
    q_proj = register_module("q_proj", make<Linear>(embed_dim, embed_dim, false));
    k_proj = register_module("k_proj", make<Linear>(embed_dim, embed_dim, false));
    v_proj = register_module("v_proj", make<Linear>(embed_dim, embed_dim, false));
    gate_proj = register_module("gate_proj", make<Linear>(embed_dim, num_heads, true));
    out_proj = register_module("out_proj", make<Linear>(embed_dim, embed_dim, false));
    subln = register_module("subln", make<RMSNorm>(Shape{2 * head_dim}, options.subln_eps));
    attn_drop = register_module("attn_drop", make<Dropout>(options.attn_drop));
    proj_drop = register_module("proj_drop", make<Dropout>(options.proj_drop));
}

Tensor MultiheadDGSA::forward(const Tensor& x, const AttentionContext& context) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == embed_dim, "MultiheadDGSA", "expects x (B, N, ",
                embed_dim, "), got shape ", x.shape());
    int64_t batch = x.size(0), n = x.size(1), d = head_dim, heads = num_heads;
    Tensor q_lin = q_proj->forward(x);  // (B, N, D), kept for the residual
    Tensor k_lin = k_proj->forward(x).view({batch, n, 2 * heads, d});
    Tensor v = v_proj->forward(x).view({batch, n, heads, 2 * d}).transpose(1, 2);    // (B,nh,N,2d)
    Tensor gate = sigmoid(gate_proj->forward(x)).transpose(1, 2).unsqueeze(-1);      // (B,nh,N,1)
    // g A+ - (1 - g) A- = g (A+ + A-) - A-, for maps or for their products with v.
    auto combine = [&](const Tensor& plus, const Tensor& minus) {
        return sub(mul(gate, add(plus, minus)), minus);
    };
    Tensor mixed;  // A v, (B, nh, N, 2d)
    if (fused && !store_attn) {
        Tensor padding =
            attention_score_bias(context, false, batch, n, x.dtype(), x.device(), "MultiheadDGSA");
        AttentionDropout drop =
            attention_dropout_draw(*attn_drop, batch * heads * n * n, x.dtype());
        auto [plus, minus] =
            differential_products(q_lin.view({batch, n, 2 * heads, d}), k_lin, v, scale, padding,
                                  options.causal || context.causal, drop);
        mixed = combine(plus, minus);
    } else {
        Tensor q = q_lin.view({batch, n, 2 * heads, d}).transpose(1, 2);
        Tensor k = k_lin.transpose(1, 2);
        Tensor bias = attention_score_bias(context, options.causal, batch, n, x.dtype(), x.device(),
                                           "MultiheadDGSA");
        Tensor weights =
            softmax_attention_weights(q, k, scale, bias).view({batch, heads, 2, n, n});  // A+, A-
        if (store_attn) {
            NoGradGuard no_grad;
            last_attn = combine(weights.select(2, 0), weights.select(2, 1)).detach();
        }
        if (is_training() && attn_drop->p > 0.0) {
            Tensor fused_map = combine(weights.select(2, 0), weights.select(2, 1));
            mixed = matmul(attn_drop->forward(fused_map), v);
        } else {
            Tensor both = matmul(weights, v.unsqueeze(2));  // (A+ v, A- v): (B, nh, 2, N, 2d)
            mixed = combine(both.select(2, 0), both.select(2, 1));
        }
    }
    // RMSNorm_2d(A v) * (1 - lambda_init), the constant folded into the norm's weight.
    Tensor normed = rms_norm(mixed, {2 * d}, mul(subln->weight, 1.0 - lambda_init), subln->eps);
    Tensor merged = normed.transpose(1, 2).reshape({batch, n, embed_dim});
    Tensor y = proj_drop->forward(out_proj->forward(merged));
    return options.q_residual ? add(y, q_lin) : y;
}

std::string MultiheadDGSA::extra_repr() const {
    return "embed_dim=" + std::to_string(embed_dim) + ", num_heads=" + std::to_string(num_heads) +
           ", head_dim=" + std::to_string(head_dim) +
           ", lambda_init=" + std::to_string(lambda_init) +
           (options.q_residual ? ", q_residual=true" : "") +
           (options.causal ? ", causal=true" : "");
}

std::shared_ptr<Attention> make_dgsa_attention(const AttentionConfig& config) {
    check_attention_options(
        config, {"lambda_init", "lambda_schedule", "q_residual", "causal", "subln_eps"}, "dgsa");
    check_differential_head_dim(config, "dgsa");
    DGSAOptions options{.layer_index = config.layer_index,
                        .lambda_init = config.option("lambda_init", 0.8),
                        .lambda_schedule = config.option("lambda_schedule", 0.0) != 0.0,
                        .q_residual = config.option("q_residual", 0.0) != 0.0,
                        .causal = config.option("causal", 0.0) != 0.0,
                        .attn_drop = config.attn_drop,
                        .proj_drop = config.proj_drop,
                        .subln_eps = config.option("subln_eps", 1e-5)};
    return make<MultiheadDGSA>(config.dim, config.num_heads, options);
}

}  // namespace lumen::nn::attention
