// Swin + UPerNet / linear head: config checks, the T = 1 squeeze of 2-D inputs, and the
// choice of backbone levels each head reads.
#include "models/context_swin.h"

#include "nn/activation.h"
#include "nn/linear.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace lumen::models {

namespace {
const char* kName = "ContextSwin";
}  // namespace

std::vector<int64_t> ContextSwinConfig::image_size() const {
    if (spatial_dims() == 2) return {height, width};
    return {time, height, width};
}

void ContextSwinConfig::validate() const {
    LUMEN_CHECK(in_channels > 0 && out_channels > 0 && time > 0 && height > 0 && width > 0 &&
                    embed_dim > 0 && patch_size > 0,
                kName, "sizes must be positive, got in_channels ", in_channels, ", out_channels ",
                out_channels, ", (T, H, W) (", time, ", ", height, ", ", width, "), embed_dim ",
                embed_dim, ", patch_size ", patch_size);
    LUMEN_CHECK(decoder == "upernet" || decoder == "linear", kName,
                "decoder must be upernet or linear, got '", decoder, "'");
}

SwinLinear::SwinLinear(int64_t in_features, int64_t num_classes) : Module("SwinLinear") {
    classification_head = register_module("classification_head", nn::make<nn::Sequential>());
    classification_head->push_back(nn::make<nn::Linear>(in_features, num_classes));
    classification_head->push_back(nn::make<nn::Tanh>());
}

Tensor SwinLinear::forward(const Tensor& x) {
    LUMEN_CHECK(x.ndim() >= 3, "SwinLinear", "expects (B, C, *S), got shape ", x.shape());
    return classification_head->forward(mean(x.flatten(2), {-1}));
}

ContextSwin::ContextSwin(const ContextSwinConfig& config) : Module(kName), config_(config) {
    config_.validate();
    nn::swin::SwinOptions swin;
    swin.in_chans = config_.in_channels;
    swin.embed_dim = config_.embed_dim;
    swin.window_size = config_.window_size;
    swin.patch_size = {config_.patch_size};
    swin.depths = config_.depths;
    swin.num_heads = config_.num_heads;
    swin.spatial_dims = config_.spatial_dims();
    swin.mixer = config_.mixer;
    swin.grad_checkpointing = config_.grad_checkpointing;
    encoder = register_module("encoder", nn::make<nn::swin::SwinTransformer>(swin));
    int64_t e = config_.embed_dim;
    if (config_.decoder == "linear") {
        linear = register_module("decoder", nn::make<SwinLinear>(16 * e, config_.out_channels));
    } else {
        upernet = register_module(
            "decoder", nn::make<nn::UperNet>(config_.spatial_dims(),
                                             std::vector<int64_t>{2 * e, 4 * e, 8 * e, 16 * e},
                                             config_.out_channels, config_.image_size()));
    }
}

Tensor ContextSwin::forward(const Tensor& x) {
    bool flat = config_.spatial_dims() == 2;
    // A 2-D model also takes (B, C, H, W) and then answers without the T axis.
    const bool image = flat && x.ndim() == 4;
    LUMEN_CHECK((x.ndim() == 5 || image) && x.size(1) == config_.in_channels &&
                    (config_.spatial_dims() == 3 || image || x.size(2) == 1),
                kName, "expects x (B, ", config_.in_channels, ", T, H, W)",
                flat ? " with T = 1, or (B, C, H, W)" : "", ", got shape ", x.shape());
    std::vector<Tensor> levels =
        encoder->forward_features(image ? x : flat ? x.select(2, 0) : x);
    if (linear) return linear->forward(levels.back());
    // UPerNet reads the last four levels LN(x1)..LN(x4).
    Tensor y = upernet->forward(std::vector<Tensor>(levels.end() - 4, levels.end()));
    return flat && !image ? y.unsqueeze(2) : y;
}

}  // namespace lumen::models
