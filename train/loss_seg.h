// Segmentation losses: the plain Dice loss (MONAI's DiceLoss), and those of PVT-GDLA (Zheng et al.
// 2026, Sec. 4; official xmindflow/gdla criterions): the Boundary DoU loss (Sun et al., MICCAI
// 2023), the soft Dice loss with squared denominators and its 0.5 CE + 0.5 Dice mix. Built from ops
// (autograd, any device). UTNet's adaptive Tversky loss and the deep-supervision sum are in loss.h;
// deep_supervision_loss takes these losses as well.
#pragma once

#include <string>

#include "core/tensor.h"
#include "train/class_maps.h"
#include "train/loss.h"

namespace lumen::train {

// Shapes used below: input = logits (B, K, *spatial) (float32/float64), target = class
// indices (B, *spatial) or (B, 1, *spatial), int64/int32, values in [0, K). With
// p = activation(input) (softmax over dim 1 by default) and t = one_hot(target), every sum
// runs over the batch and all positions, one value per class k (background included):
//   I_k = sum p t,  Y_k = sum t^2,  Z_k = sum p^2.

// Boundary DoU loss. A pixel of class k is a boundary pixel when one of its face neighbours
// (4 in 2-D, 6 in 3-D; outside the image counts as another class) has another label.
// C_k = #boundary pixels, S_k = #pixels of class k (constants, no gradient):
//   alpha_k = min(2 (1 - (C_k + eps) / (S_k + eps)) - 1, alpha_max)
//   loss = mean_k (Z_k + Y_k - 2 I_k + eps) / (Z_k + Y_k - (1 + alpha_k) I_k + eps)
// A class absent from the batch contributes exactly 1 (zero gradient). -> 0-d tensor.
// Gradient: input. Throws [boundary_dou_loss] for a target that does not fit the input, a
// non-integer target, fewer than one spatial dim; [one_hot] for a label outside [0, K).
struct BoundaryDoULossOptions {
    double eps = 1e-5;
    double alpha_max = 0.8;
    ClassActivation activation = ClassActivation::softmax;
};
Tensor boundary_dou_loss(const Tensor& input, const Tensor& target,
                         const BoundaryDoULossOptions& options = {});

// alpha_k of the Boundary DoU loss from the labels alone: (K) tensor of `dtype` on the labels'
// device. labels (B, *spatial) int64/int32. Throws [boundary_dou_loss] for no spatial dim.
Tensor boundary_dou_alpha(const Tensor& labels, int64_t num_classes, DType dtype, double eps = 1e-5,
                          double alpha_max = 0.8);

// The Dice loss, as MONAI's DiceLoss (include_background, smooth_nr = smooth_dr = eps):
//   dice_bk = (2 I_bk + eps) / (Z_bk + Y_bk + eps),  loss = mean over b, k of (1 - dice_bk)
// with the sums over the positions of each sample b (batch: over the batch too, one dice per
// class, as nnU-Net's batch Dice), and Z, Y the sums of p and t, or of p^2 and t^2 (squared,
// MONAI's squared_pred). -> 0-d tensor. Gradient: input. Throws [dice_loss] like
// boundary_dou_loss.
struct DiceOptions {
    double eps = 1e-5;
    bool squared = false;
    bool batch = false;
    ClassActivation activation = ClassActivation::softmax;
};
Tensor dice_loss(const Tensor& input, const Tensor& target, const DiceOptions& options = {});

// Soft Dice with squared denominators over the whole batch (the gdla code's DiceLoss):
//   loss = mean_k [1 - (2 I_k + eps) / (Z_k + Y_k + eps)]      -> 0-d tensor,
// dice_loss with squared and batch set. Throws [soft_dice_loss] like boundary_dou_loss.
Tensor soft_dice_loss(const Tensor& input, const Tensor& target, double eps = 1e-5,
                      ClassActivation activation = ClassActivation::softmax);

// lambda_ce * cross_entropy(input, target) (mean over pixels) + lambda_dice * soft_dice_loss
// (softmax); the gdla code's DiceCELoss, defaults 0.5 / 0.5. Throws [soft_dice_ce_loss].
struct SoftDiceCELossOptions {
    double eps = 1e-5;
    double lambda_dice = 0.5;
    double lambda_ce = 0.5;
};
Tensor soft_dice_ce_loss(const Tensor& input, const Tensor& target,
                         const SoftDiceCELossOptions& options = {});

// The same as Loss objects (for deep_supervision_loss and a trainer's config).
class BoundaryDoULoss : public Loss {
  public:
    explicit BoundaryDoULoss(BoundaryDoULossOptions options = {}) : options(options) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override {
        return boundary_dou_loss(input, target, options);
    }
    std::string name() const override { return "boundary_dou"; }
    BoundaryDoULossOptions options;
};

class DiceLoss : public Loss {
  public:
    explicit DiceLoss(DiceOptions options = {}) : options(options) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override {
        return dice_loss(input, target, options);
    }
    std::string name() const override { return "dice"; }
    DiceOptions options;
};

class SoftDiceLoss : public Loss {
  public:
    explicit SoftDiceLoss(double eps = 1e-5, ClassActivation activation = ClassActivation::softmax)
        : eps(eps), activation(activation) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override {
        return soft_dice_loss(input, target, eps, activation);
    }
    std::string name() const override { return "soft_dice"; }
    double eps;
    ClassActivation activation;
};

class SoftDiceCELoss : public Loss {
  public:
    explicit SoftDiceCELoss(SoftDiceCELossOptions options = {}) : options(options) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override {
        return soft_dice_ce_loss(input, target, options);
    }
    std::string name() const override { return "soft_dice_ce"; }
    SoftDiceCELossOptions options;
};

}  // namespace lumen::train
