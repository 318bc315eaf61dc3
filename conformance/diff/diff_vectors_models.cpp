// check-vectors adapters of the DGSA paper (Lygizou et al. 2025) for the whole models, built by the
// registry: ViT and DGViT (entries vit, dgvit; models/vit.h), TransformerCls, DiffTransformerCls
// and DGT (transformer, diff_transformer, dgt; models/text_transformer.h). The vector's block keys
// that choose the preset (attn_type, mlp_type, norm_type, ...) are no options, as the entry names
// the preset: they are checked against the built model.
#include "conformance/diff/diff_vectors.h"
#include "conformance/registry_vectors.h"
#include "models/text_transformer.h"
#include "models/vit.h"

namespace lumen::conformance {

namespace {

using Defaults = std::map<std::string, nn::OptionValue>;

// The reference presets: VisionClassifier(img_size=(32, 32), in_chans=3, ..., drop=0.0) and
// TextClassifier(..., drop=0.0). adapter_keys: the block keys read_block_options checks that
// the entry does not set (dgvit's dgsa_lambda_init is its lambda_init).
const Defaults kVisionDefaults{
    {"img_size", std::vector<int64_t>{32, 32}}, {"in_chans", int64_t(3)}, {"drop", 0.0}};
const RegistryModel kViTModel{
    "vit",
    {},
    {"mlp_type", "norm_type", "norm_eps", "qkv_bias", "mlp_bias", "dgsa_lambda_init", "q_residual"},
    kVisionDefaults};
const RegistryModel kDGViTModel{
    "dgvit",
    {{"dgsa_lambda_init", "lambda_init"}},
    {"attn_type", "mlp_type", "norm_type", "norm_eps", "qkv_bias", "mlp_bias", "ffn_hidden"},
    kVisionDefaults};

TensorMap run_vision(VectorCall& call, const RegistryModel& registry) {
    auto model = std::dynamic_pointer_cast<models::ViT>(build_registry_model(call, registry));
    LUMEN_ASSERT(model != nullptr);
    read_block_options(call, model->config().block, model->config().embed_dim);
    return {{"y", model->forward(call.input("img"))}};
}

TensorMap run_text(VectorCall& call, const std::string& name) {
    std::vector<std::string> preset{"attn_type",   "mlp_type",        "norm_type",  "norm_eps",
                                    "qkv_bias",    "mlp_bias",        "q_residual", "pad_idx",
                                    "embed_scale", "dgsa_lambda_init"};
    // The GELU MLP's ratio (transformer), or the SwiGLU's gated width.
    preset.push_back(name == "transformer" ? "mlp_ratio" : "ffn_hidden");
    const RegistryModel registry{name, {}, preset, {{"drop", 0.0}}};
    auto model =
        std::dynamic_pointer_cast<models::TextTransformer>(build_registry_model(call, registry));
    LUMEN_ASSERT(model != nullptr);
    const models::TextTransformerConfig& c = model->config();
    read_block_options(call, c.block, c.embed_dim);
    require_preset<int64_t>(call, "pad_idx", call.config.get_int("pad_idx", c.pad_idx), c.pad_idx);
    require_preset(call, "embed_scale", call.config.get_bool("embed_scale", c.embed_scale),
                   c.embed_scale);
    return {{"y", model->forward(call.input("tokens"))}};
}

const VectorAdapterRegistration kViT("ViT",
                                     [](VectorCall& call) { return run_vision(call, kViTModel); });

const VectorAdapterRegistration kDGViT("DGViT", [](VectorCall& call) {
    return run_vision(call, kDGViTModel);
});

const VectorAdapterRegistration kTransformerCls("TransformerCls", [](VectorCall& call) {
    return run_text(call, "transformer");
});

const VectorAdapterRegistration kDiffTransformerCls("DiffTransformerCls", [](VectorCall& call) {
    return run_text(call, "diff_transformer");
});

const VectorAdapterRegistration kDGT("DGT", [](VectorCall& call) { return run_text(call, "dgt"); });

}  // namespace

}  // namespace lumen::conformance
