// The Swin models of the context-length paper (Hooper & Xue, Sec. 3; its EncoderDecoderModel):
// the Swin backbone (nn/swin/) with the UPerNet head (nn/upernet.h) for segmentation and
// denoising, or the linear Tanh head for classification, on (B, C, T, H, W) inputs where
// T = 1 means 2-D. Window attention, Hyena or MambaVision per window by config.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/container.h"
#include "nn/swin/swin_transformer.h"
#include "nn/upernet.h"

namespace lumen::models {

// Defaults: the paper's Swin-Tiny (embed 96, depths 2-2-6-2, heads 3-6-12-24, patch 2,
// window 8, attention) on the vessel task (3 x 1 x 1024 x 1024 -> 2 classes) with UPerNet.
struct ContextSwinConfig {
    int64_t in_channels = 3;
    int64_t out_channels = 2;
    int64_t time = 1;  // T; 1 gives a 2-D model on (H, W)
    int64_t height = 1024;
    int64_t width = 1024;
    std::string decoder = "upernet";  // "upernet" or "linear"
    int64_t embed_dim = 96;
    std::vector<int64_t> depths = {2, 2, 6, 2};
    std::vector<int64_t> num_heads = {3, 6, 12, 24};
    std::vector<int64_t> window_size = {8};  // isotropic, or one per spatial dim
    int64_t patch_size = 2;
    nn::swin::SwinMixer mixer;  // "attn", "hyena" (with its options) or "mamba"
    // k > 0: every k-th Swin block recomputes its forward in backward (nn/checkpoint.h), the
    // blocks of the four stages counted as one list (sum(depths) blocks, stage 1's first).
    int64_t grad_checkpointing = 0;

    int64_t spatial_dims() const { return time == 1 ? 2 : 3; }
    // The image size the UPerNet head upsamples to: (H, W) or (T, H, W).
    std::vector<int64_t> image_size() const;
    // Throws [ContextSwin] for non-positive sizes or an unknown decoder.
    void validate() const;
};

// Linear head: y = tanh(classification_head.0(mean of x over its spatial positions)).
// Shapes: x (B, C, *S) -> (B, num_classes). Parameters classification_head.0.{weight, bias}.
class SwinLinear : public nn::Module {
  public:
    SwinLinear(int64_t in_features, int64_t num_classes);
    Tensor forward(const Tensor& x) override;
    std::shared_ptr<nn::Sequential> classification_head;
};

// y = decoder(encoder(x)): UPerNet on the channel-normalized stage outputs LN(x1)..LN(x4)
// (2E, 4E, 8E, 16E channels), or the linear head on LN(x4).
// Shapes: x (B, in_channels, T, H, W) (T = 1 is squeezed for the 2-D backbone) ->
// UPerNet: (B, out_channels, T, H, W) (T = 1 restored in 2-D); linear: (B, out_channels).
// Parameters encoder.* (SwinTransformer), decoder.* (UperNet or SwinLinear).
// Throws [ContextSwin] for an input of the wrong rank or channels (the UPerNet output size is
// the configured one).
class ContextSwin : public nn::Module {
  public:
    explicit ContextSwin(const ContextSwinConfig& config);
    Tensor forward(const Tensor& x) override;
    const ContextSwinConfig& config() const { return config_; }

    std::shared_ptr<nn::swin::SwinTransformer> encoder;
    std::shared_ptr<nn::UperNet> upernet;  // registered as "decoder" when decoder = "upernet"
    std::shared_ptr<SwinLinear> linear;    // registered as "decoder" when decoder = "linear"

  private:
    ContextSwinConfig config_;
};

}  // namespace lumen::models
