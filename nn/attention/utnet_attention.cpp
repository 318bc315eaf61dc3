// UTNet's efficient attention (encoder, decoder, token interface). The 1/sqrt(d) scale is
// folded into the r^2 keys and the position tables instead of the (B, heads, HW, r^2)
// logits; no HW x HW tensor exists anywhere.
#include "nn/attention/utnet_attention.h"

#include <algorithm>
#include <cmath>

#include "nn/attention/mhsa.h"
#include "ops/elementwise.h"
#include "ops/interpolate.h"
#include "ops/matmul.h"
#include "ops/pool.h"
#include "ops/shape.h"
#include "ops/softmax.h"

namespace lumen::nn::attention {

namespace {

// Throws [<who>] unless x is a 4-D map (B, channels, H, W).
void check_map(const char* who, const char* name, const Tensor& x, int64_t channels) {
    LUMEN_CHECK(x.ndim() == 4 && x.size(1) == channels, who, "expects ", name, " of shape (B, ",
                channels, ", H, W), got ", x.shape());
}

// (B, dim_head heads, H, W) -> (B, heads, H W, dim_head), channel c = j heads + m -> head m,
// column j: a view (no copy) of any map whose H, W are contiguous.
Tensor to_heads(const Tensor& t, int64_t heads, int64_t dim_head) {
    const int64_t B = t.size(0), hw = t.size(2) * t.size(3);
    return t.reshape({B, dim_head, heads, hw}).permute({0, 2, 3, 1});
}

// The inverse: (B, heads, H W, dim_head) -> (B, dim_head heads, H, W).
Tensor from_heads(const Tensor& t, int64_t H, int64_t W) {
    const int64_t B = t.size(0), heads = t.size(1), dim_head = t.size(3);
    return t.permute({0, 3, 1, 2}).reshape({B, dim_head * heads, H, W});
}

}  // namespace

EfficientAttention::EfficientAttention(const char* type_name, const LinearAttentionOptions& opts)
    : Module(type_name), options(opts), inner_dim(opts.heads * opts.dim_head) {
    const LinearAttentionOptions& o = options;
    LUMEN_CHECK(o.heads > 0 && o.dim_head > 0 && o.reduce_size > 0, type_name,
                "heads, dim_head and reduce_size must be positive, got ", o.heads, ", ", o.dim_head,
                ", ", o.reduce_size);
    LUMEN_CHECK(o.projection == "interp" || o.projection == "maxpool", type_name,
                "projection must be 'interp' or 'maxpool', got '", o.projection, "'");
    LUMEN_CHECK(o.rel_pos_type == "bias" || o.rel_pos_type == "embedding", type_name,
                "rel_pos_type must be 'bias' or 'embedding', got '", o.rel_pos_type, "'");
    attn_drop = register_module("attn_drop", make<Dropout>(o.attn_drop));
    proj_drop = register_module("proj_drop", make<Dropout>(o.proj_drop));
    if (o.rel_pos && o.rel_pos_type == "bias") {
        position_bias = register_module("relative_position_encoding",
                                        make<RelativePositionBias>(o.heads, o.reduce_size));
    } else if (o.rel_pos) {
        position_embedding =
            register_module("relative_position_encoding",
                            make<RelativePositionEmbedding>(o.dim_head, o.reduce_size));
    }
}

AttentionResult EfficientAttention::attend(const Tensor& q, const Tensor& k, const Tensor& v,
                                           bool keep_map) {
    const int64_t B = q.size(0), H = q.size(2), W = q.size(3);
    const int64_t heads = options.heads, d = options.dim_head, r = options.reduce_size;
    auto reduce = [&](const Tensor& t) {
        if (t.size(2) == r && t.size(3) == r) return t;
        if (options.projection == "maxpool") return adaptive_max_pool2d(t, {r, r});
        return interpolate(t, {r, r}, {}, "bilinear", true);
    };
    const double scale = 1.0 / std::sqrt(double(d));
    if (fused && !keep_map) {
        // softmax(scale q k^T + scale P) v with P the position bias (B or 1, heads, HW, r^2).
        Tensor qh = to_heads(q, heads, d), kh = to_heads(reduce(k), heads, d);
        Tensor bias;
        if (position_bias) {
            bias = position_bias->forward(H, W, scale);
        } else if (position_embedding) {
            auto [by_col, by_row] = position_embedding->factors(qh, heads, H, W, scale);
            bias = add(by_col, by_row).view({B, heads, H * W, r * r});
        }
        const double drop = attn_drop->is_training() ? attn_drop->p : 0.0;
        Tensor out = nn::attention::attend(qh, kh, to_heads(reduce(v), heads, d),
                                           {.scale = scale, .bias = bias, .drop_p = drop});
        return {proj_drop->forward(to_out->forward(from_heads(out, H, W))), Tensor()};
    }
    Tensor qh = to_heads(q, heads, d);                      // (B, heads, HW, d)
    Tensor kh = mul(to_heads(reduce(k), heads, d), scale);  // (B, heads, r^2, d)
    Tensor vh = to_heads(reduce(v), heads, d);              // (B, heads, r^2, d)
    Tensor logits = matmul(qh, kh.transpose(-1, -2));       // (B, heads, HW, r^2)
    if (position_bias) {
        logits = add(logits, position_bias->forward(H, W, scale));
    } else if (position_embedding) {
        // (B, heads, H, W, r, r) + rel_w (.., 1, r) + rel_h (.., r, 1), by broadcasting.
        auto [by_col, by_row] = position_embedding->factors(qh, heads, H, W, scale);
        Tensor grid_logits = add(add(logits.view({B, heads, H, W, r, r}), by_col), by_row);
        logits = grid_logits.view({B, heads, H * W, r * r});
    }
    Tensor attn = attn_drop->forward(softmax(logits, -1));
    Tensor out = from_heads(matmul(attn, vh), H, W);
    return {proj_drop->forward(to_out->forward(out)), attn};
}

std::string EfficientAttention::extra_repr() const {
    const LinearAttentionOptions& o = options;
    return "heads=" + std::to_string(o.heads) + ", dim_head=" + std::to_string(o.dim_head) +
           ", reduce_size=" + std::to_string(o.reduce_size) + ", projection=" + o.projection +
           (o.rel_pos ? ", rel_pos=" + o.rel_pos_type : ", rel_pos=off");
}

LinearAttention::LinearAttention(int64_t channels, const LinearAttentionOptions& opts)
    : EfficientAttention("LinearAttention", opts), dim(channels) {
    LUMEN_CHECK(channels > 0, "LinearAttention", "dim must be positive, got ", channels);
    to_qkv = register_module("to_qkv", make<DepthwiseSeparableConv>(dim, 3 * inner_dim));
    to_out = register_module("to_out", make<DepthwiseSeparableConv>(inner_dim, dim));
}

AttentionResult LinearAttention::forward_attn(const Tensor& x) {
    check_map("LinearAttention", "x", x, dim);
    std::vector<Tensor> qkv = chunk(to_qkv->forward(x), 3, 1);
    return attend(qkv[0], qkv[1], qkv[2], true);
}

Tensor LinearAttention::forward(const Tensor& x) {
    check_map("LinearAttention", "x", x, dim);
    std::vector<Tensor> qkv = chunk(to_qkv->forward(x), 3, 1);
    return attend(qkv[0], qkv[1], qkv[2], store_attn).y;
}

LinearAttentionDecoder::LinearAttentionDecoder(int64_t in_channels, int64_t out_channels,
                                               const LinearAttentionOptions& opts)
    : EfficientAttention("LinearAttentionDecoder", opts),
      in_dim(in_channels),
      out_dim(out_channels) {
    LUMEN_CHECK(in_dim > 0 && out_dim > 0, "LinearAttentionDecoder",
                "in_dim and out_dim must be positive, got ", in_dim, " and ", out_dim);
    to_kv = register_module("to_kv", make<DepthwiseSeparableConv>(in_dim, 2 * inner_dim));
    to_q = register_module("to_q", make<DepthwiseSeparableConv>(out_dim, inner_dim));
    to_out = register_module("to_out", make<DepthwiseSeparableConv>(inner_dim, out_dim));
}

AttentionResult LinearAttentionDecoder::forward(const Tensor& q, const Tensor& x) {
    check_map("LinearAttentionDecoder", "q", q, out_dim);
    check_map("LinearAttentionDecoder", "x", x, in_dim);
    LUMEN_CHECK(q.size(0) == x.size(0), "LinearAttentionDecoder",
                "q and x must have the same batch size, got ", q.shape(), " and ", x.shape());
    std::vector<Tensor> kv = chunk(to_kv->forward(x), 2, 1);
    return attend(to_q->forward(q), kv[0], kv[1], store_attn);
}

UTNetAttention::UTNetAttention(int64_t dim, const LinearAttentionOptions& options)
    : Attention("UTNetAttention"), inner_(make<LinearAttention>(dim, options)) {
    // The wrapped attention's children become this module's own, so the state_dict keys are
    // LinearAttention's (to_qkv.*, ...) with no extra prefix; both see the same tensors.
    for (const auto& [name, child] : inner_->named_children()) add_child(name, child);
}

Tensor UTNetAttention::forward(const Tensor& x, const AttentionContext& context) {
    const int64_t dim = inner_->dim;
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim, "utnet", "expects tokens (B, N, ", dim,
                "), got ", x.shape());
    LUMEN_CHECK(context.grid.size() == 2 && context.prefix_tokens == 0, "utnet",
                "needs the 2-D token grid {H, W} and no prefix tokens, got grid ", context.grid,
                " and ", context.prefix_tokens, " prefix tokens");
    LUMEN_CHECK(!context.key_padding_mask.defined() && !context.causal, "utnet",
                "supports neither a key padding mask nor causal attention");
    const int64_t B = x.size(0), H = context.grid[0], W = context.grid[1];
    LUMEN_CHECK(x.size(1) == H * W, "utnet", "has ", x.size(1), " tokens but the grid ", H, " x ",
                W, " holds ", H * W);
    Tensor map = x.transpose(1, 2).reshape({B, dim, H, W});
    return inner_->forward(map).flatten(2).transpose(1, 2);
}

std::shared_ptr<Attention> make_utnet_attention(const AttentionConfig& config) {
    static const char* known[] = {"reduce_size", "maxpool", "rel_pos", "rel_pos_embedding"};
    for (const auto& [name, value] : config.options) {
        bool ok = std::find(std::begin(known), std::end(known), name) != std::end(known);
        LUMEN_CHECK(ok, "utnet", "unknown option '", name,
                    "' (known: reduce_size, maxpool, rel_pos, rel_pos_embedding)");
    }
    LUMEN_CHECK(config.num_heads > 0 && (config.head_dim > 0 || config.dim % config.num_heads == 0),
                "utnet", "dim ", config.dim, " must be a multiple of num_heads ", config.num_heads,
                " unless head_dim is given");
    LinearAttentionOptions options;
    options.heads = config.num_heads;
    options.dim_head = config.head_dim > 0 ? config.head_dim : config.dim / config.num_heads;
    options.attn_drop = config.attn_drop;
    options.proj_drop = config.proj_drop;
    options.reduce_size = int64_t(config.option("reduce_size", 8));
    options.projection = config.option("maxpool", 0) != 0 ? "maxpool" : "interp";
    options.rel_pos = config.option("rel_pos", 1) != 0;
    options.rel_pos_type = config.option("rel_pos_embedding", 0) != 0 ? "embedding" : "bias";
    return make<UTNetAttention>(config.dim, options);
}

}  // namespace lumen::nn::attention
