// SGD against three steps worked out by hand (momentum with weight decay, nesterov,
// dampening, plain, maximize), parameter groups, in-place updates that modules see, state,
// zero_grad, the option checks, and the sgd_momentum_wd vector.
#include "nn/linear.h"
#include "support/gradcheck.h"
#include "train/optim.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// Runs three SGD steps (lr 0.1) from p = (1, -2) with gradients (0.5, 1), (-1, 0.25),
// (0.2, -0.4) and returns the parameter after each step.
std::vector<std::vector<double>> three_steps(train::SGDOptions options, double weight_decay) {
    Tensor p = tensor({1.0, -2.0}, {2}, DType::float64).requires_grad_(true);
    train::SGD sgd({p}, 0.1, options, weight_decay);
    const std::vector<std::vector<double>> grads{{0.5, 1.0}, {-1.0, 0.25}, {0.2, -0.4}};
    std::vector<std::vector<double>> after;
    for (const auto& g : grads) {
        p.set_grad(from_vector(g, {2}));
        sgd.step();
        after.push_back(p.to_vector<double>());
    }
    return after;
}

void require_steps(const std::vector<std::vector<double>>& got,
                   const std::vector<std::vector<double>>& want) {
    REQUIRE(got.size() == want.size());
    for (size_t t = 0; t < want.size(); ++t)
        for (size_t i = 0; i < 2; ++i) {
            INFO("step " << t + 1 << ", element " << i);
            CHECK(got[t][i] == Approx(want[t][i]).epsilon(1e-13));
        }
}

}  // namespace

TEST_CASE("SGD: momentum 0.9 with weight decay 0.01, three steps by hand", "[train][optim]") {
    // Element 0: g = 0.5 + 0.01 * 1 = 0.51, buf = g, p = 1 - 0.1 * 0.51 = 0.949;
    // g = -1 + 0.00949 = -0.99051, buf = 0.9 * 0.51 + g = -0.53151, p = 1.002151;
    // g = 0.2 + 0.01002151, buf = 0.9 * -0.53151 + g = -0.26833749, p = 1.028984749.
    require_steps(three_steps({.momentum = 0.9}, 0.01),
                  {{0.949, -2.098}, {1.002151, -2.209102}, {1.028984749, -2.266884698}});
}

TEST_CASE("SGD: nesterov, dampening, plain and maximize, three steps by hand", "[train][optim]") {
    // nesterov: buf = 0.5, step = g + 0.9 buf = 0.95, p = 0.905; buf = 0.45 - 1 = -0.55,
    // step = -1 - 0.495 = -1.495, p = 1.0545; ...
    require_steps(three_steps({.momentum = 0.9, .nesterov = true}, 0.0),
                  {{0.905, -2.19}, {1.0545, -2.3185}, {1.06105, -2.33565}});
    // dampening 0.5: the first buf is g itself (no dampening), then 0.9 buf + 0.5 g.
    require_steps(three_steps({.momentum = 0.9, .dampening = 0.5}, 0.0),
                  {{0.95, -2.1}, {0.955, -2.2025}, {0.9495, -2.27475}});
    require_steps(three_steps({}, 0.0), {{0.95, -2.1}, {1.05, -2.125}, {1.03, -2.085}});
    // maximize: the gradient is negated before the decay is added.
    require_steps(three_steps({.momentum = 0.9, .maximize = true}, 0.01),
                  {{1.049, -1.898}, {0.992051, -1.779302}, {0.959804849, -1.710694498}});
}

TEST_CASE("SGD updates module parameters in place, per group, skipping missing grads",
          "[train][optim]") {
    nn::Linear fc(3, 2);
    Tensor weight = fc.weight, bias = fc.bias;
    std::vector<double> w0 = weight.to_vector<double>(), b0 = bias.to_vector<double>();
    // Decay on the weight only, a separate lr for the bias (the exemption issue 7 uses).
    train::SGD sgd(
        {train::ParamGroup{{fc.weight}, 0.1, 0.5}, train::ParamGroup{{fc.bias}, 1.0, 0.0}},
        {.momentum = 0.9});
    sum(fc.forward(ones({4, 3}))).backward();
    sgd.step();
    CHECK(fc.weight.impl() == weight.impl());  // same tensor, new values
    std::vector<double> w1 = fc.weight.to_vector<double>(), b1 = fc.bias.to_vector<double>();
    // d sum / d w = 4 for every weight. The update is float32 and 0.95 w - 0.4 can cancel
    // to near 0, so the tolerance is absolute at float32's resolution of 0.4 as well.
    for (size_t i = 0; i < w0.size(); ++i)
        CHECK(w1[i] == Approx(w0[i] - 0.1 * (4.0 + 0.5 * w0[i])).epsilon(1e-6).margin(1e-7));
    for (size_t i = 0; i < b0.size(); ++i) CHECK(b1[i] == Approx(b0[i] - 4.0).epsilon(1e-6));
    REQUIRE(sgd.find_state(fc.weight) != nullptr);
    CHECK(sgd.find_state(fc.weight)->count("momentum_buffer") == 1);
    sgd.zero_grad();
    CHECK(!fc.weight.grad().defined());
    sgd.step();  // no gradients: nothing changes
    require_close(fc.weight, from_vector(w1, {2, 3}).to(DType::float32), 0, 0);
    sgd.set_lr(0.01);
    CHECK(sgd.param_groups()[1].lr == 0.01);
}

TEST_CASE("SGD rejects invalid settings", "[train][optim]") {
    Tensor p = zeros({2}).requires_grad_(true);
    require_error([&] { train::SGD sgd({p}, 0.1, {.nesterov = true}); }, {"[SGD]", "nesterov"});
    require_error(
        [&] { train::SGD sgd({p}, 0.1, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}); },
        {"[SGD]", "dampening 0.1"});
    require_error([&] { train::SGD sgd({p}, -1.0); }, {"[SGD]", "lr", "-1"});
    require_error([&] { train::SGD sgd({p, p}, 0.1); }, {"[SGD]", "twice"});
    require_error([&] { train::SGD sgd({zeros({2}, DType::int64)}, 0.1); }, {"[SGD]", "floating"});
    require_error([&] { train::SGD sgd(std::vector<train::ParamGroup>{}); }, {"[SGD]", "group"});
}

TEST_CASE("SGD vector: UTNet settings with the schedule's learning rates",
          "[train][optim][oracle]") {
    require_oracle_vectors({"sgd_momentum_wd"}, "sfree_utnet");
}
