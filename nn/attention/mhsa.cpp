// Softmax multi-head self-attention (timm layout) and the masked score softmax it shares with
// the differential variants. Autograd flows through the ops.
#include "nn/attention/mhsa.h"

#include <cmath>
#include <limits>

#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/layout.h"
#include "ops/matmul.h"
#include "ops/softmax.h"

namespace lumen::nn::attention {

Tensor attention_score_bias(const AttentionContext& context, bool causal, int64_t batch, int64_t n,
                            DType dtype, Device device, const std::string& who) {
    Tensor bias;
    const Tensor& mask = context.key_padding_mask;
    if (mask.defined()) {
        LUMEN_CHECK(mask.dtype() == DType::bool_ && mask.ndim() == 2 && mask.size(0) == batch &&
                        mask.size(1) == n,
                    who, "key_padding_mask must be (B, N) = (", batch, ", ", n, ") bool, got ",
                    mask.dtype(), " of shape ", mask.shape());
        LUMEN_CHECK(mask.device() == device, who, "key_padding_mask is on ", mask.device(),
                    " but the tokens are on ", device);
        // An additive bias (not masked_fill of the scores): its backward passes the score
        // gradient through untouched, and it is built once per batch, not per head.
        double minus_inf = -std::numeric_limits<double>::infinity();
        bias =
            masked_fill(zeros({batch, n}, dtype, device), mask, minus_inf).view({batch, 1, 1, n});
    }
    if (causal || context.causal) {
        Tensor triangle = causal_mask(n, dtype, device);
        bias = bias.defined() ? add(bias, triangle) : triangle;
    }
    return bias;
}

Tensor softmax_attention_weights(const Tensor& q, const Tensor& k, double scale,
                                 const Tensor& bias) {
    // k^T is a transposed view that the GEMM reads in place.
    Tensor scores = matmul(mul(q, scale), k.transpose(-2, -1));
    if (bias.defined()) scores = add(scores, bias);
    return softmax(scores, -1);
}

Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, const SoftmaxAttention& how) {
    if (how.fused) {
        Shape map = q.shape();
        map.back() = k.size(-2);
        AttentionDropout drop = draw_attention_dropout(how.drop_p, shape_numel(map), q.dtype());
        return scaled_dot_product_attention(
            q, k, v, {.scale = how.scale, .bias = how.bias, .causal = how.causal, .dropout = drop});
    }
    Tensor bias = how.bias;
    if (how.causal) {
        Tensor triangle = causal_mask(q.size(-2), q.dtype(), q.device());
        bias = bias.defined() ? add(bias, triangle) : triangle;
    }
    Tensor weights = softmax_attention_weights(q, k, how.scale, bias);
    if (how.drop_p > 0.0) weights = dropout(weights, how.drop_p, true);
    return matmul(weights, v);
}

AttentionDropout attention_dropout_draw(const Dropout& module, int64_t map_numel, DType dtype) {
    if (!module.is_training() || module.p == 0.0) return {};
    return draw_attention_dropout(module.p, map_numel, dtype);
}

void check_attention_options(const AttentionConfig& config, const std::vector<std::string>& known,
                             const std::string& who) {
    for (const auto& [name, value] : config.options) {
        bool found = false;
        for (const std::string& k : known) found = found || k == name;
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        LUMEN_CHECK(found, who, "unknown option '", name, "' = ", value,
                    " (known: ", list.empty() ? "none" : list, ")");
    }
}

MHSA::MHSA(int64_t dim_, int64_t num_heads_, int64_t head_dim_, bool qkv_bias, double attn_p,
           double proj_p, bool causal_)
    : Attention("MHSA"), dim(dim_), num_heads(num_heads_), head_dim(head_dim_), causal(causal_) {
    LUMEN_CHECK(dim > 0 && num_heads > 0, "MHSA", "dim and num_heads must be positive, got dim ",
                dim, ", num_heads ", num_heads);
    if (head_dim < 0) {
        LUMEN_CHECK(dim % num_heads == 0, "MHSA", "dim ", dim, " is not divisible by num_heads ",
                    num_heads);
        head_dim = dim / num_heads;
    }
    LUMEN_CHECK(head_dim > 0, "MHSA", "head_dim must be positive, got ", head_dim);
    scale = 1.0 / std::sqrt(double(head_dim));
    int64_t inner = num_heads * head_dim;
    qkv = register_module("qkv", make<Linear>(dim, 3 * inner, qkv_bias));
    attn_drop = register_module("attn_drop", make<Dropout>(attn_p));
    proj = register_module("proj", make<Linear>(inner, dim));
    proj_drop = register_module("proj_drop", make<Dropout>(proj_p));
}

Tensor MHSA::forward(const Tensor& x, const AttentionContext& context) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim, "MHSA", "expects x (B, N, ", dim,
                "), got shape ", x.shape());
    int64_t batch = x.size(0), n = x.size(1);
    // Channel c of qkv: which = c / inner (q, k, v), head = (c % inner) / Hd, i = c % Hd.
    Tensor qkv_heads =
        qkv->forward(x).view({batch, n, 3, num_heads, head_dim}).permute({2, 0, 3, 1, 4});
    Tensor q = qkv_heads.select(0, 0), k = qkv_heads.select(0, 1), v = qkv_heads.select(0, 2);
    Tensor heads;  // (B, nh, N, Hd)
    if (store_attn) {
        Tensor bias =
            attention_score_bias(context, causal, batch, n, x.dtype(), x.device(), "MHSA");
        Tensor weights = softmax_attention_weights(q, k, scale, bias);  // (B, nh, N, N)
        last_attn = weights.detach();
        heads = matmul(attn_drop->forward(weights), v);
    } else {
        // Padded keys as a (B, 1, 1, N) bias; the causal triangle is skipped tile by tile.
        Tensor padding =
            attention_score_bias(context, false, batch, n, x.dtype(), x.device(), "MHSA");
        double drop_p = attn_drop->is_training() ? attn_drop->p : 0.0;
        heads = attend(q, k, v, {scale, padding, causal || context.causal, drop_p, fused});
    }
    Tensor merged = heads.transpose(1, 2).reshape({batch, n, num_heads * head_dim});
    return proj_drop->forward(proj->forward(merged));
}

std::string MHSA::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", num_heads=" + std::to_string(num_heads) +
           ", head_dim=" + std::to_string(head_dim) + (causal ? ", causal=true" : "");
}

std::shared_ptr<Attention> make_mhsa_attention(const AttentionConfig& config) {
    check_attention_options(config, {"causal"}, "mhsa");
    return make<MHSA>(config.dim, config.num_heads, config.head_dim, config.qkv_bias,
                      config.attn_drop, config.proj_drop, config.option("causal", 0.0) != 0.0);
}

}  // namespace lumen::nn::attention
