// check-vectors adapter of spec gdla 3.8, module string "gdla.PVTSegNet": the whole
// segmentation network from the reference constructor's arguments ("encoder" overrides PVTv2-b2's
// keyword arguments), run in eval mode, outputs named x4, x3, x2, x1 (or x1 alone).
#include "conformance/module_vectors.h"
#include "models/pvt_segnet.h"

namespace lumen::cli {

namespace {

const char* kModule = "gdla.PVTSegNet";

std::vector<int64_t> ints_of(const nlohmann::json& value, const std::string& key) {
    LUMEN_CHECK(value.is_array(), kModule, "encoder '", key, "' must be a list, got ",
                value.dump());
    std::vector<int64_t> out;
    for (const nlohmann::json& v : value) {
        LUMEN_CHECK(v.is_number_integer(), kModule, "encoder '", key,
                    "' must be a list of ints, got ", value.dump());
        out.push_back(v.get<int64_t>());
    }
    return out;
}

// The encoder's keyword arguments over b2's (the reference does enc.update(encoder)).
models::PvtV2Config encoder_config(const nlohmann::json& overrides) {
    models::PvtV2Config config = models::pvt_v2_config("b2");
    if (overrides.is_null()) return config;
    LUMEN_CHECK(overrides.is_object(), kModule, "config 'encoder' must be an object, got ",
                overrides.dump());
    for (const auto& [key, value] : overrides.items()) {
        if (key == "depths") {
            config.depths = ints_of(value, key);
        } else if (key == "embed_dims") {
            config.embed_dims = ints_of(value, key);
        } else if (key == "num_heads") {
            config.num_heads = ints_of(value, key);
        } else if (key == "sr_ratios") {
            config.sr_ratios = ints_of(value, key);
        } else if (key == "mlp_ratios") {
            LUMEN_CHECK(value.is_array(), kModule, "encoder 'mlp_ratios' must be a list");
            config.mlp_ratios = value.get<std::vector<double>>();
        } else if (key == "qkv_bias" || key == "linear") {
            LUMEN_CHECK(value.is_boolean(), kModule, "encoder '", key, "' must be a bool");
            (key == "linear" ? config.linear : config.qkv_bias) = value.get<bool>();
        } else {
            LUMEN_FAIL(kModule, "unsupported encoder key '", key,
                       "' (known: depths, embed_dims, num_heads, sr_ratios, mlp_ratios, "
                       "qkv_bias, linear)");
        }
    }
    return config;
}

models::PVTSegNetConfig segnet_config(VectorConfig& c) {
    models::PVTSegNetConfig config;
    config.in_chs = c.get_int("in_chs");
    config.n_classes = c.get_int("n_classes");
    config.decoder = c.get_string("decoder", config.decoder);
    config.encoder = encoder_config(c.get("encoder"));
    config.n_heads = c.get_ints("n_heads", config.n_heads);
    config.qkv_bias = c.get_bool("qkv_bias", config.qkv_bias);
    config.norm_eps = c.get_double("norm_eps", config.norm_eps);
    config.hidden_ratio = c.get_double("hidden_ratio", config.hidden_ratio);
    config.us_ks = c.get_int("us_ks", config.us_ks);
    config.deepsupervision = c.get_bool("deepsupervision", config.deepsupervision);
    config.use_rope = c.get_bool("use_rope", config.use_rope);
    config.rope_base = c.get_double("rope_base", config.rope_base);
    return config;
}

const VectorAdapterRegistration kPVTSegNet(kModule, [](VectorCall& call) {
    models::PVTSegNet model(segnet_config(call.config));
    bind_module(call, model);
    model.train(false);  // the vectors are eval-mode: ResBlk's BatchNorm uses the b.* statistics
    std::vector<Tensor> outputs = model.forward_outputs(call.input("x"));
    if (outputs.size() == 1) return TensorMap{{"x1", outputs[0]}};
    return TensorMap{
        {"x4", outputs[0]}, {"x3", outputs[1]}, {"x2", outputs[2]}, {"x1", outputs[3]}};
});

}  // namespace

}  // namespace lumen::cli
