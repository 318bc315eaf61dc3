// Registry entries of the models that give dense maps (segmentation, denoising), several of which
// can also classify: pvt_segnet (PVT-GDLA, Zheng et al. 2026, Sec. 3-4), utnet (Gao et al. 2021,
// Sec. 2.4), context_vit and context_swin (Hooper & Xue, Sec. 3). Defaults are the papers' models.
#include <algorithm>

#include "core/error.h"
#include "models/context_swin.h"
#include "models/context_vit.h"
#include "models/pvt_segnet.h"
#include "models/registry_entries.h"
#include "models/utnet.h"

namespace lumen::models {

namespace {

using nn::OptionSpec;
using nn::Range;
using Ints = std::vector<int64_t>;
using Strings = std::vector<std::string>;

// ---- pvt_segnet ----

// An encoder list given in full (one value per stage) replaces the variant's; empty keeps it.
template <typename T>
void override_stages(std::vector<T>& stages, const std::vector<T>& given, const char* key) {
    if (given.empty()) return;
    LUMEN_CHECK(given.size() == stages.size(), "pvt_segnet", key,
                " needs one value per encoder stage (", stages.size(), "), got ", given.size(),
                ": ", nn::format_option(given));
    stages = given;
}

ModelEntry pvt_segnet_entry() {
    const PVTSegNetConfig paper = pvt_segnet_config("gdla");
    std::vector<OptionSpec> options{
        {"decoder", std::string("gdla"),
         "decoder block: gdla (PVT-GDLA), sa, la, da (the PVT-SelfAttn/LinearAttn/DiffAttn "
         "baselines)",
         Strings{"gdla", "sa", "la", "da"}},
        {"encoder", std::string("b2"), "PVTv2 variant of the encoder",
         Strings{"b0", "b1", "b2", "b2_li", "b3", "b4", "b5"}},
        {"in_chs", int64_t(1), "input channels (1 is repeated to 3 for the encoder)", {},
         Range::between(1, 3)},
        {"n_classes", int64_t(9), "classes K (background included)", {}, Range::between(2, 1e4)},
        {"n_heads", paper.n_heads, "decoder heads at widths E0, E1, E2 (and an unused 4th)", {},
         size_range()},
        {"deepsupervision", true, "heads on f4, d3, d2 too: outputs x4, x3, x2, x1"},
        {"use_rope", true, "rotary positions in the sa and da decoders"},
        {"us_ks", int64_t(3), "the up-sampling ConvTranspose2d kernel (3 or 5)", {},
         Range::between(1, 15)},
        {"hidden_ratio", 4.0, "decoder MLP width / dim", {}, Range::above(0)},
        {"qkv_bias", paper.qkv_bias, "decoder: bias of the q, k, v projections"},
        {"norm_eps", paper.norm_eps, "decoder: epsilon of its LayerNorms", {}, Range::above(0)},
        {"rope_base", paper.rope_base, "sa and da decoders: the RoPE base", {}, Range::above(1)},
        {"drop_path_rate", 0.0, "the encoder's stochastic depth", {}, rate_range()},
        // The PVTv2 keyword arguments the reference's `encoder` dict overrides (tiny encoders).
        {"encoder_depths", Ints{}, "encoder blocks per stage (4 values; empty: the variant's)",
         {}, Range::between(0, 64)},
        {"encoder_embed_dims", Ints{},
         "encoder widths per stage, also the decoder's (4 values; empty: the variant's)", {},
         size_range()},
        {"encoder_num_heads", Ints{}, "encoder heads per stage (4 values; empty: the variant's)",
         {}, size_range()},
        {"encoder_sr_ratios", Ints{},
         "key/value spatial reduction per stage (4 values; empty: the variant's)", {},
         size_range()},
        {"encoder_mlp_ratios", std::vector<double>{},
         "encoder MLP width / width per stage (4 values; empty: the variant's)", {},
         Range::above(0)},
    };
    options.push_back(checkpointing_option());
    auto config_of = [](const nn::Options& o) {
        PVTSegNetConfig c = pvt_segnet_config(o.get_string("decoder"), o.get_int("in_chs"),
                                              o.get_int("n_classes"));
        c.encoder = pvt_v2_config(o.get_string("encoder"));
        c.encoder.drop_path_rate = o.get_double("drop_path_rate");
        override_stages(c.encoder.depths, o.get_ints("encoder_depths"), "encoder_depths");
        override_stages(c.encoder.embed_dims, o.get_ints("encoder_embed_dims"),
                        "encoder_embed_dims");
        override_stages(c.encoder.num_heads, o.get_ints("encoder_num_heads"), "encoder_num_heads");
        override_stages(c.encoder.sr_ratios, o.get_ints("encoder_sr_ratios"), "encoder_sr_ratios");
        override_stages(c.encoder.mlp_ratios, o.get_doubles("encoder_mlp_ratios"),
                        "encoder_mlp_ratios");
        c.n_heads = o.get_ints("n_heads");
        c.qkv_bias = o.get_bool("qkv_bias");
        c.norm_eps = o.get_double("norm_eps");
        c.rope_base = o.get_double("rope_base");
        c.deepsupervision = o.get_bool("deepsupervision");
        c.use_rope = o.get_bool("use_rope");
        c.us_ks = o.get_int("us_ks");
        c.hidden_ratio = o.get_double("hidden_ratio");
        c.grad_checkpointing = o.get_int("grad_checkpointing");
        return c;
    };
    auto build = [config_of](const nn::Options& o) -> std::shared_ptr<nn::Module> {
        return std::make_shared<PVTSegNet>(config_of(o));
    };
    auto input = [](const nn::Options& o) {
        ModelInput in;
        in.in_chans = o.get_int("in_chs");
        in.size_multiple = 32;
        in.num_classes = o.get_int("n_classes");
        in.output = "dense";
        in.chans_key = "in_chs";
        in.classes_key = "n_classes";
        // x4, x3, x2, x1: the plain sum of gdla's DeepSupervisionLoss (official xmindflow/gdla
        // criterions).
        if (o.get_bool("deepsupervision")) in.deep_supervision = {1, 1, 1, 1};
        return in;
    };
    return {"pvt_segnet",
            "PVT-GDLA and its baselines (Zheng et al. 2026): PVTv2 encoder, gdla/sa/la/da decoder; "
            "2-D segmentation, any size divisible by 32",
            std::move(options), build, input, nullptr};
}

// ---- utnet ----

ModelEntry utnet_entry() {
    std::vector<OptionSpec> options{
        {"in_chan", int64_t(1), "input channels", {}, size_range()},
        {"num_classes", int64_t(4), "classes (background included)", {}, Range::between(2, 1e4)},
        {"base_chan", int64_t(32), "channels of level 0 (level l has 2^l times)", {},
         size_range()},
        {"reduce_size", int64_t(8), "keys/values reduced to reduce_size^2 tokens", {},
         size_range()},
        {"block_list", std::string("1234"), "levels (digits 0-4) with transformer blocks"},
        {"num_blocks", Ints{1, 1, 1, 1}, "transformer blocks per level, read from the end", {},
         Range::between(0, 64)},
        {"num_heads", Ints{4, 4, 4, 4}, "heads per level, read from the end", {}, size_range()},
        {"projection", std::string("interp"), "K/V reduction", Strings{"interp", "maxpool"}},
        {"attn_drop", 0.1, "dropout on the attention map", {}, rate_range()},
        {"proj_drop", 0.1, "dropout after the attention projection", {}, rate_range()},
        {"maxpool", true, "transformer levels down-sample by max pooling (else stride 2)"},
        {"rel_pos", true, "relative position bias"},
        {"rel_pos_type", std::string("bias"), "bias (official) or embedding (paper eq. 4)",
         Strings{"bias", "embedding"}},
        {"aux_loss", true, "deep-supervision heads: outputs y, out3, out2, out1"},
    };
    options.push_back(checkpointing_option());
    auto build = [](const nn::Options& o) -> std::shared_ptr<nn::Module> {
        UTNetConfig c;
        c.in_chan = o.get_int("in_chan");
        c.num_classes = o.get_int("num_classes");
        c.base_chan = o.get_int("base_chan");
        c.reduce_size = o.get_int("reduce_size");
        c.block_list = o.get_string("block_list");
        c.num_blocks = o.get_ints("num_blocks");
        c.num_heads = o.get_ints("num_heads");
        c.projection = o.get_string("projection");
        c.attn_drop = o.get_double("attn_drop");
        c.proj_drop = o.get_double("proj_drop");
        c.maxpool = o.get_bool("maxpool");
        c.rel_pos = o.get_bool("rel_pos");
        c.rel_pos_type = o.get_string("rel_pos_type");
        c.aux_loss = o.get_bool("aux_loss");
        c.grad_checkpointing = o.get_int("grad_checkpointing");
        return std::make_shared<UTNet>(c);
    };
    auto input = [](const nn::Options& o) {
        ModelInput in;
        in.in_chans = o.get_int("in_chan");
        in.num_classes = o.get_int("num_classes");
        in.output = "dense";
        in.chans_key = "in_chan";
        // Four halvings; a transformer level l with relative positions needs its map
        // (size / 2^l) to be a multiple of reduce_size.
        in.size_multiple = 16;
        if (o.get_bool("rel_pos"))
            for (char level : o.get_string("block_list"))
                if (level >= '0' && level <= '4')
                    in.size_multiple =
                        std::max(in.size_multiple, (int64_t(1) << (level - '0')) *
                                                       o.get_int("reduce_size"));
        // y, out3, out2, out1 (official yhygao/UTNet training code).
        if (o.get_bool("aux_loss")) in.deep_supervision = {1, 0.4, 0.2, 0.1};
        return in;
    };
    return {"utnet",
            "UTNet (Gao et al. 2021): U-Net with efficient-attention transformer levels; "
            "2-D segmentation",
            std::move(options), build, input, nullptr};
}

// ---- context_vit / context_swin: the token mixer and the 2-D / 3-D size ----

std::vector<OptionSpec> mixer_options() {
    return {
        {"mixer", std::string("attn"), "token mixer", Strings{"attn", "hyena", "mamba"}},
        {"hyena_l_max", int64_t(66000), "hyena: longest sequence of the implicit filter", {},
         Range::between(1, 1e7)},
        {"hyena_filter_order", int64_t(64), "hyena: width of the filter network", {},
         size_range()},
        {"hyena_short_filter_order", int64_t(5), "hyena: the short depthwise conv", {},
         size_range()},
        {"mamba_d_state", int64_t(8), "mamba: state size", {}, size_range()},
        {"mamba_d_conv", int64_t(3), "mamba: conv kernel", {}, size_range()},
        {"mamba_expand", int64_t(1), "mamba: expansion", {}, size_range()},
    };
}

// (T, H, W) of a 2- or 3-value img_size (T = 1 for 2-D).
void set_size(const std::vector<int64_t>& size, int64_t& t, int64_t& h, int64_t& w,
              const char* who) {
    LUMEN_CHECK(size.size() == 2 || size.size() == 3, who,
                "img_size needs (H, W) or (D, H, W), got ", size.size(), " values");
    t = size.size() == 3 ? size[0] : 1;
    h = size[size.size() - 2];
    w = size.back();
}

ModelInput context_input(const nn::Options& o, const std::string& head) {
    ModelInput in;
    in.in_chans = o.get_int("in_channels");
    in.img_size = o.get_ints("img_size");
    in.spatial_dims = int64_t(in.img_size.size());
    in.num_classes = o.get_int("out_channels");
    in.output = head == "linear" ? "logits" : "dense";
    in.chans_key = "in_channels";
    in.classes_key = "out_channels";
    return in;
}

ModelEntry context_vit_entry() {
    std::vector<OptionSpec> options{
        {"decoder", std::string("unetr"),
         "head: unetr (segmentation, denoising) or linear (classification)",
         Strings{"unetr", "linear"}},
        {"in_channels", int64_t(1), "input channels", {}, size_range()},
        {"out_channels", int64_t(2), "classes or output channels", {}, size_range()},
        {"img_size",
         Ints{224, 224},
         "(H, W) for 2-D or (D, H, W) for 3-D; divisible by patch",
         {},
         size_range()},
        {"patch_size", int64_t(16), "isotropic patch (unetr: 2, 4, 8, 16 or 32)", {}, size_range()},
        {"hidden_size", int64_t(384), "token width (ViT-Small 384)", {}, size_range()},
        {"mlp_dim", int64_t(1536), "MLP width", {}, size_range()},
        {"num_layers",
         int64_t(12),
         "blocks (unetr reads blocks 4, 7, 10: >= 10)",
         {},
         Range::between(1, 1e4)},
        {"num_heads", int64_t(6), "attention heads", {}, size_range()},
        {"feature_size", int64_t(32), "unetr feature size", {}, size_range()},
        {"qkv_bias", false, "attn: bias of the qkv projection"},
    };
    options.push_back(checkpointing_option());
    for (OptionSpec& spec : mixer_options()) options.push_back(spec);
    auto build = [](const nn::Options& o) -> std::shared_ptr<nn::Module> {
        ContextViTModelConfig c;
        c.decoder = o.get_string("decoder");
        c.in_channels = o.get_int("in_channels");
        c.out_channels = o.get_int("out_channels");
        set_size(o.get_ints("img_size"), c.time, c.height, c.width, "context_vit");
        c.patch_size = o.get_int("patch_size");
        c.hidden_size = o.get_int("hidden_size");
        c.mlp_dim = o.get_int("mlp_dim");
        c.num_layers = o.get_int("num_layers");
        c.num_heads = o.get_int("num_heads");
        c.feature_size = o.get_int("feature_size");
        c.mixer.mixer = o.get_string("mixer");
        c.mixer.qkv_bias = o.get_bool("qkv_bias");
        c.mixer.l_max = o.get_int("hyena_l_max");
        c.mixer.filter_order = o.get_int("hyena_filter_order");
        c.mixer.short_filter_order = o.get_int("hyena_short_filter_order");
        c.mixer.d_state = o.get_int("mamba_d_state");
        c.mixer.d_conv = o.get_int("mamba_d_conv");
        c.mixer.expand = o.get_int("mamba_expand");
        c.grad_checkpointing = o.get_int("grad_checkpointing");
        LUMEN_CHECK(c.decoder != "unetr" || c.num_layers >= 10, "context_vit",
                    "the unetr head reads blocks 4, 7 and 10: num_layers must be >= 10, got ",
                    c.num_layers);
        return std::make_shared<ContextViTModel>(c);
    };
    auto input = [](const nn::Options& o) { return context_input(o, o.get_string("decoder")); };
    return {"context_vit",
            "ViT + UNETR or linear head (Hooper & Xue), attention/Hyena/Mamba mixer, 2-D or "
            "3-D",
            std::move(options), build, input, nullptr};
}

ModelEntry context_swin_entry() {
    std::vector<OptionSpec> options{
        {"decoder", std::string("upernet"),
         "head: upernet (segmentation, denoising) or linear (classification)",
         Strings{"upernet", "linear"}},
        {"in_channels", int64_t(3), "input channels", {}, size_range()},
        {"out_channels", int64_t(2), "classes or output channels", {}, size_range()},
        {"img_size", Ints{1024, 1024}, "(H, W) for 2-D or (D, H, W) for 3-D", {}, size_range()},
        {"embed_dim", int64_t(96), "stage-1 width (Swin-Tiny 96)", {}, size_range()},
        {"depths", Ints{2, 2, 6, 2}, "blocks per stage", {}, Range::between(1, 64)},
        {"num_heads", Ints{3, 6, 12, 24}, "heads per stage", {}, size_range()},
        {"window_size", Ints{8}, "window side (one value, or one per spatial dim)", {},
         size_range()},
        {"patch_size", int64_t(2), "isotropic patch", {}, size_range()},
    };
    options.push_back(checkpointing_option());
    for (OptionSpec& spec : mixer_options())
        if (spec.key.rfind("mamba_", 0) != 0) options.push_back(spec);
    auto build = [](const nn::Options& o) -> std::shared_ptr<nn::Module> {
        ContextSwinConfig c;
        c.decoder = o.get_string("decoder");
        c.in_channels = o.get_int("in_channels");
        c.out_channels = o.get_int("out_channels");
        set_size(o.get_ints("img_size"), c.time, c.height, c.width, "context_swin");
        c.embed_dim = o.get_int("embed_dim");
        c.depths = o.get_ints("depths");
        c.num_heads = o.get_ints("num_heads");
        c.window_size = o.get_ints("window_size");
        c.patch_size = o.get_int("patch_size");
        c.grad_checkpointing = o.get_int("grad_checkpointing");
        c.mixer.type = o.get_string("mixer");
        if (c.mixer.type == "hyena")
            c.mixer.options = {
                {"l_max", double(o.get_int("hyena_l_max"))},
                {"filter_order", double(o.get_int("hyena_filter_order"))},
                {"short_filter_order", double(o.get_int("hyena_short_filter_order"))}};
        return std::make_shared<ContextSwin>(c);
    };
    auto input = [](const nn::Options& o) { return context_input(o, o.get_string("decoder")); };
    return {"context_swin",
            "Swin + UPerNet or linear head (Hooper & Xue), window attention/Hyena/Mamba, 2-D "
            "or 3-D",
            std::move(options), build, input, nullptr};
}

}  // namespace

std::vector<ModelEntry> dense_model_entries() {
    return {pvt_segnet_entry(), utnet_entry(), context_vit_entry(), context_swin_entry()};
}

}  // namespace lumen::models
