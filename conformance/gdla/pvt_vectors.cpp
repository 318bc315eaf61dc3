// check-vectors adapters for the PVTv2 encoder of PVT-GDLA (module strings
// "gdla.OverlapPatchEmbed", "gdla.PVTBlock", "gdla.PVTStage", "gdla.PyramidVisionTransformerV2"):
// constructor arguments from the config, the token grid of a block under "H", "W".
#include "conformance/module_vectors.h"
#include "models/pvt_v2.h"

namespace lumen::conformance {

namespace {

// A list of numbers (ints or floats) of the config, or `fallback` when absent.
std::vector<double> get_doubles(VectorCall& call, const std::string& key,
                                const std::vector<double>& fallback) {
    const nlohmann::json& value = call.config.get(key);
    if (value.is_null()) return fallback;
    LUMEN_CHECK(value.is_array(), call.module, "config '", key, "' must be a list of numbers, got ",
                value.dump());
    std::vector<double> out;
    for (const nlohmann::json& v : value) {
        LUMEN_CHECK(v.is_number(), call.module, "config '", key,
                    "' must be a list of numbers, got ", value.dump());
        out.push_back(v.get<double>());
    }
    return out;
}

nn::pvt::PVTBlockOptions block_options(VectorCall& call) {
    return {.mlp_ratio = call.config.get_double("mlp_ratio", 4.0),
            .sr_ratio = call.config.get_int("sr_ratio", 1),
            .linear = call.config.get_bool("linear_attn", false),
            .qkv_bias = call.config.get_bool("qkv_bias", true)};
}

const VectorAdapterRegistration kOverlapPatchEmbed("gdla.OverlapPatchEmbed", [](VectorCall& call) {
    nn::pvt::OverlapPatchEmbed embed(call.config.get_int("patch_size"),
                                     call.config.get_int("stride"), call.config.get_int("in_chans"),
                                     call.config.get_int("embed_dim"));
    bind_module(call, embed);
    return TensorMap{{"y", embed.forward(call.input("x"))}};
});

const VectorAdapterRegistration kPVTBlock("gdla.PVTBlock", [](VectorCall& call) {
    nn::pvt::PVTBlock block(call.config.get_int("dim"), call.config.get_int("num_heads"),
                            block_options(call));
    bind_module(call, block);
    return TensorMap{
        {"y", block.forward(call.input("x"), call.config.get_int("H"), call.config.get_int("W"))}};
});

const VectorAdapterRegistration kPVTStage("gdla.PVTStage", [](VectorCall& call) {
    nn::pvt::PVTStage stage(call.config.get_int("dim"), call.config.get_int("dim_out"),
                            call.config.get_int("depth"), call.config.get_bool("downsample", true),
                            call.config.get_int("num_heads"), block_options(call));
    bind_module(call, stage);
    return TensorMap{{"y", stage.forward(call.input("x"))}};
});

const VectorAdapterRegistration kPyramidVisionTransformerV2(
    "gdla.PyramidVisionTransformerV2", [](VectorCall& call) {
        models::PvtV2Config config;
        config.in_chans = call.config.get_int("in_chans", config.in_chans);
        config.depths = call.config.get_ints("depths", config.depths);
        config.embed_dims = call.config.get_ints("embed_dims", config.embed_dims);
        config.num_heads = call.config.get_ints("num_heads", config.num_heads);
        config.sr_ratios = call.config.get_ints("sr_ratios", config.sr_ratios);
        config.mlp_ratios = get_doubles(call, "mlp_ratios", config.mlp_ratios);
        config.qkv_bias = call.config.get_bool("qkv_bias", true);
        config.linear = call.config.get_bool("linear", false);
        config.num_classes = call.config.get_int("num_classes", 0);
        models::PyramidVisionTransformerV2 model(config);
        bind_module(call, model);
        std::vector<Tensor> features = model.forward_intermediates(call.input("x"));
        TensorMap out;
        for (size_t i = 0; i < features.size(); ++i) out["stage" + std::to_string(i)] = features[i];
        return out;
    });

}  // namespace

}  // namespace lumen::conformance
