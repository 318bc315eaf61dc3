// Boundary DoU, soft Dice and Dice + CE as compositions of softmax, one_hot, sums and
// elementwise ops; the boundary count compares each label with its face neighbours.
#include "train/loss_seg.h"

#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/loss.h"
#include "ops/pad.h"

namespace lumen::train {

namespace {

// True where a pixel has a face neighbour with another label; the -1 border makes pixels on
// the image edge boundary pixels (the official conv with zero padding counts them so).
Tensor boundary_mask(const Tensor& labels) {
    const int64_t spatial = labels.ndim() - 1;
    Tensor padded = pad(labels, Dims(size_t(2 * spatial), 1), "constant", -1.0);
    Tensor boundary;
    for (int64_t d = 1; d <= spatial; ++d) {
        for (int64_t offset : {0, 2}) {  // the neighbour before and after along dim d
            Tensor neighbour = padded;
            for (int64_t e = 1; e <= spatial; ++e)
                neighbour = neighbour.narrow(e, e == d ? offset : 1, labels.size(e));
            Tensor differs = ne(neighbour, labels);
            boundary = boundary.defined() ? logical_or(boundary, differs) : differs;
        }
    }
    return boundary;
}

}  // namespace

Tensor boundary_dou_alpha(const Tensor& labels, int64_t num_classes, DType dtype, double eps,
                          double alpha_max) {
    LUMEN_CHECK(labels.ndim() >= 2, "boundary_dou_loss",
                "expects labels (B, *spatial) with at least one spatial dim, got ", labels.shape());
    Tensor onehot = one_hot(labels, num_classes).to(dtype);
    Dims reduce;
    for (int64_t d = 0; d < labels.ndim(); ++d) reduce.push_back(d);
    Tensor boundary = boundary_mask(labels).to(dtype).unsqueeze(-1);
    Tensor count = sum(mul(onehot, boundary), reduce);  // C_k
    Tensor size = sum(onehot, reduce);                  // S_k
    // 2 (1 - r) - 1 = 1 - 2 r with r = (C + eps) / (S + eps)
    Tensor alpha = neg(sub(mul(div(add(count, eps), add(size, eps)), 2.0), 1.0));
    return clamp(alpha, std::nullopt, alpha_max);
}

Tensor boundary_dou_loss(const Tensor& input, const Tensor& target,
                         const BoundaryDoULossOptions& options) {
    LUMEN_CHECK(input.ndim() >= 3, "boundary_dou_loss",
                "expects logits (B, K, *spatial) with at least one spatial dim, got ",
                input.shape());
    ClassMaps maps = class_maps("boundary_dou_loss", input, target, options.activation);
    Tensor alpha = boundary_dou_alpha(maps.labels, input.size(1), input.dtype(), options.eps,
                                      options.alpha_max);
    Tensor inter = sum(mul(maps.probs, maps.onehot), maps.reduce);  // I_k
    Tensor y = sum(maps.onehot, maps.reduce);                       // Y_k: t^2 = t
    Tensor z = sum(square(maps.probs), maps.reduce);                // Z_k
    Tensor zy = add(z, y);
    Tensor numerator = add(sub(zy, mul(inter, 2.0)), options.eps);
    Tensor denominator = add(sub(zy, mul(add(alpha, 1.0), inter)), options.eps);
    return mean(div(numerator, denominator));
}

namespace {

Tensor dice_loss_of(const char* who, const Tensor& input, const Tensor& target,
                    const DiceOptions& o) {
    ClassMaps maps = class_maps(who, input, target, o.activation);
    // Per sample: every dim but the batch and the class (maps are class-last).
    Dims reduce = maps.reduce;
    if (!o.batch) reduce.erase(reduce.begin());
    Tensor inter = sum(mul(maps.probs, maps.onehot), reduce);
    Tensor z = sum(o.squared ? square(maps.probs) : maps.probs, reduce);
    Tensor y = sum(maps.onehot, reduce);  // t^2 = t
    Tensor dice = div(add(mul(inter, 2.0), o.eps), add(add(z, y), o.eps));
    return neg(sub(mean(dice), 1.0));  // mean of 1 - dice
}

}  // namespace

Tensor dice_loss(const Tensor& input, const Tensor& target, const DiceOptions& options) {
    return dice_loss_of("dice_loss", input, target, options);
}

Tensor soft_dice_loss(const Tensor& input, const Tensor& target, double eps,
                      ClassActivation activation) {
    return dice_loss_of("soft_dice_loss", input, target,
                        {.eps = eps, .squared = true, .batch = true, .activation = activation});
}

Tensor soft_dice_ce_loss(const Tensor& input, const Tensor& target,
                         const SoftDiceCELossOptions& options) {
    Tensor labels = class_indices("soft_dice_ce_loss", input, target);
    Tensor ce = cross_entropy(input, labels);
    Tensor dice = soft_dice_loss(input, labels, options.eps);
    return add(mul(ce, options.lambda_ce), mul(dice, options.lambda_dice));
}

}  // namespace lumen::train
