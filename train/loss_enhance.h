// Denoising ("enhancement") losses of the context-length study (Hooper & Xue, the
// authors' loss/loss_functions/enhancement_losses.py): the Gaussian-derivative 3-D loss and the
// combined MSE + Charbonnier + Gaussian-derivative loss. mse_loss, charbonnier_loss and
// cross_entropy are ops (ops/loss.h). Built from ops: autograd, any device.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "train/loss.h"

namespace lumen::train {

// The first-derivative-of-Gaussian taps for sigma: r = round(halfwidth sigma) (ties to even,
// as Python's round: 0.75 -> 1, 1.5 -> 2), x = -r..r, d(x) = -x exp(-x^2 / (2 sigma^2)),
// normalised to sum |d| = 1. 2r + 1 values. Throws [gaussian_deriv3d_loss] for sigma <= 0.
std::vector<double> gaussian_deriv_taps(double sigma, int64_t halfwidth = 3);

// K[t, i, j] = d_{sigma_t}[t] d_sigma[i] d_sigma[j], normalised to sum |K| = 1 and rounded to
// float32 (the official kernel is a float32 tensor); returned as (kT, kH, kW) float64 on CPU.
Tensor gaussian_deriv3d_kernel(double sigma, double sigma_t, int64_t halfwidth = 3);

// The paper's "Gaussian loss" (GaussianDeriv3D_Loss):
//   loss = (1/n) sum over the n (sigma, sigma_t) pairs of mean |K * out - K * tgt|
// with * the 3-D cross-correlation with zero "same" padding, applied per channel (the official
// code has one channel; C > 1 filters each channel alike). The kernel's centre slice along T
// is 0, so the loss is exactly 0 with zero gradient when T = 1 (2-D data).
// Shapes: out, tgt (B, C, T, H, W) of one floating dtype -> 0-d. Gradients: out and tgt.
// Throws [gaussian_deriv3d_loss] for other ranks, different shapes, or sigma lists of
// different lengths or empty.
struct GaussianDeriv3DOptions {
    std::vector<double> sigmas{0.25, 0.5, 1.0};    // along H and W
    std::vector<double> sigmas_t{0.25, 0.5, 0.5};  // along T
    int64_t halfwidth = 3;
};
Tensor gaussian_deriv3d_loss(const Tensor& out, const Tensor& tgt,
                             const GaussianDeriv3DOptions& options = {});

// The denoising loss: weights[0] mse + weights[1] charbonnier (eps 1e-3) + weights[2]
// gaussian_deriv3d (Combined_Loss(["mse", "charbonnier", "gaussian3D"], [1, 1, 1])).
// Shapes as gaussian_deriv3d_loss. Throws [combined_enhance_loss] unless 3 weights.
Tensor combined_enhance_loss(const Tensor& out, const Tensor& tgt,
                             const std::vector<double>& weights = {1.0, 1.0, 1.0});

class CombinedEnhanceLoss : public Loss {
  public:
    explicit CombinedEnhanceLoss(std::vector<double> weights = {1.0, 1.0, 1.0})
        : weights(std::move(weights)) {}
    Tensor forward(const Tensor& input, const Tensor& target) const override {
        return combined_enhance_loss(input, target, weights);
    }
    std::string name() const override { return "combined_enhance"; }
    std::vector<double> weights;
};

}  // namespace lumen::train
