// check-vectors adapters for the ViT side of the context-length study: the MONAI pieces, the
// backbone, the UNETR blocks and the whole models (`context.model`, which
// dispatches on config "encoder": "ViT" here, built by the registry's context_vit, any other
// encoder to the adapter registered as "context.model:<encoder>", e.g. "context.model:Swin").
#include "conformance/context/context_vectors.h"

#include "conformance/module_vectors.h"
#include "conformance/registry_vectors.h"
#include "models/context_vit.h"

namespace lumen::conformance {

namespace {

using nn::context::MixerOptions;

// An integer of a nested config object (hyena / mamba settings), or `fallback`.
int64_t nested_int(const nlohmann::json& object, const char* key, int64_t fallback,
                   const std::string& module) {
    if (object.is_null() || !object.contains(key)) return fallback;
    LUMEN_CHECK(object[key].is_number_integer(), module, "config '", key,
                "' must be an integer, got ", object[key].dump());
    return object[key].get<int64_t>();
}

void check_nested_keys(const nlohmann::json& object, const std::vector<std::string>& known,
                       const std::string& what, const std::string& module) {
    if (object.is_null()) return;
    LUMEN_CHECK(object.is_object(), module, "config '", what, "' must be an object or null, got ",
                object.dump());
    for (const auto& [key, unused] : object.items()) {
        bool found = false;
        for (const std::string& k : known) found = found || k == key;
        LUMEN_CHECK(found, module, "unsupported key '", key, "' in config '", what, "'");
    }
}

}  // namespace

nn::Options context_img_size(VectorCall& call) {
    const int64_t time = call.config.get_int("time", 1);
    const int64_t height = call.config.get_int("height"), width = call.config.get_int("width");
    nn::Options size;
    size.set("img_size", time == 1 ? std::vector<int64_t>{height, width}
                                   : std::vector<int64_t>{time, height, width});
    return size;
}

MixerOptions context_mixer_options(VectorConfig& c, const std::string& module) {
    MixerOptions o;
    o.mixer = c.get_string("mixer", "attn");
    const nlohmann::json& hyena = c.get("hyena");
    check_nested_keys(hyena, {"l_max", "filter_order", "short_filter_order"}, "hyena", module);
    o.l_max = nested_int(hyena, "l_max", o.l_max, module);
    o.filter_order = nested_int(hyena, "filter_order", o.filter_order, module);
    o.short_filter_order = nested_int(hyena, "short_filter_order", o.short_filter_order, module);
    const nlohmann::json& mamba = c.get("mamba");
    check_nested_keys(mamba, {"d_state", "d_conv", "expand", "dt_rank"}, "mamba", module);
    o.d_state = nested_int(mamba, "d_state", o.d_state, module);
    o.d_conv = nested_int(mamba, "d_conv", o.d_conv, module);
    o.expand = nested_int(mamba, "expand", o.expand, module);
    if (!mamba.is_null() && mamba.contains("dt_rank") && !mamba["dt_rank"].is_string())
        o.dt_rank = nested_int(mamba, "dt_rank", 0, module);
    return o;
}

namespace {

const VectorAdapterRegistration kPatchEmbedding(
    "context.PatchEmbeddingBlock", [](VectorCall& call) {
        VectorConfig& c = call.config;
        int nd = int(c.get_int("spatial_dims", 2));
        nn::context::PatchEmbeddingBlock embed(c.get_int("in_channels"), c.get_ints("img_size", {}),
                                               c.get_int("patch_size"), c.get_int("hidden_size"),
                                               nd);
        bind_module(call, embed);
        return TensorMap{{"y", embed.forward(call.input("x"))}};
    });

const VectorAdapterRegistration kMLPBlock("context.MLPBlock", [](VectorCall& call) {
    nn::context::MLPBlock mlp(call.config.get_int("hidden_size"), call.config.get_int("mlp_dim"));
    bind_module(call, mlp);
    return TensorMap{{"y", mlp.forward(call.input("x"))}};
});

const VectorAdapterRegistration kSABlock("context.SABlock", [](VectorCall& call) {
    MixerOptions options = context_mixer_options(call.config, call.module);
    options.qkv_bias = call.config.get_bool("qkv_bias", false);
    nn::context::SABlock block(call.config.get_int("hidden_size"), call.config.get_int("num_heads"),
                               options);
    bind_module(call, block);
    return TensorMap{{"y", block.forward(call.input("x"))}};
});

const VectorAdapterRegistration kTransformerBlock("context.TransformerBlock", [](VectorCall& call) {
    VectorConfig& c = call.config;
    nn::context::TransformerBlock block(c.get_int("hidden_size"), c.get_int("mlp_dim"),
                                        c.get_int("num_heads"),
                                        context_mixer_options(c, call.module));
    bind_module(call, block);
    return TensorMap{{"y", block.forward(call.input("x"))}};
});

// Outputs hidden_i = block i's output (1-based) and y = the final LayerNorm.
const VectorAdapterRegistration kViT("context.ViT", [](VectorCall& call) {
    VectorConfig& c = call.config;
    models::ContextViTConfig config;
    config.in_channels = c.get_int("in_channels");
    config.img_size = c.get_ints("img_size", {});
    config.patch_size = c.get_int("patch_size");
    config.hidden_size = c.get_int("hidden_size", 384);
    config.mlp_dim = c.get_int("mlp_dim", 1536);
    config.num_layers = c.get_int("num_layers", 12);
    config.num_heads = c.get_int("num_heads", 6);
    config.spatial_dims = int(c.get_int("spatial_dims", 2));
    config.classification = c.get_bool("classification", false);
    config.mixer = context_mixer_options(c, call.module);
    models::ContextViT vit(config);
    bind_module(call, vit);
    std::vector<Tensor> hidden = vit.forward_hidden(call.input("x"));
    TensorMap out{{"y", hidden.back()}};
    for (size_t i = 1; i + 1 < hidden.size(); ++i) out["hidden_" + std::to_string(i)] = hidden[i];
    return out;
});

const VectorAdapterRegistration kUnetResBlock("context.UnetResBlock", [](VectorCall& call) {
    VectorConfig& c = call.config;
    nn::context::UnetResBlock block(int(c.get_int("spatial_dims")), c.get_int("in_channels"),
                                    c.get_int("out_channels"), c.get_int("kernel_size", 3));
    bind_module(call, block);
    return TensorMap{{"y", block.forward(call.input("x"))}};
});

const VectorAdapterRegistration kUnetrPrUpBlock("context.UnetrPrUpBlock", [](VectorCall& call) {
    VectorConfig& c = call.config;
    nn::context::UnetrPrUpBlock block(int(c.get_int("spatial_dims")), c.get_int("in_channels"),
                                      c.get_int("out_channels"), c.get_int("num_layer"),
                                      c.get_int("upsample_kernel_size"));
    bind_module(call, block);
    return TensorMap{{"y", block.forward(call.input("x"))}};
});

const VectorAdapterRegistration kUnetrUpBlock("context.UnetrUpBlock", [](VectorCall& call) {
    VectorConfig& c = call.config;
    nn::context::UnetrUpBlock block(int(c.get_int("spatial_dims")), c.get_int("in_channels"),
                                    c.get_int("out_channels"), c.get_int("upsample_kernel_size"));
    bind_module(call, block);
    return TensorMap{{"y", block.forward(call.input("x"), call.input("skip"))}};
});

// build_vit_model(...) of the reference: the entry context_vit, with the same defaults.
TensorMap vit_model(VectorCall& call) {
    std::shared_ptr<nn::Module> model =
        build_registry_model(call, {"context_vit", {}, kContextModelKeys}, context_img_size(call));
    return TensorMap{{"y", model->forward(call.input("x"))}};
}

const VectorAdapterRegistration kModel("context.model", [](VectorCall& call) {
    std::string encoder = call.config.get_string("encoder", "ViT");
    if (encoder == "ViT") return vit_model(call);
    const VectorAdapter* other = find_vector_adapter("context.model:" + encoder);
    LUMEN_CHECK(other != nullptr, call.module, "unknown encoder '", encoder,
                "' (ViT, or one with an adapter 'context.model:<encoder>')");
    return (*other)(call);
});

}  // namespace

}  // namespace lumen::conformance
