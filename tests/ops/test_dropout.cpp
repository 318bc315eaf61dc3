// dropout and drop_path: the mask equals bernoulli's for the same seed, its rate, the scaling,
// eval and p = 0 identity, p = 1, thread-count independence, the gradient (mask * scale),
// drop_path's per-sample structure, and errors.
#include <cmath>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("dropout: the mask is bernoulli(1 - p) from the same generator state, scaled",
          "[ops][dropout]") {
    for (DType dtype : {DType::float32, DType::float64}) {
        Tensor x = add(rand({37, 29}, dtype), 0.5);  // no zeros, so kept entries are visible
        Generator a(123), b(123);
        Tensor y = dropout(x, 0.3, true, &a);
        Tensor keep = bernoulli({37, 29}, 0.7, dtype, &b);
        CHECK(a.offset() == b.offset());
        require_close(y, mul(x, div(keep, 0.7)).to_vector<double>(), 1e-6, 0);
        CHECK(y.dtype() == dtype);
    }
}

TEST_CASE("dropout: same seed gives the same mask, whatever the thread count", "[ops][dropout]") {
    Tensor x = ones({1000, 301});
    Generator first(7), second(7);
    set_num_threads(1);
    std::vector<double> single = dropout(x, 0.4, true, &first).to_vector<double>();
    set_num_threads(2);
    std::vector<double> two = dropout(x, 0.4, true, &second).to_vector<double>();
    set_num_threads(0);
    CHECK(single == two);
    // The generator moved on: the next mask differs.
    CHECK(dropout(x, 0.4, true, &first).to_vector<double>() != single);
}

TEST_CASE("dropout: the drop rate is close to p and kept values are x / (1 - p)",
          "[ops][dropout]") {
    Generator generator(11);
    for (double p : {0.1, 0.5, 0.9}) {
        Tensor y = dropout(ones({1000000}), p, true, &generator);
        int64_t dropped = 0, wrong = 0;
        for (double v : y.to_vector<double>()) {
            dropped += v == 0.0;
            wrong += v != 0.0 && std::abs(v - 1.0 / (1.0 - p)) > 1e-6;
        }
        // Binomial standard deviation sqrt(p (1 - p) / n) <= 5e-4; allow 6 of them.
        CHECK(std::abs(double(dropped) / 1e6 - p) < 3e-3);
        CHECK(wrong == 0);
    }
}

TEST_CASE("dropout: eval and p = 0 are the identity, p = 1 gives zeros", "[ops][dropout]") {
    Tensor x = random_input({4, 5}, 1);
    CHECK(dropout(x, 0.5, false).impl() == x.impl());
    CHECK(dropout(x, 0.0, true).impl() == x.impl());
    Generator generator(3);
    require_close(dropout(x, 1.0, true, &generator), zeros({4, 5}, DType::float64), 0, 0);
    CHECK(dropout(zeros({0, 3}), 0.5).numel() == 0);
}

TEST_CASE("dropout: the gradient is the same mask times 1 / (1 - p)", "[ops][dropout]") {
    Tensor x = noncontiguous(random_input({6, 7}, 2)).requires_grad_(true);
    Generator generator(5);
    Tensor y = dropout(x, 0.35, true, &generator);
    Tensor g = random_input({6, 7}, 3);
    sum(mul(y, g)).backward();
    std::vector<double> ys = y.to_vector<double>(), xs = x.to_vector<double>();
    std::vector<double> gs = g.to_vector<double>(), want;
    for (size_t i = 0; i < ys.size(); ++i) want.push_back(ys[i] == 0 ? 0 : gs[i] / 0.65);
    require_close(x.grad(), want, 1e-12, 0);
    // Finite differences with a fixed mask: a fresh generator per evaluation.
    gradcheck(
        [](const std::vector<Tensor>& in) {
            Generator fixed(9);
            return dropout(in[0], 0.5, true, &fixed);
        },
        {random_input({3, 5}, 4)});
}

TEST_CASE("drop_path: whole samples are kept (scaled) or zeroed, as in timm", "[ops][dropout]") {
    Tensor x = add(rand({64, 3, 4}, DType::float64), 0.5);
    Generator generator(21), replay(21);
    Tensor y = drop_path(x, 0.25, true, true, &generator);
    Tensor keep = bernoulli({64, 1, 1}, 0.75, DType::float64, &replay);
    std::vector<double> ys = y.to_vector<double>(), xs = x.to_vector<double>();
    std::vector<double> ks = keep.to_vector<double>();
    int64_t kept = 0;
    for (size_t b = 0; b < 64; ++b) {
        kept += ks[b] != 0;
        for (size_t k = 0; k < 12; ++k) {
            size_t i = b * 12 + k;
            CHECK(std::abs(ys[i] - (ks[b] != 0 ? xs[i] / 0.75 : 0.0)) <= 1e-15 * std::abs(ys[i]));
        }
    }
    CHECK(kept > 0);
    CHECK(kept < 64);
    Generator unscaled_generator(21);
    Tensor unscaled = drop_path(x, 0.25, true, false, &unscaled_generator);
    require_close(unscaled, mul(y, 0.75).to_vector<double>(), 1e-15);
    CHECK(drop_path(x, 0.25, false).impl() == x.impl());
    CHECK(drop_path(x, 0.0, true).impl() == x.impl());
    require_close(drop_path(x, 1.0, true), zeros({64, 3, 4}, DType::float64), 0, 0);
    gradcheck(
        [](const std::vector<Tensor>& in) {
            Generator fixed(2);
            return drop_path(in[0], 0.5, true, true, &fixed);
        },
        {random_input({6, 2, 3}, 5)});
}

TEST_CASE("dropout and drop_path: bad arguments throw", "[ops][dropout]") {
    require_error([] { dropout(ones({3}), 1.5); }, {"[dropout]", "p", "1.5"});
    require_error([] { dropout(ones({3}), -0.1); }, {"[dropout]", "-0.1"});
    require_error([] { dropout(ones({3}, DType::int64), 0.5); }, {"[dropout]", "int64"});
    require_error([] { drop_path(ones({3}), 2.0, true); }, {"[drop_path]", "drop_prob", "2"});
    require_error([] { drop_path(scalar_tensor(1.0), 0.5, true); }, {"[drop_path]", "0-d"});
}
