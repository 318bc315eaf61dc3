// SSIM: the five local moments come from one depthwise, separable "valid" convolution of the
// stacked maps (preds, target, preds^2, target^2, preds target), one pass per spatial dim.
#include "train/metrics_image.h"

#include <cmath>

#include "ops/conv.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "ops/shape.h"

namespace lumen::train {

std::vector<double> ssim_window(const SSIMOptions& options) {
    if (!options.gaussian_kernel) {
        LUMEN_CHECK(options.kernel_size > 0 && options.kernel_size % 2 == 1, "ssim",
                    "kernel_size must be odd and positive, got ", options.kernel_size);
        return std::vector<double>(size_t(options.kernel_size), 1.0 / double(options.kernel_size));
    }
    LUMEN_CHECK(options.sigma > 0, "ssim", "sigma must be > 0, got ", options.sigma);
    const int64_t n = 2 * int64_t(3.5 * options.sigma + 0.5) + 1;
    std::vector<double> taps;
    double total = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        double x = (double(i) - double(n - 1) / 2.0) / options.sigma;
        taps.push_back(std::exp(-x * x / 2.0));
        total += taps.back();
    }
    for (double& tap : taps) tap /= total;
    return taps;
}

namespace {

// Depthwise "valid" filtering of x (B, channels, *spatial) with `taps` along every spatial dim.
Tensor separable_window(const Tensor& x, const std::vector<double>& taps) {
    const int64_t channels = x.size(1), spatial = x.ndim() - 2, n = int64_t(taps.size());
    Tensor window = from_vector(taps, {n}).to(x.dtype()).to(x.device());
    Tensor out = x;
    for (int64_t d = 0; d < spatial; ++d) {
        Shape shape{channels, 1};
        for (int64_t e = 0; e < spatial; ++e) shape.push_back(e == d ? n : 1);
        Shape one(shape.size(), 1);
        one[size_t(2 + d)] = n;
        Tensor weight = window.reshape(one).expand(shape).contiguous();
        out = spatial == 2 ? conv2d(out, weight, Tensor(), {1}, {0}, {1}, channels)
                           : conv3d(out, weight, Tensor(), {1}, {0}, {1}, channels);
    }
    return out;
}

// R: the given data range, or max(range(preds), range(target)) as a 0-d tensor.
Tensor data_range_of(const Tensor& preds, const Tensor& target, const SSIMOptions& options) {
    if (options.data_range) {
        LUMEN_CHECK(*options.data_range > 0, "ssim", "data_range must be > 0, got ",
                    *options.data_range);
        return scalar_tensor(*options.data_range, preds.dtype(), preds.device());
    }
    return maximum(sub(max(preds), min(preds)), sub(max(target), min(target)));
}

}  // namespace

Tensor ssim(const Tensor& preds, const Tensor& target, const SSIMOptions& options) {
    LUMEN_CHECK((preds.ndim() == 4 || preds.ndim() == 5) && preds.is_floating_point(), "ssim",
                "expects floating preds (B, C, H, W) or (B, C, D, H, W), got ", preds.shape(), " ",
                preds.dtype());
    LUMEN_CHECK(target.shape() == preds.shape() && target.dtype() == preds.dtype(), "ssim",
                "target ", target.shape(), " ", target.dtype(), " does not match preds ",
                preds.shape(), " ", preds.dtype());
    std::vector<double> taps = ssim_window(options);
    for (int64_t d = 2; d < preds.ndim(); ++d)
        LUMEN_CHECK(preds.size(d) >= int64_t(taps.size()), "ssim", "spatial size ", preds.size(d),
                    " is smaller than the window (", taps.size(), "): shape ", preds.shape());
    Tensor range = data_range_of(preds, target, options);
    Tensor c1 = mul(square(range), options.k1 * options.k1);
    Tensor c2 = mul(square(range), options.k2 * options.k2);
    const int64_t channels = preds.size(1);
    Tensor stacked =
        cat({preds, target, mul(preds, preds), mul(target, target), mul(preds, target)}, 1);
    Tensor moments = separable_window(stacked, taps);
    Tensor mu_p = moments.narrow(1, 0, channels), mu_t = moments.narrow(1, channels, channels);
    Tensor mu_pp = mul(mu_p, mu_p), mu_tt = mul(mu_t, mu_t), mu_pt = mul(mu_p, mu_t);
    Tensor s_pp = clamp(sub(moments.narrow(1, 2 * channels, channels), mu_pp), 0.0, std::nullopt);
    Tensor s_tt = clamp(sub(moments.narrow(1, 3 * channels, channels), mu_tt), 0.0, std::nullopt);
    Tensor s_pt = sub(moments.narrow(1, 4 * channels, channels), mu_pt);
    Tensor numerator = mul(add(mul(mu_pt, 2.0), c1), add(mul(s_pt, 2.0), c2));
    Tensor denominator = mul(add(add(mu_pp, mu_tt), c1), add(add(s_pp, s_tt), c2));
    // Every image has as many positions, so the mean of the per-image means is the overall mean.
    return mean(div(numerator, denominator));
}

}  // namespace lumen::train
