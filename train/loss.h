// Training losses built from ops (autograd flows through them): UTNet's loss, its "Dice" being a
// Tversky index with an adaptive alpha, plus class-weighted cross-entropy, and deep-supervision
// weighting (Gao et al. 2021, Sec. 3.2; official yhygao/UTNet losses.py / train_deep.py). Every
// loss is lumen::train::<name>: the pointwise ones are ops with their own kernels and are
// brought in here by name (below); a Loss object wraps any of them so that a trainer can hold
// "the loss" built from a config.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ops/loss.h"

namespace lumen::train {

// Every loss is lumen::train::<name>; where each one is implemented:
//   ops/loss.h (kernels, torch.nn.functional's names and arguments): cross_entropy, nll_loss,
//     binary_cross_entropy, binary_cross_entropy_with_logits, mse_loss, l1_loss,
//     smooth_l1_loss, huber_loss, charbonnier_loss (also lumen::<name>);
//   train/loss.h: adaptive_tversky_loss / AdaptiveTverskyLoss, utnet_loss / UTNetLoss,
//     deep_supervision_loss;
//   train/loss_seg.h: dice_loss / DiceLoss, soft_dice_loss / SoftDiceLoss, soft_dice_ce_loss /
//     SoftDiceCELoss, boundary_dou_loss / BoundaryDoULoss;
//   train/loss_enhance.h: gaussian_deriv3d_loss, combined_enhance_loss / CombinedEnhanceLoss.
using lumen::binary_cross_entropy;
using lumen::binary_cross_entropy_with_logits;
using lumen::charbonnier_loss;
using lumen::cross_entropy;
using lumen::huber_loss;
using lumen::l1_loss;
using lumen::mse_loss;
using lumen::nll_loss;
using lumen::smooth_l1_loss;

// Shapes used below: input = logits (B, C, *spatial); target = class indices, int64,
// (B, 1, *spatial) (UTNet's layout) or (B, *spatial), values in [0, C).

// UTNet's "Dice" loss (its DiceLoss, a Tversky loss whose alpha adapts to the batch), per
// class c with P = softmax(input, 1), Y = one_hot(target), sums over the batch and all
// positions:
//   TP = sum P Y,  FP = sum P (1 - Y),  FN = sum (1 - P) Y
//   alpha = clamp(FP / (FP + FN + smooth), alpha_min, alpha_max)   (not detached),
//   dice = TP / (TP + alpha FP + (1 - alpha) FN + smooth)
//   loss = mean over classes of (1 - dice)          (background included) -> 0-d tensor
// Gradient: input (none where the clamp is active for alpha's own path).
// Throws [adaptive_tversky_loss] for mismatched shapes or a non-integer target, [one_hot] for a
// label outside [0, C).
struct AdaptiveTverskyOptions {
    double smooth = 1e-5;
    double alpha_min = 0.2;
    double alpha_max = 0.8;
};
Tensor adaptive_tversky_loss(const Tensor& input, const Tensor& target,
                             const AdaptiveTverskyOptions& options = {});

// cross_entropy(input, target, weight = class_weight) (weighted mean, as PyTorch) +
// adaptive_tversky_loss(input, target). class_weight: C values or empty for none. -> 0-d tensor.
// Throws [utnet_loss] for a class_weight of the wrong length.
Tensor utnet_loss(const Tensor& input, const Tensor& target,
                  const std::vector<double>& class_weight = {},
                  const AdaptiveTverskyOptions& options = {});

// A loss as an object: loss(input, target) -> 0-d tensor. Subclasses hold their settings.
class Loss {
  public:
    virtual ~Loss() = default;
    virtual Tensor forward(const Tensor& input, const Tensor& target) const = 0;
    Tensor operator()(const Tensor& input, const Tensor& target) const {
        return forward(input, target);
    }
    virtual std::string name() const = 0;
};

class AdaptiveTverskyLoss : public Loss {
  public:
    explicit AdaptiveTverskyLoss(AdaptiveTverskyOptions options = {}) : options(options) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override;
    std::string name() const override { return "adaptive_tversky"; }
    AdaptiveTverskyOptions options;
};

// UTNet's training loss: class-weighted CE + the adaptive Tversky loss (official weights
// {0.5, 1, 1, 1}).
class UTNetLoss : public Loss {
  public:
    explicit UTNetLoss(std::vector<double> class_weight = {}, AdaptiveTverskyOptions options = {})
        : class_weight(std::move(class_weight)), options(options) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override;
    std::string name() const override { return "utnet"; }
    std::vector<double> class_weight;
    AdaptiveTverskyOptions options;
};

// Deep supervision: L = sum_i weights[i] loss(outputs[i], target), outputs in the model's
// order (UTNet: y, out3, out2, out1 with weights {1, 0.4, 0.2, 0.1}); every output has the
// target's resolution. Throws [deep_supervision_loss] when the counts differ.
Tensor deep_supervision_loss(const std::vector<Tensor>& outputs, const Tensor& target,
                             const std::vector<double>& weights, const Loss& loss);

}  // namespace lumen::train
