// CPU real FFTs and Hyena's FFT convolution on contiguous rows, parallel over rows. The
// transforms are Eigen's kissfft (mixed radix 2/3/4/5 plus a generic O(p^2) butterfly for
// other prime factors); an Eigen::FFT object caches its plans and scratch, so each thread
// chunk owns one. The convolution uses a power-of-two FFT length >= 2L - 1: any length that
// large gives the same causal result without wrap-around, and powers of two are fastest.
#include <algorithm>
#include <complex>
#include <vector>

#include <unsupported/Eigen/FFT>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/fft_kernels.h"

namespace lumen::cpu {

namespace {

// An unscaled half-spectrum real FFT of a fixed length n.
template <typename T>
class RealFft {
  public:
    using Complex = std::complex<T>;
    explicit RealFft(int64_t n) : n_(n), buffer_(static_cast<size_t>(n)) {
        fft_.SetFlag(Eigen::FFT<T>::HalfSpectrum);
        fft_.SetFlag(Eigen::FFT<T>::Unscaled);
    }
    int64_t n() const { return n_; }
    int64_t bins() const { return n_ / 2 + 1; }
    // out[0 .. n/2] = sum_t x[t] e^{-2 pi i k t / n}, x of `length` values, zero-padded or cut.
    void forward(const T* x, int64_t length, Complex* out) {
        int64_t kept = std::min(length, n_);
        std::copy(x, x + kept, buffer_.begin());
        std::fill(buffer_.begin() + kept, buffer_.end(), T(0));
        if (n_ == 1) {  // kissfft cannot plan a length-1 transform
            out[0] = Complex(buffer_[0]);
            return;
        }
        fft_.fwd(out, buffer_.data(), n_);
    }
    // out[0 .. n) = Hermitian inverse of spectrum[0 .. n/2], unscaled.
    void inverse(const Complex* spectrum, T* out) {
        if (n_ == 1) {
            out[0] = spectrum[0].real();
            return;
        }
        fft_.inv(out, spectrum, n_);
    }

  private:
    int64_t n_;
    std::vector<T> buffer_;
    Eigen::FFT<T> fft_;
};

int64_t grain_for(int64_t n) { return std::max<int64_t>(1, kGrainSize / (4 * std::max<int64_t>(n, 1))); }

template <typename T>
void rfft_forward_typed(const FftRows& s, const T* x, T* out) {
    parallel_for(0, s.rows, grain_for(s.n), [&](int64_t lo, int64_t hi) {
        RealFft<T> fft(s.n);
        for (int64_t r = lo; r < hi; ++r) {
            auto* spectrum = reinterpret_cast<std::complex<T>*>(out + r * fft.bins() * 2);
            fft.forward(x + r * s.length, s.length, spectrum);
            for (int64_t k = 0; k < fft.bins(); ++k) spectrum[k] *= T(s.scale);
        }
    });
}

template <typename T>
void rfft_backward_typed(const FftRows& s, const T* grad_out, T* grad_x) {
    parallel_for(0, s.rows, grain_for(s.n), [&](int64_t lo, int64_t hi) {
        RealFft<T> fft(s.n);
        std::vector<std::complex<T>> spectrum(size_t(fft.bins()));
        std::vector<T> signal(size_t(s.n));
        for (int64_t r = lo; r < hi; ++r) {
            const auto* g = reinterpret_cast<const std::complex<T>*>(grad_out + r * fft.bins() * 2);
            // The Hermitian inverse counts bins 0 < k < n/2 twice: halve them so that it
            // returns Re(sum_k g[k] e^{+i...}) over the stored bins only.
            for (int64_t k = 0; k < fft.bins(); ++k) {
                bool single = k == 0 || 2 * k == s.n;
                spectrum[size_t(k)] = g[k] * T(single ? s.scale : s.scale / 2);
            }
            fft.inverse(spectrum.data(), signal.data());
            T* row = grad_x + r * s.length;
            int64_t kept = std::min(s.length, s.n);
            std::copy(signal.begin(), signal.begin() + kept, row);
            std::fill(row + kept, row + s.length, T(0));
        }
    });
}

template <typename T>
void irfft_forward_typed(const FftRows& s, const T* x, T* out) {
    parallel_for(0, s.rows, grain_for(s.n), [&](int64_t lo, int64_t hi) {
        RealFft<T> fft(s.n);
        std::vector<std::complex<T>> spectrum(size_t(fft.bins()));
        for (int64_t r = lo; r < hi; ++r) {
            const auto* in = reinterpret_cast<const std::complex<T>*>(x + r * s.length * 2);
            int64_t kept = std::min(s.length, fft.bins());
            for (int64_t k = 0; k < kept; ++k) spectrum[size_t(k)] = in[k] * T(s.scale);
            std::fill(spectrum.begin() + kept, spectrum.end(), std::complex<T>(0));
            fft.inverse(spectrum.data(), out + r * s.n);
        }
    });
}

template <typename T>
void irfft_backward_typed(const FftRows& s, const T* grad_out, T* grad_x) {
    parallel_for(0, s.rows, grain_for(s.n), [&](int64_t lo, int64_t hi) {
        RealFft<T> fft(s.n);
        std::vector<std::complex<T>> spectrum(size_t(fft.bins()));
        for (int64_t r = lo; r < hi; ++r) {
            fft.forward(grad_out + r * s.n, s.n, spectrum.data());
            auto* row = reinterpret_cast<std::complex<T>*>(grad_x + r * s.length * 2);
            for (int64_t k = 0; k < s.length; ++k) {
                bool single = k == 0 || 2 * k == s.n;
                row[k] = k < fft.bins() ? spectrum[size_t(k)] * T(single ? s.scale : 2 * s.scale)
                                        : std::complex<T>(0);
            }
        }
    });
}

// ---- fftconv ----

int64_t conv_fft_length(int64_t length) {
    int64_t n = 4;
    while (n < 2 * length - 1) n *= 2;
    return n;
}

// The spectra of the filters, one row of n/2 + 1 bins per channel.
template <typename T>
std::vector<std::complex<T>> filter_spectra(const ConvShape& s, const T* k, int64_t n) {
    int64_t bins = n / 2 + 1;
    std::vector<std::complex<T>> spectra(size_t(s.channels * bins));
    parallel_for(0, s.channels, grain_for(n), [&](int64_t lo, int64_t hi) {
        RealFft<T> fft(n);
        for (int64_t c = lo; c < hi; ++c)
            fft.forward(k + c * s.length, s.length, spectra.data() + c * bins);
    });
    return spectra;
}

template <typename T>
void fftconv_forward_typed(const ConvShape& s, const T* u, const T* k, const T* D, T* y) {
    const int64_t n = conv_fft_length(s.length), bins = n / 2 + 1, L = s.length;
    std::vector<std::complex<T>> filters = filter_spectra(s, k, n);
    parallel_for(0, s.outer * s.channels, grain_for(n), [&](int64_t lo, int64_t hi) {
        RealFft<T> fft(n);
        std::vector<std::complex<T>> spectrum(static_cast<size_t>(bins));
        std::vector<T> signal(static_cast<size_t>(n));
        for (int64_t r = lo; r < hi; ++r) {
            int64_t c = r % s.channels;
            fft.forward(u + r * L, L, spectrum.data());
            const std::complex<T>* filter = filters.data() + c * bins;
            T inv_n = T(1) / T(n);
            for (int64_t b = 0; b < bins; ++b) spectrum[size_t(b)] *= filter[b] * inv_n;
            fft.inverse(spectrum.data(), signal.data());
            T skip = D ? D[c] : T(0);
            for (int64_t t = 0; t < L; ++t) y[r * L + t] = signal[size_t(t)] + skip * u[r * L + t];
        }
    });
}

// y = k * u (causal) + D u  =>  grad_u[s] = sum_t g[t] k[t - s] + D g[s],
// grad_k[j] = sum_rows sum_t g[t] u[t - j], grad_D = sum_rows sum_t g[t] u[t]: correlations,
// i.e. products with conjugate spectra; the sum over rows of grad_k happens in frequency space.
template <typename T>
void fftconv_backward_typed(const ConvShape& s, const T* u, const T* k, const T* D, const T* g,
                            T* grad_u, T* grad_k, T* grad_D) {
    const int64_t n = conv_fft_length(s.length), bins = n / 2 + 1, L = s.length;
    std::vector<std::complex<T>> filters = filter_spectra(s, k, n);
    parallel_for(0, s.channels, 1, [&](int64_t lo, int64_t hi) {
        RealFft<T> fft(n);
        std::vector<std::complex<T>> g_spec(static_cast<size_t>(bins)), u_spec(static_cast<size_t>(bins)),
            product(static_cast<size_t>(bins)), k_acc(static_cast<size_t>(bins));
        std::vector<T> signal(static_cast<size_t>(n));
        const T inv_n = T(1) / T(n);
        for (int64_t c = lo; c < hi; ++c) {
            std::fill(k_acc.begin(), k_acc.end(), std::complex<T>(0));
            const std::complex<T>* filter = filters.data() + c * bins;
            T skip = D ? D[c] : T(0), d_acc = 0;
            for (int64_t o = 0; o < s.outer; ++o) {
                int64_t r = o * s.channels + c;
                fft.forward(g + r * L, L, g_spec.data());
                fft.forward(u + r * L, L, u_spec.data());
                for (int64_t b = 0; b < bins; ++b) {
                    product[size_t(b)] = g_spec[size_t(b)] * std::conj(filter[b]) * inv_n;
                    k_acc[size_t(b)] += g_spec[size_t(b)] * std::conj(u_spec[size_t(b)]);
                }
                fft.inverse(product.data(), signal.data());
                for (int64_t t = 0; t < L; ++t) {
                    grad_u[r * L + t] = signal[size_t(t)] + skip * g[r * L + t];
                    d_acc += g[r * L + t] * u[r * L + t];
                }
            }
            for (int64_t b = 0; b < bins; ++b) k_acc[size_t(b)] *= inv_n;
            fft.inverse(k_acc.data(), signal.data());
            std::copy(signal.begin(), signal.begin() + L, grad_k + c * L);
            if (grad_D) grad_D[c] = d_acc;
        }
    });
}

}  // namespace

void rfft_forward(const FftRows& shape, const void* x, void* out) {
    dispatch_floating(shape.dtype, "rfft", [&]<typename T>() {
        rfft_forward_typed<T>(shape, static_cast<const T*>(x), static_cast<T*>(out));
    });
}

void rfft_backward(const FftRows& shape, const void* grad_out, void* grad_x) {
    dispatch_floating(shape.dtype, "rfft", [&]<typename T>() {
        rfft_backward_typed<T>(shape, static_cast<const T*>(grad_out), static_cast<T*>(grad_x));
    });
}

void irfft_forward(const FftRows& shape, const void* x, void* out) {
    dispatch_floating(shape.dtype, "irfft", [&]<typename T>() {
        irfft_forward_typed<T>(shape, static_cast<const T*>(x), static_cast<T*>(out));
    });
}

void irfft_backward(const FftRows& shape, const void* grad_out, void* grad_x) {
    dispatch_floating(shape.dtype, "irfft", [&]<typename T>() {
        irfft_backward_typed<T>(shape, static_cast<const T*>(grad_out), static_cast<T*>(grad_x));
    });
}

void fftconv_forward(const ConvShape& shape, const void* u, const void* k, const void* D,
                     void* y) {
    if (shape.outer * shape.channels * shape.length == 0) return;
    dispatch_floating(shape.dtype, "fftconv", [&]<typename T>() {
        fftconv_forward_typed<T>(shape, static_cast<const T*>(u), static_cast<const T*>(k),
                                 static_cast<const T*>(D), static_cast<T*>(y));
    });
}

void fftconv_backward(const ConvShape& shape, const void* u, const void* k, const void* D,
                      const void* grad_y, void* grad_u, void* grad_k, void* grad_D) {
    dispatch_floating(shape.dtype, "fftconv", [&]<typename T>() {
        fftconv_backward_typed<T>(shape, static_cast<const T*>(u), static_cast<const T*>(k),
                                  static_cast<const T*>(D), static_cast<const T*>(grad_y),
                                  static_cast<T*>(grad_u), static_cast<T*>(grad_k),
                                  static_cast<T*>(grad_D));
    });
}

}  // namespace lumen::cpu
