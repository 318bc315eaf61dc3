// Inference on inputs larger than a model's window, as MONAI's sliding_window_inference does
// (monai/inferers/utils.py, monai/data/utils.py dense_patch_slices; nnU-Net predicts the same
// way): windows on a regular grid covering the image, each prediction weighted by a constant or
// Gaussian importance map and the overlaps averaged; and TransUNet's slice-by-slice inference of
// a 3-D volume by a 2-D model. Inference only (no gradients); any device.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace lumen::train {

struct SlidingWindowOptions {
    // The window per spatial dim (2 or 3 values); a value <= 0 takes the image's size there.
    // An image smaller than the window is padded (symmetrically, padding_value) and the result
    // cropped back.
    std::vector<int64_t> roi_size;
    double overlap = 0.25;          // in [0, 1): windows step by max(int(roi (1 - overlap)), 1)
    std::string mode = "constant";  // "constant" or "gaussian" blending
    double sigma_scale = 0.125;     // gaussian: sigma = sigma_scale * roi per dim
    int64_t sw_batch_size = 1;      // windows per predictor call (each holds the whole batch)
    double padding_value = 0.0;
};

// (N, C_in, *roi) -> (N, C_out, *roi).
using Predictor = std::function<Tensor(const Tensor&)>;

// input (B, C_in, *spatial), 2 or 3 spatial dims -> (B, C_out, *spatial) float32 on input's
// device: out = sum_w imp_w pred_w / sum_w imp_w over the windows w covering each voxel.
// Window starts per dim: 0, s, 2s, ... while a window ends before the border, and a last one
// shifted back to end at the border (one window when roi equals the size). Throws
// [sliding_window_inference] for a wrong rank, roi_size length, overlap outside [0, 1), an
// unknown mode, sigma_scale <= 0, sw_batch_size < 1, or a predictor output whose batch or
// spatial size is not the window's.
Tensor sliding_window_inference(const Tensor& input, const Predictor& predictor,
                                const SlidingWindowOptions& options);

// A 3-D volume (B, C, D, H, W) one slice at a time along `axis` (2, 3 or 4) by a 2-D predictor
// ((N, C, h, w) -> (N, C_out, h, w)), `batch` slices per call -> (B, C_out, D, H, W). Throws
// [slice_by_slice_inference] for a wrong rank, axis or batch, or a predictor output of another
// size.
Tensor slice_by_slice_inference(const Tensor& volume, const Predictor& predictor2d,
                                int64_t axis = 2, int64_t batch = 1);

// The blending weights of a window (float32, shape roi_size): 1 everywhere ("constant"), or
// ("gaussian") prod_d exp(-(x_d - c_d)^2 / (2 sigma_d^2)) with c_d = roi_d / 2 (integer
// division) and sigma_d = sigma_scale roi_d, divided by its maximum and clamped below at
// max(its minimum, 1e-3), as MONAI's compute_importance_map (which samples its Gaussian as a
// discrete filter of the centre impulse; the values differ from the closed form by < 1e-3).
Tensor importance_map(const std::vector<int64_t>& roi_size, const std::string& mode,
                      double sigma_scale = 0.125);

}  // namespace lumen::train
