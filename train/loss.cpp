// Dice, Dice + CE and deep supervision as compositions of softmax, one_hot, sums and
// elementwise ops.
#include "train/loss.h"

#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "ops/softmax.h"

namespace lumen::train {

namespace {

// The class indices as (B, *spatial), from (B, 1, *spatial) or (B, *spatial).
Tensor class_indices(const char* who, const Tensor& input, const Tensor& target) {
    LUMEN_CHECK(input.ndim() >= 2 && input.is_floating_point(), who,
                "expects floating logits (B, C, ...), got ", input.shape(), " ", input.dtype());
    LUMEN_CHECK(target.dtype() == DType::int64 || target.dtype() == DType::int32, who,
                "expects an integer target, got ", target.dtype());
    Tensor labels =
        target.ndim() == input.ndim() && target.size(1) == 1 ? target.squeeze(1) : target;
    Shape want = input.shape();
    want.erase(want.begin() + 1);
    LUMEN_CHECK(labels.shape() == want, who, "target ", target.shape(), " does not fit input ",
                input.shape(), " (expected (B, 1, ...) or (B, ...) with the input's sizes)");
    return labels;
}

}  // namespace

Tensor dice_loss(const Tensor& input, const Tensor& target, const DiceLossOptions& options) {
    Tensor labels = class_indices("dice_loss", input, target);
    const int64_t C = input.size(1), nd = input.ndim();
    // Class last, (B, *spatial, C), to line up with one_hot's layout; sums over all the rest.
    std::vector<int64_t> class_last{0};
    for (int64_t d = 2; d < nd; ++d) class_last.push_back(d);
    class_last.push_back(1);
    Dims all_but_class;
    for (int64_t d = 0; d < nd - 1; ++d) all_but_class.push_back(d);
    Tensor probs = softmax(input, 1).permute(class_last);
    Tensor onehot = one_hot(labels, C).to(input.dtype());
    Tensor tp = sum(mul(probs, onehot), all_but_class);
    // FP = sum P - TP and FN = count - TP: the same sums without two more products.
    Tensor fp = sub(sum(probs, all_but_class), tp);
    Tensor fn = sub(sum(onehot, all_but_class), tp);
    Tensor alpha =
        clamp(div(fp, add(add(fp, fn), options.smooth)), options.alpha_min, options.alpha_max);
    Tensor beta_fn = sub(fn, mul(alpha, fn));  // (1 - alpha) FN
    Tensor dice = div(tp, add(add(add(tp, mul(alpha, fp)), beta_fn), options.smooth));
    return neg(sub(mean(dice), 1.0));  // mean over classes of (1 - dice)
}

Tensor ce_dice_loss(const Tensor& input, const Tensor& target,
                    const std::vector<double>& class_weight, const DiceLossOptions& options) {
    Tensor labels = class_indices("ce_dice_loss", input, target);
    Tensor weight;
    if (!class_weight.empty()) {
        LUMEN_CHECK(int64_t(class_weight.size()) == input.size(1), "ce_dice_loss",
                    "class_weight has ", class_weight.size(), " values for ", input.size(1),
                    " classes");
        weight = from_vector(class_weight, {}, input.device()).to(input.dtype());
    }
    return add(cross_entropy(input, labels, weight), dice_loss(input, labels, options));
}

Tensor DiceLoss::forward(const Tensor& input, const Tensor& target) const {
    return dice_loss(input, target, options);
}

Tensor DiceCELoss::forward(const Tensor& input, const Tensor& target) const {
    return ce_dice_loss(input, target, class_weight, options);
}

Tensor deep_supervision_loss(const std::vector<Tensor>& outputs, const Tensor& target,
                             const std::vector<double>& weights, const Loss& loss) {
    LUMEN_CHECK(!outputs.empty() && outputs.size() == weights.size(), "deep_supervision_loss",
                "needs one weight per output, got ", outputs.size(), " outputs and ",
                weights.size(), " weights");
    Tensor total;
    for (size_t i = 0; i < outputs.size(); ++i) {
        Tensor term = mul(loss(outputs[i], target), weights[i]);
        total = total.defined() ? add(total, term) : term;
    }
    return total;
}

}  // namespace lumen::train
