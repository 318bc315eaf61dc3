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
#include "ops/loss_math.h"
#include "ops/reduce_kernels.h"

namespace lumen::cpu {

namespace {

constexpr int64_t kBlock = 16384;

// The primitives of ops/loss_math.h on the CPU, written so that the element loops vectorize.
struct CpuMath {
    // e^-|z| in (0, 1]: the vectorizable float exp of the softmax kernels (std::exp for double).
    template <typename T>
    static T exp_neg_abs(T z) {
        return vec::exp_nonpositive(T(-std::abs(z)));
    }
    // log(1 + e) for e in [0, 1] as 2 atanh(s), s = e / (2 + e) <= 1/3: vectorizes, and is
    // accurate for tiny e too (unlike log(1 + e)). Double uses std::log1p.
    static float log1p_unit(float e) { return loss_math::two_atanh_series(e / (2.0f + e)); }
    static double log1p_unit(double e) { return std::log1p(e); }
};

constexpr bool is_weighted(PointwiseLoss kind) {
    return kind == PointwiseLoss::binary_cross_entropy ||
           kind == PointwiseLoss::binary_cross_entropy_with_logits;
}

// The element views of one problem: linear index i for input/target/out/grads; the weights
// through their own (broadcast) offsets.
struct Walk {
    StridedView views[3];  // input (contiguous), weight, pos_weight, coalesced together
    bool has[3] = {true, false, false};
    int64_t inner_stride(int v) const {
        return views[0].ndim ? views[v].strides[views[0].ndim - 1] : 0;
    }
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

// Views of input, weight and pos_weight (a stride-0 view of the input's shape when absent,
// never read), coalesced.
Walk make_walk(const StridedView& input, const StridedView& weight, const StridedView& pos_weight) {
    Walk walk{{input, weight, pos_weight}};
    for (int v = 1; v < 3; ++v) {
        walk.has[v] = walk.views[v].data != nullptr;
        if (walk.has[v]) continue;
        walk.views[v] = input;
        for (int d = 0; d < input.ndim; ++d) walk.views[v].strides[d] = 0;
    }
    coalesce_dims(walk.views, 3);
    return walk;
}

// Calls body(weight_at, pos_weight_at), functions of the element k of a segment: the
// constant 1 for an absent weight, else a contiguous copy of the segment's weights in
// scratch (2 kBlock elements). Broadcast weights have stride 0 or odd strides; reading them
// from a copy keeps every loop over the elements unit-stride, so it vectorizes.
template <PointwiseLoss K, typename T, typename Body>
void with_weights(const Walk& walk, int64_t weight_offset, int64_t pos_weight_offset, int64_t count,
                  T* scratch, const Body& body) {
    auto one = [](int64_t) { return T(1); };
    if constexpr (!is_weighted(K)) {
        body(one, one);
    } else {
        auto gather = [&](int v, int64_t offset, T* buffer) {
            const T* source = walk.views[v].template ptr<const T>() + offset;
            int64_t stride = walk.inner_stride(v);
            for (int64_t k = 0; k < count; ++k) buffer[k] = source[k * stride];
            return [buffer](int64_t k) { return buffer[k]; };
        };
        if (walk.has[1] && walk.has[2]) {
            body(gather(1, weight_offset, scratch), gather(2, pos_weight_offset, scratch + kBlock));
        } else if (walk.has[1]) {
            body(gather(1, weight_offset, scratch), one);
        } else if (walk.has[2]) {
            body(one, gather(2, pos_weight_offset, scratch + kBlock));
        } else {
            body(one, one);
        }
    }
}

template <typename T>
std::vector<T> weight_scratch(PointwiseLoss kind) {
    return std::vector<T>(is_weighted(kind) ? size_t(2 * kBlock) : 0);
}

template <PointwiseLoss K, typename T>
double forward_typed(T param, const StridedView& input, const StridedView& target,
                     const StridedView& weight, const StridedView& pos_weight,
                     const StridedView& out, FirstInvalid& invalid) {
    const T* x = input.ptr<const T>();
    const T* y = target.ptr<const T>();
    T* store = out.data ? out.ptr<T>() : nullptr;
    Walk walk = make_walk(input, weight, pos_weight);
    int64_t numel = input.numel(), blocks = (numel + kBlock - 1) / kBlock;
    std::vector<double> partial(size_t(blocks), 0.0);
    parallel_for(0, blocks, std::max<int64_t>(1, kGrainSize / kBlock), [&](int64_t lo, int64_t hi) {
        std::vector<T> scratch = weight_scratch<T>(K);
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
            walk_segments(walk, begin, end,
                          [&](int64_t first, int64_t count, int64_t ow, int64_t opw) {
                              const T *xs = x + first, *ys = y + first;
                              T* os = store ? store + first : nullptr;
                              with_weights<K>(walk, ow, opw, count, scratch.data(),
                                              [&](auto w_at, auto pw_at) {
                                                  total += vec::lane_sum<T>(count, [&](int64_t k) {
                                                      T l = loss_math::element_loss<K, CpuMath>(
                                                          xs[k], ys[k], w_at(k), pw_at(k), param);
                                                      if (os) os[k] = l;
                                                      return l;
                                                  });
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
    T s = T(scale);
    Walk walk = make_walk(input, weight, pos_weight);
    int64_t numel = input.numel(), blocks = (numel + kBlock - 1) / kBlock;
    // One loop per gradient with the factor g hoisted, so that each loop vectorizes.
    auto fill = [&](T* grad, int64_t first, int64_t count, auto w_at, auto pw_at, auto element) {
        const T *xs = x + first, *ys = y + first;
        T* out = grad + first;
        if (g) {
            const T* gs = g + first;
            for (int64_t k = 0; k < count; ++k)
                out[k] = s * gs[k] * element(xs[k], ys[k], w_at(k), pw_at(k));
        } else {
            for (int64_t k = 0; k < count; ++k)
                out[k] = s * element(xs[k], ys[k], w_at(k), pw_at(k));
        }
    };
    auto grad_input_of = [param](T xv, T yv, T wv, T pwv) {
        return loss_math::element_grad_input<K, CpuMath>(xv, yv, wv, pwv, param);
    };
    auto grad_target_of = [param](T xv, T yv, T wv, T pwv) {
        return loss_math::element_grad_target<K, CpuMath>(xv, yv, wv, pwv, param);
    };
    parallel_for(0, blocks, std::max<int64_t>(1, kGrainSize / kBlock), [&](int64_t lo, int64_t hi) {
        std::vector<T> scratch = weight_scratch<T>(K);
        for (int64_t b = lo; b < hi; ++b) {
            int64_t begin = b * kBlock, end = std::min(numel, begin + kBlock);
            walk_segments(walk, begin, end,
                          [&](int64_t first, int64_t count, int64_t ow, int64_t opw) {
                              with_weights<K>(
                                  walk, ow, opw, count, scratch.data(), [&](auto w_at, auto pw_at) {
                                      if (gx) fill(gx, first, count, w_at, pw_at, grad_input_of);
                                      if (gy) fill(gy, first, count, w_at, pw_at, grad_target_of);
                                  });
                          });
        }
    });
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
            loss_math::dispatch_kind(kind, [&]<PointwiseLoss K>() {
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
        loss_math::dispatch_kind(kind, [&]<PointwiseLoss K>() {
            backward_typed<K, T>(T(param), input, target, weight, pos_weight, grad_losses, scale,
                                 grad_input, grad_target);
        });
    });
}

}  // namespace lumen::cpu
