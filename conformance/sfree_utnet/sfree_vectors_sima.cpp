// check-vectors adapters for the official SimA model parts (Koohpayegani & Pirsiavash 2024): SimA,
// ClassAttention, ClassAttentionBlock, LPI, SimABlock and SimAVisionTransformer (built by the
// registry's sima_vit) (module strings "sfree_utnet.<official class>"; forward-only H, W under
// "forward"; BatchNorm in training mode unless "mode" is "eval", handled by bind_module).
#include "conformance/module_vectors.h"
#include "conformance/registry_vectors.h"
#include "models/sima_vit.h"

namespace lumen::conformance {

namespace {

using nn::sima::SimALayerOptions;

// An integer of the config's "forward" object (forward-only arguments).
int64_t forward_int(VectorCall& call, const char* key) {
    const nlohmann::json& forward = call.config.get("forward");
    LUMEN_CHECK(forward.is_object() && forward.contains(key) && forward[key].is_number_integer(),
                call.module, "config 'forward' needs an integer '", key, "', got ", forward.dump());
    return forward[key].get<int64_t>();
}

// The block keyword arguments; eta may be null (no gammas) or absent (`default_eta`).
SimALayerOptions layer_options(VectorConfig& config, std::optional<double> default_eta) {
    SimALayerOptions o;
    o.mlp_ratio = config.get_double("mlp_ratio", 4.0);
    o.qkv_bias = config.get_bool("qkv_bias", false);
    o.drop = config.get_double("drop", 0.0);
    o.attn_drop = config.get_double("attn_drop", 0.0);
    o.norm_eps = config.get_double("norm_eps", 1e-6);
    o.eta = default_eta;
    if (config.has("eta")) {
        o.eta = config.get("eta").is_null() ? std::nullopt
                                            : std::optional<double>(config.get_double("eta", 1));
    }
    return o;
}

TensorMap output(const Tensor& y) { return {{"y", y}}; }

const VectorAdapterRegistration kSimA("sfree_utnet.SimA", [](VectorCall& call) {
    nn::attention::SimA attention(call.config.get_int("dim"), call.config.get_int("num_heads", 8),
                                  call.config.get_bool("qkv_bias", false),
                                  call.config.get_double("attn_drop", 0.0),
                                  call.config.get_double("proj_drop", 0.0));
    bind_module(call, attention);
    return output(attention.forward(call.input("x")));
});

const VectorAdapterRegistration kClassAttention("sfree_utnet.ClassAttention", [](VectorCall& call) {
    nn::attention::ClassAttention attention(
        call.config.get_int("dim"), call.config.get_int("num_heads", 8),
        call.config.get_bool("qkv_bias", false), call.config.get_double("attn_drop", 0.0),
        call.config.get_double("proj_drop", 0.0));
    bind_module(call, attention);
    return output(attention.forward(call.input("x")));
});

const VectorAdapterRegistration kClassAttentionBlock(
    "sfree_utnet.ClassAttentionBlock", [](VectorCall& call) {
        SimALayerOptions o = layer_options(call.config, std::nullopt);
        o.tokens_norm = call.config.get_bool("tokens_norm", false);
        nn::sima::ClassAttentionBlock block(call.config.get_int("dim"),
                                            call.config.get_int("num_heads"), o);
        bind_module(call, block);
        return output(block.forward(call.input("x")));
    });

const VectorAdapterRegistration kLPI("sfree_utnet.LPI", [](VectorCall& call) {
    nn::sima::LPI lpi(call.config.get_int("in_features"), call.config.get_int("kernel_size", 3),
                      call.config.get_double("bn_eps", 1e-5));
    bind_module(call, lpi);
    return output(lpi.forward(call.input("x"), forward_int(call, "H"), forward_int(call, "W")));
});

const VectorAdapterRegistration kSimABlock("sfree_utnet.SimABlock", [](VectorCall& call) {
    nn::sima::SimABlock block(call.config.get_int("dim"), call.config.get_int("num_heads"),
                              layer_options(call.config, 1.0));
    bind_module(call, block);
    return output(block.forward(call.input("x"), forward_int(call, "H"), forward_int(call, "W")));
});

// SimAVisionTransformer(num_classes=1000, embed_dim=768, num_heads=12, tokens_norm=False, ...):
// the entry sima_vit, whose defaults are the paper's SimA-S12.
const RegistryModel kSimAViT{"sima_vit",
                             {},
                             {},
                             {{"num_classes", int64_t(1000)},
                              {"embed_dim", int64_t(768)},
                              {"num_heads", int64_t(12)},
                              {"tokens_norm", false}}};

const VectorAdapterRegistration kSimAVisionTransformer(
    "sfree_utnet.SimAVisionTransformer", [](VectorCall& call) {
        return output(build_registry_model(call, kSimAViT)->forward(call.input("x")));
    });

}  // namespace

}  // namespace lumen::conformance
