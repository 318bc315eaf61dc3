// The context study's denoising losses (Hooper & Xue): the derivative taps and kernels by
// hand, the Gaussian-derivative loss against a direct triple loop, exactly 0 for T = 1, the
// combined loss as its sum, float64 gradchecks, errors, and the loss vectors.
#include <cmath>

#include "support/gradcheck.h"
#include "train/loss_enhance.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// mean |K * d| for one kernel K (kT, kH, kW) and d (1, 1, T, H, W), zero "same" padding, by
// direct loops (cross-correlation).
double filtered_l1(const Tensor& kernel, const Tensor& d) {
    const Shape& k = kernel.shape();
    const int64_t T = d.size(2), H = d.size(3), W = d.size(4);
    std::vector<double> w = kernel.to_vector<double>(), x = d.to_vector<double>();
    double total = 0;
    for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < H; ++i)
            for (int64_t j = 0; j < W; ++j) {
                double acc = 0;
                for (int64_t a = 0; a < k[0]; ++a)
                    for (int64_t b = 0; b < k[1]; ++b)
                        for (int64_t c = 0; c < k[2]; ++c) {
                            int64_t tt = t + a - k[0] / 2, ii = i + b - k[1] / 2,
                                    jj = j + c - k[2] / 2;
                            if (tt < 0 || tt >= T || ii < 0 || ii >= H || jj < 0 || jj >= W)
                                continue;
                            acc += w[size_t((a * k[1] + b) * k[2] + c)] *
                                   x[size_t((tt * H + ii) * W + jj)];
                        }
                total += std::abs(acc);
            }
    return total / double(T * H * W);
}

}  // namespace

TEST_CASE("gaussian_deriv_taps: sizes with ties to even, odd symmetry, unit L1", "[train][loss]") {
    // sigma 0.25: r = round(0.75) = 1, taps (e^-8, 0, -e^-8) / (2 e^-8) = (0.5, 0, -0.5).
    std::vector<double> t = train::gaussian_deriv_taps(0.25);
    REQUIRE(t.size() == 3);
    CHECK(t[0] == Approx(0.5));
    CHECK(t[1] == 0.0);
    CHECK(t[2] == Approx(-0.5));
    CHECK(train::gaussian_deriv_taps(0.5).size() == 5);  // round(1.5) = 2
    CHECK(train::gaussian_deriv_taps(1.0).size() == 7);
    CHECK(train::gaussian_deriv_taps(0.5, 5).size() == 5);  // round(2.5) = 2, not 3
    std::vector<double> s = train::gaussian_deriv_taps(1.0);
    double l1 = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        CHECK(s[i] == Approx(-s[s.size() - 1 - i]).margin(1e-15));
        l1 += std::abs(s[i]);
    }
    CHECK(l1 == Approx(1.0).epsilon(1e-15));
    // The kernels of the paper's three scales; sum |K| = 1, float32 values.
    CHECK(train::gaussian_deriv3d_kernel(0.25, 0.25).shape() == Shape{3, 3, 3});
    CHECK(train::gaussian_deriv3d_kernel(0.5, 0.5).shape() == Shape{5, 5, 5});
    Tensor k = train::gaussian_deriv3d_kernel(1.0, 0.5);
    CHECK(k.shape() == Shape{5, 7, 7});
    CHECK(sum(abs(k)).item<double>() == Approx(1.0).epsilon(1e-6));
    for (double v : k.to_vector<double>()) CHECK(double(float(v)) == v);
    require_error([] { train::gaussian_deriv_taps(0.0); }, {"[gaussian_deriv3d_loss]", "sigma"});
}

TEST_CASE("gaussian_deriv3d_loss equals direct filtering; 0 with zero gradient for T = 1",
          "[train][loss]") {
    Tensor out = random_input({1, 1, 5, 6, 7}, 1), tgt = random_input({1, 1, 5, 6, 7}, 2);
    Tensor d = sub(out, tgt);
    double want = (filtered_l1(train::gaussian_deriv3d_kernel(0.25, 0.25), d) +
                   filtered_l1(train::gaussian_deriv3d_kernel(0.5, 0.5), d) +
                   filtered_l1(train::gaussian_deriv3d_kernel(1.0, 0.5), d)) /
                  3;
    CHECK(train::gaussian_deriv3d_loss(out, tgt).item<double>() == Approx(want).epsilon(1e-12));
    // T = 1: only the kernel's centre slice (all zeros) meets the data.
    Tensor flat = random_input({2, 1, 1, 6, 7}, 3).requires_grad_(true);
    Tensor loss = train::gaussian_deriv3d_loss(flat, random_input({2, 1, 1, 6, 7}, 4));
    CHECK(loss.item<double>() == 0.0);
    loss.backward();
    CHECK(sum(abs(flat.grad())).item<double>() == 0.0);
}

TEST_CASE("enhancement losses: gradients, the combined sum, channels, errors", "[train][loss]") {
    Tensor out = random_input({1, 1, 4, 5, 5}, 5), tgt = random_input({1, 1, 4, 5, 5}, 6);
    gradcheck(
        [](const std::vector<Tensor>& in) { return train::gaussian_deriv3d_loss(in[0], in[1]); },
        {out, tgt});
    gradcheck(
        [](const std::vector<Tensor>& in) { return train::combined_enhance_loss(in[0], in[1]); },
        {out, tgt});
    double want = mse_loss(out, tgt).item<double>() +
                  2 * charbonnier_loss(out, tgt, 1e-3).item<double>() +
                  0.5 * train::gaussian_deriv3d_loss(out, tgt).item<double>();
    CHECK(train::combined_enhance_loss(out, tgt, {1, 2, 0.5}).item<double>() ==
          Approx(want).epsilon(1e-13));
    train::CombinedEnhanceLoss loss;
    CHECK(loss(out, tgt).item<double>() ==
          Approx(train::combined_enhance_loss(out, tgt).item<double>()).epsilon(1e-15));
    // Two channels are filtered alike: the mean of the per-channel losses.
    Tensor two = cat({out, tgt}, 1), two_t = cat({tgt, out}, 1);
    CHECK(train::gaussian_deriv3d_loss(two, two_t).item<double>() ==
          Approx(train::gaussian_deriv3d_loss(out, tgt).item<double>()).epsilon(1e-12));
    require_error([&] { train::gaussian_deriv3d_loss(out.squeeze(0), tgt.squeeze(0)); },
                  {"[gaussian_deriv3d_loss]", "(B, C, T, H, W)"});
    require_error([&] { train::gaussian_deriv3d_loss(out, two); },
                  {"[gaussian_deriv3d_loss]", "does not match"});
    require_error([&] { train::gaussian_deriv3d_loss(out, tgt, {.sigmas = {1.0}}); },
                  {"[gaussian_deriv3d_loss]", "sigmas_t"});
    require_error(
        [&] {
            train::combined_enhance_loss(out, tgt, {1, 1});
        },
        {"[combined_enhance_loss]", "3 weights"});
}

TEST_CASE("context loss vectors", "[train][loss][oracle]") {
    require_oracle_vectors({"loss_mse", "loss_charbonnier", "loss_gauss3d", "loss_gauss3d_t1",
                            "loss_combined_enhance", "loss_ce_seg", "loss_ce_class"},
                           "context");
}
