// check-vectors adapters of the context-length study for Swin ( context.PatchEmbed, compute_mask,
// relative_position_index, WindowAttention, SwinTransformerBlock, PatchMergingV2, BasicLayer,
// SwinTransformer), the UPerNet head (2.10: context.UperNet) and the Swin whole models
// (context.model with encoder "Swin": context_vectors.cpp hands it to "context.model:Swin",
// built by the registry's context_swin).
#include "conformance/context/context_vectors.h"
#include "conformance/module_vectors.h"
#include "conformance/registry_vectors.h"
#include "models/context_swin.h"
#include "nn/attention/window.h"

namespace lumen::conformance {

namespace {

using nn::swin::SwinMixer;

// The per-window mixer: config "mixer" and, for Hyena, the numbers of the "hyena" object
// (l_max, filter_order, ...) as the registered variant's options.
SwinMixer read_mixer(VectorCall& call) {
    SwinMixer mixer{call.config.get_string("mixer", "attn"), {}};
    const nlohmann::json& hyena = call.config.get("hyena");
    if (hyena.is_object()) {
        LUMEN_CHECK(mixer.type == "hyena", call.module, "config 'hyena' given for mixer '",
                    mixer.type, "'");
        for (const auto& [key, value] : hyena.items()) {
            LUMEN_CHECK(value.is_number(), call.module, "config 'hyena' entry '", key,
                        "' must be a number, got ", value.dump());
            mixer.options.emplace_back(key, value.get<double>());
        }
    }
    return mixer;
}

// After bind_module: BatchNorm in train or eval mode as config "batchnorm" says (default eval;
// dropout is off either way in these vectors: the train-mode ones set p = 0).
void set_batchnorm_mode(VectorCall& call, nn::Module& module) {
    std::string mode = call.config.get_string("batchnorm", "eval");
    LUMEN_CHECK(mode == "train" || mode == "eval", call.module,
                "config 'batchnorm' must be train or eval, got '", mode, "'");
    module.train(mode == "train");
    if (mode == "train")
        for (auto& [name, m] : module.named_modules())
            if (auto* drop = dynamic_cast<nn::ChannelDropout*>(m)) drop->p = 0.0;
}

std::vector<int64_t> spatial_of(const Tensor& x, int64_t first, int64_t count) {
    return std::vector<int64_t>(x.shape().begin() + first, x.shape().begin() + first + count);
}

const VectorAdapterRegistration kPatchEmbed("context.PatchEmbed", [](VectorCall& call) {
    nn::swin::PatchEmbed embed(call.config.get_ints("patch_size", {2}),
                               call.config.get_int("in_chans"), call.config.get_int("embed_dim"),
                               call.config.get_int("spatial_dims"));
    bind_module(call, embed);
    return TensorMap{{"y", embed.forward(call.input("x"))}};
});

const VectorAdapterRegistration kComputeMask("context.compute_mask", [](VectorCall& call) {
    return TensorMap{{"mask", nn::attention::compute_mask(call.config.get_ints("dims", {}),
                                                          call.config.get_ints("window_size", {}),
                                                          call.config.get_ints("shift_size", {}),
                                                          DType::float32, call.device)}};
});

const VectorAdapterRegistration kRelativePositionIndex(
    "context.relative_position_index", [](VectorCall& call) {
        return TensorMap{{"index", nn::attention::relative_position_index(
                                       call.config.get_ints("window_size", {}))}};
    });

const VectorAdapterRegistration kWindowAttention("context.WindowAttention", [](VectorCall& call) {
    std::vector<int64_t> window = call.config.get_ints("window_size", {});
    nn::attention::WindowAttention attention(call.config.get_int("dim"),
                                             call.config.get_int("num_heads"), window,
                                             call.config.get_bool("qkv_bias", true));
    bind_module(call, attention);
    // The mask the vector was made with: compute_mask(mask_dims, window, mask_shift).
    std::vector<int64_t> dims = call.config.get_ints("mask_dims", {});
    Tensor mask;
    if (!dims.empty())
        mask = nn::attention::compute_mask(dims, window, call.config.get_ints("mask_shift", {}),
                                           DType::float32, call.device);
    return TensorMap{{"y", attention.forward_windows(call.input("x"), mask)}};
});

const VectorAdapterRegistration kSwinBlock("context.SwinTransformerBlock", [](VectorCall& call) {
    std::vector<int64_t> window = call.config.get_ints("window_size", {});
    nn::swin::SwinTransformerBlock block(
        call.config.get_int("dim"), call.config.get_int("num_heads"), window,
        call.config.get_ints("shift_size", {}), call.config.get_double("mlp_ratio", 4.0),
        call.config.get_bool("qkv_bias", true), read_mixer(call));
    bind_module(call, block);
    // The mask BasicLayer would pass: its shift is window // 2, clipped to the map.
    const Tensor& x = call.input("x");
    std::vector<int64_t> spatial = spatial_of(x, 1, int64_t(window.size())), half;
    for (int64_t w : window) half.push_back(w / 2);
    nn::attention::MaskCache masks;
    Tensor mask = masks.get(spatial, nn::attention::get_window_size(spatial, window, half),
                            DType::float32, call.device);
    return TensorMap{{"y", block.forward(x, mask)}};
});

const VectorAdapterRegistration kPatchMerging("context.PatchMergingV2", [](VectorCall& call) {
    nn::swin::PatchMergingV2 merging(call.config.get_int("dim"),
                                     call.config.get_int("spatial_dims"));
    bind_module(call, merging);
    return TensorMap{{"y", merging.forward(call.input("x"))}};
});

const VectorAdapterRegistration kBasicLayer("context.BasicLayer", [](VectorCall& call) {
    nn::swin::BasicLayer layer(
        call.config.get_int("dim"), call.config.get_int("depth"), call.config.get_int("num_heads"),
        call.config.get_ints("window_size", {}), call.config.get_double("mlp_ratio", 4.0),
        call.config.get_bool("qkv_bias", true), read_mixer(call));
    bind_module(call, layer);
    return TensorMap{{"y", layer.forward(call.input("x"))}};
});

const VectorAdapterRegistration kSwinTransformer("context.SwinTransformer", [](VectorCall& call) {
    nn::swin::SwinOptions o;
    o.in_chans = call.config.get_int("in_chans");
    o.embed_dim = call.config.get_int("embed_dim");
    o.window_size = call.config.get_ints("window_size", {8});
    o.patch_size = call.config.get_ints("patch_size", {2});
    o.depths = call.config.get_ints("depths", o.depths);
    o.num_heads = call.config.get_ints("num_heads", o.num_heads);
    o.mlp_ratio = call.config.get_double("mlp_ratio", 4.0);
    o.qkv_bias = call.config.get_bool("qkv_bias", true);
    o.spatial_dims = call.config.get_int("spatial_dims");
    o.mixer = read_mixer(call);
    nn::swin::SwinTransformer swin(o);
    bind_module(call, swin);
    std::vector<Tensor> levels = swin.forward_features(call.input("x"));
    TensorMap out;
    for (size_t i = 0; i < levels.size(); ++i) out["x" + std::to_string(i)] = levels[i];
    return out;
});

const VectorAdapterRegistration kUperNet("context.UperNet", [](VectorCall& call) {
    nn::UperNet head(call.config.get_int("spatial_dims"),
                     call.config.get_ints("feature_channels", {}),
                     call.config.get_int("out_channels"), call.config.get_ints("out_size", {}),
                     call.config.get_ints("bin_sizes", {1, 2, 4, 6}));
    bind_module(call, head);
    set_batchnorm_mode(call, head);
    return TensorMap{{"y", head.forward({call.input("f1"), call.input("f2"), call.input("f3"),
                                         call.input("f4")})}};
});

// build_swin_model(...) of the reference: the entry context_swin, with the same defaults.
const VectorAdapterRegistration kSwinModel("context.model:Swin", [](VectorCall& call) {
    std::vector<std::string> keys = kContextModelKeys;
    keys.push_back("batchnorm");  // set_batchnorm_mode
    std::shared_ptr<nn::Module> model =
        build_registry_model(call, {"context_swin", {}, keys}, context_img_size(call));
    set_batchnorm_mode(call, *model);
    return TensorMap{{"y", model->forward(call.input("x"))}};
});

}  // namespace

}  // namespace lumen::conformance
