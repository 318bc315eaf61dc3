// Registry entries of the classifiers beyond vit/dgvit: sfree_vit (2-D images, 3-D volumes and
// feature bags; Khader et al., Sec. 2.1 and 3.1), sima_vit (the official SimA model), and the text
// models transformer, diff_transformer and dgt (Lygizou et al. 2025, Sec. 4.3). Defaults are the
// papers' models.
#include "core/error.h"
#include "models/registry_entries.h"
#include "models/sfree_vit.h"
#include "models/sima_vit.h"
#include "models/text_transformer.h"

namespace lumen::models {

namespace {

using nn::OptionSpec;
using nn::Range;
using Ints = std::vector<int64_t>;
using Strings = std::vector<std::string>;

// ---- sfree_vit ----

SfreeViTConfig sfree_config(const nn::Options& o) {
    SfreeViTConfig c;
    c.tokenizer = o.get_string("tokenizer");
    c.attn = o.get_string("attn");
    c.num_classes = o.get_int("num_classes");
    c.dim = o.get_int("dim");
    c.depth = o.get_int("depth");
    c.heads = o.get_int("heads");
    c.dim_head = o.get_int("dim_head");
    c.mlp_dim = o.get_int("mlp_dim");
    c.pool = o.get_string("pool");
    c.channels = o.get_int("channels");
    c.image_size = o.get_ints("image_size");
    c.patch_size = o.get_ints("patch_size");
    c.frames = o.get_int("frames");
    c.frame_patch_size = o.get_int("frame_patch_size");
    c.feat_dim = o.get_int("feat_dim");
    c.dropout = o.get_double("dropout");
    c.emb_dropout = o.get_double("emb_dropout");
    c.grad_checkpointing = o.get_int("grad_checkpointing");
    return c;
}

ModelEntry sfree_vit_entry() {
    std::vector<OptionSpec> options{
        {"tokenizer", std::string("patch2d"),
         "patch2d (B, C, H, W), patch3d (B, C, F, H, W) or bag (B, N, feat_dim)",
         Strings{"patch2d", "patch3d", "bag"}},
        {"attn", std::string("softmax"), "attention: softmax, seqnorm or sima",
         Strings{"softmax", "seqnorm", "sima"}},
        {"num_classes", int64_t(2), "classes", {}, Range::between(1, 1e7)},
        {"dim", int64_t(1024), "token width", {}, size_range()},
        {"depth", int64_t(8), "blocks", {}, Range::between(0, 1e4)},
        {"heads", int64_t(8), "attention heads", {}, size_range()},
        {"dim_head", int64_t(64), "width per head", {}, size_range()},
        {"mlp_dim", int64_t(1024), "MLP width", {}, size_range()},
        {"pool", std::string("cls"), "class token or token mean", Strings{"cls", "mean"}},
        {"channels", int64_t(3), "input channels (patch tokenizers)", {}, size_range()},
        {"image_size", Ints{224, 224}, "(H, W) (patch tokenizers)", {}, size_range()},
        {"patch_size", Ints{16, 16}, "(p1, p2)", {}, size_range()},
        {"frames", int64_t(0), "F, slices of a volume (patch3d)", {}, Range::between(0, 1 << 16)},
        {"frame_patch_size", int64_t(0), "pf (patch3d)", {}, Range::between(0, 1 << 16)},
        {"feat_dim", int64_t(0), "features per instance (bag)", {}, Range::between(0, 1 << 20)},
        {"dropout", 0.0, "attention weights, projections, MLP", {}, rate_range()},
        {"emb_dropout", 0.0, "on the embedded tokens", {}, rate_range()},
    };
    options.push_back(checkpointing_option());
    auto build = [](const nn::Options& o) -> std::shared_ptr<nn::Module> {
        return std::make_shared<SfreeViT>(sfree_config(o));
    };
    auto input = [](const nn::Options& o) {
        ModelInput in;
        const std::string tokenizer = o.get_string("tokenizer");
        in.num_classes = o.get_int("num_classes");
        in.classes_key = "num_classes";
        if (tokenizer == "bag") {
            in.kind = "bag";
            in.feature_dim = o.get_int("feat_dim");
            return in;
        }
        in.in_chans = o.get_int("channels");
        in.chans_key = "channels";
        in.size_key = "image_size";
        in.img_size = o.get_ints("image_size");
        if (tokenizer == "patch3d") {
            in.size_key = "frames and image_size";
            in.img_size.insert(in.img_size.begin(), o.get_int("frames"));
        }
        in.spatial_dims = int64_t(in.img_size.size());
        return in;
    };
    return {"sfree_vit",
            "softmax-free ViT (Khader et al.): softmax/seqnorm/SimA attention on 2-D images, "
            "3-D volumes or feature bags",
            std::move(options), build, input, nullptr};
}

// ---- sima_vit ----

ModelEntry sima_vit_entry() {
    std::vector<OptionSpec> options{
        {"patch_size", int64_t(16), "conv patch embedding: 16 or 8", {}, Range::between(8, 16)},
        {"in_chans", int64_t(3), "input channels", {}, size_range()},
        {"num_classes", int64_t(2), "classes", {}, Range::between(1, 1e7)},
        {"embed_dim", int64_t(384), "token width (SimA-S12 384)", {}, size_range()},
        {"depth", int64_t(12), "SimA blocks", {}, Range::between(0, 1e4)},
        {"num_heads", int64_t(8), "heads", {}, size_range()},
        {"mlp_ratio", 4.0, "MLP width / embed_dim", {}, Range::above(0)},
        {"qkv_bias", true, "bias of the q, k, v projections"},
        {"cls_attn_layers", int64_t(2), "class-attention layers", {}, Range::between(0, 64)},
        {"eta", 1.0, "layer-scale init", {}, Range::above(0)},
        {"tokens_norm", true, "normalize every token in the class-attention layers"},
    };
    options.push_back(checkpointing_option());
    auto build = [](const nn::Options& o) -> std::shared_ptr<nn::Module> {
        SimAViTConfig c;
        c.patch_size = o.get_int("patch_size");
        c.in_chans = o.get_int("in_chans");
        c.num_classes = o.get_int("num_classes");
        c.embed_dim = o.get_int("embed_dim");
        c.depth = o.get_int("depth");
        c.num_heads = o.get_int("num_heads");
        c.mlp_ratio = o.get_double("mlp_ratio");
        c.qkv_bias = o.get_bool("qkv_bias");
        c.cls_attn_layers = o.get_int("cls_attn_layers");
        c.eta = o.get_double("eta");
        c.tokens_norm = o.get_bool("tokens_norm");
        c.grad_checkpointing = o.get_int("grad_checkpointing");
        return std::make_shared<SimAVisionTransformer>(c);
    };
    auto input = [](const nn::Options& o) {
        ModelInput in;
        in.in_chans = o.get_int("in_chans");
        in.num_classes = o.get_int("num_classes");
        in.size_multiple = o.get_int("patch_size");  // the stride-2 convs halve exactly
        return in;
    };
    return {"sima_vit",
            "SimA vision transformer (Koohpayegani & Pirsiavash 2024; XCiT skeleton, "
            "softmax-free SimA blocks); any image size divisible by the patch",
            std::move(options), build, input, nullptr};
}

// ---- transformer, diff_transformer, dgt ----

ModelEntry text_entry(const std::string& name, const std::string& description) {
    std::vector<OptionSpec> options{
        {"vocab_size", int64_t(0), "vocabulary size (0: the data's vocabulary)", {},
         Range::between(0, 1e8)},
        {"num_classes", int64_t(2), "classes", {}, Range::between(1, 1e7)},
        {"embed_dim", int64_t(256), "token width D", {}, size_range()},
        {"depth", int64_t(6), "blocks (Rotten Tomatoes 4)", {}, Range::between(0, 1e4)},
        {"num_heads", int64_t(8), "heads", {}, size_range()},
        {"max_len", int64_t(512), "longest sequence", {}, size_range()},
        {"drop", 0.1, "dropout on embeddings, attention projection and FFN", {}, rate_range()},
    };
    options.push_back(checkpointing_option());
    if (name != "transformer")
        options.push_back({"ffn_expansion", 16.0 / 3.0, "SwiGLU expansion k (2, 4 or 16/3)", {},
                           Range::above(0)});
    auto build = [name](const nn::Options& o) -> std::shared_ptr<nn::Module> {
        const int64_t vocab = o.get_int("vocab_size"), classes = o.get_int("num_classes");
        LUMEN_CHECK(vocab > 0, name,
                    "vocab_size is 0: set model.vocab_size or train on a text layout, which "
                    "gives its vocabulary");
        const int64_t depth = o.get_int("depth");
        const double drop = o.get_double("drop");
        TextTransformerConfig c =
            name == "transformer"
                ? transformer_cls_config(vocab, classes, depth, drop)
                : name == "diff_transformer"
                      ? diff_transformer_cls_config(vocab, classes, o.get_double("ffn_expansion"),
                                                    depth, drop)
                      : dgt_config(vocab, classes, o.get_double("ffn_expansion"), depth, drop);
        c.embed_dim = o.get_int("embed_dim");
        c.num_heads = o.get_int("num_heads");
        c.max_len = o.get_int("max_len");
        c.grad_checkpointing = o.get_int("grad_checkpointing");
        return std::make_shared<TextTransformer>(c);
    };
    auto input = [](const nn::Options& o) {
        ModelInput in;
        in.kind = "tokens";
        in.vocab_size = o.get_int("vocab_size");
        in.max_len = o.get_int("max_len");
        in.num_classes = o.get_int("num_classes");
        return in;
    };
    return {name, description, std::move(options), build, input, nullptr};
}

}  // namespace

std::vector<ModelEntry> classifier_entries() {
    return {sfree_vit_entry(), sima_vit_entry(),
            text_entry("transformer",
                       "Transformer text classifier (Lygizou et al. 2025): LayerNorm, MHSA, "
                       "GELU MLP"),
            text_entry("diff_transformer",
                       "Differential Transformer text classifier (Lygizou et al. 2025): RMSNorm, "
                       "differential attention, SwiGLU"),
            text_entry("dgt",
                       "DGT text classifier (Lygizou et al. 2025): RMSNorm, DGSA attention, "
                       "SwiGLU")};
}

}  // namespace lumen::models
