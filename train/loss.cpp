// Dice, Dice + CE and deep supervision as compositions of softmax, one_hot, sums and
// elementwise ops.
#include "train/loss.h"

#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "train/class_maps.h"

namespace lumen::train {

Tensor adaptive_tversky_loss(const Tensor& input, const Tensor& target,
                             const AdaptiveTverskyOptions& options) {
    ClassMaps maps = class_maps("adaptive_tversky_loss", input, target);
    const Tensor &probs = maps.probs, &onehot = maps.onehot;
    const Dims& all_but_class = maps.reduce;
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

Tensor utnet_loss(const Tensor& input, const Tensor& target,
                  const std::vector<double>& class_weight, const AdaptiveTverskyOptions& options) {
    Tensor labels = class_indices("utnet_loss", input, target);
    Tensor weight;
    if (!class_weight.empty()) {
        LUMEN_CHECK(int64_t(class_weight.size()) == input.size(1), "utnet_loss",
                    "class_weight has ", class_weight.size(), " values for ", input.size(1),
                    " classes");
        weight = from_vector(class_weight, {}, input.device()).to(input.dtype());
    }
    return add(cross_entropy(input, labels, weight), adaptive_tversky_loss(input, labels, options));
}

Tensor AdaptiveTverskyLoss::forward(const Tensor& input, const Tensor& target) const {
    return adaptive_tversky_loss(input, target, options);
}

Tensor UTNetLoss::forward(const Tensor& input, const Tensor& target) const {
    return utnet_loss(input, target, class_weight, options);
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
