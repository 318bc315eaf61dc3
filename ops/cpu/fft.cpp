// CPU real FFTs and Hyena's FFT convolution on contiguous rows, parallel over rows. Powers
// of two use the radix-2 Stockham FFT below; other lengths Eigen's kissfft (mixed radix
// 2/3/4/5 plus a generic O(p^2) butterfly for other prime factors). An FFT object caches its
// plans and scratch, so each thread chunk owns one. The convolution uses a power-of-two FFT length
// >= 2L - 1: any length that large gives the same causal result without wrap-around, and powers of
// two are fastest.
#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include <unsupported/Eigen/FFT>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/fft_kernels.h"

namespace lumen::cpu {

namespace {

// A complex FFT of a power-of-two length m on split (re, im) arrays: Stockham autosort (no
// bit reversal), radix-4 passes plus one radix-2 pass when log2 m is odd. A pass reads
// x[q + s j] and writes y[q + s (r p + k)], so the inner loop over q is contiguous and
// vectorizes once the stride s is large. Twiddles are tabulated per pass. Forward sign
// e^{-2 pi i jk/m}; the inverse conjugates around the forward transform.
//
// A pass's 16 streams (a, b, c, d of re and im read, four of each written) lie m/4 apart in
// their arrays, a multiple of 4 KiB from m = 4096 on: in one array they share an L1 set. The
// object holds an input pair (in_re, in_im) and its work pair in one buffer, each array
// kPad floats after the one before, so that the four arrays fall in different sets (arrays
// allocated one by one had started at the same offset within a page, sixteen streams on one
// 8-way set: the L = 16384 convolution ran 65-140 ms by where the allocations happened to lie).
template <typename T>
class Pow2Fft {
  public:
    static constexpr int64_t kPad = 32;  // two cache lines
    explicit Pow2Fft(int64_t m) : m_(m), buffer_(size_t(4 * (m + kPad))) {
        for (int64_t len = m; len >= 2; len /= 4) {
            bool radix2 = len == 2;
            int64_t count = radix2 ? 1 : len / 4;
            for (int64_t p = 0; p < count; ++p) {
                for (int64_t power = 1; power <= (radix2 ? 1 : 3); ++power) {
                    double angle = -2.0 * std::numbers::pi * double(power * p) / double(len);
                    twiddles_.push_back(T(std::cos(angle)));
                    twiddles_.push_back(T(std::sin(angle)));
                }
            }
            if (radix2) break;
        }
    }
    // The input pair: forward and inverse are fastest on these (any other arrays work).
    T* in_re() { return buffer_.data(); }
    T* in_im() { return buffer_.data() + (m_ + kPad); }
    void forward(T* re, T* im) {
        T *xr = re, *xi = im, *yr = buffer_.data() + 2 * (m_ + kPad),
          *yi = buffer_.data() + 3 * (m_ + kPad);
        const T* w = twiddles_.data();
        int64_t len = m_, s = 1;
        for (; len >= 4; len /= 4, s *= 4) {
            const int64_t quarter = len / 4;
            if (s < 8) {  // short columns: loop over the butterflies instead
                for (int64_t q = 0; q < s; ++q)
                    radix4(xr + q, xi + q, s * quarter, yr + q, yi + q, s, w, 6, quarter, s, 4 * s);
            } else {
                for (int64_t p = 0; p < quarter; ++p)
                    radix4(xr + s * p, xi + s * p, s * quarter, yr + s * 4 * p, yi + s * 4 * p, s,
                           w + 6 * p, 0, s, 1, 1);
            }
            w += 6 * quarter;
            std::swap(xr, yr);
            std::swap(xi, yi);
        }
        if (len == 2) {  // last pass, twiddle 1: y[q + s k] = x[q] +- x[q + s]
            for (int64_t q = 0; q < s; ++q) {
                T ar = xr[q], ai = xi[q], br = xr[q + s], bi = xi[q + s];
                yr[q] = ar + br;
                yi[q] = ai + bi;
                yr[q + s] = ar - br;
                yi[q + s] = ai - bi;
            }
            std::swap(xr, yr);
            std::swap(xi, yi);
        }
        if (xr != re) {
            std::copy(xr, xr + m_, re);
            std::copy(xi, xi + m_, im);
        }
    }
    void inverse(T* re, T* im) {
        for (int64_t j = 0; j < m_; ++j) im[j] = -im[j];
        forward(re, im);
        for (int64_t j = 0; j < m_; ++j) im[j] = -im[j];
    }

  private:
    // `count` radix-4 butterflies: butterfly j reads a, b, c, d at x + j * in_stride +
    // {0, 1, 2, 3} * step and writes (a + c) + (b + d), w1 ((a - c) - i (b - d)),
    // w2 ((a + c) - (b + d)), w3 ((a - c) + i (b - d)) at y + j * out_stride + {0, 1, 2, 3} * s,
    // with its twiddles (w1, w2, w3 as re, im pairs) at w + j * w_stride (0: one set for
    // all). __restrict: x and y are different buffers, so the loop vectorizes.
    static void radix4(const T* __restrict xr, const T* __restrict xi, int64_t step,
                       T* __restrict yr, T* __restrict yi, int64_t s, const T* __restrict w,
                       int64_t w_stride, int64_t count, int64_t in_stride, int64_t out_stride) {
        for (int64_t j = 0; j < count; ++j) {
            const T* wj = w + j * w_stride;
            const T w1r = wj[0], w1i = wj[1], w2r = wj[2], w2i = wj[3], w3r = wj[4], w3i = wj[5];
            const int64_t i = j * in_stride, o = j * out_stride;
            T ar = xr[i], ai = xi[i], br = xr[i + step], bi = xi[i + step];
            T cr = xr[i + 2 * step], ci = xi[i + 2 * step];
            T dr = xr[i + 3 * step], di = xi[i + 3 * step];
            T apc_r = ar + cr, apc_i = ai + ci, amc_r = ar - cr, amc_i = ai - ci;
            T bpd_r = br + dr, bpd_i = bi + di, bmd_r = br - dr, bmd_i = bi - di;
            T t1r = amc_r + bmd_i, t1i = amc_i - bmd_r;  // (a - c) - i (b - d)
            T t2r = apc_r - bpd_r, t2i = apc_i - bpd_i;
            T t3r = amc_r - bmd_i, t3i = amc_i + bmd_r;  // (a - c) + i (b - d)
            yr[o] = apc_r + bpd_r;
            yi[o] = apc_i + bpd_i;
            yr[o + s] = t1r * w1r - t1i * w1i;
            yi[o + s] = t1r * w1i + t1i * w1r;
            yr[o + 2 * s] = t2r * w2r - t2i * w2i;
            yi[o + 2 * s] = t2r * w2i + t2i * w2r;
            yr[o + 3 * s] = t3r * w3r - t3i * w3i;
            yi[o + 3 * s] = t3r * w3i + t3i * w3r;
        }
    }

    int64_t m_;
    std::vector<T> buffer_;  // in_re, in_im, then the work pair, kPad apart
    std::vector<T> twiddles_;
};

bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// a * b without std::complex's NaN/inf recovery path (a library call per product).
template <typename T>
std::complex<T> cmul(std::complex<T> a, std::complex<T> b) {
    return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}
template <typename T>
std::complex<T> cmul_conj(std::complex<T> a, std::complex<T> b) {  // a * conj(b)
    return {a.real() * b.real() + a.imag() * b.imag(), a.imag() * b.real() - a.real() * b.imag()};
}

// An unscaled half-spectrum real FFT of a fixed length n. Powers of two >= 4 pack the real
// signal into a complex one of length m = n/2 (z_j = x_2j + i x_2j+1) and split its spectrum
// into those of the even and odd samples, E_k = (Z_k + conj Z_m-k)/2 and
// O_k = (Z_k - conj Z_m-k)/(2i), X_k = E_k + e^{-2 pi i k/n} O_k; other lengths use kissfft.
template <typename T>
class RealFft {
  public:
    using Complex = std::complex<T>;
    explicit RealFft(int64_t n)
        : n_(n),
          packed_(is_pow2(n) && n >= 4),
          buffer_(static_cast<size_t>(n)),
          pow2_(packed_ ? n / 2 : 1) {
        fft_.SetFlag(Eigen::FFT<T>::HalfSpectrum);
        fft_.SetFlag(Eigen::FFT<T>::Unscaled);
        if (!packed_) return;
        const int64_t m = n / 2;
        for (int64_t k = 0; k < m; ++k) {
            double angle = -2.0 * std::numbers::pi * double(k) / double(n);
            rotation_.emplace_back(T(std::cos(angle)), T(std::sin(angle)));
        }
    }
    int64_t n() const { return n_; }
    int64_t bins() const { return n_ / 2 + 1; }
    // out[0 .. n/2] = sum_t x[t] e^{-2 pi i k t / n}, x of `length` values, zero-padded or cut.
    void forward(const T* x, int64_t length, Complex* out) {
        int64_t kept = std::min(length, n_);
        std::copy(x, x + kept, buffer_.begin());
        std::fill(buffer_.begin() + kept, buffer_.end(), T(0));
        if (packed_) return forward_packed(out);
        if (n_ == 1) {  // kissfft cannot plan a length-1 transform
            out[0] = Complex(buffer_[0]);
            return;
        }
        fft_.fwd(out, buffer_.data(), n_);
    }
    // out[0 .. n) = Hermitian inverse of spectrum[0 .. n/2], unscaled.
    void inverse(const Complex* spectrum, T* out) {
        if (packed_) return inverse_packed(spectrum, out);
        if (n_ == 1) {
            out[0] = spectrum[0].real();
            return;
        }
        fft_.inv(out, spectrum, n_);
    }

  private:
    void forward_packed(Complex* out) {
        const int64_t m = n_ / 2;
        T *re = pow2_.in_re(), *im = pow2_.in_im();
        for (int64_t j = 0; j < m; ++j) {
            re[j] = buffer_[size_t(2 * j)];
            im[j] = buffer_[size_t(2 * j + 1)];
        }
        pow2_.forward(re, im);
        // k = 0 and k = m (where e^{-2 pi i k/n} = -1) mirror onto Z_0 itself.
        out[0] = Complex(re[0] + im[0], 0);
        out[m] = Complex(re[0] - im[0], 0);
        for (int64_t k = 1; k < m; ++k) {
            Complex z(re[k], im[k]);
            Complex mirror(re[m - k], -im[m - k]);
            Complex sum = z + mirror, diff = z - mirror;
            Complex even = sum * T(0.5), odd(diff.imag() * T(0.5), -diff.real() * T(0.5));
            out[k] = even + cmul(rotation_[size_t(k)], odd);
        }
    }
    // Z_k = 2 (E_k + i O_k) with E_k = (X_k + conj X_m-k)/2, O_k = (X_k - conj X_m-k)/(2w_k);
    // the inverse FFT of Z holds the even samples in re and the odd ones in im.
    void inverse_packed(const Complex* spectrum, T* out) {
        const int64_t m = n_ / 2;
        T *re = pow2_.in_re(), *im = pow2_.in_im();
        for (int64_t k = 0; k < m; ++k) {
            Complex x = spectrum[k], mirror = std::conj(spectrum[m - k]);
            if (k == 0) {  // the imaginary parts of the DC and Nyquist bins do not exist
                x = Complex(spectrum[0].real(), 0);
                mirror = Complex(spectrum[m].real(), 0);
            }
            Complex rotated = cmul_conj(x - mirror, rotation_[size_t(k)]);
            Complex z = (x + mirror) + Complex(-rotated.imag(), rotated.real());  // + i rotated
            re[k] = z.real();
            im[k] = z.imag();
        }
        pow2_.inverse(re, im);
        for (int64_t j = 0; j < m; ++j) {
            out[2 * j] = re[j];
            out[2 * j + 1] = im[j];
        }
    }

    int64_t n_;
    bool packed_;
    std::vector<T> buffer_;
    std::vector<Complex> rotation_;
    Pow2Fft<T> pow2_;
    Eigen::FFT<T> fft_;
};

int64_t grain_for(int64_t n) {
    return std::max<int64_t>(1, kGrainSize / (4 * std::max<int64_t>(n, 1)));
}

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
            for (int64_t b = 0; b < bins; ++b)
                spectrum[size_t(b)] = cmul(spectrum[size_t(b)], filter[b]) * inv_n;
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
        std::vector<std::complex<T>> g_spec(static_cast<size_t>(bins)),
            u_spec(static_cast<size_t>(bins)), product(static_cast<size_t>(bins)),
            k_acc(static_cast<size_t>(bins));
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
                    product[size_t(b)] = cmul_conj(g_spec[size_t(b)], filter[b]) * inv_n;
                    k_acc[size_t(b)] += cmul_conj(g_spec[size_t(b)], u_spec[size_t(b)]);
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

void fftconv_forward(const ConvShape& shape, const void* u, const void* k, const void* D, void* y) {
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
