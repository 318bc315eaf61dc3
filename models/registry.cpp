// The registry map and the built-in entries "vit" and "dgvit" (ViTConfig presets of
// models/vit.h with the config's sizes).
#include "models/registry.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "core/error.h"
#include "models/vit.h"
#include "nn/attention/attention.h"

namespace lumen::models {

namespace {

std::map<std::string, ModelEntry>& registry();

std::string joined(const std::vector<std::string>& names) {
    std::ostringstream out;
    for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << names[i];
    return out.str();
}

// Keys shared by both ViT presets (Table 3 values, Fashion-MNIST's input).
std::vector<nn::OptionSpec> vit_common_options() {
    return {
        {"img_size", std::vector<int64_t>{28, 28}, "input (H, W); divisible by patch_size"},
        {"in_chans", int64_t(1), "input channels"},
        {"num_classes", int64_t(10), "output classes"},
        {"patch_size", int64_t(4), "square patch side (a conv of this kernel and stride)"},
        {"embed_dim", int64_t(256), "token width D"},
        {"depth", int64_t(8), "number of blocks"},
        {"num_heads", int64_t(8), "attention heads"},
        {"drop", 0.05, "dropout on embeddings, attention projection and FFN"},
        {"attn_drop", 0.0, "dropout on the attention map"},
        {"drop_path", 0.0, "stochastic depth of every block"},
    };
}

ViTConfig sized(ViTConfig config, const nn::Options& o) {
    config.img_size = o.get_ints("img_size");
    config.in_chans = o.get_int("in_chans");
    config.num_classes = o.get_int("num_classes");
    config.patch_size = o.get_int("patch_size");
    config.embed_dim = o.get_int("embed_dim");
    config.depth = o.get_int("depth");
    config.num_heads = o.get_int("num_heads");
    config.pos_drop = o.get_double("drop");
    config.block.drop = o.get_double("drop");
    config.block.attn_drop = o.get_double("attn_drop");
    config.block.drop_path = o.get_double("drop_path");
    return config;
}

ModelInput vit_input(const nn::Options& o) {
    return {o.get_int("in_chans"), o.get_ints("img_size"), o.get_int("num_classes")};
}

ModelEntry vit_entry() {
    std::vector<nn::OptionSpec> options = vit_common_options();
    options.push_back({"mlp_ratio", 4.0, "GELU MLP hidden width / D"});
    options.push_back({"attn_type", std::string("mhsa"), "a registered attention variant",
                       nn::attention_names()});
    auto build = [](const nn::Options& o) -> std::shared_ptr<nn::Module> {
        ViTConfig config = sized(vit_config(), o);
        config.block.mlp_ratio = o.get_double("mlp_ratio");
        config.block.attn_type = o.get_string("attn_type");
        return std::make_shared<ViT>(config);
    };
    return {"vit", "ViT classifier (timm layout; spec diff 3.1): MHSA + GELU MLP blocks",
            std::move(options), build, vit_input};
}

ModelEntry dgvit_entry() {
    std::vector<nn::OptionSpec> options = vit_common_options();
    options.push_back({"ffn_expansion", 4.0, "SwiGLU expansion k (gated width k D / 2)"});
    options.push_back({"ffn_dropouts", int64_t(2), "2: dropout after both FFN layers, 1: first"});
    options.push_back({"lambda_init", 0.8, "M-DGSA lambda_init"});
    options.push_back({"q_residual", true, "add the query projection to the attention output"});
    auto build = [](const nn::Options& o) -> std::shared_ptr<nn::Module> {
        ViTConfig config = sized(dgvit_config(10, {28, 28}, 1, o.get_double("ffn_expansion")), o);
        config.block.ffn_dropouts = int(o.get_int("ffn_dropouts"));
        config.block.attn_options = {{"lambda_init", o.get_double("lambda_init")},
                                     {"q_residual", o.get_bool("q_residual") ? 1.0 : 0.0}};
        return std::make_shared<ViT>(config);
    };
    return {"dgvit", "DGViT (spec diff 3.2): M-DGSA attention + packed SwiGLU blocks",
            std::move(options), build, vit_input};
}

std::map<std::string, ModelEntry>& registry() {
    // Built on first use, so registration order across translation units does not matter.
    static std::map<std::string, ModelEntry> entries = [] {
        std::map<std::string, ModelEntry> builtin;
        for (ModelEntry entry : {vit_entry(), dgvit_entry()}) builtin[entry.name] = entry;
        return builtin;
    }();
    return entries;
}

}  // namespace

void register_model(ModelEntry entry) {
    LUMEN_CHECK(entry.build != nullptr && entry.input != nullptr, "models", "entry '", entry.name,
                "' needs build and input functions");
    LUMEN_CHECK(registry().count(entry.name) == 0, "models", "'", entry.name,
                "' is already registered");
    std::string name = entry.name;
    registry()[name] = std::move(entry);
}

std::vector<std::string> model_names() {
    std::vector<std::string> names;
    for (const auto& [name, entry] : registry()) names.push_back(name);
    return names;
}

const ModelEntry& find_model(const std::string& name) {
    auto it = registry().find(name);
    if (it != registry().end()) return it->second;
    std::string guess = nn::closest_match(name, model_names());
    LUMEN_FAIL("models", "unknown model '", name, "'",
               guess.empty() ? "" : "; did you mean '" + guess + "'?",
               " (registered: ", joined(model_names()), ")");
}

nn::Options model_options(const std::string& name, const nn::Options& overrides) {
    const ModelEntry& entry = find_model(name);
    nn::Options options(entry.name);
    std::vector<std::string> keys;
    for (const nn::OptionSpec& spec : entry.options) {
        options.set(spec.key, spec.default_value);
        keys.push_back(spec.key);
    }
    for (const auto& [key, value] : overrides.values()) {
        auto spec = std::find_if(entry.options.begin(), entry.options.end(),
                                 [&](const nn::OptionSpec& s) { return s.key == key; });
        if (spec == entry.options.end()) {
            std::string guess = nn::closest_match(key, keys);
            LUMEN_FAIL("models", "model '", name, "' has no option '", key, "'",
                       guess.empty() ? "" : "; did you mean '" + guess + "'?");
        }
        options.set(key, nn::coerce_option(*spec, value, "models", key));
    }
    return options;
}

std::shared_ptr<nn::Module> build_model(const std::string& name, const nn::Options& options) {
    return find_model(name).build(options);
}

}  // namespace lumen::models
