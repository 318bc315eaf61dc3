// check-vectors adapters for the softmax-free paper (Khader et al., Sec. 2.1): the three attentions
// in the vit-pytorch frame and the ViT for images, volumes and bags (module strings
// "sfree_utnet.<reference class>"; constructor keyword arguments in the config; the ViT built by
// the registry's sfree_vit).
#include "conformance/module_vectors.h"
#include "conformance/registry_vectors.h"
#include "nn/attention/prenorm_softmax_attention.h"
#include "nn/attention/seqnorm_attention.h"
#include "nn/attention/vitpt_sima_attention.h"

namespace lumen::conformance {

namespace {

using nn::attention::PreNormAttentionOptions;

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
    "sfree_utnet.SoftmaxAttention", [](VectorCall& call) {
        return run_attention<nn::attention::PreNormSoftmaxAttention>(call, true);
    });

const VectorAdapterRegistration kSeqNormAttention(
    "sfree_utnet.SeqNormAttention", [](VectorCall& call) {
        double eps = call.config.get_double("eps", 1e-5);
        return run_attention<nn::attention::SeqNormAttention>(call, false, eps);
    });

const VectorAdapterRegistration kSimAAttention("sfree_utnet.SimAAttention", [](VectorCall& call) {
    return run_attention<nn::attention::PreNormSimAAttention>(call, false);
});

// ViT(*, num_classes, dim, depth, heads, mlp_dim, ...) of vit-pytorch: the entry sfree_vit,
// whose defaults are the reference's.
const VectorAdapterRegistration kViT("sfree_utnet.ViT", [](VectorCall& call) {
    std::shared_ptr<nn::Module> vit = build_registry_model(call, {"sfree_vit"});
    return TensorMap{{"y", vit->forward(call.input("x"))}};
});

}  // namespace

}  // namespace lumen::conformance
