// PVTSegNet: config checks and the paper presets, the decoder block chosen by name, and the
// forward with the optional deep-supervision outputs.
#include "models/pvt_segnet.h"

#include <sstream>

#include "nn/checkpoint.h"
#include "ops/elementwise.h"
#include "ops/interpolate.h"

namespace lumen::models {

namespace {

const char* kName = "PVTSegNet";

bool known_decoder(const std::string& name) {
    return name == "gdla" || name == "sa" || name == "la" || name == "da";
}

std::shared_ptr<nn::Conv2d> head(int64_t channels, int64_t classes) {
    return nn::make<nn::Conv2d>(channels, classes, std::vector<int64_t>{1});
}

// F.interpolate(t, scale_factor=scale, mode="bilinear", align_corners=False).
Tensor upscale(const Tensor& t, double scale) {
    return interpolate(t, {}, {scale, scale}, "bilinear", false);
}

}  // namespace

void PVTSegNetConfig::validate() const {
    LUMEN_CHECK(known_decoder(decoder), kName, "unknown decoder '", decoder,
                "' (known: gdla, sa, la, da)");
    LUMEN_CHECK(in_chs == 1 || in_chs == 3, kName, "in_chs must be 1 or 3 (a 1-channel input is ",
                "repeated to the encoder's 3), got ", in_chs);
    LUMEN_CHECK(n_classes >= 1, kName, "n_classes must be positive, got ", n_classes);
    LUMEN_CHECK(us_ks > 0 && us_ks % 2 == 1, kName, "us_ks must be odd and positive, got ", us_ks);
    LUMEN_CHECK(encoder.in_chans == 3 && encoder.num_classes == 0, kName,
                "the encoder takes 3 channels and has no classifier head, got in_chans ",
                encoder.in_chans, " and num_classes ", encoder.num_classes);
    encoder.validate();
    LUMEN_CHECK(n_heads.size() == 4, kName, "n_heads needs 4 entries (index 3 unused), got ",
                n_heads.size());
    for (size_t i = 0; i < 3; ++i) {
        int64_t width = encoder.embed_dims[i];
        LUMEN_CHECK(n_heads[i] > 0 && width % n_heads[i] == 0, kName, "decoder width ", width,
                    " (embed_dims[", i, "]) is not a multiple of n_heads[", i, "] = ", n_heads[i]);
    }
}

PVTSegNetConfig pvt_segnet_config(const std::string& decoder, int64_t in_chs, int64_t n_classes) {
    LUMEN_CHECK(known_decoder(decoder), "pvt_segnet_config", "unknown decoder '", decoder,
                "' (known: gdla, sa, la, da)");
    PVTSegNetConfig config;
    config.decoder = decoder;
    config.in_chs = in_chs;
    config.n_classes = n_classes;
    config.deepsupervision = true;
    config.use_rope = decoder == "sa" || decoder == "da";  // as the official decoders do
    return config;
}

PVTSegNet::PVTSegNet(const PVTSegNetConfig& config) : Module(kName), config_(config) {
    config_.validate();
    const std::vector<int64_t>& chs = config_.encoder.embed_dims;
    int64_t ks = config_.us_ks;
    // Registration order follows the official module, so state_dict and str() read alike.
    PvtV2Config encoder = config_.encoder;
    encoder.grad_checkpointing = config_.grad_checkpointing;
    backbone = register_module("backbone", nn::make<PyramidVisionTransformerV2>(encoder));
    up1 = register_module("up1", nn::make<nn::gdla::Upsample>(chs[3], chs[2], ks));
    de1 = register_module("de1", make_block(chs[2], config_.n_heads[2], 3));
    up2 = register_module("up2", nn::make<nn::gdla::Upsample>(chs[2], chs[1], ks));
    de2 = register_module("de2", make_block(chs[1], config_.n_heads[1], 2));
    up3 = register_module("up3", nn::make<nn::gdla::Upsample>(chs[1], chs[0], ks));
    de3 = register_module("de3", make_block(chs[0], config_.n_heads[0], 1));
    resblk = register_module("resblk",
                             nn::make<nn::gdla::ResBlk>(config_.in_chs, chs[0], config_.norm_eps));
    head1 = register_module("head1", head(chs[0], config_.n_classes));
    if (config_.deepsupervision) {
        head2 = register_module("head2", head(chs[1], config_.n_classes));
        head3 = register_module("head3", head(chs[2], config_.n_classes));
        head4 = register_module("head4", head(chs[3], config_.n_classes));
    }
}

std::shared_ptr<nn::Module> PVTSegNet::make_block(int64_t dim, int64_t heads, int64_t depth) const {
    const PVTSegNetConfig& c = config_;
    if (c.decoder == "gdla")
        return nn::make<nn::gdla::GDLAM>(dim, heads, c.qkv_bias, c.norm_eps, c.hidden_ratio);
    nn::gdla::PreNormBlockOptions options{.qkv_bias = c.qkv_bias,
                                          .norm_eps = c.norm_eps,
                                          .hidden_ratio = c.hidden_ratio,
                                          .use_rope = c.use_rope && c.decoder != "la",
                                          .rope_base = c.rope_base,
                                          .depth = depth};
    return nn::make<nn::gdla::PreNormBlock>(c.decoder, dim, heads, options);
}

std::vector<Tensor> PVTSegNet::forward_outputs(const Tensor& x) {
    LUMEN_CHECK(x.ndim() == 4 && x.size(1) == config_.in_chs && x.size(2) > 0 &&
                    x.size(2) % 32 == 0 && x.size(3) > 0 && x.size(3) % 32 == 0,
                kName, "expects x (B, ", config_.in_chs,
                ", H, W) with H and W positive multiples of 32, got shape ", x.shape());
    Tensor s = resblk->forward(x);
    // A 1-channel image is repeated to the encoder's 3 channels (no ImageNet normalisation).
    Tensor rgb = x.size(1) == 3 ? x : x.expand({x.size(0), 3, x.size(2), x.size(3)}).contiguous();
    std::vector<Tensor> f = backbone->forward_intermediates(rgb);
    // The decoder blocks continue the encoder's block count for checkpointing.
    int64_t index = 0;
    for (int64_t depth : config_.encoder.depths) index += depth;
    auto decode = [&](const std::shared_ptr<nn::Module>& block, const Tensor& x) {
        return nn::checkpoint_every(
            config_.grad_checkpointing, index++,
            [block](const std::vector<Tensor>& in) { return block->forward(in[0]); }, {x},
            block->parameters());
    };
    Tensor d3 = decode(de1, add(up1->forward(f[3]), f[2]));
    Tensor d2 = decode(de2, add(up2->forward(d3), f[1]));
    Tensor d1 = decode(de3, add(up3->forward(d2), f[0]));
    Tensor x1 = head1->forward(add(upscale(d1, 4), s));
    if (!config_.deepsupervision) return {x1};
    return {upscale(head4->forward(f[3]), 32), upscale(head3->forward(d3), 16),
            upscale(head2->forward(d2), 8), x1};
}

Tensor PVTSegNet::forward(const Tensor& x) { return forward_outputs(x).back(); }

std::string PVTSegNet::extra_repr() const {
    std::ostringstream out;
    out << "decoder=" << config_.decoder << ", in_chs=" << config_.in_chs
        << ", n_classes=" << config_.n_classes << ", us_ks=" << config_.us_ks
        << ", deepsupervision=" << (config_.deepsupervision ? "true" : "false");
    return out.str();
}

}  // namespace lumen::models
