// check-vectors adapters of spec `diff` for the whole models: ViT and DGViT (models/vit.h),
// TransformerCls, DiffTransformerCls and DGT (models/text_transformer.h), each built from its
// lumen preset with the vector's sizes, its block keys checked against the preset.
#include "conformance/diff/diff_vectors.h"
#include "conformance/module_vectors.h"
#include "lumen/lumen.h"
#include "models/text_transformer.h"
#include "models/vit.h"

namespace lumen::cli {

namespace {

TensorMap run_vision(VectorCall& call, bool dgsa) {
    VectorConfig& c = call.config;
    int64_t classes = c.get_int("num_classes");
    std::vector<int64_t> img_size = c.get_ints("img_size", {32, 32});
    int64_t in_chans = c.get_int("in_chans", 3);
    models::ViTConfig config = dgsa ? models::dgvit_config(classes, img_size, in_chans,
                                                           c.get_double("ffn_expansion", 4.0), 0.0)
                                    : models::vit_config(classes, img_size, in_chans, 0.0);
    config.patch_size = c.get_int("patch_size");
    config.embed_dim = c.get_int("embed_dim");
    config.depth = c.get_int("depth");
    config.num_heads = c.get_int("num_heads");
    config.block = read_block_options(call, config.block, config.embed_dim);
    models::ViT model(config);
    bind_module(call, model);
    return {{"y", model.forward(call.input("img"))}};
}

using TextPreset = models::TextTransformerConfig (*)(VectorCall&);

TensorMap run_text(VectorCall& call, TextPreset preset) {
    VectorConfig& c = call.config;
    models::TextTransformerConfig config = preset(call);
    config.embed_dim = c.get_int("embed_dim");
    config.depth = c.get_int("depth");
    config.num_heads = c.get_int("num_heads");
    config.pad_idx = c.get_int("pad_idx", 0);
    config.embed_scale = c.get_bool("embed_scale", true);
    config.block = read_block_options(call, config.block, config.embed_dim);
    models::TextTransformer model(config);
    bind_module(call, model);
    return {{"y", model.forward(call.input("tokens"))}};
}

const VectorAdapterRegistration kViT("ViT",
                                     [](VectorCall& call) { return run_vision(call, false); });

const VectorAdapterRegistration kDGViT("DGViT",
                                       [](VectorCall& call) { return run_vision(call, true); });

const VectorAdapterRegistration kTransformerCls("TransformerCls", [](VectorCall& call) {
    return run_text(call, [](VectorCall& c) {
        return models::transformer_cls_config(c.config.get_int("vocab_size"),
                                              c.config.get_int("num_classes"), 6, 0.0);
    });
});

const VectorAdapterRegistration kDiffTransformerCls("DiffTransformerCls", [](VectorCall& call) {
    return run_text(call, [](VectorCall& c) {
        return models::diff_transformer_cls_config(
            c.config.get_int("vocab_size"), c.config.get_int("num_classes"),
            c.config.get_double("ffn_expansion", 16.0 / 3.0), 6, 0.0);
    });
});

const VectorAdapterRegistration kDGT("DGT", [](VectorCall& call) {
    return run_text(call, [](VectorCall& c) {
        return models::dgt_config(c.config.get_int("vocab_size"), c.config.get_int("num_classes"),
                                  c.config.get_double("ffn_expansion", 16.0 / 3.0), 6, 0.0);
    });
});

}  // namespace

}  // namespace lumen::cli
