// UTNet's LR schedule at the epochs the spec lists (§5.3), its branches and errors, and the
// 150-epoch vector.
#include <cmath>

#include "support/gradcheck.h"
#include "train/schedule.h"

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
