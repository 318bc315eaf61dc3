// CUDA real FFTs and Hyena's FFT convolution with the semantics of ops/cpu/fft.cpp, through
// cuFFT: batched 1-D plans (cufftMakePlanMany64) cached per (device, n, batch, layout, type)
// and destroyed at exit, with work areas from the caching allocator. Small kernels do the
// zero-padding, cropping, scaling and spectrum products around the transforms. Complex values
// are interleaved (re, im) pairs, which is cufftComplex's layout.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include <cufft.h>

#include "core/cuda/cuda_check.h"
#include "core/cuda/kernel_util.cuh"
#include "core/cuda/scratch.cuh"
#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/fft_kernels.h"

namespace lumen::cuda {
namespace {

const char* cufft_error_name(cufftResult result) {
    switch (result) {
        case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN";
        case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED";
        case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE";
        case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE";
        case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR";
        case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED";
        case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED";
        case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE";
        case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA";
        case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE";
        case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE";
        case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
        case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED";
        default: return "unknown cufftResult";
    }
}

// Wraps every cuFFT call: throws [cufft] naming the call and its cufftResult.
#define LUMEN_CUFFT_CHECK(call)                                                                \
    do {                                                                                       \
        cufftResult lumen_fft_status_ = (call);                                                \
        if (lumen_fft_status_ != CUFFT_SUCCESS)                                                \
            LUMEN_FAIL("cufft", #call, " failed: ", cufft_error_name(lumen_fft_status_), " (", \
                       __FILE__, ":", __LINE__, ")");                                          \
    } while (0)

// ---- plans ----

// One batched 1-D real transform: n points per row, rows `idist` / `odist` elements apart.
struct PlanKey {
    int device;
    int64_t n, batch, idist, odist;
    cufftType type;
    bool operator<(const PlanKey& other) const {
        return std::tie(device, n, batch, idist, odist, type) <
               std::tie(other.device, other.n, other.batch, other.idist, other.odist, other.type);
    }
};

// Owns a cufftHandle. Errors from cufftDestroy are ignored: at exit the CUDA context may
// already be gone, and a destructor must not throw.
class PlanHandle {
  public:
    PlanHandle() { LUMEN_CUFFT_CHECK(cufftCreate(&handle_)); }
    ~PlanHandle() { cufftDestroy(handle_); }
    PlanHandle(const PlanHandle&) = delete;
    PlanHandle& operator=(const PlanHandle&) = delete;
    cufftHandle get() const { return handle_; }

  private:
    cufftHandle handle_ = 0;
};

struct Plan {
    PlanHandle handle;
    size_t work_size = 0;  // bytes of work area, supplied by us at each execution
};

std::unique_ptr<Plan> make_plan(const PlanKey& key) {
    auto plan = std::make_unique<Plan>();
    // No work area of cuFFT's own (it would cudaMalloc behind the caching allocator's back).
    LUMEN_CUFFT_CHECK(cufftSetAutoAllocation(plan->handle.get(), 0));
    long long n = key.n, inembed = key.idist, onembed = key.odist;
    LUMEN_CUFFT_CHECK(cufftMakePlanMany64(plan->handle.get(), 1, &n, &inembed, 1, key.idist,
                                          &onembed, 1, key.odist, key.type, key.batch,
                                          &plan->work_size));
    return plan;
}

// The plans made so far; destroyed (cufftDestroy) when the process exits. Bounded: when full
// it is emptied, which is cheap next to a training step and keeps odd shapes from piling up.
class PlanCache {
  public:
    std::mutex mutex;  // held from lookup to the end of the (asynchronous) execution

    Plan& get(const PlanKey& key) {
        auto found = plans_.find(key);
        if (found != plans_.end()) return *found->second;
        if (plans_.size() >= kMaxPlans) plans_.clear();
        return *plans_.emplace(key, make_plan(key)).first->second;
    }

  private:
    static constexpr size_t kMaxPlans = 64;
    std::map<PlanKey, std::unique_ptr<Plan>> plans_;
};

PlanCache& plan_cache() {
    static PlanCache cache;
    return cache;
}

// cuFFT's types and calls for float (R2C / C2R) and double (D2Z / Z2D).
template <typename T>
struct FftCalls;
template <>
struct FftCalls<float> {
    static constexpr cufftType kForward = CUFFT_R2C, kInverse = CUFFT_C2R;
    static void forward(cufftHandle plan, const float* in, float* out) {
        LUMEN_CUFFT_CHECK(cufftExecR2C(plan, const_cast<float*>(in),  // R2C keeps its input
                                       reinterpret_cast<cufftComplex*>(out)));
    }
    static void inverse(cufftHandle plan, float* in, float* out) {
        LUMEN_CUFFT_CHECK(cufftExecC2R(plan, reinterpret_cast<cufftComplex*>(in), out));
    }
};
template <>
struct FftCalls<double> {
    static constexpr cufftType kForward = CUFFT_D2Z, kInverse = CUFFT_Z2D;
    static void forward(cufftHandle plan, const double* in, double* out) {
        LUMEN_CUFFT_CHECK(cufftExecD2Z(plan, const_cast<double*>(in),
                                       reinterpret_cast<cufftDoubleComplex*>(out)));
    }
    static void inverse(cufftHandle plan, double* in, double* out) {
        LUMEN_CUFFT_CHECK(cufftExecZ2D(plan, reinterpret_cast<cufftDoubleComplex*>(in), out));
    }
};

int current_device() {
    int device = 0;
    LUMEN_CUDA_CHECK(cudaGetDevice(&device));
    return device;
}

// Unscaled transforms of `batch` rows of n points (n >= 2). forward: real rows `idist` apart
// -> (batch, n/2 + 1) complex. inverse: (batch, n/2 + 1) complex, overwritten (cuFFT's C2R
// uses its input as scratch) -> real rows of n.
template <typename T, bool kForward>
void transform(const T* in, int64_t idist, int64_t n, int64_t batch, T* out, int64_t odist) {
    const cufftType type = kForward ? FftCalls<T>::kForward : FftCalls<T>::kInverse;
    PlanCache& cache = plan_cache();
    std::lock_guard lock(cache.mutex);
    Plan& plan = cache.get(PlanKey{current_device(), n, batch, idist, odist, type});
    Scratch work(plan.work_size);
    if (plan.work_size > 0) LUMEN_CUFFT_CHECK(cufftSetWorkArea(plan.handle.get(), work.data()));
    if constexpr (kForward) {
        FftCalls<T>::forward(plan.handle.get(), in, out);
    } else {
        FftCalls<T>::inverse(plan.handle.get(), const_cast<T*>(in), out);
    }
}

template <typename T>
void forward_rows(const T* in, int64_t idist, int64_t n, int64_t batch, T* spectrum) {
    transform<T, true>(in, idist, n, batch, spectrum, n / 2 + 1);
}
template <typename T>
void inverse_rows(T* spectrum, int64_t n, int64_t batch, T* out) {
    transform<T, false>(spectrum, n / 2 + 1, n, batch, out, n);
}

// cuFFT expects data aligned to its complex type, even real input (PyTorch copies otherwise).
template <typename T>
bool complex_aligned(const T* data) {
    return reinterpret_cast<uintptr_t>(data) % (2 * sizeof(T)) == 0;
}

// ---- small kernels around the transforms ----

// out[r, j] = j < kept ? scale in[r, j] : 0 for j < out_count, rows `in_row` / `out_row`
// elements apart (real rows cut or padded; with row strides 2 L, the first real part).
template <typename T>
__global__ void copy_rows_kernel(const T* in, int64_t in_row, int64_t kept, T* out, int64_t out_row,
                                 int64_t out_count, int64_t rows, T scale) {
    const int64_t count = rows * out_count;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / out_count, j = i % out_count;
        out[r * out_row + j] = j < kept ? scale * in[r * in_row + j] : T(0);
    }
}

template <typename T>
void copy_rows(const T* in, int64_t in_row, int64_t kept, T* out, int64_t out_row,
               int64_t out_count, int64_t rows, double scale) {
    const int64_t count = rows * out_count;
    if (count == 0) return;
    copy_rows_kernel<T>
        <<<grid_for(count), 256>>>(in, in_row, kept, out, out_row, out_count, rows, T(scale));
    LUMEN_CUDA_CHECK_LAUNCH("copy_rows_kernel");
}

// Real rows of in_length values cut or zero-padded to out_length, times scale.
template <typename T>
void resize_rows(const T* in, int64_t in_length, T* out, int64_t out_length, int64_t rows,
                 double scale = 1.0) {
    copy_rows(in, in_length, in_length < out_length ? in_length : out_length, out, out_length,
              out_length, rows, scale);
}

// A half spectrum for the inverse transform: bins of `in` (rows, in_bins) cut or zero-padded to
// n/2 + 1, times scale (and 1/2 for 0 < k < n/2 when `halve`), with the imaginary parts of
// the DC and Nyquist bins set to 0 (the Hermitian inverse ignores them).
template <typename T>
__global__ void prepare_spectrum_kernel(const T* in, int64_t in_bins, T* out, int64_t n,
                                        int64_t rows, T scale, bool halve) {
    const int64_t bins = n / 2 + 1, count = rows * bins;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / bins, k = i % bins;
        const bool single = k == 0 || 2 * k == n;
        const T factor = halve && !single ? scale * T(0.5) : scale;
        const T* from = in + (r * in_bins + k) * 2;
        out[2 * i] = k < in_bins ? factor * from[0] : T(0);
        out[2 * i + 1] = k < in_bins && !single ? factor * from[1] : T(0);
    }
}

// grad_x[r, k] = scale m_k spectrum[r, k] (m_k = 1 for DC / Nyquist, else 2) for k < n/2 + 1,
// 0 up to `length` bins: the adjoint of irfft.
template <typename T>
__global__ void irfft_adjoint_kernel(const T* spectrum, int64_t n, T* grad_x, int64_t length,
                                     int64_t rows, T scale) {
    const int64_t bins = n / 2 + 1, count = rows * length;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / length, k = i % length;
        const T factor = (k == 0 || 2 * k == n) ? scale : T(2) * scale;
        const T* from = spectrum + (r * bins + k) * 2;
        grad_x[2 * i] = k < bins ? factor * from[0] : T(0);
        grad_x[2 * i + 1] = k < bins ? factor * from[1] : T(0);
    }
}

template <typename T>
__global__ void scale_kernel(T* data, int64_t count, T scale) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x)
        data[i] *= scale;
}

template <typename T>
void zero(T* data, int64_t count) {
    if (count > 0) LUMEN_CUDA_CHECK(cudaMemsetAsync(data, 0, size_t(count) * sizeof(T)));
}

// ---- rfft / irfft ----

template <typename T>
void rfft_forward_typed(const FftRows& s, const T* x, T* out) {
    const int64_t bins = s.n / 2 + 1;
    if (s.n == 1) {  // X[0] = x[0]: no transform, and no size-1 plan to trust
        zero(out, s.rows * 2);
        copy_rows(x, s.length, s.length > 0 ? 1 : 0, out, 2, 1, s.rows, s.scale);
        return;
    }
    // Rows at least n long are read in place (cuFFT stops after n); shorter ones are padded.
    const bool in_place = s.length >= s.n && complex_aligned(x);
    Scratch padded = Scratch::of<T>(in_place ? 0 : s.rows * s.n);
    if (in_place) {
        forward_rows(x, s.length, s.n, s.rows, out);
        if (s.scale != 1.0) {
            scale_kernel<T>
                <<<grid_for(s.rows * bins * 2), 256>>>(out, s.rows * bins * 2, T(s.scale));
            LUMEN_CUDA_CHECK_LAUNCH("scale_kernel");
        }
    } else {
        resize_rows(x, s.length, padded.as<T>(), s.n, s.rows, s.scale);  // scale: linear
        forward_rows(padded.as<const T>(), s.n, s.n, s.rows, out);
    }
}

// grad_x[t] = scale Re(sum_k g[k] e^{2 pi i k t / n}): the Hermitian inverse counts the bins
// 0 < k < n/2 twice, so they are halved first.
template <typename T>
void rfft_backward_typed(const FftRows& s, const T* grad_out, T* grad_x) {
    const int64_t bins = s.n / 2 + 1;
    if (s.n == 1) {
        copy_rows(grad_out, 2, 1, grad_x, s.length, s.length, s.rows, s.scale);
        return;
    }
    Scratch spectrum = Scratch::of<T>(s.rows * bins * 2);
    prepare_spectrum_kernel<T><<<grid_for(s.rows * bins), 256>>>(grad_out, bins, spectrum.as<T>(),
                                                                 s.n, s.rows, T(s.scale), true);
    LUMEN_CUDA_CHECK_LAUNCH("prepare_spectrum_kernel");
    if (s.length == s.n) return inverse_rows(spectrum.as<T>(), s.n, s.rows, grad_x);
    Scratch signal = Scratch::of<T>(s.rows * s.n);
    inverse_rows(spectrum.as<T>(), s.n, s.rows, signal.as<T>());
    resize_rows(signal.as<const T>(), s.n, grad_x, s.length, s.rows);
}

template <typename T>
void irfft_forward_typed(const FftRows& s, const T* x, T* out) {
    if (s.n == 1) {  // x[0] = Re X[0]
        copy_rows(x, s.length * 2, s.length > 0 ? 1 : 0, out, 1, 1, s.rows, s.scale);
        return;
    }
    const int64_t bins = s.n / 2 + 1;
    Scratch spectrum = Scratch::of<T>(s.rows * bins * 2);  // also keeps x from being overwritten
    prepare_spectrum_kernel<T><<<grid_for(s.rows * bins), 256>>>(x, s.length, spectrum.as<T>(), s.n,
                                                                 s.rows, T(s.scale), false);
    LUMEN_CUDA_CHECK_LAUNCH("prepare_spectrum_kernel");
    inverse_rows(spectrum.as<T>(), s.n, s.rows, out);
}

template <typename T>
void irfft_backward_typed(const FftRows& s, const T* grad_out, T* grad_x) {
    if (s.rows * s.length == 0) return;  // no bins to fill
    if (s.n == 1) {
        zero(grad_x, s.rows * s.length * 2);
        copy_rows(grad_out, 1, 1, grad_x, s.length * 2, s.length > 0 ? 1 : 0, s.rows, s.scale);
        return;
    }
    const int64_t bins = s.n / 2 + 1;
    const bool aligned = complex_aligned(grad_out);
    Scratch copy = Scratch::of<T>(aligned ? 0 : s.rows * s.n);
    const T* signal = grad_out;
    if (!aligned) {
        resize_rows(grad_out, s.n, copy.as<T>(), s.n, s.rows);
        signal = copy.as<const T>();
    }
    Scratch spectrum = Scratch::of<T>(s.rows * bins * 2);
    forward_rows(signal, s.n, s.n, s.rows, spectrum.as<T>());
    irfft_adjoint_kernel<T><<<grid_for(s.rows * s.length), 256>>>(
        spectrum.as<const T>(), s.n, grad_x, s.length, s.rows, T(s.scale));
    LUMEN_CUDA_CHECK_LAUNCH("irfft_adjoint_kernel");
}

// ---- fftconv ----

// spectra[r, b] = spectra[r, b] filters[r % channels, b] / n.
template <typename T>
__global__ void filter_product_kernel(T* spectra, const T* filters, int64_t rows, int64_t channels,
                                      int64_t bins, T inv_n) {
    const int64_t count = rows * bins;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const T* f = filters + (i / bins % channels * bins + i % bins) * 2;
        const T re = spectra[2 * i], im = spectra[2 * i + 1];
        spectra[2 * i] = (re * f[0] - im * f[1]) * inv_n;
        spectra[2 * i + 1] = (re * f[1] + im * f[0]) * inv_n;
    }
}

// out[r, t] = signal[r, t] + D[c] x[r, t] for t < L; signal rows are n long, c = r % channels.
template <typename T>
__global__ void conv_output_kernel(const T* signal, int64_t n, const T* x, const T* D, T* out,
                                   int64_t rows, int64_t channels, int64_t length) {
    const int64_t count = rows * length;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t r = i / length, t = i % length;
        const T skip = D ? D[r % channels] : T(0);
        out[i] = signal[r * n + t] + skip * x[i];
    }
}

// Backward in frequency space, one thread per (channel, bin), rows of the channel in order
// (deterministic): k_acc = sum_rows G conj(U) / n (grad_k's spectrum), and G <- G conj(K) / n
// in place (grad_u's spectrum). Correlations are products with conjugate spectra.
template <typename T>
__global__ void correlate_kernel(T* g_spec, const T* u_spec, const T* filters, T* k_acc,
                                 int64_t outer, int64_t channels, int64_t bins, T inv_n) {
    const int64_t count = channels * bins;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x) {
        const T f_re = filters[2 * i], f_im = filters[2 * i + 1];
        T acc_re = 0, acc_im = 0;
        for (int64_t o = 0; o < outer; ++o) {
            const int64_t at = 2 * (o * count + i);  // row o * channels + c, bin b
            const T g_re = g_spec[at], g_im = g_spec[at + 1];
            const T u_re = u_spec[at], u_im = u_spec[at + 1];
            acc_re += g_re * u_re + g_im * u_im;
            acc_im += g_im * u_re - g_re * u_im;
            g_spec[at] = (g_re * f_re + g_im * f_im) * inv_n;
            g_spec[at + 1] = (g_im * f_re - g_re * f_im) * inv_n;
        }
        k_acc[2 * i] = acc_re * inv_n;
        k_acc[2 * i + 1] = acc_im * inv_n;
    }
}

// grad_D[c] = sum over rows of channel c and t of g u: one block per channel, a fixed-shape
// tree sum (deterministic).
template <typename T>
__global__ void channel_dot_kernel(const T* g, const T* u, int64_t outer, int64_t channels,
                                   int64_t length, T* grad_D) {
    __shared__ T scratch[kWarpSize];
    const int64_t c = blockIdx.x;
    T total = 0;
    for (int64_t i = threadIdx.x; i < outer * length; i += blockDim.x) {
        const int64_t at = (i / length * channels + c) * length + i % length;
        total += g[at] * u[at];
    }
    total = block_sum(total, scratch);
    if (threadIdx.x == 0) grad_D[c] = total;
}

// The spectra (channels, n/2 + 1) of the zero-padded filters.
template <typename T>
Scratch filter_spectra(const ConvShape& s, const T* k, int64_t n) {
    Scratch padded = Scratch::of<T>(s.channels * n);
    Scratch spectra = Scratch::of<T>(s.channels * (n / 2 + 1) * 2);
    resize_rows(k, s.length, padded.as<T>(), n, s.channels);
    forward_rows(padded.as<const T>(), n, n, s.channels, spectra.as<T>());
    return spectra;
}

template <typename T>
void fftconv_forward_typed(const ConvShape& s, const T* u, const T* k, const T* D, T* y) {
    const int64_t n = conv_fft_length(s.length), bins = n / 2 + 1, rows = s.outer * s.channels;
    Scratch filters = filter_spectra(s, k, n);
    Scratch signal = Scratch::of<T>(rows * n);  // u zero-padded, then the convolution
    Scratch spectra = Scratch::of<T>(rows * bins * 2);
    resize_rows(u, s.length, signal.as<T>(), n, rows);
    forward_rows(signal.as<const T>(), n, n, rows, spectra.as<T>());
    filter_product_kernel<T><<<grid_for(rows * bins), 256>>>(spectra.as<T>(), filters.as<const T>(),
                                                             rows, s.channels, bins, T(1) / T(n));
    LUMEN_CUDA_CHECK_LAUNCH("filter_product_kernel");
    inverse_rows(spectra.as<T>(), n, rows, signal.as<T>());
    conv_output_kernel<T><<<grid_for(rows * s.length), 256>>>(signal.as<const T>(), n, u, D, y,
                                                              rows, s.channels, s.length);
    LUMEN_CUDA_CHECK_LAUNCH("conv_output_kernel");
}

// y = k * u (causal) + D u  =>  grad_u = g correlated with k + D g, grad_k = sum over rows of
// g correlated with u, grad_D = sum g u.
template <typename T>
void fftconv_backward_typed(const ConvShape& s, const T* u, const T* k, const T* D, const T* g,
                            T* grad_u, T* grad_k, T* grad_D) {
    const int64_t n = conv_fft_length(s.length), bins = n / 2 + 1, rows = s.outer * s.channels;
    if (rows == 0) {  // no rows: the filter and skip gradients are 0
        zero(grad_k, s.channels * s.length);
        if (grad_D) zero(grad_D, s.channels);
        return;
    }
    Scratch filters = filter_spectra(s, k, n);
    Scratch signal = Scratch::of<T>(rows * n);
    Scratch g_spec = Scratch::of<T>(rows * bins * 2), u_spec = Scratch::of<T>(rows * bins * 2);
    resize_rows(g, s.length, signal.as<T>(), n, rows);
    forward_rows(signal.as<const T>(), n, n, rows, g_spec.as<T>());
    resize_rows(u, s.length, signal.as<T>(), n, rows);
    forward_rows(signal.as<const T>(), n, n, rows, u_spec.as<T>());
    Scratch k_acc = Scratch::of<T>(s.channels * bins * 2),
            k_signal = Scratch::of<T>(s.channels * n);
    correlate_kernel<T><<<grid_for(s.channels * bins), 256>>>(
        g_spec.as<T>(), u_spec.as<const T>(), filters.as<const T>(), k_acc.as<T>(), s.outer,
        s.channels, bins, T(1) / T(n));
    LUMEN_CUDA_CHECK_LAUNCH("correlate_kernel");
    inverse_rows(g_spec.as<T>(), n, rows, signal.as<T>());
    conv_output_kernel<T><<<grid_for(rows * s.length), 256>>>(signal.as<const T>(), n, g, D, grad_u,
                                                              rows, s.channels, s.length);
    LUMEN_CUDA_CHECK_LAUNCH("conv_output_kernel");
    inverse_rows(k_acc.as<T>(), n, s.channels, k_signal.as<T>());
    resize_rows(k_signal.as<const T>(), n, grad_k, s.length, s.channels);
    if (grad_D) {
        channel_dot_kernel<T>
            <<<unsigned(s.channels), 256>>>(g, u, s.outer, s.channels, s.length, grad_D);
        LUMEN_CUDA_CHECK_LAUNCH("channel_dot_kernel");
    }
}

}  // namespace

void rfft_forward(const FftRows& shape, const void* x, void* out) {
    if (shape.rows == 0) return;
    dispatch_floating(shape.dtype, "rfft", [&]<typename T>() {
        rfft_forward_typed<T>(shape, static_cast<const T*>(x), static_cast<T*>(out));
    });
}

void rfft_backward(const FftRows& shape, const void* grad_out, void* grad_x) {
    if (shape.rows * shape.length == 0) return;
    dispatch_floating(shape.dtype, "rfft", [&]<typename T>() {
        rfft_backward_typed<T>(shape, static_cast<const T*>(grad_out), static_cast<T*>(grad_x));
    });
}

void irfft_forward(const FftRows& shape, const void* x, void* out) {
    if (shape.rows == 0) return;
    dispatch_floating(shape.dtype, "irfft", [&]<typename T>() {
        irfft_forward_typed<T>(shape, static_cast<const T*>(x), static_cast<T*>(out));
    });
}

void irfft_backward(const FftRows& shape, const void* grad_out, void* grad_x) {
    if (shape.rows == 0) return;
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
    if (shape.channels * shape.length == 0) return;
    dispatch_floating(shape.dtype, "fftconv", [&]<typename T>() {
        fftconv_backward_typed<T>(shape, static_cast<const T*>(u), static_cast<const T*>(k),
                                  static_cast<const T*>(D), static_cast<const T*>(grad_y),
                                  static_cast<T*>(grad_u), static_cast<T*>(grad_k),
                                  static_cast<T*>(grad_D));
    });
}

}  // namespace lumen::cuda
