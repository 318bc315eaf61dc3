// The Gaussian-derivative kernels on the host (a few dozen taps), the filtering as conv3d on
// the difference out - tgt (the convolution is linear, so one conv instead of two).
#include "train/loss_enhance.h"

#include <cmath>

#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/reduce.h"

namespace lumen::train {

std::vector<double> gaussian_deriv_taps(double sigma, int64_t halfwidth) {
    LUMEN_CHECK(sigma > 0 && halfwidth >= 0, "gaussian_deriv3d_loss",
                "needs sigma > 0 and halfwidth >= 0, got sigma ", sigma, ", halfwidth ", halfwidth);
    // nearbyint rounds half to even in the default mode, as Python's round does.
    const int64_t r = int64_t(std::nearbyint(double(halfwidth) * sigma));
    std::vector<double> taps;
    double total = 0.0;
    for (int64_t i = -r; i <= r; ++i) {
        double x = double(i);
        // The Gaussian's 1 / sqrt(2 pi sigma^2) cancels in the normalisation.
        taps.push_back(-x / (sigma * sigma) * std::exp(-x * x / (2.0 * sigma * sigma)));
        total += std::abs(taps.back());
    }
    for (double& tap : taps) tap /= total;
    return taps;
}

Tensor gaussian_deriv3d_kernel(double sigma, double sigma_t, int64_t halfwidth) {
    std::vector<double> dt = gaussian_deriv_taps(sigma_t, halfwidth);
    std::vector<double> ds = gaussian_deriv_taps(sigma, halfwidth);
    std::vector<double> kernel;
    double total = 0.0;
    for (double a : dt)
        for (double b : ds)
            for (double c : ds) {
                kernel.push_back(a * b * c);
                total += std::abs(a * b * c);
            }
    for (double& value : kernel) value = double(float(value / total));
    return from_vector(kernel, {int64_t(dt.size()), int64_t(ds.size()), int64_t(ds.size())});
}

namespace {

void check_volumes(const char* who, const Tensor& out, const Tensor& tgt) {
    LUMEN_CHECK(out.ndim() == 5 && out.is_floating_point(), who,
                "expects floating out (B, C, T, H, W), got ", out.shape(), " ", out.dtype());
    LUMEN_CHECK(tgt.shape() == out.shape() && tgt.dtype() == out.dtype(), who, "tgt ", tgt.shape(),
                " ", tgt.dtype(), " does not match out ", out.shape(), " ", out.dtype());
}

}  // namespace

Tensor gaussian_deriv3d_loss(const Tensor& out, const Tensor& tgt,
                             const GaussianDeriv3DOptions& options) {
    const char* who = "gaussian_deriv3d_loss";
    check_volumes(who, out, tgt);
    LUMEN_CHECK(!options.sigmas.empty() && options.sigmas.size() == options.sigmas_t.size(), who,
                "needs as many sigmas as sigmas_t (at least one), got ", options.sigmas.size(),
                " and ", options.sigmas_t.size());
    const int64_t channels = out.size(1);
    Tensor difference = sub(out, tgt);
    Tensor total;
    for (size_t i = 0; i < options.sigmas.size(); ++i) {
        Tensor kernel =
            gaussian_deriv3d_kernel(options.sigmas[i], options.sigmas_t[i], options.halfwidth);
        Shape k = kernel.shape();
        Tensor weight = kernel.to(out.dtype())
                            .to(out.device())
                            .reshape({1, 1, k[0], k[1], k[2]})
                            .expand({channels, 1, k[0], k[1], k[2]})
                            .contiguous();
        Tensor filtered = conv3d(difference, weight, Tensor(), {1},
                                 {(k[0] - 1) / 2, (k[1] - 1) / 2, (k[2] - 1) / 2}, {1}, channels);
        Tensor term = mean(abs(filtered));
        total = total.defined() ? add(total, term) : term;
    }
    return div(total, double(options.sigmas.size()));
}

Tensor combined_enhance_loss(const Tensor& out, const Tensor& tgt,
                             const std::vector<double>& weights) {
    LUMEN_CHECK(weights.size() == 3, "combined_enhance_loss",
                "needs 3 weights (mse, charbonnier, gaussian3D), got ", weights.size());
    check_volumes("combined_enhance_loss", out, tgt);
    Tensor loss = mul(mse_loss(out, tgt), weights[0]);
    loss = add(loss, mul(charbonnier_loss(out, tgt, 1e-3), weights[1]));
    return add(loss, mul(gaussian_deriv3d_loss(out, tgt), weights[2]));
}

}  // namespace lumen::train
