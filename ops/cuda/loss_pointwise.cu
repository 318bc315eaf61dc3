// CUDA kernels of the pointwise losses (mse, l1, smooth_l1, huber, charbonnier,
// binary_cross_entropy, binary_cross_entropy_with_logits); the element formulas are those of
// ops/loss_math.h, shared with the CPU. One thread per element in a grid-stride loop over a
// fixed grid; the forward total is summed per block and the blocks added in order
// (deterministic). Input and target are contiguous; the optional bce weights are broadcast
// views read through their strides. An input of binary_cross_entropy outside [0, 1] is
// reported by its lowest index.
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

// The primitives of ops/loss_math.h on the GPU.
struct DeviceMath {
    template <typename T>
    LUMEN_HOST_DEVICE static T exp_neg_abs(T z) {
        return exp(-fabs(z));
    }
    template <typename T>
    LUMEN_HOST_DEVICE static T log1p_unit(T e) {
        return log1p(e);
    }
};

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
        T loss = loss_math::element_loss<K, DeviceMath>(x, a.y[i], weight_at<T>(a.weight, i),
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
        if (grad_input)
            grad_input[i] = g * loss_math::element_grad_input<K, DeviceMath>(x, y, w, pw, a.param);
        if (grad_target)
            grad_target[i] =
                g * loss_math::element_grad_target<K, DeviceMath>(x, y, w, pw, a.param);
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
        loss_math::dispatch_kind(kind, [&]<PointwiseLoss K>() {
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
        loss_math::dispatch_kind(kind, [&]<PointwiseLoss K>() {
            pointwise_backward_kernel<K, T>
                <<<grid_for_elements(numel), kThreads>>>(a, g, T(scale), gx, gy);
            LUMEN_CUDA_CHECK_LAUNCH("pointwise_backward_kernel");
        });
    });
}

}  // namespace lumen::cuda
