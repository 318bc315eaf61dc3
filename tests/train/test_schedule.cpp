// UTNet's LR schedule at the epochs of the official training script, its branches and errors,
// and the 150-epoch vector; OneCycleLR against PyTorch's phase formulas (two and three phases,
// cos and linear, momentum cycling through apply) and the one-cycle Adam vector (context
// §2.15); timm's warm-up + cosine at the spec's sample steps (gdla §6).
#include <cmath>
#include <numbers>

#include "support/gradcheck.h"
#include "train/optim.h"
#include "train/schedule.h"
#include "train/schedule_basic.h"
#include "train/scheduler.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("ExpWarmupPolyLR: warm-up with 2.718, 0.05 at epoch 5, poly 0.9 decay",
          "[train][schedule]") {
    train::ExpWarmupPolyLR schedule;  // 0.05, 5, 150
    // The spec's values (3 significant digits).
    CHECK(schedule.lr(0) == Approx(2.27e-6).epsilon(5e-3));
    CHECK(schedule.lr(1) == Approx(1.68e-5).epsilon(5e-3));
    CHECK(schedule.lr(2) == Approx(1.24e-4).epsilon(5e-3));
    CHECK(schedule.lr(3) == Approx(9.16e-4).epsilon(5e-3));
    CHECK(schedule.lr(4) == Approx(6.77e-3).epsilon(5e-3));
    CHECK(schedule.lr(5) == 0.05);
    CHECK(schedule.lr(149) == Approx(5.5e-4).epsilon(5e-3));
    // Exactly the formulas: 2.718 (not e) in the warm-up, (1 - e/150)^0.9 after it.
    CHECK(schedule.lr(2) == Approx(0.05 * std::pow(2.718, -6.0)).epsilon(1e-15));
    CHECK(schedule.lr(6) == Approx(0.05 * std::pow(0.96, 0.9)).epsilon(1e-15));
    CHECK(schedule.lr(150) == 0.0);
    CHECK(schedule.lr(6) < schedule.lr(5));
    train::ExpWarmupPolyLR short_run(0.1, 2, 10);
    CHECK(short_run.lr(1) == Approx(0.1 * std::pow(2.718, -5.0)).epsilon(1e-15));
    CHECK(short_run.name() == "exp_warmup_poly");
    require_error([&] { schedule.lr(-1); }, {"[ExpWarmupPolyLR]", "-1"});
    require_error([&] { schedule.lr(151); }, {"[ExpWarmupPolyLR]", "151"});
    require_error([] { train::ExpWarmupPolyLR bad(0.05, 10, 10); },
                  {"[ExpWarmupPolyLR]", "max_epoch 10"});
}

TEST_CASE("UTNet LR schedule vector", "[train][schedule][oracle]") {
    require_oracle_vectors({"utnet_lr_schedule"}, "sfree_utnet");
}

namespace {

// PyTorch's cosine anneal from start to end at fraction pct.
double cos_anneal(double start, double end, double pct) {
    return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1.0);
}

}  // namespace

TEST_CASE("OneCycleLR: two phases, cosine, with the momentum cycled the other way",
          "[train][schedule]") {
    train::OneCycleLR schedule({.max_lr = 1e-3, .total_steps = 23});
    const double initial = 1e-3 / 25, final_lr = initial / 1e4, end1 = 0.3 * 23 - 1;  // 5.9
    CHECK(schedule.lr(0) == Approx(initial).epsilon(1e-14));
    CHECK(schedule.momentum(0) == Approx(0.95).epsilon(1e-14));
    CHECK(schedule.lr(3) == Approx(cos_anneal(initial, 1e-3, 3 / end1)).epsilon(1e-14));
    CHECK(schedule.momentum(3) == Approx(cos_anneal(0.95, 0.85, 3 / end1)).epsilon(1e-14));
    double pct = (6 - end1) / (22 - end1);  // phase 2 starts at the float end of phase 1
    CHECK(schedule.lr(6) == Approx(cos_anneal(1e-3, final_lr, pct)).epsilon(1e-14));
    CHECK(schedule.momentum(6) == Approx(cos_anneal(0.85, 0.95, pct)).epsilon(1e-14));
    CHECK(schedule.lr(22) == Approx(final_lr).epsilon(1e-12));
    CHECK(schedule.momentum(22) == Approx(0.95).epsilon(1e-14));
    // PyTorch allows one step past the end: the last phase's anneal continues (pct > 1).
    CHECK(schedule.lr(23) ==
          Approx(cos_anneal(1e-3, final_lr, (23 - end1) / (22 - end1))).epsilon(1e-12));
    require_error([&] { schedule.lr(24); }, {"[OneCycleLR]", "24", "23"});
    require_error([&] { schedule.lr(-1); }, {"[OneCycleLR]", "-1"});
    // The peak: with 10 steps phase 1 ends exactly at step 2.
    train::OneCycleLR ten({.max_lr = 0.1, .total_steps = 10});
    CHECK(ten.lr(2) == Approx(0.1).epsilon(1e-14));
    CHECK(ten.momentum(2) == Approx(0.85).epsilon(1e-14));
    CHECK(ten.name() == "one_cycle");
}

TEST_CASE("OneCycleLR: linear anneal, three phases, custom factors", "[train][schedule]") {
    train::OneCycleLR linear({.max_lr = 0.1, .total_steps = 10, .anneal_strategy = "linear"});
    CHECK(linear.lr(1) == Approx(0.004 + (0.1 - 0.004) * 0.5).epsilon(1e-14));
    CHECK(linear.momentum(1) == Approx(0.9).epsilon(1e-14));
    // Three phases end at 2, 4 and 9: up, back down to initial, then to final.
    train::OneCycleLR three({.max_lr = 0.1,
                             .total_steps = 10,
                             .div_factor = 10,
                             .final_div_factor = 100,
                             .three_phase = true});
    CHECK(three.lr(2) == Approx(0.1).epsilon(1e-14));
    CHECK(three.lr(3) == Approx(cos_anneal(0.1, 0.01, 0.5)).epsilon(1e-14));
    CHECK(three.momentum(3) == Approx(0.9).epsilon(1e-14));
    CHECK(three.lr(4) == Approx(0.01).epsilon(1e-14));
    CHECK(three.momentum(4) == Approx(0.95).epsilon(1e-14));
    CHECK(three.lr(7) == Approx(cos_anneal(0.01, 1e-4, 0.6)).epsilon(1e-14));
    CHECK(three.momentum(7) == Approx(0.95).epsilon(1e-14));
    CHECK(three.lr(9) == Approx(1e-4).epsilon(1e-12));
    require_error([] { train::OneCycleLR bad({.max_lr = 0.1, .total_steps = 0}); },
                  {"[OneCycleLR]", "total_steps"});
    require_error(
        [] { train::OneCycleLR bad({.max_lr = 0.1, .total_steps = 5, .pct_start = 1.5}); },
        {"[OneCycleLR]", "pct_start", "1.5"});
    require_error(
        [] { train::OneCycleLR bad({.max_lr = 0.1, .total_steps = 5, .anneal_strategy = "exp"}); },
        {"[OneCycleLR]", "exp"});
}

TEST_CASE("OneCycleLR::apply sets lr and beta1 / momentum", "[train][schedule]") {
    Tensor p = zeros({2}).requires_grad_(true);
    train::Adam adam({p}, 1.0, {.beta1 = 0.9, .beta2 = 0.99});
    train::OneCycleLR schedule({.max_lr = 1e-2, .total_steps = 20});
    schedule.apply(adam, 4);
    CHECK(adam.param_groups()[0].lr == schedule.lr(4));
    CHECK(adam.options.beta1 == schedule.momentum(4));
    CHECK(adam.options.beta2 == 0.99);
    train::SGD sgd({p}, 1.0, {.momentum = 0.5});
    schedule.apply(sgd, 7);
    CHECK(sgd.options.momentum == schedule.momentum(7));
    train::OneCycleLR no_cycle({.max_lr = 1e-2, .total_steps = 20, .cycle_momentum = false});
    no_cycle.apply(sgd, 0);
    CHECK(sgd.options.momentum == schedule.momentum(7));
    CHECK(sgd.param_groups()[0].lr == no_cycle.lr(0));
    // The base class sets the lr only.
    train::ExpWarmupPolyLR poly;
    poly.apply(sgd, 5);
    CHECK(sgd.param_groups()[0].lr == 0.05);
}

TEST_CASE("WarmupCosineLR: the Synapse values of PVT-GDLA", "[train][schedule]") {
    train::WarmupCosineLR schedule(5e-4, 55400, 2770);
    CHECK(schedule.lr(0) == Approx(1e-6).epsilon(1e-12));
    CHECK(schedule.lr(1385) == Approx(2.505e-4).epsilon(1e-12));
    CHECK(schedule.lr(2770) == Approx(4.96928e-4).epsilon(1e-5));
    CHECK(schedule.lr(27700) == Approx(2.505e-4).epsilon(1e-12));
    CHECK(schedule.lr(55400) == 1e-6);
    CHECK(schedule.lr(99999) == 1e-6);
    CHECK(schedule.name() == "warmup_cosine");
    train::WarmupCosineLR no_warmup(0.1, 100);
    CHECK(no_warmup.lr(0) == Approx(0.1).epsilon(1e-14));
    CHECK(no_warmup.lr(50) == Approx(1e-6 + 0.5 * (0.1 - 1e-6)).epsilon(1e-14));
    require_error([&] { schedule.lr(-1); }, {"[WarmupCosineLR]", "-1"});
    require_error([] { train::WarmupCosineLR bad(0.1, 0); }, {"[WarmupCosineLR]", "total_steps"});
}

TEST_CASE("One-cycle Adam vector", "[train][schedule][oracle]") {
    require_oracle_vectors({"schedule_onecycle_adam"}, "context");
}

TEST_CASE("LRScheduler: torch's stateful step() over a schedule", "[train][schedule]") {
    Tensor p = zeros({2}).requires_grad_(true);
    train::SGD sgd({p}, 1.0, {.momentum = 0.5});
    // StepLR(0.1, step_size 2, gamma 0.5): 0.1, 0.1, 0.05, 0.05, 0.025 (torch's get_last_lr()).
    train::LRScheduler scheduler(sgd, std::make_shared<train::StepLR>(0.1, 2, 0.5));
    const std::vector<double> expected = {0.1, 0.1, 0.05, 0.05, 0.025};
    for (size_t t = 0; t < expected.size(); ++t) {
        CHECK(scheduler.last_index() == int64_t(t));
        CHECK(scheduler.last_lr() == Approx(expected[t]).epsilon(1e-15));
        CHECK(sgd.param_groups()[0].lr == Approx(expected[t]).epsilon(1e-15));
        scheduler.step();
    }
    // A one-cycle schedule also cycles the momentum; set_index resumes where a run stopped.
    train::LRScheduler one_cycle(sgd, std::make_shared<train::OneCycleLR>(train::OneCycleOptions{
                                          .max_lr = 1e-2, .total_steps = 20}));
    auto schedule = std::make_shared<train::OneCycleLR>(
        train::OneCycleOptions{.max_lr = 1e-2, .total_steps = 20});
    CHECK(sgd.options.momentum == schedule->momentum(0));
    one_cycle.set_index(7);
    one_cycle.step();
    CHECK(sgd.param_groups()[0].lr == schedule->lr(8));
    CHECK(sgd.options.momentum == schedule->momentum(8));
    require_error([&] { one_cycle.set_index(-1); }, {"[LRScheduler]", "-1"});
    require_error([&] { train::LRScheduler none(sgd, nullptr); }, {"[LRScheduler]", "null"});
}
