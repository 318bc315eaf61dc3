// Inference on inputs larger than a model's window, as MONAI's sliding_window_inference
// (monai/inferers/utils.py; window grid from monai/data/utils.py dense_patch_slices, weights from
// compute_importance_map): windows on a regular grid cover the image, each prediction is weighted
// by a constant or Gaussian importance map and the overlaps are averaged. Also TransUNet's
// slice-by-slice inference of a 3-D volume by a 2-D model. Inference only (no gradients).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace lumen::train {

struct SlidingWindowOptions {
    // The window per spatial dim (2 or 3 values). A value <= 0 takes the image's size along that
    // dim; a value larger than the image pads the image (as MONAI does, see padding_value).
    std::vector<int64_t> roi_size;
    double overlap = 0.25;          // in [0, 1): windows step by max(int(roi (1 - overlap)), 1)
    std::string mode = "constant";  // "constant" or "gaussian" blending
    double sigma_scale = 0.125;     // gaussian: sigma = sigma_scale * roi per dim; > 0
    int64_t sw_batch_size = 1;      // windows per predictor call (>= 1)
    // Where the image is smaller than the window it is padded with this value up to the window,
    // diff / 2 before and the rest after, and the result is cropped back.
    double padding_value = 0.0;
};

// (N, C_in, *roi) -> (N, C_out, *roi).
using Predictor = std::function<Tensor(const Tensor&)>;

// Shapes: input (B, C_in, *spatial) with 2 or 3 spatial dims -> (B, C_out, *spatial), float32 on
// the input's device (C_out from the predictor's first output).
//   out = sum_w imp_w * pred_w / sum_w imp_w   over the windows w covering each voxel
// Window starts per dim: 0, s, 2s, ... up to the first window that reaches the border, which is
// shifted back to end there; s = max(int(roi (1 - overlap)), 1), one window when roi equals the
// size. Windows run row-major over (batch item, window grid); each predictor call gets up to
// sw_batch_size of them as (N, C_in, *roi), in the input's dtype (integer inputs as float32).
// Runs without recording gradients. Throws [sliding_window_inference] for an undefined input or
// predictor, a rank other than 4 or 5, an empty dim, a roi_size of the wrong length, overlap
// outside [0, 1), an unknown mode, sigma_scale <= 0, sw_batch_size < 1, a non-finite
// padding_value, or a predictor output whose batch, window size, channels or device is not the
// expected one.
Tensor sliding_window_inference(const Tensor& input, const Predictor& predictor,
                                const SlidingWindowOptions& options);

// Shapes: volume (B, C, D, H, W) -> (B, C_out, D, H, W), float32 on the volume's device.
// Each slice along `axis` (2 = D, 3 = H, 4 = W) goes through a 2-D predictor, `batch` slices of
// every batch item per call: (B * k, C, a, b) -> (B * k, C_out, a, b), where (a, b) are the two
// other spatial dims in order (TransUNet's evaluation protocol). Runs without recording
// gradients. Throws [slice_by_slice_inference] for an undefined volume or predictor, a rank other
// than 5, an empty dim, an axis outside 2..4, batch < 1, or a predictor output of another shape
// or device.
Tensor slice_by_slice_inference(const Tensor& volume, const Predictor& predictor2d,
                                int64_t axis = 2, int64_t batch = 1);

// The Gaussian blending weights of a window, float32 on the CPU, shape roi_size (1 to 3 dims):
//   w(x) = prod_d exp(-(x_d - c_d)^2 / (2 sigma_d^2)),  c_d = (roi_d - 1) / 2,
//   sigma_d = sigma_scale * roi_d,
// divided by its maximum (1 exactly at the centre voxel(s)), then raised to at least
// max(its minimum, 1e-3), as MONAI's compute_importance_map, so that no weight is zero.
// Throws [gaussian_importance_map] for a roi_size of 0 or more than 3 values, a value < 1, or
// sigma_scale <= 0.
Tensor gaussian_importance_map(const std::vector<int64_t>& roi_size, double sigma_scale);

}  // namespace lumen::train
