// SSIM (as the context-length study computes it): 1 for identical images, against a direct
// evaluation with the full 2-D/3-D window in float64, the data range rule, a float64 gradcheck,
// errors, and the vectors.
#include <cmath>

#include "support/gradcheck.h"
#include "train/metrics_image.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// torchmetrics' SSIM by definition on (B, C, H, W) or (B, C, D, H, W) (D = 1 for 2-D): every
// valid window position, the full product window, the per-position formula, the mean.
double direct_ssim(const Tensor& preds, const Tensor& target, double range) {
    const bool volume = preds.ndim() == 5;
    const int64_t B = preds.size(0), C = preds.size(1), D = volume ? preds.size(2) : 1;
    const int64_t H = preds.size(-2), W = preds.size(-1);
    std::vector<double> g = train::ssim_window(), p = preds.to_vector<double>(),
                        t = target.to_vector<double>();
    const int64_t n = int64_t(g.size()), nd = volume ? n : 1;
    const double c1 = std::pow(0.01 * range, 2), c2 = std::pow(0.03 * range, 2);
    double total = 0;
    int64_t count = 0;
    for (int64_t bc = 0; bc < B * C; ++bc)
        for (int64_t z = 0; z + nd <= D; ++z)
            for (int64_t y = 0; y + n <= H; ++y)
                for (int64_t x = 0; x + n <= W; ++x) {
                    double mp = 0, mt = 0, pp = 0, tt = 0, pt = 0;
                    for (int64_t a = 0; a < nd; ++a)
                        for (int64_t b = 0; b < n; ++b)
                            for (int64_t c = 0; c < n; ++c) {
                                double w =
                                    (volume ? g[size_t(a)] : 1.0) * g[size_t(b)] * g[size_t(c)];
                                size_t i = size_t(((bc * D + z + a) * H + y + b) * W + x + c);
                                mp += w * p[i];
                                mt += w * t[i];
                                pp += w * p[i] * p[i];
                                tt += w * t[i] * t[i];
                                pt += w * p[i] * t[i];
                            }
                    double spp = std::max(pp - mp * mp, 0.0), stt = std::max(tt - mt * mt, 0.0);
                    total += (2 * mp * mt + c1) * (2 * (pt - mp * mt) + c2) /
                             ((mp * mp + mt * mt + c1) * (spp + stt + c2));
                    ++count;
                }
    return total / double(count);
}

double value_range(const Tensor& x) { return max(x).item<double>() - min(x).item<double>(); }

}  // namespace

TEST_CASE("ssim: window of 11 taps, 1 for identical images", "[train][metrics]") {
    std::vector<double> g = train::ssim_window();
    REQUIRE(g.size() == 11);  // 2 int(3.5 * 1.5 + 0.5) + 1
    CHECK(g[5] > g[4]);
    CHECK(g[0] == Approx(g[10]));
    Tensor image = random_input({2, 3, 12, 13}, 1, 0.0, 1.0);
    CHECK(train::ssim(image, image).item<double>() == Approx(1.0).epsilon(1e-12));
    Tensor volume = random_input({1, 1, 11, 12, 11}, 2, 0.0, 1.0);
    CHECK(train::ssim(volume, volume, {.data_range = 1.0}).item<double>() ==
          Approx(1.0).epsilon(1e-12));
    Tensor noisy = add(image, random_input({2, 3, 12, 13}, 9, -0.2, 0.2));
    CHECK(train::ssim(image, noisy).item<double>() < 0.99);
}

TEST_CASE("ssim equals the direct windowed formula in 2-D and 3-D", "[train][metrics]") {
    Tensor p = random_input({2, 2, 13, 15}, 3, 0.0, 1.0), t = random_input({2, 2, 13, 15}, 4);
    double range = std::max(value_range(p), value_range(t));
    CHECK(train::ssim(p, t).item<double>() == Approx(direct_ssim(p, t, range)).epsilon(1e-10));
    CHECK(train::ssim(p, t, {.data_range = 2.0}).item<double>() ==
          Approx(direct_ssim(p, t, 2.0)).epsilon(1e-10));
    Tensor pv = random_input({1, 1, 12, 11, 13}, 5, 0.0, 1.0);
    Tensor tv = add(mul(pv, 0.8), random_input({1, 1, 12, 11, 13}, 6, 0.0, 0.3));
    range = std::max(value_range(pv), value_range(tv));
    CHECK(train::ssim(pv, tv).item<double>() == Approx(direct_ssim(pv, tv, range)).epsilon(1e-10));
}

TEST_CASE("ssim: gradients through the images and the data range", "[train][metrics]") {
    Tensor p = random_input({1, 1, 11, 12}, 7, 0.0, 1.0), t = random_input({1, 1, 11, 12}, 8);
    gradcheck([](const std::vector<Tensor>& in) { return train::ssim(in[0], in[1]); }, {p, t});
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return train::ssim(in[0], in[1], {.data_range = 1.5});
        },
        {p, t});
}

TEST_CASE("ssim rejects bad input", "[train][metrics]") {
    Tensor image = random_input({1, 1, 12, 12});
    require_error([&] { train::ssim(image.squeeze(0), image.squeeze(0)); },
                  {"[ssim]", "(B, C, H, W)"});
    require_error(
        [&] {
            train::ssim(image, random_input({1, 1, 12, 13}));
        },
        {"[ssim]", "does not match"});
    Tensor small = random_input({1, 1, 10, 12});
    require_error([&] { train::ssim(small, small); }, {"[ssim]", "smaller than the window"});
    require_error([&] { train::ssim(image, image, {.data_range = 0.0}); },
                  {"[ssim]", "data_range"});
    require_error([&] { train::ssim(image, image, {.sigma = -1.0}); }, {"[ssim]", "sigma"});
    require_error([&] { train::ssim(image, image, {.gaussian_kernel = false, .kernel_size = 4}); },
                  {"[ssim]", "kernel_size"});
    // The uniform window of kernel_size works as well.
    CHECK(train::ssim(image, image, {.gaussian_kernel = false, .kernel_size = 7}).item<double>() ==
          Approx(1.0));
}

TEST_CASE("SSIM vectors", "[train][metrics][oracle]") {
    require_oracle_vectors({"metric_ssim_2d", "metric_ssim_2d_range", "metric_ssim_3d"}, "context");
}
