// Rotary position embedding (RoPE, Su et al. 2021) with interleaved pairs, GPT-J style, as the
// official Differential Transformer uses it through flash-attn's apply_rotary_emb: the tables and
// the rotation, built from ops so that it runs on any device.
#pragma once

#include <utility>

#include "core/tensor.h"

namespace lumen::nn {

// cos and sin of angle[t, i] = t * base^(-2i / rot_dim), t = 0..length-1, i = 0..rot_dim/2-1:
// two (length, rot_dim / 2) tensors of `dtype` on `device`, computed in double. Constant (no
// gradient). Throws [rope] unless length >= 0 and rot_dim is positive and even.
std::pair<Tensor, Tensor> rope_cos_sin(int64_t length, int64_t rot_dim, double base = 10000.0,
                                       DType dtype = kDefaultFloat, Device device = Device::cpu());

// Rotates every pair (x[.., 2i], x[.., 2i+1]) of token t by angle[t, i]:
//   (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos).
// Shapes: x (B, N, heads, d), cos/sin (N, d/2) -> (B, N, heads, d). Differentiable in x (the
// backward is the rotation by -angle). Throws [rope] for mismatched shapes.
Tensor apply_rope_interleaved(const Tensor& x, const Tensor& cos, const Tensor& sin);

}  // namespace lumen::nn
