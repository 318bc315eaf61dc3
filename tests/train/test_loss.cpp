// UTNet's losses (Gao et al. 2021, Sec. 3.2; official losses.py): a Dice value worked out by hand,
// the clamp of alpha, float64 gradchecks, CE + Dice and deep supervision as their sums, target
// layouts, errors, and the loss vectors.
#include <cmath>

#include "support/gradcheck.h"
#include "train/loss.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

Tensor labels(const std::vector<int64_t>& values, const Shape& shape) {
    return from_vector(values, shape);
}

// 1 - dice for one class from its TP, FP, FN (alpha clamped to [0.2, 0.8]).
double one_minus_dice(double tp, double fp, double fn) {
    double alpha = std::min(0.8, std::max(0.2, fp / (fp + fn + 1e-5)));
    return 1.0 - tp / (tp + alpha * fp + (1 - alpha) * fn + 1e-5);
}

}  // namespace

TEST_CASE("adaptive_tversky_loss: a two-pixel case worked out by hand", "[train][loss]") {
    // Pixel 0: logits (0, 0) -> P = (1/2, 1/2), label 0. Pixel 1: (log 3, 0) -> (3/4, 1/4),
    // label 1. Class 0: TP 1/2, FP 3/4, FN 1/2. Class 1: TP 1/4, FP 1/2, FN 3/4.
    Tensor logits = tensor({0.0, std::log(3.0), 0.0, 0.0}, {1, 2, 1, 2}, DType::float64);
    Tensor target = labels({0, 1}, {1, 1, 1, 2});
    double want = (one_minus_dice(0.5, 0.75, 0.5) + one_minus_dice(0.25, 0.5, 0.75)) / 2;
    Tensor loss = train::adaptive_tversky_loss(logits, target);
    CHECK(loss.ndim() == 0);
    CHECK(loss.item<double>() == Approx(want).epsilon(1e-12));
    // The same labels without the channel dim.
    CHECK(train::adaptive_tversky_loss(logits, labels({0, 1}, {1, 1, 2})).item<double>() ==
          Approx(want).epsilon(1e-12));
}

TEST_CASE("adaptive_tversky_loss clamps alpha and keeps its gradient elsewhere", "[train][loss]") {
    // Every label 0 and confident wrong logits: class 0 has FN >> FP (alpha -> 0.2), the
    // other classes have FN = 0 (alpha -> 0.8).
    Tensor logits = tensor({-3, -2, -4, 3, 2, 4}, {1, 2, 1, 3}, DType::float64);
    Tensor target = labels({0, 0, 0}, {1, 1, 1, 3});
    std::vector<double> p0 = logits.to_vector<double>();
    double tp = 0, fp = 0, fn = 0, fp1 = 0;
    for (int i = 0; i < 3; ++i) {
        double q0 = 1.0 / (1.0 + std::exp(p0[size_t(3 + i)] - p0[size_t(i)]));
        tp += q0;
        fn += 1 - q0;
        fp1 += 1 - q0;
    }
    double want = (one_minus_dice(tp, fp, fn) + one_minus_dice(0, fp1, 0)) / 2;
    CHECK(train::adaptive_tversky_loss(logits, target).item<double>() ==
          Approx(want).epsilon(1e-12));
    gradcheck(
        [&](const std::vector<Tensor>& in) { return train::adaptive_tversky_loss(in[0], target); },
        {logits});
}

TEST_CASE("adaptive_tversky_loss and utnet_loss gradients match finite differences",
          "[train][loss]") {
    Generator gen(7);
    Tensor logits = random_input({2, 3, 3, 4}, 1, -2.0, 2.0);
    Tensor target = randint(0, 3, {2, 1, 3, 4}, DType::int64, &gen);
    gradcheck(
        [&](const std::vector<Tensor>& in) { return train::adaptive_tversky_loss(in[0], target); },
        {logits});
    gradcheck(
        [&](const std::vector<Tensor>& in) {
            return train::utnet_loss(in[0], target, {0.5, 1.0, 2.0});
        },
        {logits});
    Tensor volume = random_input({1, 2, 2, 3, 2}, 2, -2.0, 2.0);  // 3-D maps work too
    Tensor volume_target = randint(0, 2, {1, 1, 2, 3, 2}, DType::int64, &gen);
    gradcheck(
        [&](const std::vector<Tensor>& in) {
            return train::adaptive_tversky_loss(in[0], volume_target);
        },
        {volume});
}

TEST_CASE("utnet_loss is weighted CE + Dice; deep supervision weights the outputs",
          "[train][loss]") {
    Generator gen(8);
    Tensor logits = random_input({2, 4, 3, 3}, 3, -2.0, 2.0);
    Tensor target = randint(0, 4, {2, 1, 3, 3}, DType::int64, &gen);
    std::vector<double> w{0.5, 1.0, 1.0, 1.0};
    Tensor ce =
        cross_entropy(logits, target.squeeze(1), tensor({0.5, 1, 1, 1}, {4}, DType::float64));
    double want = ce.item<double>() + train::adaptive_tversky_loss(logits, target).item<double>();
    train::UTNetLoss loss(w);
    CHECK(loss(logits, target).item<double>() == Approx(want).epsilon(1e-12));
    std::vector<Tensor> outputs{logits, mul(logits, 0.5), mul(logits, -1.0), add(logits, 1.0)};
    std::vector<double> aux{1.0, 0.4, 0.2, 0.1};
    double total = 0;
    for (size_t i = 0; i < 4; ++i) total += aux[i] * loss(outputs[i], target).item<double>();
    CHECK(train::deep_supervision_loss(outputs, target, aux, loss).item<double>() ==
          Approx(total).epsilon(1e-12));
    require_error([&] { train::deep_supervision_loss(outputs, target, {1.0}, loss); },
                  {"[deep_supervision_loss]", "4 outputs"});
    require_error(
        [&] {
            train::utnet_loss(logits, target, {1.0, 2.0});
        },
        {"[utnet_loss]", "2 values for 4 classes"});
    require_error(
        [&] {
            train::adaptive_tversky_loss(logits, labels({0, 1}, {1, 1, 1, 2}));
        },
        {"[adaptive_tversky_loss]", "[1, 1, 1, 2]"});
    require_error([&] { train::adaptive_tversky_loss(logits, logits); },
                  {"[adaptive_tversky_loss]", "integer"});
}

TEST_CASE("UTNet loss vectors", "[train][loss][oracle]") {
    require_oracle_vectors({"utnet_dice_loss", "utnet_dice_loss_clamped", "utnet_ce_dice_loss",
                            "utnet_deep_supervision_loss"},
                           "sfree_utnet");
}
