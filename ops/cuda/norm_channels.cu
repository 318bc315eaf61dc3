// CUDA channel normalization (batch_norm, instance_norm with running statistics, seq_norm,
// normalize) with the semantics of ops/cpu/norm_channels.cpp, over x seen as
// (outer, length, channels, spatial) with one statistic per (outer, channel). Sums per
// statistic take two stages: blocks sum chunks of a statistic's elements (runs of `spatial`
// contiguous elements, or columns of a (length, channels) matrix when spatial == 1) into
// scratch, and a second kernel adds the chunks in order. Per-statistic coefficients are
// computed in double by small kernels; the elementwise passes walk runs of one statistic
// (spatial > 1) or rows of consecutive statistics (spatial == 1). float32/float64.
#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "core/cuda/strided.cuh"
#include "core/dispatch.h"
#include "ops/cuda/partial_sums.cuh"
#include "ops/norm_kernels.h"
#include "ops/norm_math.h"

namespace lumen::cuda {
namespace {

constexpr int64_t kMaxBlocks = 65535;    // larger problems loop (grid-stride)
constexpr int64_t kTargetBlocks = 1024;  // about 8 resident blocks on each of 132 SMs
constexpr int kColumnRows = 8;           // threadIdx.y extent of the column-sum kernel
constexpr int kThreads = 256;

// ---- terms summed per statistic: term(i, stat, acc) adds element i's kCount values ----

template <typename T>
struct SumTerm {
    static constexpr int kCount = 1;
    const T* x;
    __device__ void operator()(int64_t i, int64_t, T* acc) const { acc[0] += x[i]; }
};

// sum of (x - mean)^2 (kSquared: the variance's numerator) or of (x - mean): the offset of the
// exact mean from the stored one, rounded to T, which batch statistics' backward needs.
template <typename T, bool kSquared>
struct DeviationTerm {
    static constexpr int kCount = 1;
    const T* x;
    const T* mean;
    __device__ void operator()(int64_t i, int64_t stat, T* acc) const {
        T d = x[i] - mean[stat];
        acc[0] += kSquared ? T(d * d) : d;
    }
};

// sum of g and of g (x - mean); times rstd the latter is the sum of g xhat.
template <typename T>
struct GradTerms {
    static constexpr int kCount = 2;
    const T* x;
    const T* g;
    const T* mean;
    __device__ void operator()(int64_t i, int64_t stat, T* acc) const {
        acc[0] += g[i];
        acc[1] += g[i] * (x[i] - mean[stat]);
    }
};

// |x|^p: mode 2 (p = 2), 1 (p = 1) or 0 (any other p).
template <typename T>
struct PowerTerm {
    static constexpr int kCount = 1;
    const T* x;
    T p;
    int mode;
    __device__ void operator()(int64_t i, int64_t, T* acc) const {
        T v = x[i];
        acc[0] += mode == 2 ? v * v : mode == 1 ? fabs(v) : pow(fabs(v), p);
    }
};

template <typename T>
struct DotTerm {
    static constexpr int kCount = 1;
    const T* x;
    const T* g;
    __device__ void operator()(int64_t i, int64_t, T* acc) const { acc[0] += g[i] * x[i]; }
};

// ---- first stage ----

// Block b sums chunk b % chunks of statistic b / chunks (spatial > 1): the statistic's
// elements q = l * spatial + s, q in [q0, q1), sit at ((a L + l) C + c) S + s. Writes
// partial[k * stats * chunks + chunk * stats + stat].
template <typename T, typename Term>
__global__ void stat_runs_kernel(ChannelNormLayout lay, int64_t chunks, int64_t chunk_len,
                                 Term term, T* partial) {
    constexpr int K = Term::kCount;
    __shared__ T scratch[kWarpSize];
    const int64_t C = lay.channels, S = lay.spatial, L = lay.length;
    const int64_t stats = lay.outer * C, count = L * S;
    for (int64_t b = blockIdx.x; b < stats * chunks; b += gridDim.x) {  // uniform per block
        const int64_t stat = b / chunks, chunk = b % chunks;
        const int64_t a = stat / C, c = stat % C;
        const int64_t q0 = chunk * chunk_len, q1 = min(count, q0 + chunk_len);
        T acc[K] = {};
        Cursor at(q0 + threadIdx.x, blockDim.x, S);  // (l, s)
        for (int64_t q = q0 + threadIdx.x; q < q1; q += blockDim.x, at.advance())
            term(((a * L + at.outer) * C + c) * S + at.inner, stat, acc);
#pragma unroll
        for (int k = 0; k < K; ++k) {
            T total = block_sum(acc[k], scratch);
            if (threadIdx.x == 0) partial[k * stats * chunks + chunk * stats + stat] = total;
        }
    }
}

// spatial == 1: the statistics of outer index a are the columns of a (length, channels)
// matrix. Block (32, kColumnRows): 32 adjacent columns (coalesced), the rows of chunk
// blockIdx.y split over threadIdx.y and then added in order of threadIdx.y.
template <typename T, typename Term>
__global__ void stat_columns_kernel(ChannelNormLayout lay, int64_t chunks, int64_t chunk_len,
                                    Term term, T* partial) {
    constexpr int K = Term::kCount;
    __shared__ T sums[K][kColumnRows][kWarpSize + 1];
    const int64_t C = lay.channels, L = lay.length, stats = lay.outer * C;
    const int64_t column_blocks = (C + kWarpSize - 1) / kWarpSize;
    const int64_t a = blockIdx.x / column_blocks;
    const int64_t c = (blockIdx.x % column_blocks) * kWarpSize + threadIdx.x;
    const int64_t chunk = blockIdx.y;
    const int64_t l0 = chunk * chunk_len, l1 = min(L, l0 + chunk_len);
    T acc[K] = {};
    if (c < C) {
        for (int64_t l = l0 + threadIdx.y; l < l1; l += kColumnRows)
            term((a * L + l) * C + c, a * C + c, acc);
    }
#pragma unroll
    for (int k = 0; k < K; ++k) sums[k][threadIdx.y][threadIdx.x] = acc[k];
    __syncthreads();
    if (threadIdx.y != 0 || c >= C) return;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        T total = acc[k];
        for (int t = 1; t < kColumnRows; ++t) total += sums[k][t][threadIdx.x];
        partial[k * stats * chunks + chunk * stats + a * C + c] = total;
    }
}

// Sums of `term` over the elements of every statistic, then finish(stat, totals) once per
// statistic. Chunks depend only on the shape, so the result is deterministic.
template <typename T, typename Term, typename Finish>
void stat_sums(const ChannelNormLayout& lay, const Term& term, const Finish& finish) {
    constexpr int K = Term::kCount;
    const int64_t stats = lay.outer * lay.channels, count = lay.length * lay.spatial;
    if (stats == 0) return;
    if (count == 0) return finish_partials<T, K>(nullptr, stats, 0, 0, finish);
    if (lay.spatial > 1) {
        int64_t chunks = std::clamp<int64_t>((kTargetBlocks + stats - 1) / stats, 1,
                                             std::max<int64_t>(1, count / 2048));
        const int64_t chunk_len = (count + chunks - 1) / chunks;
        chunks = (count + chunk_len - 1) / chunk_len;
        Scratch scratch(size_t(K * stats * chunks) * sizeof(T));
        unsigned blocks = unsigned(std::min(stats * chunks, kMaxBlocks));
        stat_runs_kernel<T, Term>
            <<<blocks, kThreads>>>(lay, chunks, chunk_len, term, scratch.as<T>());
        LUMEN_CUDA_CHECK_LAUNCH("stat_runs_kernel");
        return finish_partials<T, K>(scratch.as<T>(), stats, chunks, stats * chunks, finish);
    }
    const int64_t columns = lay.outer * ((lay.channels + kWarpSize - 1) / kWarpSize);
    int64_t chunks = std::clamp<int64_t>((kTargetBlocks + columns - 1) / columns, 1,
                                         (lay.length + kColumnRows - 1) / kColumnRows);
    const int64_t chunk_len = (lay.length + chunks - 1) / chunks;
    chunks = (lay.length + chunk_len - 1) / chunk_len;
    Scratch scratch(size_t(K * stats * chunks) * sizeof(T));
    stat_columns_kernel<T, Term>
        <<<dim3(unsigned(columns), unsigned(chunks)), dim3(kWarpSize, kColumnRows)>>>(
            lay, chunks, chunk_len, term, scratch.as<T>());
    LUMEN_CUDA_CHECK_LAUNCH("stat_columns_kernel");
    finish_partials<T, K>(scratch.as<T>(), stats, chunks, stats * chunks, finish);
}

// ---- second-stage finishers ----

// out[stat] = total / count (the mean, or the biased variance from squared deviations).
template <typename T>
struct MeanFinish {
    T* out;
    T count;
    __device__ void operator()(int64_t stat, const T* total) const { out[stat] = total[0] / count; }
};

template <typename T, int K>
struct StoreFinish {
    T* out;  // K arrays of `stride` entries
    int64_t stride;
    __device__ void operator()(int64_t stat, const T* total) const {
#pragma unroll
        for (int k = 0; k < K; ++k) out[k * stride + stat] = total[k];
    }
};

// norm = (sum |x|^p)^(1/p) and inv = 1 / max(norm, eps), in double as on the CPU.
template <typename T>
struct NormFinish {
    T* norm;
    T* inv;
    double p, eps;
    __device__ void operator()(int64_t stat, const T* total) const {
        double value = norm_math::p_norm(double(total[0]), p);
        norm[stat] = T(value);
        inv[stat] = T(1.0 / fmax(double(T(value)), eps));
    }
};

// ---- elementwise passes ----

// op(i, stat) over every element, as runs of `run` elements (spatial when > 1: one statistic
// per run; else channels: statistics stat0, stat0 + 1, ...), each run cut in pieces of
// piece_len so that long runs still spread over many blocks.
template <typename T, typename Op>
__global__ void apply_kernel(ChannelNormLayout lay, int64_t run, int64_t runs, int64_t pieces,
                             int64_t piece_len, Op op) {
    const int64_t L = lay.length, C = lay.channels;
    const bool per_element = lay.spatial == 1;
    for (int64_t item = blockIdx.x; item < runs * pieces; item += gridDim.x) {
        const int64_t r = item / pieces, piece = item % pieces;
        const int64_t stat = per_element ? (r / L) * C : (r / (L * C)) * C + r % C;
        const int64_t e1 = min(run, (piece + 1) * piece_len);
        for (int64_t e = piece * piece_len + threadIdx.x; e < e1; e += blockDim.x)
            op(r * run + e, per_element ? stat + e : stat);
    }
}

template <typename T, typename Op>
void apply(const ChannelNormLayout& lay, const Op& op) {
    const int64_t numel = lay.outer * lay.length * lay.channels * lay.spatial;
    if (numel == 0) return;
    const int64_t run = lay.spatial > 1 ? lay.spatial : lay.channels;
    const int64_t runs = numel / run;
    const int threads = int(std::clamp<int64_t>((run + 31) / 32 * 32, 32, kThreads));
    const int64_t piece_len = int64_t(threads) * 8;  // up to 8 elements per thread and item
    const int64_t pieces = (run + piece_len - 1) / piece_len;
    unsigned blocks = unsigned(std::min(runs * pieces, kMaxBlocks));
    apply_kernel<T, Op><<<blocks, threads>>>(lay, run, runs, pieces, piece_len, op);
    LUMEN_CUDA_CHECK_LAUNCH("apply_kernel");
}

template <typename T>
struct ScaleShiftOp {
    const T* x;
    const T* scale;
    const T* shift;  // null: no shift
    T* y;
    __device__ void operator()(int64_t i, int64_t stat) const {
        y[i] = shift ? x[i] * scale[stat] + shift[stat] : x[i] * scale[stat];
    }
};

// dx of batch statistics in PyTorch's grouping (ops/cpu/norm_channels.cpp says why):
// dx = ((g - mean(g)) - ((x - mean) - shift) k) w rstd, k holding the four arrays mean(g),
// shift, k and w rstd of `stats` entries each.
template <typename T>
struct BatchStatsGradOp {
    const T* x;
    const T* g;
    const T* mean;
    const T* k;
    int64_t stats;
    T* dx;
    __device__ void operator()(int64_t i, int64_t stat) const {
        const T g_mean = k[stat], shift = k[stats + stat], kk = k[2 * stats + stat];
        dx[i] = ((g[i] - g_mean) - ((x[i] - mean[stat]) - shift) * kk) * k[3 * stats + stat];
    }
};

template <typename T>
__device__ T sign_of(T v) {
    return T((v > T(0)) - (v < T(0)));
}

// dx = g / d - dn(x) coef, dn(x) = sign(x) |x / n|^(p-1) (x / n for p = 2, sign(x) for p = 1);
// c holds inv_d, coef and inv_n, `stats` entries each.
template <typename T>
struct NormalizeGradOp {
    const T* x;
    const T* g;
    const T* c;
    int64_t stats;
    T pm1;
    int mode;
    T* dx;
    __device__ void operator()(int64_t i, int64_t stat) const {
        T v = x[i], inv_n = c[2 * stats + stat];
        T dn = mode == 2   ? v * inv_n
               : mode == 1 ? sign_of(v)
                           : sign_of(v) * pow(fabs(v * inv_n), pm1);
        dx[i] = g[i] * c[stat] - dn * c[stats + stat];
    }
};

// ---- per-statistic coefficients ----

template <typename T>
__global__ void scale_shift_kernel(int64_t stats, int64_t channels, const T* mean, const T* var,
                                   double eps, const T* weight, const T* bias, T* scale, T* shift) {
    for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < stats;
         s += int64_t(gridDim.x) * blockDim.x) {
        int64_t c = s % channels;
        double k, b;
        norm_math::scale_shift(double(mean[s]), double(var[s]), eps,
                               weight ? double(weight[c]) : 1.0, bias ? double(bias[c]) : 0.0, k,
                               b);
        scale[s] = T(k);
        shift[s] = T(b);
    }
}

// One thread per channel c: the affine gradients (sums over outer, in order) and the grad_x
// coefficients of each statistic s = a * C + c: with running statistics k[s] = w rstd; with
// batch statistics the four arrays of BatchStatsGradOp, from d = sum(x - mean) / n (the exact
// mean's offset): mean(g) = sum_g / n, d, (sum_gx - d sum_g) rstd^2 / n and w rstd.
// sums holds sum_g, sum_gx, then sum(x - mean) (null when not needed); k null when grad_x is
// not wanted.
template <typename T>
__global__ void grad_coefficients_kernel(ChannelNormLayout lay, const T* var, double eps,
                                         const T* weight, const T* sums, bool batch_stats,
                                         T* grad_weight, T* grad_bias, T* k) {
    const int64_t C = lay.channels, stats = lay.outer * C;
    const double n = double(lay.length * lay.spatial);
    for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < C;
         c += int64_t(gridDim.x) * blockDim.x) {
        double total_w = 0, total_b = 0;
        for (int64_t a = 0; a < lay.outer; ++a) {
            const int64_t s = a * C + c;
            const double r = double(T(norm_math::inv_std(double(var[s]), eps)));
            if (sums) {
                total_w += double(sums[stats + s]) * r;
                total_b += double(sums[s]);
            }
            if (!k) continue;
            const double wr = (weight ? double(weight[c]) : 1.0) * r;
            if (!batch_stats) {
                k[s] = T(wr);
                continue;
            }
            const double sum_g = double(sums[s]), sum_gx = double(sums[stats + s]);
            const double d = double(sums[2 * stats + s]) / n;
            k[s] = T(sum_g / n);
            k[stats + s] = T(d);
            k[2 * stats + s] = T((sum_gx - d * sum_g) * r * r / n);
            k[3 * stats + s] = T(wr);
        }
        if (grad_weight) grad_weight[c] = T(total_w);
        if (grad_bias) grad_bias[c] = T(total_b);
    }
}

// inv_d = 1 / d, coef = sum(g x) / d^2 where the norm is not clamped (else 0), inv_n = 1 / n
// (0 where clamped or n = 0), with d = max(n, eps); into c (3 arrays of `stats`).
template <typename T>
__global__ void normalize_coefficients_kernel(int64_t stats, const T* norm, const T* sums,
                                              double eps, T* c) {
    for (int64_t s = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; s < stats;
         s += int64_t(gridDim.x) * blockDim.x) {
        double value = double(norm[s]), d = fmax(value, eps);
        bool through = value >= eps;
        c[s] = T(1.0 / d);
        c[stats + s] = through ? T(double(sums[s]) / (d * d)) : T(0);
        c[2 * stats + s] = through && value > 0 ? T(1.0 / value) : T(0);
    }
}

template <typename T>
const T* optional_ptr(const StridedView& v) {
    return v.data ? v.ptr<const T>() : nullptr;
}

int power_mode(double p) { return p == 2.0 ? 2 : p == 1.0 ? 1 : 0; }

}  // namespace

void channel_moments(const ChannelNormLayout& layout, const StridedView& x, const StridedView& mean,
                     const StridedView& var) {
    dispatch_floating(x.dtype, "norm", [&]<typename T>() {
        const T count = T(layout.count());
        stat_sums<T>(layout, SumTerm<T>{x.ptr<const T>()}, MeanFinish<T>{mean.ptr<T>(), count});
        stat_sums<T>(layout, DeviationTerm<T, true>{x.ptr<const T>(), mean.ptr<const T>()},
                     MeanFinish<T>{var.ptr<T>(), count});
    });
}

void channel_norm_forward(const ChannelNormLayout& layout, const StridedView& x,
                          const StridedView& mean, const StridedView& var, double eps,
                          const StridedView& weight, const StridedView& bias,
                          const StridedView& y) {
    const int64_t stats = layout.outer * layout.channels;
    if (stats == 0) return;
    dispatch_floating(x.dtype, "norm", [&]<typename T>() {
        Scratch scratch(size_t(2 * stats) * sizeof(T));
        T* scale = scratch.as<T>();
        T* shift = scratch.as<T>(size_t(stats));
        scale_shift_kernel<T><<<grid_for(stats), 256>>>(
            stats, layout.channels, mean.ptr<const T>(), var.ptr<const T>(), eps,
            optional_ptr<T>(weight), optional_ptr<T>(bias), scale, shift);
        LUMEN_CUDA_CHECK_LAUNCH("scale_shift_kernel");
        apply<T>(layout, ScaleShiftOp<T>{x.ptr<const T>(), scale, shift, y.ptr<T>()});
    });
}

void channel_norm_backward(const ChannelNormLayout& layout, const StridedView& x,
                           const StridedView& mean, const StridedView& var, double eps,
                           const StridedView& weight, bool batch_stats, const StridedView& grad_out,
                           const StridedView& grad_x, const StridedView& grad_weight,
                           const StridedView& grad_bias) {
    const int64_t stats = layout.outer * layout.channels;
    if (stats == 0) {  // outer == 0 (seq_norm of an empty batch): the affine sums are empty
        const size_t bytes = size_t(layout.channels) * itemsize(x.dtype);
        for (const StridedView* grad : {&grad_weight, &grad_bias})
            if (grad->data && bytes > 0) LUMEN_CUDA_CHECK(cudaMemsetAsync(grad->data, 0, bytes));
        return;
    }
    dispatch_floating(x.dtype, "norm backward", [&]<typename T>() {
        const bool need_sums = batch_stats || grad_weight.data || grad_bias.data;
        const bool shifted = batch_stats && grad_x.data;  // needs sum(x - mean) as well
        Scratch sums(need_sums ? size_t((shifted ? 3 : 2) * stats) * sizeof(T) : 0);
        Scratch coefficients(grad_x.data ? size_t((batch_stats ? 4 : 1) * stats) * sizeof(T) : 0);
        if (need_sums) {
            GradTerms<T> terms{x.ptr<const T>(), grad_out.ptr<const T>(), mean.ptr<const T>()};
            stat_sums<T>(layout, terms, StoreFinish<T, 2>{sums.as<T>(), stats});
        }
        if (shifted)
            stat_sums<T>(layout, DeviationTerm<T, false>{x.ptr<const T>(), mean.ptr<const T>()},
                         StoreFinish<T, 1>{sums.as<T>(size_t(2 * stats)), stats});
        grad_coefficients_kernel<T><<<grid_for(layout.channels), 256>>>(
            layout, var.ptr<const T>(), eps, optional_ptr<T>(weight),
            need_sums ? sums.as<T>() : nullptr, batch_stats,
            grad_weight.data ? grad_weight.ptr<T>() : nullptr,
            grad_bias.data ? grad_bias.ptr<T>() : nullptr,
            grad_x.data ? coefficients.as<T>() : nullptr);
        LUMEN_CUDA_CHECK_LAUNCH("grad_coefficients_kernel");
        if (!grad_x.data) return;
        if (batch_stats)
            apply<T>(layout, BatchStatsGradOp<T>{x.ptr<const T>(), grad_out.ptr<const T>(),
                                                 mean.ptr<const T>(), coefficients.as<T>(), stats,
                                                 grad_x.ptr<T>()});
        else
            apply<T>(layout, ScaleShiftOp<T>{grad_out.ptr<const T>(), coefficients.as<T>(),
                                             nullptr, grad_x.ptr<T>()});
    });
}

void normalize_forward(const ChannelNormLayout& layout, const StridedView& x, double p, double eps,
                       const StridedView& y, const StridedView& norm) {
    const int64_t stats = layout.outer * layout.channels;
    if (stats == 0) return;
    dispatch_floating(x.dtype, "normalize", [&]<typename T>() {
        Scratch inv(size_t(stats) * sizeof(T));
        stat_sums<T>(layout, PowerTerm<T>{x.ptr<const T>(), T(p), power_mode(p)},
                     NormFinish<T>{norm.ptr<T>(), inv.as<T>(), p, eps});
        apply<T>(layout, ScaleShiftOp<T>{x.ptr<const T>(), inv.as<T>(), nullptr, y.ptr<T>()});
    });
}

void normalize_backward(const ChannelNormLayout& layout, const StridedView& x,
                        const StridedView& norm, double p, double eps, const StridedView& grad_out,
                        const StridedView& grad_x) {
    const int64_t stats = layout.outer * layout.channels;
    if (stats == 0) return;
    dispatch_floating(x.dtype, "normalize backward", [&]<typename T>() {
        Scratch scratch(size_t(4 * stats) * sizeof(T));
        T* sums = scratch.as<T>();
        T* coefficients = scratch.as<T>(size_t(stats));
        stat_sums<T>(layout, DotTerm<T>{x.ptr<const T>(), grad_out.ptr<const T>()},
                     StoreFinish<T, 1>{sums, stats});
        normalize_coefficients_kernel<T>
            <<<grid_for(stats), 256>>>(stats, norm.ptr<const T>(), sums, eps, coefficients);
        LUMEN_CUDA_CHECK_LAUNCH("normalize_coefficients_kernel");
        apply<T>(layout, NormalizeGradOp<T>{x.ptr<const T>(), grad_out.ptr<const T>(), coefficients,
                                            stats, T(p - 1.0), power_mode(p), grad_x.ptr<T>()});
    });
}

}  // namespace lumen::cuda
