// CPU kernels of the pointwise losses (mse, l1, smooth_l1, huber, charbonnier,
// binary_cross_entropy, binary_cross_entropy_with_logits), forward and backward. Input and
// target are contiguous; the optional bce weights are broadcast views, walked with an
// odometer. Work is cut into fixed blocks of kBlock elements whose sums are added in block
// order, so totals do not depend on the thread count. The class losses are in ops/cpu/loss.cpp.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/loss_kernels.h"
#include "ops/reduce_kernels.h"

namespace lumen::cpu {

namespace {

constexpr int64_t kBlock = 16384;

template <typename T>
T sign(T d) {
    return T((d > T(0)) - (d < T(0)));
}

// softplus(z) = log(1 + e^z) without overflow: max(z, 0) + log1p(e^-|z|).
template <typename T>
T softplus(T z) {
    return std::max(z, T(0)) + std::log1p(std::exp(-std::abs(z)));
}

template <typename T>
T sigmoid(T z) {
    if (z >= T(0)) return T(1) / (T(1) + std::exp(-z));
    T e = std::exp(z);
    return e / (T(1) + e);
}

template <typename T>
T clamped_log(T v) {
    return std::max(std::log(v), T(-100));
}

// The loss of one element; w and pw are used by the bce kinds only.
template <PointwiseLoss K, typename T>
inline T element_loss(T x, T y, T w, T pw, T param) {
    T d = x - y;
    if constexpr (K == PointwiseLoss::mse) {
        return d * d;
    } else if constexpr (K == PointwiseLoss::l1) {
        return std::abs(d);
    } else if constexpr (K == PointwiseLoss::smooth_l1) {
        T a = std::abs(d);
        return a < param ? T(0.5) * d * d / param : a - T(0.5) * param;
    } else if constexpr (K == PointwiseLoss::huber) {
        T a = std::abs(d);
        return a < param ? T(0.5) * d * d : param * (a - T(0.5) * param);
    } else if constexpr (K == PointwiseLoss::charbonnier) {
        return std::sqrt(d * d + param * param);
    } else if constexpr (K == PointwiseLoss::binary_cross_entropy) {
        // log clamped at -100 as in PyTorch, so x = 0 or 1 gives a finite loss.
        return -w * (y * clamped_log(x) + (T(1) - y) * clamped_log(T(1) - x));
    } else {
        // (1 - y) x + (1 + (pw - 1) y) log(1 + e^-x): the PyTorch form, e^-x never computed
        // for large negative x.
        return w * ((T(1) - y) * x + (T(1) + (pw - T(1)) * y) * softplus(-x));
    }
}

// d loss / d x of one element (d loss / d y is -this for the difference losses).
template <PointwiseLoss K, typename T>
inline T element_grad_input(T x, T y, T w, T pw, T param) {
    T d = x - y;
    if constexpr (K == PointwiseLoss::mse) {
        return T(2) * d;
    } else if constexpr (K == PointwiseLoss::l1) {
        return sign(d);
    } else if constexpr (K == PointwiseLoss::smooth_l1) {
        return std::abs(d) < param ? d / param : sign(d);
    } else if constexpr (K == PointwiseLoss::huber) {
        return std::clamp(d, -param, param);
    } else if constexpr (K == PointwiseLoss::charbonnier) {
        return d / std::sqrt(d * d + param * param);
    } else if constexpr (K == PointwiseLoss::binary_cross_entropy) {
        // PyTorch's form: the denominator is kept off 0 with 1e-12.
        return w * d / std::max(x * (T(1) - x), T(1e-12));
    } else {
        return w * ((T(1) + (pw - T(1)) * y) * sigmoid(x) - pw * y);
    }
}

template <PointwiseLoss K, typename T>
inline T element_grad_target(T x, T y, T w, T pw, T param) {
    if constexpr (K == PointwiseLoss::binary_cross_entropy) {
        return w * (clamped_log(T(1) - x) - clamped_log(x));
    } else if constexpr (K == PointwiseLoss::binary_cross_entropy_with_logits) {
        // log_sigmoid(-x) - pw log_sigmoid(x) = pw softplus(-x) - softplus(x)
        return w * (pw * softplus(-x) - softplus(x));
    } else {
        return -element_grad_input<K>(x, y, w, pw, param);
    }
}

constexpr bool is_weighted(PointwiseLoss kind) {
    return kind == PointwiseLoss::binary_cross_entropy ||
           kind == PointwiseLoss::binary_cross_entropy_with_logits;
}

// The element views of one problem: linear index i for input/target/out/grads; the weights
// through their own (broadcast) offsets.
struct Walk {
    StridedView views[3];  // input (contiguous), weight, pos_weight, coalesced together
};

// Calls segment(first, count, weight_offset, pos_weight_offset) for consecutive runs along
// the innermost dim covering linear indices [begin, end).
template <typename Segment>
void walk_segments(const Walk& walk, int64_t begin, int64_t end, const Segment& segment) {
    const StridedView& shape = walk.views[0];
    int ndim = shape.ndim;
    if (ndim == 0) {
        if (begin < end) segment(begin, end - begin, int64_t(0), int64_t(0));
        return;
    }
    int64_t index[kMaxDims] = {};
    int64_t rest = begin;
    for (int d = ndim - 1; d >= 0; --d) {
        index[d] = rest % shape.shape[d];
        rest /= shape.shape[d];
    }
    int64_t inner = shape.shape[ndim - 1];
    for (int64_t i = begin; i < end;) {
        int64_t offsets[3] = {};
        for (int d = 0; d < ndim; ++d)
            for (int v = 1; v < 3; ++v) offsets[v] += index[d] * walk.views[v].strides[d];
        int64_t count = std::min(inner - index[ndim - 1], end - i);
        segment(i, count, offsets[1], offsets[2]);
        i += count;
        index[ndim - 1] += count;
        for (int d = ndim - 1; d > 0 && index[d] == shape.shape[d]; --d) {
            index[d] = 0;
            ++index[d - 1];
        }
    }
}

// Views of input, weight and pos_weight (a stride-0 view of `one` when absent), coalesced.
Walk make_walk(const StridedView& input, const StridedView& weight, const StridedView& pos_weight,
               void* one) {
    Walk walk{{input, weight, pos_weight}};
    for (int v = 1; v < 3; ++v) {
        if (walk.views[v].data) continue;
        walk.views[v] = input;
        walk.views[v].data = one;
        for (int d = 0; d < input.ndim; ++d) walk.views[v].strides[d] = 0;
    }
    coalesce_dims(walk.views, 3);
    return walk;
}

struct FirstInvalid {
    std::atomic<int64_t> index{-1};
    void note(int64_t i) {
        int64_t seen = index.load(std::memory_order_relaxed);
        while ((seen < 0 || i < seen) &&
               !index.compare_exchange_weak(seen, i, std::memory_order_relaxed)) {
        }
    }
};

template <PointwiseLoss K, typename T>
double forward_typed(T param, const StridedView& input, const StridedView& target,
                     const StridedView& weight, const StridedView& pos_weight,
                     const StridedView& out, FirstInvalid& invalid) {
    const T* x = input.ptr<const T>();
    const T* y = target.ptr<const T>();
    T* store = out.data ? out.ptr<T>() : nullptr;
    T one = T(1);
    Walk walk = make_walk(input, weight, pos_weight, &one);
    const T* w = walk.views[1].ptr<const T>();
    const T* pw = walk.views[2].ptr<const T>();
    int64_t ndim = walk.views[0].ndim;
    int64_t w_stride = ndim ? walk.views[1].strides[ndim - 1] : 0;
    int64_t pw_stride = ndim ? walk.views[2].strides[ndim - 1] : 0;
    int64_t numel = input.numel(), blocks = (numel + kBlock - 1) / kBlock;
    std::vector<double> partial(size_t(blocks), 0.0);
    parallel_for(0, blocks, std::max<int64_t>(1, kGrainSize / kBlock), [&](int64_t lo, int64_t hi) {
        for (int64_t b = lo; b < hi; ++b) {
            int64_t begin = b * kBlock, end = std::min(numel, begin + kBlock);
            if constexpr (K == PointwiseLoss::binary_cross_entropy) {
                for (int64_t i = begin; i < end; ++i) {
                    if (!(x[i] >= T(0) && x[i] <= T(1))) {
                        invalid.note(i);
                        break;
                    }
                }
            }
            double total = 0;
            walk_segments(walk, begin, end, [&](int64_t first, int64_t count, int64_t ow,
                                                int64_t opw) {
                const T *xs = x + first, *ys = y + first, *ws = w + ow, *pws = pw + opw;
                T* os = store ? store + first : nullptr;
                total += vec::lane_sum<T>(count, [&](int64_t k) {
                    T l = is_weighted(K) ? element_loss<K>(xs[k], ys[k], ws[k * w_stride],
                                                           pws[k * pw_stride], param)
                                         : element_loss<K>(xs[k], ys[k], one, one, param);
                    if (os) os[k] = l;
                    return l;
                });
            });
            partial[size_t(b)] = total;
        }
    });
    double total = 0;
    for (double p : partial) total += p;
    return total;
}

template <PointwiseLoss K, typename T>
void backward_typed(T param, const StridedView& input, const StridedView& target,
                    const StridedView& weight, const StridedView& pos_weight,
                    const StridedView& grad_losses, double scale, const StridedView& grad_input,
                    const StridedView& grad_target) {
    const T* x = input.ptr<const T>();
    const T* y = target.ptr<const T>();
    const T* g = grad_losses.data ? grad_losses.ptr<const T>() : nullptr;
    T* gx = grad_input.data ? grad_input.ptr<T>() : nullptr;
    T* gy = grad_target.data ? grad_target.ptr<T>() : nullptr;
    T one = T(1), s = T(scale);
    Walk walk = make_walk(input, weight, pos_weight, &one);
    const T* w = walk.views[1].ptr<const T>();
    const T* pw = walk.views[2].ptr<const T>();
    int64_t ndim = walk.views[0].ndim;
    int64_t w_stride = ndim ? walk.views[1].strides[ndim - 1] : 0;
    int64_t pw_stride = ndim ? walk.views[2].strides[ndim - 1] : 0;
    int64_t numel = input.numel(), blocks = (numel + kBlock - 1) / kBlock;
    parallel_for(0, blocks, std::max<int64_t>(1, kGrainSize / kBlock), [&](int64_t lo, int64_t hi) {
        walk_segments(walk, lo * kBlock, std::min(numel, hi * kBlock),
                      [&](int64_t first, int64_t count, int64_t ow, int64_t opw) {
                          const T *ws = w + ow, *pws = pw + opw;
                          for (int64_t k = 0; k < count; ++k) {
                              int64_t i = first + k;
                              T gi = g ? s * g[i] : s;
                              T wk = ws[k * w_stride], pwk = pws[k * pw_stride];
                              if (gx) gx[i] = gi * element_grad_input<K>(x[i], y[i], wk, pwk, param);
                              if (gy)
                                  gy[i] = gi * element_grad_target<K>(x[i], y[i], wk, pwk, param);
                          }
                      });
    });
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

}  // namespace

double pointwise_loss_forward(PointwiseLoss kind, double param, const StridedView& input,
                              const StridedView& target, const StridedView& weight,
                              const StridedView& pos_weight, const StridedView& out,
                              int64_t* invalid) {
    FirstInvalid first_invalid;
    double total = 0;
    if (input.numel() > 0) {
        dispatch_floating(input.dtype, "loss", [&]<typename T>() {
            dispatch_kind(kind, [&]<PointwiseLoss K>() {
                total = forward_typed<K, T>(T(param), input, target, weight, pos_weight, out,
                                            first_invalid);
            });
        });
    }
    *invalid = first_invalid.index.load();
    return total;
}

void pointwise_loss_backward(PointwiseLoss kind, double param, const StridedView& input,
                             const StridedView& target, const StridedView& weight,
                             const StridedView& pos_weight, const StridedView& grad_losses,
                             double scale, const StridedView& grad_input,
                             const StridedView& grad_target) {
    if (input.numel() == 0) return;
    dispatch_floating(input.dtype, "loss", [&]<typename T>() {
        dispatch_kind(kind, [&]<PointwiseLoss K>() {
            backward_typed<K, T>(T(param), input, target, weight, pos_weight, grad_losses, scale,
                                 grad_input, grad_target);
        });
    });
}

}  // namespace lumen::cpu
