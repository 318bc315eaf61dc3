// PVTv2 encoder: config checks and presets, the stage pyramid, timm's init, the checkpoint key
// rename.
#include "models/pvt_v2.h"

#include <cmath>
#include <regex>

#include "nn/init.h"
#include "ops/reduce.h"

namespace lumen::models {

namespace {
const char* kName = "PyramidVisionTransformerV2";
constexpr size_t kStages = 4;
}  // namespace

void PvtV2Config::validate() const {
    LUMEN_CHECK(
        depths.size() == kStages && embed_dims.size() == kStages && num_heads.size() == kStages &&
            sr_ratios.size() == kStages && mlp_ratios.size() == kStages,
        kName, "depths, embed_dims, num_heads, sr_ratios and mlp_ratios need 4 entries, got ",
        depths.size(), ", ", embed_dims.size(), ", ", num_heads.size(), ", ", sr_ratios.size(),
        ", ", mlp_ratios.size());
    LUMEN_CHECK(in_chans > 0 && num_classes >= 0, kName, "in_chans must be positive and ",
                "num_classes >= 0, got ", in_chans, " and ", num_classes);
    for (size_t i = 0; i < kStages; ++i) {
        LUMEN_CHECK(depths[i] >= 0 && embed_dims[i] > 0 && num_heads[i] > 0 &&
                        embed_dims[i] % num_heads[i] == 0 && sr_ratios[i] > 0 && mlp_ratios[i] > 0,
                    kName, "stage ", i, ": needs depth >= 0, embed_dim a positive multiple of ",
                    "num_heads, sr_ratio > 0 and mlp_ratio > 0, got depth ", depths[i],
                    ", embed_dim ", embed_dims[i], ", num_heads ", num_heads[i], ", sr_ratio ",
                    sr_ratios[i], ", mlp_ratio ", mlp_ratios[i]);
    }
    for (double rate : {drop_rate, attn_drop_rate, drop_path_rate}) {
        LUMEN_CHECK(rate >= 0.0 && rate < 1.0, kName, "drop rates must lie in [0, 1), got ", rate);
    }
}

PvtV2Config pvt_v2_config(const std::string& variant, int64_t num_classes) {
    PvtV2Config config;  // b2's widths, heads and ratios
    config.num_classes = num_classes;
    if (variant == "b0") {
        config.depths = {2, 2, 2, 2};
        config.embed_dims = {32, 64, 160, 256};
    } else if (variant == "b1") {
        config.depths = {2, 2, 2, 2};
    } else if (variant == "b2") {
    } else if (variant == "b2_li") {
        config.linear = true;
    } else if (variant == "b3") {
        config.depths = {3, 4, 18, 3};
    } else if (variant == "b4") {
        config.depths = {3, 8, 27, 3};
    } else if (variant == "b5") {
        config.depths = {3, 6, 40, 3};
        config.mlp_ratios = {4, 4, 4, 4};
    } else {
        LUMEN_FAIL("pvt_v2_config", "unknown variant '", variant,
                   "' (known: b0, b1, b2, b2_li, b3, b4, b5)");
    }
    return config;
}

PyramidVisionTransformerV2::PyramidVisionTransformerV2(const PvtV2Config& config)
    : Module(kName), config_(config) {
    config_.validate();
    const auto& dims = config_.embed_dims;
    patch_embed = register_module(
        "patch_embed", nn::make<nn::pvt::OverlapPatchEmbed>(7, 4, config_.in_chans, dims[0]));
    stages = register_module("stages", nn::make<nn::ModuleList<nn::pvt::PVTStage>>());
    int64_t total = 0, seen = 0;
    for (int64_t depth : config_.depths) total += depth;
    for (size_t i = 0; i < kStages; ++i) {
        // timm: torch.linspace(0, drop_path_rate, sum(depths)) split by stage.
        std::vector<double> drop_paths;
        for (int64_t j = 0; j < config_.depths[i]; ++j, ++seen)
            drop_paths.push_back(
                total > 1 ? config_.drop_path_rate * double(seen) / double(total - 1) : 0.0);
        nn::pvt::PVTBlockOptions options{.mlp_ratio = config_.mlp_ratios[i],
                                         .sr_ratio = config_.sr_ratios[i],
                                         .linear = config_.linear,
                                         .qkv_bias = config_.qkv_bias,
                                         .proj_drop = config_.drop_rate,
                                         .attn_drop = config_.attn_drop_rate};
        auto stage = stages->push_back(
            nn::make<nn::pvt::PVTStage>(i == 0 ? dims[0] : dims[i - 1], dims[i], config_.depths[i],
                                        i > 0, config_.num_heads[i], options, drop_paths));
        stage->grad_checkpointing = config_.grad_checkpointing;
        stage->first_block = seen - config_.depths[i];
    }
    if (config_.num_classes > 0)
        head = register_module("head", nn::make<nn::Linear>(dims[3], config_.num_classes));
    init_weights();
}

void PyramidVisionTransformerV2::init_weights() {
    for (auto& [name, module] : named_modules()) {
        if (auto* linear = dynamic_cast<nn::Linear*>(module)) {
            nn::init::trunc_normal_(linear->weight, 0.0, 0.02);
            if (linear->bias.defined()) nn::init::zeros_(linear->bias);
        } else if (auto* conv = dynamic_cast<nn::Conv2d*>(module)) {
            // timm: fan_out = kh * kw * out_channels / groups, weight ~ N(0, 2 / fan_out).
            int64_t fan_out = conv->kernel_size[0] * conv->kernel_size.back() * conv->out_channels /
                              conv->options.groups;
            nn::init::normal_(conv->weight, 0.0, std::sqrt(2.0 / double(fan_out)));
            if (conv->bias.defined()) nn::init::zeros_(conv->bias);
        }
    }
}

std::vector<Tensor> PyramidVisionTransformerV2::forward_intermediates(const Tensor& x) {
    LUMEN_CHECK(x.ndim() == 4 && x.size(1) == config_.in_chans, kName, "expects x (B, ",
                config_.in_chans, ", H, W), got shape ", x.shape());
    std::vector<Tensor> features;
    Tensor h = patch_embed->forward(x);  // NHWC, what the first stage takes
    for (const auto& stage : *stages) {
        h = stage->forward(h);
        features.push_back(h);
    }
    return features;
}

Tensor PyramidVisionTransformerV2::forward(const Tensor& x) {
    Tensor pooled = mean(forward_intermediates(x).back(), {2, 3});
    return head ? head->forward(pooled) : pooled;
}

nn::KeyRename whai362_to_timm(const std::string& prefix) {
    return [prefix](const std::string& key) -> std::string {
        if (key.compare(0, prefix.size(), prefix) != 0) return key;
        static const std::regex patch_embed(R"(^patch_embed(\d)\.)"), block(R"(^block(\d)\.)"),
            norm(R"(^norm(\d)\.)"), dwconv(R"(\.dwconv\.dwconv\.)");
        std::string rest = key.substr(prefix.size());
        std::smatch m;
        if (std::regex_search(rest, m, patch_embed)) {
            int stage = std::stoi(m[1]) - 1;
            rest = (stage == 0 ? std::string("patch_embed.")
                               : "stages." + std::to_string(stage) + ".downsample.") +
                   m.suffix().str();
        } else if (std::regex_search(rest, m, block)) {
            rest = "stages." + std::to_string(std::stoi(m[1]) - 1) + ".blocks." + m.suffix().str();
        } else if (std::regex_search(rest, m, norm)) {
            rest = "stages." + std::to_string(std::stoi(m[1]) - 1) + ".norm." + m.suffix().str();
        }
        return prefix + std::regex_replace(rest, dwconv, ".dwconv.");
    };
}

}  // namespace lumen::models
