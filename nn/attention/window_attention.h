// Swin window attention (MONAI WindowAttention as copied by the context-length paper): multi-head
// softmax attention inside each window with a learned relative position bias and the shifted-window
// mask; the same slot can host another token mixer (Hyena, MambaVision) applied to every window as
// an independent sequence. Registered as the attention variant "swin_window" (tokens on a grid,
// windowing done inside).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/attention/attention.h"
#include "nn/attention/window.h"
#include "nn/linear.h"

namespace lumen::nn::attention {

// mixer "attn" (the default): per window of n tokens,
//   q, k, v = qkv(x) split as (3, heads, Hd) per token (timm layout), q <- q Hd^-1/2;
//   A = softmax(q k^T + bias [+ mask]) over the keys; y = proj(A v, heads merged);
//   bias[h, i, j] = relative_position_bias_table[idx[i, j], h], idx = the window's
//   relative_position_index cut to its top-left n x n block (the paper code's [quirk] for a
//   clipped window, exact when only the leading dim is clipped).
// Parameters: relative_position_bias_table (prod(2 w - 1), heads) (trunc-normal std 0.02),
// qkv.weight (3 dim, dim), qkv.bias (3 dim, if qkv_bias), proj.weight (dim, dim), proj.bias;
// buffer relative_position_index (prod(w), prod(w)) int64.
// Any other mixer is a registered attention variant ("hyena", "mamba", ...) built with dim,
// num_heads and `mixer_options`, held as the child named after it (state_dict attn.hyena.*),
// and run on the windows (B * nW, n, C) with no bias and no mask.
// `shift_size` is used only by the grid forward (the registry variant): the Swin block
// passes its own mask to forward_windows.
class WindowAttention : public Attention {
  public:
    WindowAttention(int64_t dim, int64_t num_heads, std::vector<int64_t> window_size,
                    bool qkv_bias = true, std::string mixer = "attn",
                    std::vector<std::pair<std::string, double>> mixer_options = {},
                    std::vector<int64_t> shift_size = {});

    // Shapes: windows (B * nW, n, dim) with n <= prod(window_size), mask (nW, n, n) or
    // undefined (additive, shared by the B images: windows are ordered image by image) ->
    // (B * nW, n, dim). Throws [WindowAttention] for a wrong shape, a mask with a non-"attn"
    // mixer, or a window count that the mask's nW does not divide.
    Tensor forward_windows(const Tensor& windows, const Tensor& mask = Tensor());

    // The whole shifted-window step on tokens: x (B, N, dim) with context.grid {H, W} or
    // {D, H, W} (N = prod(grid), no prefix tokens) -> (B, N, dim). Windows and shift are clipped
    // to the grid (get_window_size), the grid padded to window multiples, the mask built (and
    // cached) from the padded sizes. Throws [WindowAttention] for a missing or wrong grid, a
    // padding mask or causal attention.
    Tensor forward(const Tensor& x, const AttentionContext& context) override;
    using Attention::forward;
    std::string extra_repr() const override;

    std::shared_ptr<Linear> qkv, proj;
    Tensor relative_position_bias_table, relative_position_index;
    std::shared_ptr<Attention> mixer_module;  // the non-"attn" mixer, else null
    int64_t dim, num_heads, head_dim;
    double scale;
    std::vector<int64_t> window_size, shift_size;
    std::string mixer;
    // SoftmaxAttention::fused (nn/attention/mhsa.h): the windows' maps are never stored; the
    // relative position bias gets its gradient from the fused backward.
    bool fused = true;

  private:
    Tensor attention_windows(const Tensor& windows, const Tensor& mask);
    Tensor position_bias(int64_t n) const;  // (heads, n, n)
    MaskCache masks_;                       // the grid forward's shift mask
};

// Registry factory for "swin_window": dim, num_heads, qkv_bias; options "window" (isotropic
// window size, default 7), "shift" (default 0: no shifted windows), "spatial_dims" (2 or 3,
// default 2). Throws [swin_window] for an unknown option or a bad size.
std::shared_ptr<Attention> make_swin_window_attention(const AttentionConfig& config);

}  // namespace lumen::nn::attention
