// GatedDiffLinearAttn: the local mixing branch, the two differential linear-attention branches
// and the output projection, from ops (autograd gives the backward).
#include "nn/attention/gdla.h"

#include "nn/attention/linear_attention.h"
#include "nn/attention/mhsa.h"
#include "nn/init.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/shape.h"

namespace lumen::nn::attention {

std::pair<int64_t, int64_t> grid_2d(const AttentionContext& context, int64_t n,
                                    const std::string& who) {
    LUMEN_CHECK(context.grid.size() == 2 && context.prefix_tokens == 0, who,
                "needs the token grid {H, W} in the context and no prefix tokens, got grid ",
                context.grid, " with ", context.prefix_tokens, " prefix tokens");
    LUMEN_CHECK(
        context.grid[0] > 0 && context.grid[1] > 0 && context.grid[0] * context.grid[1] == n, who,
        "grid ", context.grid, " does not cover the ", n, " tokens (N = H W)");
    return {context.grid[0], context.grid[1]};
}

GatedDiffLinearAttn::GatedDiffLinearAttn(int64_t dim_, int64_t n_heads_, bool qkv_bias, double eps_)
    : Attention("GatedDiffLinearAttn"), dim(dim_), n_heads(n_heads_), eps(eps_) {
    LUMEN_CHECK(dim > 0 && n_heads > 0 && dim % n_heads == 0 && (dim / n_heads) % 2 == 0,
                "GatedDiffLinearAttn",
                "dim must be a positive multiple of n_heads with an even head dim, got dim ", dim,
                ", n_heads ", n_heads);
    head_dim = dim / n_heads;
    int64_t wide = 4 * dim;
    // Registration order follows the official module, so str() and state_dict read alike.
    qkvg = register_module("qkvg", make<Linear>(dim, wide, qkv_bias));
    ln = register_module("ln", make<RMSNorm>(Shape{head_dim}, 1e-5));
    dwc = register_module("dwc", make<Conv2d>(wide, wide, std::vector<int64_t>{3},
                                              ConvOptions{.padding = {1}, .groups = wide}));
    pwc = register_module("pwc", make<Conv2d>(wide, wide, std::vector<int64_t>{1}));
    lambda_scale_main = register_parameter("lambda_scale_main", empty({n_heads, head_dim}));
    lambda_scale_aux = register_parameter("lambda_scale_aux", empty({n_heads, head_dim}));
    init::normal_(lambda_scale_main, 0.0, 0.1);
    init::normal_(lambda_scale_aux, 0.0, 0.1);
    out_proj = register_module("out_proj", make<Linear>(2 * dim, dim, true));
}

// Every 4C-channel tensor is kept channel-major, (B, 4C, N): that is already the NCHW map the
// depthwise conv needs, so no (N, 4C) transpose is ever copied (at N = 4096 such a copy costs
// more than the depthwise conv itself); the GEMMs read the transposed operands in place.

Tensor GatedDiffLinearAttn::local_mix(const Tensor& t, int64_t height, int64_t width) const {
    int64_t batch = t.size(0), n = t.size(2), wide = 4 * dim;
    Tensor mixed = dwc->forward(t.view({batch, wide, height, width})).view({batch, wide, n});
    // The 1x1 conv as one GEMM per sample, its bias per channel (row).
    return add(matmul(pwc->weight.view({wide, wide}), mixed), pwc->bias.view({wide, 1}));
}

Tensor GatedDiffLinearAttn::branch(const Tensor& t, const Tensor& lambda) const {
    int64_t batch = t.size(0), n = t.size(2), h = n_heads, dh = head_dim, d = dh / 2;
    // Row (block, j, half, i) of [q|k] views as (B, 2, h, 2, d, N); transposed, every (block,
    // head, half) is an (N, d) matrix stored column-major, which the fused linear attention
    // reads in place (phi applied inside): both halves of every head in one call.
    Tensor qk = t.narrow(1, 0, 2 * dim).view({batch, 2, h, 2, d, n}).transpose(-2, -1);
    // v of head j, (B, h, 1, N, dh), shared by both halves (broadcast over the half dim).
    Tensor v = t.narrow(1, 2 * dim, dim).view({batch, h, 1, dh, n}).transpose(-2, -1);
    Tensor both = fused ? linear_attention(qk.select(1, 0), qk.select(1, 1), v, eps)
                        : linear_attention_reference(qk.select(1, 0), qk.select(1, 1), v, eps);
    // D = A1 - lambda[j] * A2 with lambda (h, dh) per channel; then RMSNorm over dh.
    Tensor diff = sub(both.select(2, 0), mul(both.select(2, 1), lambda.view({1, h, 1, dh})));
    Tensor normed = rms_norm(diff, {dh}, ln->weight, ln->eps);  // (B, h, N, dh)
    Tensor gate = sigmoid(t.narrow(1, 3 * dim, dim)).view({batch, h, dh, n});
    return mul(normed.transpose(-2, -1), gate).view({batch, dim, n});  // channel-major
}

Tensor GatedDiffLinearAttn::forward(const Tensor& x, int64_t height, int64_t width) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim, "GatedDiffLinearAttn", "expects x (B, N, ", dim,
                "), got shape ", x.shape());
    LUMEN_CHECK(height > 0 && width > 0 && height * width == x.size(1), "GatedDiffLinearAttn",
                "grid ", height, " x ", width, " does not cover the ", x.size(1), " tokens");
    // T^T = W x^T (+ b per row): (B, 4C, N).
    Tensor t = matmul(qkvg->weight, x.transpose(1, 2));
    if (qkvg->bias.defined()) t = add(t, qkvg->bias.view({4 * dim, 1}));
    Tensor main = branch(t, lambda_scale_main);
    Tensor aux = branch(local_mix(t, height, width), lambda_scale_aux);
    // out_proj reads the channel-major concatenation transposed: tokens come out.
    return out_proj->forward(cat({main, aux}, 1).transpose(1, 2));
}

Tensor GatedDiffLinearAttn::forward(const Tensor& x, const AttentionContext& context) {
    check_unmasked(context, "GatedDiffLinearAttn");
    LUMEN_CHECK(x.ndim() == 3, "GatedDiffLinearAttn", "expects x (B, N, ", dim, "), got shape ",
                x.shape());
    auto [height, width] = grid_2d(context, x.size(1), "GatedDiffLinearAttn");
    return forward(x, height, width);
}

std::string GatedDiffLinearAttn::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", n_heads=" + std::to_string(n_heads) +
           ", head_dim=" + std::to_string(head_dim);
}

std::shared_ptr<Attention> make_gdla_attention(const AttentionConfig& config) {
    check_attention_options(config, {}, "gdla");
    LUMEN_CHECK(config.head_dim < 0 || config.head_dim * config.num_heads == config.dim, "gdla",
                "head_dim must be -1 or dim / num_heads, got ", config.head_dim, " for dim ",
                config.dim, " and ", config.num_heads, " heads");
    return make<GatedDiffLinearAttn>(config.dim, config.num_heads, config.qkv_bias);
}

}  // namespace lumen::nn::attention
