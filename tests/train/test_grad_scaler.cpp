// train::GradScaler: the loss scale, unscaling gradients in place with the overflow check,
// skipping on inf/NaN, the backoff and growth rule, a restored state, and the errors.
#include <limits>

#include "support/gradcheck.h"
#include "train/grad_scaler.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

struct Fixture {
    Tensor a = ones({3}).requires_grad_(), b = ones({2, 2}).requires_grad_();
    train::SGD sgd{{a, b}, 0.1};
};

}  // namespace

TEST_CASE("GradScaler scales the loss and unscales finite gradients", "[train][scaler]") {
    Fixture f;
    train::GradScaler scaler({.init_scale = 1024.0, .growth_interval = 3});
    Tensor loss = add(sum(mul(f.a, 2.0)), sum(f.b));
    Tensor scaled = scaler.scale(loss);
    CHECK(scaled.item<double>() == 1024.0 * loss.item<double>());
    scaled.backward();
    CHECK(f.a.grad().to_vector<float>() == std::vector<float>(3, 2048.0f));
    CHECK(scaler.unscale_(f.sgd));
    CHECK(f.a.grad().to_vector<float>() == std::vector<float>(3, 2.0f));
    CHECK(f.b.grad().to_vector<float>() == std::vector<float>(4, 1.0f));
    CHECK(scaler.unscale_(f.sgd));  // once per step: a second call changes nothing
    CHECK(f.a.grad().to_vector<float>() == std::vector<float>(3, 2.0f));
    // Three clean steps in a row double the scale.
    scaler.update();
    CHECK(scaler.growth_tracker() == 1);
    scaler.update();
    scaler.update();
    CHECK(scaler.get_scale() == 2048.0);
    CHECK(scaler.growth_tracker() == 0);
}

TEST_CASE("GradScaler finds inf and NaN, backs off and restarts the count", "[train][scaler]") {
    for (float bad : {std::numeric_limits<float>::infinity(), std::nanf("")}) {
        INFO(bad);
        Fixture f;
        train::GradScaler scaler({.init_scale = 256.0, .growth_interval = 2});
        f.a.set_grad(ones({3}));
        f.b.set_grad(from_vector(std::vector<float>{1, bad, 1, 1}, {2, 2}));
        scaler.update();  // one clean step counted first
        CHECK(scaler.growth_tracker() == 1);
        CHECK_FALSE(scaler.unscale_(f.sgd));
        CHECK(scaler.found_inf());
        scaler.update();
        CHECK(scaler.get_scale() == 128.0);
        CHECK(scaler.growth_tracker() == 0);
        CHECK_FALSE(scaler.found_inf());
    }
}

TEST_CASE("GradScaler restores a saved state and rejects bad settings", "[train][scaler]") {
    train::GradScaler scaler;
    CHECK(scaler.get_scale() == 65536.0);
    scaler.load_state(512.0, 7);
    CHECK(scaler.get_scale() == 512.0);
    CHECK(scaler.growth_tracker() == 7);
    require_error([&] { scaler.load_state(0.0, 1); }, {"[GradScaler]", "got 0 and 1"});
    require_error([] { train::GradScaler({.init_scale = -1.0}); }, {"init_scale", "-1"});
    require_error([] { train::GradScaler({.growth_factor = 1.0}); }, {"growth_factor", "1"});
    require_error([] { train::GradScaler({.backoff_factor = 1.5}); }, {"backoff_factor", "1.5"});
    require_error([] { train::GradScaler({.growth_interval = 0}); }, {"growth_interval", "0"});
}
