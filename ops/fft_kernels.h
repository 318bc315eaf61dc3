// Internal: the CPU and CUDA kernels of the real FFTs and of Hyena's FFT convolution, on
// contiguous rows (the op moves the transformed dim last), with the same signatures. Complex
// values are interleaved (re, im) pairs. CPU: a radix-4 Stockham FFT and Eigen's kissfft;
// CUDA: cuFFT.
#pragma once

#include <cstdint>

#include "core/cuda_guard.h"
#include "core/dtype.h"

namespace lumen {

// Real rows of one length, their count, and the FFT length n.
struct FftRows {
    DType dtype = DType::float32;
    int64_t rows = 0;
    int64_t length = 0;  // stored length of each input row (cut or zero-padded to n)
    int64_t n = 0;       // transform length
    double scale = 1.0;
};

// Causal FFT convolution with skip: u, y (outer, channels, length); k (channels, length);
// D (channels) or null.
struct ConvShape {
    DType dtype = DType::float32;
    int64_t outer = 0, channels = 0, length = 0;
};

// The FFT length of fftconv on both backends: a power of two >= 2 length - 1. Any length that
// large gives the causal result without wrap-around; powers of two are fastest.
inline int64_t conv_fft_length(int64_t length) {
    int64_t n = 4;
    while (n < 2 * length - 1) n *= 2;
    return n;
}

namespace cpu {
// out (rows, n/2 + 1, 2) = scale * rfft(x (rows, length) cut/padded to n).
void rfft_forward(const FftRows& shape, const void* x, void* out);
// grad_x (rows, length) from grad_out (rows, n/2 + 1, 2): the adjoint of rfft_forward,
//   grad_x[t] = scale * Re(sum_k grad_out[k] e^{2 pi i k t / n}) for t < n, 0 beyond.
void rfft_backward(const FftRows& shape, const void* grad_out, void* grad_x);

// out (rows, n) = scale * irfft(x (rows, length, 2) cut/padded to n/2 + 1), unnormalized
// Hermitian inverse (imaginary parts of the DC and Nyquist bins ignored).
void irfft_forward(const FftRows& shape, const void* x, void* out);
// grad_x (rows, length, 2) from grad_out (rows, n): the adjoint of irfft_forward,
//   grad_x[k] = scale * m_k * rfft(grad_out)[k], m_k = 1 for DC / Nyquist, 2 otherwise,
// zero for k > n/2.
void irfft_backward(const FftRows& shape, const void* grad_out, void* grad_x);

void fftconv_forward(const ConvShape& shape, const void* u, const void* k, const void* D, void* y);
// grad_u (like u), grad_k (like k), grad_D (channels, written when D is not null).
void fftconv_backward(const ConvShape& shape, const void* u, const void* k, const void* D,
                      const void* grad_y, void* grad_u, void* grad_k, void* grad_D);
}  // namespace cpu

// The same through cuFFT on the inputs' CUDA device (ops/cuda/fft.cu), float32 (R2C/C2R) and
// float64 (D2Z/Z2D); plans are cached per (n, batch, layout, type, device).
namespace cuda {
LUMEN_CUDA_API void rfft_forward(const FftRows& shape, const void* x, void* out);
LUMEN_CUDA_API void rfft_backward(const FftRows& shape, const void* grad_out, void* grad_x);
LUMEN_CUDA_API void irfft_forward(const FftRows& shape, const void* x, void* out);
LUMEN_CUDA_API void irfft_backward(const FftRows& shape, const void* grad_out, void* grad_x);
LUMEN_CUDA_API void fftconv_forward(const ConvShape& shape, const void* u, const void* k,
                                    const void* D, void* y);
LUMEN_CUDA_API void fftconv_backward(const ConvShape& shape, const void* u, const void* k,
                                     const void* D, const void* grad_y, void* grad_u, void* grad_k,
                                     void* grad_D);
}  // namespace cuda

}  // namespace lumen
