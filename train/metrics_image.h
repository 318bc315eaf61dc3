// Image-quality metrics built from ops (differentiable, any device): SSIM as torchmetrics 1.4.1
// StructuralSimilarityIndexMeasure computes it (as the context-length study uses it; Wang et al.
// 2004).
#pragma once

#include <optional>
#include <vector>

#include "core/tensor.h"

namespace lumen::train {

// Shapes: preds, target (B, C, H, W) or (B, C, D, H, W), one floating dtype -> 0-d tensor.
// With window w (separable Gaussian, sigma, size n = 2 int(3.5 sigma + 0.5) + 1, normalised;
// or uniform of kernel_size when gaussian_kernel is false), R = data_range or, when absent,
// max(range(preds), range(target)) over the whole batch, c1 = (k1 R)^2, c2 = (k2 R)^2, and
// local moments mu_p = w * p, mu_t, E_pp = w * p^2, E_tt, E_pt at every window position that
// lies inside the image ("valid"; torchmetrics' reflection padding is cropped away again):
//   s_pp = max(E_pp - mu_p^2, 0), s_tt likewise, s_pt = E_pt - mu_p mu_t
//   ssim = (2 mu_p mu_t + c1)(2 s_pt + c2) / ((mu_p^2 + mu_t^2 + c1)(s_pp + s_tt + c2))
// averaged over positions and channels per image, then over the batch. Gradients: preds and
// target (also through R when data_range is absent). Throws [ssim] for other ranks, shapes or
// dtypes, a spatial size smaller than the window, sigma <= 0, an even or non-positive
// kernel_size, or data_range <= 0.
struct SSIMOptions {
    std::optional<double> data_range;
    bool gaussian_kernel = true;
    double sigma = 1.5;
    int64_t kernel_size = 11;  // the uniform window's size (the Gaussian's follows sigma)
    double k1 = 0.01;
    double k2 = 0.03;
};
Tensor ssim(const Tensor& preds, const Tensor& target, const SSIMOptions& options = {});

// The 1-D window ssim uses: n normalised taps (float64, CPU).
std::vector<double> ssim_window(const SSIMOptions& options = {});

}  // namespace lumen::train
