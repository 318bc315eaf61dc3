// Real FFTs (torch.fft.rfft / irfft) and the FFT causal convolution of Hyena (Poli et al.,
// "Hyena Hierarchy", 2023: the long convolution computed as irfft(rfft(u) rfft(k))).
// Complex tensors: lumen has no complex dtype, so a complex tensor is a real tensor with a
// trailing dim of size 2 holding (real, imaginary), like torch.view_as_real. CPU and CUDA (cuFFT).
#pragma once

#include <optional>
#include <string>

#include "core/tensor.h"

namespace lumen {

// X[k] = s * sum_t x[t] exp(-2 pi i k t / n), k = 0 .. n/2, along `dim` of a real float32 or
// float64 tensor; x is cut or zero-padded to n along dim (default n = its size there).
// Returns shape x.shape with dim -> n/2 + 1, plus a trailing (re, im) dim of size 2.
// norm: "backward" (s = 1, the default), "forward" (1/n) or "ortho" (1/sqrt(n)).
// Any n >= 1 (mixed-radix FFT; large prime factors cost O(n p)). Differentiable.
// Throws [rfft] for a non-floating dtype, n < 1, a bad dim or an unknown norm.
Tensor rfft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
            const std::string& norm = "backward");

// The real signal of length n whose half spectrum is X, along `dim` of the complex dims of X
// (X is (..., K, ..., 2), the trailing 2 being (re, im); dim does not count it):
//   x[t] = s * (X[0] + 2 sum_{0<k<n/2} Re(X[k] e^{2 pi i k t / n}) + X[n/2] (-1)^t [n even])
// X is cut or zero-padded to n/2 + 1 along dim; the imaginary parts of X[0] (and of X[n/2]
// for even n) are ignored, as in PyTorch. Default n = 2 (K - 1). norm: "backward"
// (s = 1/n, the default), "forward" (1) or "ortho" (1/sqrt(n)). Differentiable.
// Throws [irfft] for a missing trailing 2, n < 1, a bad dim or an unknown norm.
Tensor irfft(const Tensor& x, std::optional<int64_t> n = std::nullopt, int64_t dim = -1,
             const std::string& norm = "backward");

// Hyena's long causal convolution with skip term, per channel c:
//   y[..., c, t] = sum_{s <= t} k[c, t - s] u[..., c, s] + D[c] u[..., c, t]
// Shapes: u (..., H, L) (any number of leading dims, e.g. (B, H, L) or (B, heads, H, L));
// k (H, L) or (1, H, L); D (H) or undefined. Computed with zero-padded real FFTs of a length
// >= 2L - 1 (no wrap-around), exactly the zoology / ref_context `causal_fft_conv` result.
// Returns u's shape and dtype (u, k, D all float32 or all float64). One autograd node whose
// backward is again FFTs (the adjoint of a causal convolution is a correlation); gradients for
// u, k and D. Throws [fftconv] for mismatched shapes, dtypes or devices.
Tensor fftconv(const Tensor& u, const Tensor& k, const Tensor& D = Tensor());

}  // namespace lumen
