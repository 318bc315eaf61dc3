// The registry map and the built-in entries "vit" and "dgvit" (ViTConfig presets of
// models/vit.h with the config's sizes); the other models' entries are in
// registry_dense.cpp and registry_classify.cpp.
#include "models/registry.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "core/error.h"
#include "models/registry_entries.h"
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
    using nn::Range;
    const Range size = Range::between(1, 1 << 16), rate = Range::between(0, 1, true);
    return {
        {"img_size",
         std::vector<int64_t>{28, 28},
         "input (H, W); divisible by patch_size",
         {},
         size},
        {"in_chans", int64_t(1), "input channels", {}, size},
        {"num_classes", int64_t(10), "output classes", {}, Range::between(1, 1e7)},
        {"patch_size",
         int64_t(4),
         "square patch side (a conv of this kernel and stride)",
         {},
         size},
        {"embed_dim", int64_t(256), "token width D", {}, size},
        {"depth", int64_t(8), "number of blocks", {}, Range::between(0, 1e6)},
        {"num_heads", int64_t(8), "attention heads", {}, size},
        {"drop", 0.05, "dropout on embeddings, attention projection and FFN", {}, rate},
        {"attn_drop", 0.0, "dropout on the attention map", {}, rate},
        {"drop_path", 0.0, "stochastic depth of every block", {}, rate},
        checkpointing_option(),
        {"pool",
         std::string("auto"),
         "cls (class token) or mean (token mean, no class token); auto: mean for the variants "
         "where a class token has no place (gdla, hyena, mamba, swin_window, utnet), else cls",
         {"auto", "cls", "mean"}},
    };
}

// pool "auto": the token mean for the variants where a class token has no place, else the
// class token.
std::string resolved_pool(const std::string& pool, const std::string& attn_type) {
    const auto& grid_only = vit_mean_pool_attention();
    const bool needs_grid =
        std::find(grid_only.begin(), grid_only.end(), attn_type) != grid_only.end();
    return pool != "auto" ? pool : needs_grid ? "mean" : "cls";
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
    config.grad_checkpointing = o.get_int("grad_checkpointing");
    return config;
}

// pool "auto" resolved once the attention variant is known.
void set_pool(ViTConfig& config, const nn::Options& o) {
    config.pool = resolved_pool(o.get_string("pool"), config.block.attn_type);
}

ModelInput vit_input(const nn::Options& o) {
    ModelInput input;
    input.in_chans = o.get_int("in_chans");
    input.img_size = o.get_ints("img_size");
    input.num_classes = o.get_int("num_classes");
    return input;
}

// Softmax maps per head that a variant computes: the softmax ones one (differential and M-DGSA
// two); the linear, windowed and state-space ones none. All of them run fused
// (ops/attention.h), so each map leaves a log-sum-exp per row and one output, never T x T.
double attention_maps(const std::string& type) {
    if (type == "mhsa" || type == "vitpt_softmax" || type == "pvt_sa" || type == "pvt_da" ||
        type == "pvt_sra")
        return 1;
    if (type == "diff" || type == "dgsa") return 2;
    return 0;
}

// The attention's parameters at width d, measured per variant: q, k, v and out projections
// (4 d^2) for most; MambaVision's mixer about 2.2 d^2; Hyena's projections plus its implicit
// filter network, whose size does not depend on d.
double attention_parameters(const std::string& type, double d) {
    if (type == "mamba") return 2.2 * d * d + 8 * d;
    if (type == "hyena") return 4 * d * d + 40 * d + 210000;
    // GDLA: q, k, v, out, the gate, the differential lambdas and the local mixer.
    if (type == "gdla") return 22.8 * d * d;
    return 4 * d * d + 4 * d;
}

// ViT / DGViT parameters from the layer shapes (models/vit.h), and activations per example:
// about 8 token-width tensors per block (norms, projections, residuals, dropout masks), the
// MLP's hidden tensors, and each fused attention map's output and log-sum-exp. A checkpointed
// block (model.grad_checkpointing k: every k-th) keeps only its input, and the backward holds
// one recomputed block on top.
// tests/models/test_registry_cost.cpp holds it to the real parameter count and memory peak.
models::ModelCost vit_cost(const nn::Options& o, const std::string& attn_type, bool swiglu,
                           double ratio) {
    const std::vector<int64_t>& img = o.get_ints("img_size");
    const double d = double(o.get_int("embed_dim")), depth = double(o.get_int("depth"));
    const double p = double(o.get_int("patch_size")), heads = double(o.get_int("num_heads"));
    const double classes = double(o.get_int("num_classes")), chans = double(o.get_int("in_chans"));
    const double prefix = resolved_pool(o.get_string("pool"), attn_type) == "cls" ? 1 : 0;
    const double tokens = prefix + std::floor(double(img[0]) / p) * std::floor(double(img[1]) / p);
    const double hidden = swiglu ? std::floor(ratio * d / 2) : std::floor(ratio * d);
    const double mlp = swiglu ? 3 * hidden * d + 2 * hidden + d : 2 * hidden * d + hidden + d;
    const double attention = attention_parameters(attn_type, d);
    const double block = attention + mlp + 4 * d;
    models::ModelCost cost;
    cost.parameters = depth * block + chans * p * p * d + d + prefix * d + tokens * d + 2 * d +
                      d * classes + classes;
    const double maps = attention_maps(attn_type) * tokens * (heads + d);
    // The local mixers keep about 16 more token-width tensors (gdla's gate and convolution,
    // swin_window's padded, rolled and windowed copies).
    const double mixer = attn_type == "gdla" || attn_type == "swin_window" ? 16 * d : 0;
    const double per_block = tokens * (8 * d + mixer + (swiglu ? 5 : 3) * hidden) + maps;
    const int64_t every = o.get_int("grad_checkpointing");
    const double recomputed = every > 0 ? std::floor(depth / double(every)) : 0;
    const double blocks = (depth - recomputed) * per_block + recomputed * tokens * d +
                          (recomputed > 0 ? per_block : 0);
    cost.activation_bytes = 4 * (blocks + 4 * tokens * d + chans * img[0] * img[1]);
    return cost;
}

ModelEntry vit_entry() {
    std::vector<nn::OptionSpec> options = vit_common_options();
    options.push_back({"mlp_ratio", 4.0, "GELU MLP hidden width / D", {}, nn::Range::above(0)});
    options.push_back({"attn_type", std::string("mhsa"), "a registered attention variant",
                       nn::attention::attention_names()});
    auto build = [](const nn::Options& o) -> std::shared_ptr<nn::Module> {
        ViTConfig config = sized(vit_config(), o);
        config.block.mlp_ratio = o.get_double("mlp_ratio");
        config.block.attn_type = o.get_string("attn_type");
        set_pool(config, o);
        return std::make_shared<ViT>(config);
    };
    auto cost = [](const nn::Options& o) {
        return vit_cost(o, o.get_string("attn_type"), false, o.get_double("mlp_ratio"));
    };
    return {"vit",
            "ViT classifier (timm layout; Lygizou et al. 2025): MHSA + GELU MLP blocks",
            std::move(options),
            build,
            vit_input,
            cost};
}

ModelEntry dgvit_entry() {
    std::vector<nn::OptionSpec> options = vit_common_options();
    options.push_back({"ffn_expansion",
                       4.0,
                       "SwiGLU expansion k (gated width k D / 2)",
                       {},
                       nn::Range::above(0)});
    options.push_back({"ffn_dropouts",
                       int64_t(2),
                       "2: dropout after both FFN layers, 1: first",
                       {},
                       nn::Range::between(1, 2)});
    options.push_back({"lambda_init", 0.8, "M-DGSA lambda_init"});
    options.push_back({"q_residual", true, "add the query projection to the attention output"});
    auto build = [](const nn::Options& o) -> std::shared_ptr<nn::Module> {
        ViTConfig config = sized(dgvit_config(10, {28, 28}, 1, o.get_double("ffn_expansion")), o);
        config.block.ffn_dropouts = int(o.get_int("ffn_dropouts"));
        config.block.attn_options = {{"lambda_init", o.get_double("lambda_init")},
                                     {"q_residual", o.get_bool("q_residual") ? 1.0 : 0.0}};
        set_pool(config, o);
        return std::make_shared<ViT>(config);
    };
    auto cost = [](const nn::Options& o) {
        return vit_cost(o, "dgsa", true, o.get_double("ffn_expansion"));
    };
    return {"dgvit",
            "DGViT (Lygizou et al. 2025): M-DGSA attention + packed SwiGLU blocks",
            std::move(options),
            build,
            vit_input,
            cost};
}

std::map<std::string, ModelEntry>& registry() {
    // Built on first use, so registration order across translation units does not matter.
    static std::map<std::string, ModelEntry> entries = [] {
        std::map<std::string, ModelEntry> builtin;
        std::vector<ModelEntry> entries{vit_entry(), dgvit_entry()};
        for (auto more : {dense_model_entries(), classifier_entries()})
            entries.insert(entries.end(), more.begin(), more.end());
        for (ModelEntry& entry : entries) builtin[entry.name] = entry;
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
