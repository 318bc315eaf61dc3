// ClassAttention of the official SimA model.
#include "nn/attention/class_attention.h"

#include "nn/attention/prenorm_attention.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/shape.h"

namespace lumen::nn::attention {

ClassAttention::ClassAttention(int64_t dim_, int64_t heads, bool qkv_bias, double attn_drop_p,
                               double proj_drop_p)
    : Module("ClassAttention"), dim(dim_), num_heads(heads) {
    LUMEN_CHECK(dim > 0 && num_heads > 0 && dim % num_heads == 0, "ClassAttention",
                "dim must be a positive multiple of num_heads, got dim ", dim, ", num_heads ",
                num_heads);
    qkv = register_module("qkv", make<Linear>(dim, 3 * dim, qkv_bias));
    attn_drop = register_module("attn_drop", make<Dropout>(attn_drop_p));
    proj = register_module("proj", make<Linear>(dim, dim));
    proj_drop = register_module("proj_drop", make<Dropout>(proj_drop_p));
}

Tensor ClassAttention::forward(const Tensor& x) {
    LUMEN_CHECK(x.ndim() == 3 && x.size(2) == dim && x.size(1) >= 1, "ClassAttention",
                "expects x (B, N, ", dim, ") with N >= 1, got shape ", x.shape());
    int64_t tokens = x.size(1);
    Tensor t = qkv->forward(x);
    // Q and K are normalised over all tokens (per feature of (B, N, C), i.e. per head and
    // channel), though only the class token's query row is used afterwards.
    Tensor qk = normalize(t.narrow(2, 0, 2 * dim), 1.0, 1, 1e-6);
    Tensor q0 = split_heads(qk.narrow(1, 0, 1).narrow(2, 0, dim), num_heads);  // (B,h,1,d)
    Tensor k = split_heads(qk.narrow(2, dim, dim), num_heads);
    Tensor v = split_heads(t.narrow(2, 2 * dim, dim), num_heads);
    Tensor a = attn_drop->forward(matmul(q0, k.transpose(-1, -2)));  // (B, h, 1, N)
    Tensor cls = proj_drop->forward(proj->forward(merge_heads(matmul(a, v))));
    if (tokens == 1) return cls;
    return cat({cls, x.narrow(1, 1, tokens - 1)}, 1);
}

std::string ClassAttention::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", num_heads=" + std::to_string(num_heads);
}

}  // namespace lumen::nn::attention
