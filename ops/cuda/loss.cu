// CUDA kernels of the class losses (cross_entropy with class indices or probabilities,
// nll_loss) with the semantics of ops/cpu/loss.cpp, over the (N, C, S) layout of
// ops/loss_kernels.h. S == 1: one warp per sample, its lanes over the contiguous row of C;
// S > 1: one thread per position, looping over C (adjacent threads read adjacent positions, so
// every pass is coalesced). The max is subtracted before exp. Totals: per-block sums added in
// block order (deterministic); an out-of-range target is reported by its lowest flat index.
// The pointwise losses are in ops/cuda/loss_pointwise.cu.
#include <algorithm>
#include <cmath>

#include "core/dispatch.h"
#include "ops/cuda/partial_sums.cuh"
#include "ops/loss_kernels.h"
#include "ops/loss_math.h"

namespace lumen::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1024;  // also the number of partial totals

// e^v for v <= 0 (loss_math::class_probability).
struct ClassMath {
    template <typename T>
    __device__ static T exp_nonpositive(T v) {
        return exp(v);
    }
};

// What the class-loss kernels read and write; T is float or double (computed in T).
template <typename T>
struct ClassArgs {
    const T* x;                           // (N, C, S)
    const int64_t* target;                // (N, S), class indices
    const T* q;                           // (N, C, S), class probabilities (soft targets)
    const T* w;                           // (C) or null (all 1)
    const T* weight_total;                // device scalar sum of w; null: C
    int64_t classes, positions, samples;  // C, S, N * S
    int64_t ignore_index;
    T smoothing;
    bool from_logits;
    T* losses;  // (N, S) or null
    T* lse;     // (2, N, S) or null: the max over C at [i], log sum e^(x - max) at [samples + i]
};

// A sample is handled by kLanes threads: a warp over a contiguous row (S == 1) or one thread
// with its classes S apart. Samples are walked by warps (or threads), so a warp's lanes always
// share the sample and its branches, and reach every shuffle together.
template <int kLanes>
struct Group {
    __device__ static int lane() { return kLanes == 1 ? 0 : int(threadIdx.x % kWarpSize); }
    __device__ static int64_t first() {
        return (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kLanes;
    }
    __device__ static int64_t stride() { return int64_t(gridDim.x) * blockDim.x / kLanes; }
    template <typename T>
    __device__ static T sum(T v) {
        if constexpr (kLanes == 1)
            return v;
        else
            return warp_sum(v);
    }
    template <typename T>
    __device__ static T max(T v) {
        if constexpr (kLanes == 1)
            return v;
        else
            return warp_max(v);
    }
};

// Offset of sample i's class 0 in (N, C, S); its classes follow S apart.
template <typename T>
__device__ int64_t sample_base(const ClassArgs<T>& a, int64_t i) {
    return (i / a.positions) * a.classes * a.positions + i % a.positions;
}

template <typename T>
__device__ T class_weight(const ClassArgs<T>& a, int64_t c) {
    return a.w ? a.w[c] : T(1);
}

template <typename T>
__device__ T weight_sum(const ClassArgs<T>& a) {
    return a.weight_total ? *a.weight_total : T(a.classes);
}

// The max over the sample's classes (NaN wins, as on the CPU).
template <typename T, int kLanes>
__device__ T sample_max(const ClassArgs<T>& a, int64_t base) {
    T m = -INFINITY;
    for (int64_t c = Group<kLanes>::lane(); c < a.classes; c += kLanes)
        m = nan_max(m, a.x[base + c * a.positions]);
    return Group<kLanes>::max(m);
}

// loss = (1 - ls) w[t] (log_sum - (x_t - max)) + ls / C (sum_w log_sum - sum_c w_c (x_c - max))
// from logits, -w[t] x_t for nll; lse holds max and log_sum. Returns the loss (on every lane).
template <typename T, int kLanes>
__device__ T class_sample_loss(const ClassArgs<T>& a, int64_t i, int64_t base, int64_t t) {
    const T w_t = class_weight(a, t);
    if (!a.from_logits) return -w_t * a.x[base + t * a.positions];
    const T m = sample_max<T, kLanes>(a, base);
    T sum = 0, shifted = 0;
    for (int64_t c = Group<kLanes>::lane(); c < a.classes; c += kLanes) {
        T d = a.x[base + c * a.positions] - m;
        sum += exp(d);
        shifted += class_weight(a, c) * d;
    }
    const T log_sum = log(Group<kLanes>::sum(sum));
    if (a.lse && Group<kLanes>::lane() == 0) {
        a.lse[i] = m;
        a.lse[a.samples + i] = log_sum;
    }
    T loss = (T(1) - a.smoothing) * w_t * (log_sum - (a.x[base + t * a.positions] - m));
    if (a.smoothing > T(0)) {
        shifted = Group<kLanes>::sum(shifted);
        loss += a.smoothing / T(a.classes) * (weight_sum(a) * log_sum - shifted);
    }
    return loss;
}

template <typename T, int kLanes>
__global__ void class_forward_kernel(ClassArgs<T> a, T* partial, unsigned long long* invalid) {
    __shared__ T scratch[kWarpSize];
    const bool leader = Group<kLanes>::lane() == 0;
    T loss_total = 0, weight_total = 0;
    for (int64_t i = Group<kLanes>::first(); i < a.samples; i += Group<kLanes>::stride()) {
        const int64_t t = a.target[i], base = sample_base(a, i);
        T loss = 0;
        if (t == a.ignore_index) {
            if (a.lse && leader) a.lse[i] = a.lse[a.samples + i] = 0;
        } else if (t < 0 || t >= a.classes) {
            if (leader) note_invalid(invalid, i);
        } else {
            loss = class_sample_loss<T, kLanes>(a, i, base, t);
            weight_total += leader ? class_weight(a, t) : T(0);
        }
        if (a.losses && leader) a.losses[i] = loss;
        loss_total += leader ? loss : T(0);
    }
    loss_total = block_sum(loss_total, scratch);
    weight_total = block_sum(weight_total, scratch);
    if (threadIdx.x != 0) return;
    partial[blockIdx.x] = loss_total;
    partial[gridDim.x + blockIdx.x] = weight_total;
}

// grad_c = softmax_c a_i - b_i w_c - [c == t] (1 - ls) g w_t, with
// a_i = g ((1 - ls) w_t + ls / C sum_w), b_i = g ls / C (see ops/loss_kernels.h); nll keeps
// the last term only; ignored samples get zero rows.
template <typename T, int kLanes>
__global__ void class_backward_kernel(ClassArgs<T> a, const T* grad_losses, T scale,
                                      T* grad_input) {
    const T smoothing = a.from_logits ? a.smoothing : T(0);
    for (int64_t i = Group<kLanes>::first(); i < a.samples; i += Group<kLanes>::stride()) {
        const int64_t t = a.target[i], base = sample_base(a, i);
        const bool ignored = t == a.ignore_index;
        const T g = ignored ? T(0) : scale * (grad_losses ? grad_losses[i] : T(1));
        const T w_t = ignored ? T(0) : class_weight(a, t);
        const T target_term = g * (T(1) - smoothing) * w_t;
        const T coef_a = g * ((T(1) - smoothing) * w_t + smoothing / T(a.classes) * weight_sum(a));
        const T coef_b = g * smoothing / T(a.classes);
        const bool softmax = a.from_logits && !ignored;
        const T max = softmax ? a.lse[i] : T(0), log_sum = softmax ? a.lse[a.samples + i] : T(0);
        for (int64_t c = Group<kLanes>::lane(); c < a.classes; c += kLanes) {
            const int64_t at = base + c * a.positions;
            T grad = 0;
            if (softmax) {
                const T p = loss_math::class_probability<ClassMath>(a.x[at], max, log_sum);
                grad = p * coef_a - coef_b * class_weight(a, c);
            }
            grad_input[at] = c == t ? grad - target_term : grad;
        }
    }
}

// Class-probability targets: with q_c = (1 - ls) target_c + ls / C,
// loss = log_sum sum_c w_c q_c - sum_c w_c q_c (x_c - max); lse holds max and log_sum.
template <typename T, int kLanes>
__global__ void soft_forward_kernel(ClassArgs<T> a, T* partial) {
    __shared__ T scratch[kWarpSize];
    const T spread = a.smoothing / T(a.classes);
    T loss_total = 0;
    for (int64_t i = Group<kLanes>::first(); i < a.samples; i += Group<kLanes>::stride()) {
        const int64_t base = sample_base(a, i);
        const T m = sample_max<T, kLanes>(a, base);
        T sum = 0, weighted_q = 0, shifted = 0;
        for (int64_t c = Group<kLanes>::lane(); c < a.classes; c += kLanes) {
            const int64_t at = base + c * a.positions;
            const T d = a.x[at] - m;
            const T wq = class_weight(a, c) * ((T(1) - a.smoothing) * a.q[at] + spread);
            sum += exp(d);
            weighted_q += wq;
            shifted += wq * d;
        }
        const T log_sum = log(Group<kLanes>::sum(sum));
        const T loss = log_sum * Group<kLanes>::sum(weighted_q) - Group<kLanes>::sum(shifted);
        if (Group<kLanes>::lane() == 0) {
            a.lse[i] = m;
            a.lse[a.samples + i] = log_sum;
            if (a.losses) a.losses[i] = loss;
            loss_total += loss;
        }
    }
    loss_total = block_sum(loss_total, scratch);
    if (threadIdx.x == 0) partial[blockIdx.x] = loss_total;
}

// grad_input_c = g (softmax_c sum_k w_k q_k - w_c q_c); grad_target_c = g (1 - ls) w_c (lse - x_c).
template <typename T, int kLanes>
__global__ void soft_backward_kernel(ClassArgs<T> a, const T* grad_losses, T scale, T* grad_input,
                                     T* grad_target) {
    const T spread = a.smoothing / T(a.classes);
    for (int64_t i = Group<kLanes>::first(); i < a.samples; i += Group<kLanes>::stride()) {
        const int64_t base = sample_base(a, i);
        const T g = scale * (grad_losses ? grad_losses[i] : T(1));
        const T max = a.lse[i], log_sum = a.lse[a.samples + i];
        T weighted_q = 0;
        for (int64_t c = Group<kLanes>::lane(); c < a.classes; c += kLanes)
            weighted_q +=
                class_weight(a, c) * ((T(1) - a.smoothing) * a.q[base + c * a.positions] + spread);
        weighted_q = Group<kLanes>::sum(weighted_q);
        for (int64_t c = Group<kLanes>::lane(); c < a.classes; c += kLanes) {
            const int64_t at = base + c * a.positions;
            const T w_c = class_weight(a, c);
            if (grad_input) {
                const T q_c = (T(1) - a.smoothing) * a.q[at] + spread;
                const T p = loss_math::class_probability<ClassMath>(a.x[at], max, log_sum);
                grad_input[at] = g * (p * weighted_q - w_c * q_c);
            }
            if (grad_target) {
                const T lse_minus_x = loss_math::lse_minus(a.x[at], max, log_sum);
                grad_target[at] = g * (T(1) - a.smoothing) * w_c * lse_minus_x;
            }
        }
    }
}

// *out = sum of w over C, one block (deterministic).
template <typename T>
__global__ void weight_total_kernel(const T* w, int64_t classes, T* out) {
    __shared__ T scratch[kWarpSize];
    T sum = 0;
    for (int64_t c = threadIdx.x; c < classes; c += blockDim.x) sum += w[c];
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) *out = sum;
}

// A fixed grid for `samples` samples of kLanes threads each (it depends only on the shape, so
// the block totals do too).
unsigned grid_for_samples(int64_t samples, int lanes) {
    int64_t blocks = (samples * lanes + kThreads - 1) / kThreads;
    return unsigned(std::clamp<int64_t>(blocks, 1, kMaxBlocks));
}

template <typename T>
ClassArgs<T> class_args(const StridedView& input, const StridedView& weight,
                        const T* weight_total) {
    ClassArgs<T> a{};
    a.x = input.ptr<const T>();
    a.w = weight.data ? weight.ptr<const T>() : nullptr;
    a.weight_total = weight.data ? weight_total : nullptr;
    a.classes = input.shape[1];
    a.positions = input.shape[2];
    a.samples = input.shape[0] * input.shape[2];
    return a;
}

// class_args plus the class-index target and the options (cross_entropy, nll_loss).
template <typename T>
ClassArgs<T> class_index_args(const StridedView& input, const StridedView& target,
                              const StridedView& weight, const ClassLossOptions& options,
                              const T* weight_total) {
    ClassArgs<T> a = class_args<T>(input, weight, weight_total);
    a.target = target.ptr<const int64_t>();
    a.ignore_index = options.ignore_index;
    a.smoothing = T(options.label_smoothing);
    a.from_logits = options.from_logits;
    return a;
}

// The sum of the class weights on the device (when there are weights).
template <typename T>
void weight_total(const StridedView& weight, int64_t classes, T* out) {
    if (!weight.data) return;
    weight_total_kernel<T><<<1, kThreads>>>(weight.ptr<const T>(), classes, out);
    LUMEN_CUDA_CHECK_LAUNCH("weight_total_kernel");
}

// Runs kernel<kLanes> on a fixed grid: warps per sample when S == 1, threads when S > 1.
template <typename Launch>
void by_layout(int64_t positions, int64_t samples, const Launch& launch) {
    if (positions == 1) {
        launch.template operator()<kWarpSize>(grid_for_samples(samples, kWarpSize));
    } else {
        launch.template operator()<1>(grid_for_samples(samples, 1));
    }
}

}  // namespace

int64_t class_loss_forward(const StridedView& input, const StridedView& target,
                           const StridedView& weight, const ClassLossOptions& options,
                           const StridedView& losses, const StridedView& lse, double totals[2]) {
    totals[0] = totals[1] = 0;
    if (input.shape[0] * input.shape[2] == 0) return -1;
    const char* op = options.from_logits ? "cross_entropy" : "nll_loss";
    int64_t invalid = -1;
    dispatch_floating(input.dtype, op, [&]<typename T>() {
        Scratch scratch(sizeof(T));
        weight_total<T>(weight, input.shape[1], scratch.as<T>());
        ClassArgs<T> a = class_index_args<T>(input, target, weight, options, scratch.as<T>());
        a.losses = losses.data ? losses.ptr<T>() : nullptr;
        a.lse = lse.data ? lse.ptr<T>() : nullptr;
        by_layout(a.positions, a.samples, [&]<int kLanes>(unsigned blocks) {
            BlockTotals<T, 2> sums(blocks);
            class_forward_kernel<T, kLanes>
                <<<blocks, kThreads>>>(a, sums.partial(), sums.first_invalid());
            LUMEN_CUDA_CHECK_LAUNCH("class_forward_kernel");
            HostTotals host = sums.read();
            totals[0] = host.totals[0];
            totals[1] = host.totals[1];
            invalid = host.first_invalid;
        });
    });
    return invalid;
}

void class_loss_backward(const StridedView& input, const StridedView& target,
                         const StridedView& weight, const ClassLossOptions& options,
                         const StridedView& lse, const StridedView& grad_losses, double scale,
                         const StridedView& grad_input) {
    if (input.shape[0] * input.shape[1] * input.shape[2] == 0) return;
    const char* op = options.from_logits ? "cross_entropy" : "nll_loss";
    dispatch_floating(input.dtype, op, [&]<typename T>() {
        Scratch scratch(sizeof(T));
        weight_total<T>(weight, input.shape[1], scratch.as<T>());
        ClassArgs<T> a = class_index_args<T>(input, target, weight, options, scratch.as<T>());
        a.lse = lse.data ? lse.ptr<T>() : nullptr;
        const T* g = grad_losses.data ? grad_losses.ptr<const T>() : nullptr;
        by_layout(a.positions, a.samples, [&]<int kLanes>(unsigned blocks) {
            class_backward_kernel<T, kLanes>
                <<<blocks, kThreads>>>(a, g, T(scale), grad_input.ptr<T>());
            LUMEN_CUDA_CHECK_LAUNCH("class_backward_kernel");
        });
    });
}

void soft_cross_entropy_forward(const StridedView& input, const StridedView& target,
                                const StridedView& weight, double label_smoothing,
                                const StridedView& losses, const StridedView& lse, double* total) {
    *total = 0;
    if (input.shape[0] * input.shape[2] == 0) return;
    dispatch_floating(input.dtype, "cross_entropy", [&]<typename T>() {
        ClassArgs<T> a = class_args<T>(input, weight, nullptr);
        a.q = target.ptr<const T>();
        a.smoothing = T(label_smoothing);
        a.losses = losses.data ? losses.ptr<T>() : nullptr;
        a.lse = lse.ptr<T>();
        by_layout(a.positions, a.samples, [&]<int kLanes>(unsigned blocks) {
            BlockTotals<T, 1> sums(blocks);
            soft_forward_kernel<T, kLanes><<<blocks, kThreads>>>(a, sums.partial());
            LUMEN_CUDA_CHECK_LAUNCH("soft_forward_kernel");
            *total = sums.read().totals[0];
        });
    });
}

void soft_cross_entropy_backward(const StridedView& input, const StridedView& target,
                                 const StridedView& weight, double label_smoothing,
                                 const StridedView& lse, const StridedView& grad_losses,
                                 double scale, const StridedView& grad_input,
                                 const StridedView& grad_target) {
    if (input.shape[0] * input.shape[1] * input.shape[2] == 0) return;
    dispatch_floating(input.dtype, "cross_entropy", [&]<typename T>() {
        ClassArgs<T> a = class_args<T>(input, weight, nullptr);
        a.q = target.ptr<const T>();
        a.smoothing = T(label_smoothing);
        a.lse = lse.ptr<T>();
        const T* g = grad_losses.data ? grad_losses.ptr<const T>() : nullptr;
        T* gx = grad_input.data ? grad_input.ptr<T>() : nullptr;
        T* gq = grad_target.data ? grad_target.ptr<T>() : nullptr;
        by_layout(a.positions, a.samples, [&]<int kLanes>(unsigned blocks) {
            soft_backward_kernel<T, kLanes><<<blocks, kThreads>>>(a, g, T(scale), gx, gq);
            LUMEN_CUDA_CHECK_LAUNCH("soft_backward_kernel");
        });
    });
}

}  // namespace lumen::cuda
