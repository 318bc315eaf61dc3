// The window geometry of Swin (MONAI swin_unetr.py as copied by the context-length paper): the
// clipped window and shift of a feature map (get_window_size), the shifted window attention mask
// (compute_mask), the relative position index of a window, and the windowed token mixing shared by
// the Swin block (nn/swin/swin_block.h) and the "swin_window" attention variant
// (nn/attention/window_attention.h): pad, cyclic shift, partition, mix every window, reverse,
// unshift, crop.
#pragma once

#include <functional>
#include <vector>

#include "core/tensor.h"

namespace lumen::nn::attention {

// The window and shift actually used on a map of spatial sizes `spatial`: every dim with
// spatial_i <= window_i (note <=) gets window_i = spatial_i and shift_i = 0.
// Throws [get_window_size] when the three lists differ in length or a window is not positive.
struct WindowShift {
    std::vector<int64_t> window, shift;
};
WindowShift get_window_size(const std::vector<int64_t>& spatial, const std::vector<int64_t>& window,
                            const std::vector<int64_t>& shift);

// The additive mask of shifted-window attention, (nW, n, n) with n = prod(window) and
// nW = prod(dims / window): 0 where two tokens of a window carry the same region label of the
// cyclically shifted grid, -100 (not -inf) otherwise. dims are the padded sizes (multiples of
// the window). Region labels: along each dim the slices [0, dims-w), [dims-w, dims-s),
// [dims-s, dims) in Python's slice(-w), slice(-w, -s), slice(-s, None) semantics, so a zero
// shift leaves that dim unsplit; combinations are labelled in nested order, later writes win.
// Built on the CPU (a constant table), then moved to `device`. Throws [compute_mask] for
// mismatched lists, a dims entry that is not a multiple of its window, or a shift >= window.
Tensor compute_mask(const std::vector<int64_t>& dims, const std::vector<int64_t>& window,
                    const std::vector<int64_t>& shift, DType dtype = kDefaultFloat,
                    Device device = Device::cpu());

// The (n, n) int64 index into a (prod(2 w_k - 1), heads) bias table: for window positions
// i, j (row-major coordinates c), index = sum_k (c_i,k - c_j,k + w_k - 1) prod_{k'>k}(2 w_k' - 1).
// Throws [relative_position_index] for an empty window or a non-positive size.
Tensor relative_position_index(const std::vector<int64_t>& window);

// Mixes the tokens of every (shifted) window of a channels-last map:
//   zero-pad each spatial dim at its end to a multiple of window; roll by -shift when any
//   shift > 0; partition into windows (B * nW, n, C) (ops/layout.h order); y = mix(windows);
//   reverse; roll by +shift; crop back to the input size.
// Shapes: x (B, *S, C) with 2 or 3 spatial dims -> (B, *S, C); mix maps (B * nW, n, C) to the
// same shape. `window` and `shift` are the clipped ones (get_window_size). Padded tokens are
// ordinary keys (not masked). Throws [swin] for a rank or list length that does not fit.
using WindowMixer = std::function<Tensor(const Tensor& windows)>;
Tensor window_mix(const Tensor& x, const std::vector<int64_t>& window,
                  const std::vector<int64_t>& shift, const WindowMixer& mix);

// Padded sizes ceil(S / window) * window, the dims compute_mask wants.
std::vector<int64_t> padded_sizes(const std::vector<int64_t>& spatial,
                                  const std::vector<int64_t>& window);

// The shift mask of a map of spatial sizes `spatial` with the clipped window and shift `ws`,
// kept between calls (training repeats the same sizes; the mask of a large map is big):
// undefined when no shift is positive, else compute_mask(padded_sizes(spatial, ws.window),
// ws.window, ws.shift) in `dtype` on `device`, rebuilt only when one of them changes.
class MaskCache {
  public:
    Tensor get(const std::vector<int64_t>& spatial, const WindowShift& ws, DType dtype,
               Device device);

  private:
    std::vector<int64_t> key_;
    Tensor mask_;
};

}  // namespace lumen::nn::attention
