// CUDA kernels of the pointwise losses (mse, l1, smooth_l1, huber, charbonnier,
// binary_cross_entropy, binary_cross_entropy_with_logits) with the element formulas of
// ops/cpu/loss_pointwise.cpp. One thread per element in a grid-stride loop over a fixed grid;
// the forward total is summed per block and the blocks added in order (deterministic). Input
// and target are contiguous; the optional bce weights are broadcast views read through their
// strides. An input of binary_cross_entropy outside [0, 1] is reported by its lowest index.
#include <algorithm>
#include <cmath>

#include "core/dispatch.h"
#include "ops/cuda/partial_sums.cuh"
#include "ops/loss_kernels.h"

namespace lumen::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1024;  // also the number of partial totals

// std::max / std::min / std::clamp as on the CPU: a NaN in the first argument propagates
// (fmax would drop it).
template <typename T>
__device__ T max_of(T a, T b) {
    return a < b ? b : a;
}

template <typename T>
__device__ T sign_of(T d) {
    return T((d > T(0)) - (d < T(0)));
}

// log(1 + e^z) without overflow: max(z, 0) + log1p(e^-|z|).
template <typename T>
__device__ T softplus(T z) {
    return max_of(z, T(0)) + log1p(exp(-fabs(z)));
}

// 1 / (1 + e^-z) from e = e^-|z|, so that no exp overflows.
template <typename T>
__device__ T sigmoid(T z) {
    T e = exp(-fabs(z));
    return (z >= T(0) ? T(1) : e) / (T(1) + e);
}

// log clamped at -100 as in PyTorch, so x = 0 or 1 gives a finite bce.
template <typename T>
__device__ T clamped_log(T v) {
    return max_of(log(v), T(-100));
}

template <PointwiseLoss K, typename T>
__device__ T element_loss(T x, T y, T w, T pw, T param) {
    T d = x - y;
    if constexpr (K == PointwiseLoss::mse) {
        return d * d;
    } else if constexpr (K == PointwiseLoss::l1) {
        return fabs(d);
    } else if constexpr (K == PointwiseLoss::smooth_l1) {
        T a = fabs(d);
        return a < param ? T(0.5) * d * d / param : a - T(0.5) * param;
    } else if constexpr (K == PointwiseLoss::huber) {
        T a = fabs(d);
        return a < param ? T(0.5) * d * d : param * (a - T(0.5) * param);
    } else if constexpr (K == PointwiseLoss::charbonnier) {
        return sqrt(d * d + param * param);
    } else if constexpr (K == PointwiseLoss::binary_cross_entropy) {
        return -w * (y * clamped_log(x) + (T(1) - y) * clamped_log(T(1) - x));
    } else {
        return w * ((T(1) - y) * x + (T(1) + (pw - T(1)) * y) * softplus(-x));
    }
}

// d loss / d input (the derivatives listed in ops/loss_kernels.h).
template <PointwiseLoss K, typename T>
__device__ T element_grad_input(T x, T y, T w, T pw, T param) {
    T d = x - y;
    if constexpr (K == PointwiseLoss::mse) {
        return T(2) * d;
    } else if constexpr (K == PointwiseLoss::l1) {
        return sign_of(d);
    } else if constexpr (K == PointwiseLoss::smooth_l1) {
        return fabs(d) < param ? d / param : sign_of(d);
    } else if constexpr (K == PointwiseLoss::huber) {
        return d < -param ? -param : (param < d ? param : d);  // std::clamp
    } else if constexpr (K == PointwiseLoss::charbonnier) {
        return d / sqrt(d * d + param * param);
    } else if constexpr (K == PointwiseLoss::binary_cross_entropy) {
        return w * d / max_of(x * (T(1) - x), T(1e-12));
    } else {
        return w * ((T(1) + (pw - T(1)) * y) * sigmoid(x) - pw * y);
    }
}

template <PointwiseLoss K, typename T>
__device__ T element_grad_target(T x, T y, T w, T pw, T param) {
    if constexpr (K == PointwiseLoss::binary_cross_entropy) {
        return w * (clamped_log(T(1) - x) - clamped_log(x));
    } else if constexpr (K == PointwiseLoss::binary_cross_entropy_with_logits) {
        return w * (pw * softplus(-x) - softplus(x));
    } else {
        return -element_grad_input<K>(x, y, w, pw, param);
    }
}

// Element i of a broadcast weight view, or 1 when absent.
template <typename T>
__device__ T weight_at(const StridedView& v, int64_t i) {
    return v.data ? static_cast<const T*>(v.data)[strided_offset(v, i)] : T(1);
}

template <typename T>
struct PointwiseArgs {
    const T* x;
    const T* y;
    StridedView weight;      // input's shape (broadcast strides); data null when absent
    StridedView pos_weight;  // the same
    int64_t numel;
    T param;
};

template <PointwiseLoss K, typename T>
__global__ void pointwise_forward_kernel(PointwiseArgs<T> a, T* out, T* partial,
                                         unsigned long long* invalid) {
    __shared__ T scratch[kWarpSize];
    T total = 0;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.numel;
         i += int64_t(gridDim.x) * blockDim.x) {
        const T x = a.x[i];
        if constexpr (K == PointwiseLoss::binary_cross_entropy) {
            if (!(x >= T(0) && x <= T(1))) note_invalid(invalid, i);  // NaN too
        }
        T loss = element_loss<K>(x, a.y[i], weight_at<T>(a.weight, i),
                                 weight_at<T>(a.pos_weight, i), a.param);
        if (out) out[i] = loss;
        total += loss;
    }
    total = block_sum(total, scratch);
    if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

// grad = scale * grad_losses[i] (or scale) times the element derivative.
template <PointwiseLoss K, typename T>
__global__ void pointwise_backward_kernel(PointwiseArgs<T> a, const T* grad_losses, T scale,
                                          T* grad_input, T* grad_target) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < a.numel;
         i += int64_t(gridDim.x) * blockDim.x) {
        const T x = a.x[i], y = a.y[i];
        const T w = weight_at<T>(a.weight, i), pw = weight_at<T>(a.pos_weight, i);
        const T g = grad_losses ? scale * grad_losses[i] : scale;
        if (grad_input) grad_input[i] = g * element_grad_input<K>(x, y, w, pw, a.param);
        if (grad_target) grad_target[i] = g * element_grad_target<K>(x, y, w, pw, a.param);
    }
}

// Calls body.template operator()<K>() for the runtime kind.
template <typename Body>
void dispatch_kind(PointwiseLoss kind, const Body& body) {
    switch (kind) {
        case PointwiseLoss::mse: return body.template operator()<PointwiseLoss::mse>();
        case PointwiseLoss::l1: return body.template operator()<PointwiseLoss::l1>();
        case PointwiseLoss::smooth_l1: return body.template operator()<PointwiseLoss::smooth_l1>();
        case PointwiseLoss::huber: return body.template operator()<PointwiseLoss::huber>();
        case PointwiseLoss::charbonnier:
            return body.template operator()<PointwiseLoss::charbonnier>();
        case PointwiseLoss::binary_cross_entropy:
            return body.template operator()<PointwiseLoss::binary_cross_entropy>();
        case PointwiseLoss::binary_cross_entropy_with_logits:
            return body.template operator()<PointwiseLoss::binary_cross_entropy_with_logits>();
    }
}

template <typename T>
PointwiseArgs<T> pointwise_args(double param, const StridedView& input, const StridedView& target,
                                const StridedView& weight, const StridedView& pos_weight) {
    return {input.ptr<const T>(), target.ptr<const T>(), weight,
            pos_weight,           input.numel(),         T(param)};
}

// A fixed grid (it depends only on numel, so the block totals do too).
unsigned grid_for_elements(int64_t numel) {
    return unsigned(std::clamp<int64_t>((numel + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

}  // namespace

double pointwise_loss_forward(PointwiseLoss kind, double param, const StridedView& input,
                              const StridedView& target, const StridedView& weight,
                              const StridedView& pos_weight, const StridedView& out,
                              int64_t* invalid) {
    *invalid = -1;
    const int64_t numel = input.numel();
    if (numel == 0) return 0.0;
    double total = 0;
    dispatch_floating(input.dtype, "loss", [&]<typename T>() {
        PointwiseArgs<T> a = pointwise_args<T>(param, input, target, weight, pos_weight);
        T* store = out.data ? out.ptr<T>() : nullptr;
        const unsigned blocks = grid_for_elements(numel);
        BlockTotals<T, 1> sums(blocks);
        dispatch_kind(kind, [&]<PointwiseLoss K>() {
            pointwise_forward_kernel<K, T>
                <<<blocks, kThreads>>>(a, store, sums.partial(), sums.first_invalid());
            LUMEN_CUDA_CHECK_LAUNCH("pointwise_forward_kernel");
        });
        HostTotals host = sums.read();
        total = host.totals[0];
        *invalid = host.first_invalid;
    });
    return total;
}

void pointwise_loss_backward(PointwiseLoss kind, double param, const StridedView& input,
                             const StridedView& target, const StridedView& weight,
                             const StridedView& pos_weight, const StridedView& grad_losses,
                             double scale, const StridedView& grad_input,
                             const StridedView& grad_target) {
    const int64_t numel = input.numel();
    if (numel == 0) return;
    dispatch_floating(input.dtype, "loss", [&]<typename T>() {
        PointwiseArgs<T> a = pointwise_args<T>(param, input, target, weight, pos_weight);
        const T* g = grad_losses.data ? grad_losses.ptr<const T>() : nullptr;
        T* gx = grad_input.data ? grad_input.ptr<T>() : nullptr;
        T* gy = grad_target.data ? grad_target.ptr<T>() : nullptr;
        dispatch_kind(kind, [&]<PointwiseLoss K>() {
            pointwise_backward_kernel<K, T>
                <<<grid_for_elements(numel), kThreads>>>(a, g, T(scale), gx, gy);
            LUMEN_CUDA_CHECK_LAUNCH("pointwise_backward_kernel");
        });
    });
}

}  // namespace lumen::cuda
