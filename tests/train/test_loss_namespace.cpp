// Every loss is lumen::train::<name>: the kernel losses of ops/loss.h and the composite ones of
// train/loss*.h, called through that one namespace, give the values of their definitions.
#include <cmath>

#include "support/gradcheck.h"

using namespace lumen;

TEST_CASE("every loss is reachable as lumen::train::<name>", "[train][loss]") {
    Tensor logits = tensor({2.0, 0.0, 0.0, 1.0}, {2, 2}, DType::float64);
    Tensor labels = from_vector(std::vector<int64_t>{0, 1}, {2});
    Tensor ce = train::cross_entropy(logits, labels);
    CHECK(ce.item<double>() ==
          Approx(std::log(1 + std::exp(-2.0)) / 2 + std::log(1 + std::exp(-1.0)) / 2));
    CHECK(train::nll_loss(log_softmax(logits, 1), labels).item<double>() ==
          Approx(ce.item<double>()));
    Tensor a = tensor({1.0, 2.0}, {2}, DType::float64), b = tensor({0.0, 4.0}, {2}, DType::float64);
    CHECK(train::mse_loss(a, b).item<double>() == Approx(2.5));
    CHECK(train::l1_loss(a, b).item<double>() == Approx(1.5));
    CHECK(train::smooth_l1_loss(a, b).item<double>() == Approx((0.5 + 1.5) / 2));
    CHECK(train::huber_loss(a, b).item<double>() == Approx((0.5 + 1.5) / 2));
    CHECK(train::charbonnier_loss(a, b).item<double>() == Approx(1.5).epsilon(1e-5));
    Tensor p = tensor({0.5, 0.5}, {2}, DType::float64);
    CHECK(train::binary_cross_entropy(p, tensor({1.0, 0.0}, {2}, DType::float64)).item<double>() ==
          Approx(std::log(2.0)));
    CHECK(train::binary_cross_entropy_with_logits(zeros({2}, DType::float64), p).item<double>() ==
          Approx(std::log(2.0)));

    // The composite losses: a perfect segmentation has (almost) zero Dice loss.
    Tensor seg = tensor({9.0, -9.0, -9.0, 9.0}, {1, 2, 1, 2}, DType::float64);
    Tensor mask = from_vector(std::vector<int64_t>{0, 1}, {1, 1, 2});
    CHECK(train::dice_loss(seg, mask).item<double>() == Approx(0.0).margin(1e-6));
    CHECK(train::DiceLoss()(seg, mask).item<double>() == Approx(0.0).margin(1e-6));
    CHECK(train::soft_dice_ce_loss(seg, mask).item<double>() < 0.01);
    CHECK(train::utnet_loss(seg, mask).item<double>() < 0.01);
}
