// check-vectors adapters of the DGSA paper (Lygizou et al. 2025) for the attentions (Attention =
// MHSA, MultiheadDiffAttn, MultiheadDGSA), the four block presets and attention_rollout. The whole
// models are in diff_vectors_models.cpp; the shared block-config reader is in diff_vectors.h.
#include "conformance/diff/diff_vectors.h"

#include <cmath>

#include "conformance/module_vectors.h"
#include "lumen/lumen.h"
#include "nn/attention/dgsa.h"
#include "nn/attention/diff_attn.h"
#include "nn/attention/mhsa.h"
#include "nn/block.h"
#include "nn/rollout.h"

namespace lumen::conformance {

namespace {

double attn_option(const nn::BlockOptions& block, const std::string& name, double fallback) {
    for (const auto& [key, value] : block.attn_options)
        if (key == name) return value;
    return fallback;
}

// Runs an attention or block on in.x, with in.key_padding_mask when the vector has one.
template <typename M>
TensorMap run_tokens(VectorCall& call, M& module) {
    bind_module(call, module);
    nn::attention::AttentionContext context{.key_padding_mask =
                                                call.optional_input("key_padding_mask")};
    return {{"y", module.forward(call.input("x"), context)}};
}

void check_lambda_init(VectorCall& call, double want) {
    double stored = call.config.get_double("lambda_init", want);
    LUMEN_CHECK(std::abs(stored - want) < 1e-12, call.module, "config 'lambda_init' = ", stored,
                " but lumen derives ", want);
}

void check_head_dim(VectorCall& call, int64_t head_dim) {
    require_preset<int64_t>(call, "head_dim", call.config.get_int("head_dim", head_dim), head_dim);
}

const VectorAdapterRegistration kAttention("Attention", [](VectorCall& call) {
    nn::attention::MHSA attention(call.config.get_int("dim"), call.config.get_int("num_heads"), -1,
                                  call.config.get_bool("qkv_bias", true));
    return run_tokens(call, attention);
});

const VectorAdapterRegistration kDiffAttn("MultiheadDiffAttn", [](VectorCall& call) {
    nn::attention::DiffAttnOptions options{
        .layer_index = call.config.get_int("layer_index", 0),
        .causal = call.config.get_bool("causal", false),
        .rope = call.config.get_bool("rope", false),
        .rope_base = call.config.get_double("rope_base", 10000.0),
        .subln_eps = call.config.get_double("subln_eps", 1e-5)};
    nn::attention::MultiheadDiffAttn attention(call.config.get_int("embed_dim"),
                                               call.config.get_int("num_heads"), options);
    check_head_dim(call, attention.head_dim);
    check_lambda_init(call, attention.lambda_init);
    return run_tokens(call, attention);
});

const VectorAdapterRegistration kDGSA("MultiheadDGSA", [](VectorCall& call) {
    nn::attention::DGSAOptions options{
        .layer_index = call.config.get_int("layer_index", 0),
        .lambda_schedule = call.config.get_bool("lambda_schedule", false),
        .q_residual = call.config.get_bool("q_residual", false),
        .subln_eps = call.config.get_double("subln_eps", 1e-5)};
    if (!options.lambda_schedule) options.lambda_init = call.config.get_double("lambda_init", 0.8);
    nn::attention::MultiheadDGSA attention(call.config.get_int("embed_dim"),
                                           call.config.get_int("num_heads"), options);
    check_head_dim(call, attention.head_dim);
    check_lambda_init(call, attention.lambda_init);
    return run_tokens(call, attention);
});

// A block adapter: the preset, checked against every block key of the vector.
void register_block(const std::string& module, nn::BlockOptions (*preset)(double)) {
    register_vector_adapter(module, [preset](VectorCall& call) {
        int64_t dim = call.config.get_int("dim");
        double k =
            call.config.get_double("ffn_expansion", call.config.get_double("mlp_ratio", 4.0));
        nn::BlockOptions options = read_block_options(call, preset(k), dim);
        nn::Block block(dim, call.config.get_int("num_heads"),
                        call.config.get_int("layer_index", 0), options);
        return run_tokens(call, block);
    });
}

struct BlockRegistrations {
    BlockRegistrations() {
        register_block("ViTBlock", [](double) { return nn::vit_block_options(); });
        register_block("DiffTransformerLayer", nn::diff_transformer_layer_options);
        register_block("DGViTBlock", nn::dgvit_block_options);
        register_block("DGTLayer", nn::dgt_layer_options);
    }
} const kBlocks;

const VectorAdapterRegistration kRollout("attention_rollout", [](VectorCall& call) {
    const Tensor& maps = call.input("maps");
    require_preset<int64_t>(call, "layers", call.config.get_int("layers"), maps.size(0));
    require_preset<int64_t>(call, "heads", call.config.get_int("heads"), maps.size(2));
    return TensorMap{{"y", nn::attention_rollout(maps)}};
});

}  // namespace

nn::BlockOptions read_block_options(VectorCall& call, nn::BlockOptions preset, int64_t dim) {
    VectorConfig& c = call.config;
    require_preset(call, "attn_type", c.get_string("attn_type", preset.attn_type),
                   preset.attn_type);
    require_preset(call, "mlp_type", c.get_string("mlp_type", preset.mlp_type), preset.mlp_type);
    require_preset(call, "norm_type", c.get_string("norm_type", preset.norm_type),
                   preset.norm_type);
    require_preset(call, "norm_eps", c.get_double("norm_eps", preset.norm_eps), preset.norm_eps);
    require_preset(call, "qkv_bias", c.get_bool("qkv_bias", preset.qkv_bias), preset.qkv_bias);
    require_preset(call, "mlp_bias", c.get_bool("mlp_bias", preset.mlp_bias), preset.mlp_bias);
    double lambda_init = attn_option(preset, "lambda_init", 0.8);
    require_preset(call, "dgsa_lambda_init", c.get_double("dgsa_lambda_init", lambda_init),
                   lambda_init);
    bool q_residual = attn_option(preset, "q_residual", 0.0) != 0.0;
    require_preset(call, "q_residual", c.get_bool("q_residual", q_residual), q_residual);
    double ratio = preset.mlp_type == "swiglu" ? c.get_double("ffn_expansion", preset.mlp_ratio)
                                               : c.get_double("mlp_ratio", preset.mlp_ratio);
    require_preset(call, preset.mlp_type == "swiglu" ? "ffn_expansion" : "mlp_ratio", ratio,
                   preset.mlp_ratio);
    if (preset.mlp_type == "swiglu") {
        // The vector stores the exact gated width; lumen derives it from k and must agree.
        int64_t derived = int64_t(std::floor(preset.mlp_ratio * double(dim) / 2.0 + 1e-9));
        require_preset<int64_t>(call, "ffn_hidden", c.get_int("ffn_hidden", derived), derived);
    }
    return preset;
}

}  // namespace lumen::conformance
