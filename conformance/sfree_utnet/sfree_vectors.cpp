// check-vectors adapters for seed 001 of spec sfree_utnet (§1): the three attentions in the
// vit-pytorch frame and the ViT for images, volumes and bags (module strings
// "sfree_utnet.<reference class>"; constructor keyword arguments in the config).
#include "conformance/module_vectors.h"
#include "models/sfree_vit.h"
#include "nn/attention/prenorm_softmax_attention.h"
#include "nn/attention/seqnorm_attention.h"
#include "nn/attention/vitpt_sima_attention.h"

namespace lumen::cli {

namespace {

using nn::sfree::PreNormAttentionOptions;

// vit-pytorch's Attention(dim, heads=8, dim_head=64, dropout=0.0): one dropout for the
// softmax weights and after to_out.
PreNormAttentionOptions frame_options(VectorConfig& config, bool softmax) {
    PreNormAttentionOptions o;
    o.heads = config.get_int("heads", 8);
    o.dim_head = config.get_int("dim_head", 64);
    double dropout = config.get_double("dropout", 0.0);
    o.attn_drop = softmax ? dropout : 0.0;
    o.proj_drop = dropout;
    return o;
}

template <typename M, typename... Extra>
TensorMap run_attention(VectorCall& call, bool softmax, Extra... extra) {
    M attention(call.config.get_int("dim"), frame_options(call.config, softmax), extra...);
    bind_module(call, attention);
    return {{"y", attention.forward(call.input("x"))}};
}

const VectorAdapterRegistration kSoftmaxAttention(
    "sfree_utnet.SoftmaxAttention",
    [](VectorCall& call) { return run_attention<nn::sfree::PreNormSoftmaxAttention>(call, true); });

const VectorAdapterRegistration kSeqNormAttention(
    "sfree_utnet.SeqNormAttention", [](VectorCall& call) {
        double eps = call.config.get_double("eps", 1e-5);
        return run_attention<nn::sfree::SeqNormAttention>(call, false, eps);
    });

const VectorAdapterRegistration kSimAAttention("sfree_utnet.SimAAttention", [](VectorCall& call) {
    return run_attention<nn::sfree::PreNormSimAAttention>(call, false);
});

// An int that may be absent or null (Python None).
int64_t int_or(VectorConfig& config, const std::string& key, int64_t fallback) {
    return config.get(key).is_null() ? fallback : config.get_int(key);
}

// An int or a pair as a pair (vit-pytorch's pair()).
std::vector<int64_t> pair_or(VectorConfig& config, const std::string& key,
                             const std::vector<int64_t>& fallback) {
    std::vector<int64_t> v = config.get_ints(key, fallback);
    return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
}

models::SfreeViTConfig vit_config(VectorConfig& config) {
    models::SfreeViTConfig c;
    c.tokenizer = config.get_string("tokenizer", c.tokenizer);
    c.attn = config.get_string("attn", c.attn);
    c.num_classes = config.get_int("num_classes");
    c.dim = config.get_int("dim");
    c.depth = config.get_int("depth");
    c.heads = config.get_int("heads");
    c.mlp_dim = config.get_int("mlp_dim");
    c.dim_head = config.get_int("dim_head", 64);
    c.pool = config.get_string("pool", c.pool);
    c.channels = config.get_int("channels", 3);
    c.image_size = pair_or(config, "image_size", {});
    c.patch_size = pair_or(config, "patch_size", {});
    c.frames = int_or(config, "frames", 0);
    c.frame_patch_size = int_or(config, "frame_patch_size", 0);
    c.feat_dim = int_or(config, "feat_dim", 0);
    c.dropout = config.get_double("dropout", 0.0);
    c.emb_dropout = config.get_double("emb_dropout", 0.0);
    c.seqnorm_eps = config.get_double("seqnorm_eps", 1e-5);
    return c;
}

const VectorAdapterRegistration kViT("sfree_utnet.ViT", [](VectorCall& call) {
    models::SfreeViT vit(vit_config(call.config));
    bind_module(call, vit);
    return TensorMap{{"y", vit.forward(call.input("x"))}};
});

}  // namespace

}  // namespace lumen::cli
