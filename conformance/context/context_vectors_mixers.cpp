// check-vectors adapters for the token mixers of the context-length study (Hooper & Xue, Sec. 3.1):
// the Hyena filter and operator, the MambaVision mixer and block ("context.<reference class
// name>"), constructor keyword arguments from the config, parameters and buffers by bind_module.
#include "conformance/context/context_vectors.h"
#include "conformance/module_vectors.h"
#include "nn/attention/hyena.h"
#include "nn/attention/mamba_vision.h"

namespace lumen::conformance {

std::optional<int64_t> context_dt_rank(VectorConfig& config) {
    const nlohmann::json& rank = config.get("dt_rank");
    if (rank.is_null() || (rank.is_string() && rank.get<std::string>() == "auto"))
        return std::nullopt;
    return config.get_int("dt_rank");
}

namespace {

const VectorAdapterRegistration kHyenaFilter("context.HyenaFilter", [](VectorCall& call) {
    VectorConfig& c = call.config;
    nn::attention::HyenaFilter filter(c.get_int("d"), c.get_int("order", 64),
                                      c.get_int("l_max", 1024), c.get_int("emb_dim", 3),
                                      c.get_int("num_inner_mlps", 2), c.get_double("w", 1.0));
    bind_module(call, filter);
    return TensorMap{{"y", filter.forward(c.get_int("L"))}};
});

const VectorAdapterRegistration kHyenaOperator("context.HyenaOperator", [](VectorCall& call) {
    VectorConfig& c = call.config;
    nn::attention::HyenaOperator hyena(c.get_int("d_model"), c.get_int("l_max", 66000),
                                       c.get_int("filter_order", 64), c.get_int("num_heads", 1),
                                       c.get_int("short_filter_order", 5));
    bind_module(call, hyena);
    return TensorMap{{"y", hyena.forward(call.input("x"))}};
});

const VectorAdapterRegistration kMambaVisionMixer("context.MambaVisionMixer", [](VectorCall& call) {
    VectorConfig& c = call.config;
    nn::attention::MambaVisionMixer mixer(c.get_int("d_model"), c.get_int("d_state", 8),
                                          c.get_int("d_conv", 3), c.get_int("expand", 1),
                                          context_dt_rank(c));
    bind_module(call, mixer);
    return TensorMap{{"y", mixer.forward(call.input("x"))}};
});

const VectorAdapterRegistration kMambaVisionBlock("context.MambaVisionBlock", [](VectorCall& call) {
    VectorConfig& c = call.config;
    std::optional<double> layer_scale;
    if (!c.get("layer_scale").is_null()) layer_scale = c.get_double("layer_scale", 0.0);
    nn::attention::MambaVisionBlock block(c.get_int("dim"), c.get_double("mlp_ratio", 4.0),
                                          layer_scale);
    bind_module(call, block);
    return TensorMap{{"y", block.forward(call.input("x"))}};
});

}  // namespace

}  // namespace lumen::conformance
