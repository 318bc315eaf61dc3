// CPU kernels of the class losses: cross_entropy with class-index targets (log_softmax over C
// fused in, no one-hot), nll_loss, and cross_entropy with class-probability targets. Layout
// (N, C, S) as in ops/loss_kernels.h. S == 1 (classification): one sample is a contiguous row
// of C, reduced with the vectorized helpers of the softmax kernels. S > 1 (segmentation): a
// task is kWidth adjacent positions of one sample, and each pass walks the C rows of that
// block (contiguous, S apart) with the positions as the vectorized loop. The pointwise losses
// are in ops/cpu/loss_pointwise.cpp.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/loss_kernels.h"
#include "ops/loss_math.h"
#include "ops/reduce_kernels.h"

namespace lumen::cpu {

namespace {

constexpr int64_t kWidth = 64;  // positions per task when S > 1

struct Layout {
    int64_t samples = 1, classes = 1, positions = 1;  // N, C, S
};

Layout layout_of(const StridedView& input) {
    return {input.shape[0], input.shape[1], input.shape[2]};
}

// Tasks of `per_task` elements: kWidth positions of one sample (S > 1) or a group of whole
// rows (S == 1). Both depend only on the shape, so the block sums below do not depend on the
// thread count.
int64_t rows_per_task(const Layout& layout) {
    return std::max<int64_t>(1, 16384 / std::max<int64_t>(layout.classes, 1));
}
int64_t blocks_per_sample(const Layout& layout) { return (layout.positions + kWidth - 1) / kWidth; }

// Runs task(t, totals) for t in [0, tasks) in parallel, each adding into its own K totals,
// then sums the tasks' totals in task order.
template <int K, typename Task>
std::array<double, K> sum_tasks(int64_t tasks, int64_t elements_per_task, const Task& task) {
    std::vector<std::array<double, K>> partial(static_cast<size_t>(tasks));
    int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(elements_per_task, 1));
    parallel_for(0, tasks, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t t = lo; t < hi; ++t) {
            partial[size_t(t)] = {};
            task(t, partial[size_t(t)].data());
        }
    });
    std::array<double, K> total{};
    for (const auto& p : partial)
        for (int k = 0; k < K; ++k) total[size_t(k)] += p[size_t(k)];
    return total;
}

// The logsumexp parts of ops/loss_kernels.h: lse (2, N, S) as max[i] and log_sum[i].
template <typename Value>
struct LseParts {
    Value* max = nullptr;
    Value* log_sum = nullptr;
};

template <typename T, typename Value>
LseParts<Value> lse_parts(const StridedView& lse, int64_t samples) {
    if (!lse.data) return {};
    Value* base = lse.ptr<T>();
    return {base, base + samples};
}

// e^v for v <= 0 in the vectorizable form of the softmax kernels (loss_math::class_probability).
struct ClassMath {
    template <typename T>
    static T exp_nonpositive(T v) {
        return vec::exp_nonpositive(v);
    }
};

// Per-class weights, or 1 for every class; `total` is sum_c w[c].
template <typename T>
struct ClassWeights {
    const T* data = nullptr;
    double total = 0;
    T operator[](int64_t c) const { return data ? data[c] : T(1); }
};

template <typename T>
ClassWeights<T> class_weights(const StridedView& weight, int64_t classes) {
    ClassWeights<T> w{weight.data ? weight.ptr<const T>() : nullptr, 0.0};
    for (int64_t c = 0; c < classes; ++c) w.total += double(w[c]);
    return w;
}

// ---- class-index targets, forward ----

// Rows (S == 1). The max is subtracted first, so exp never overflows; the smoothing term is
// summed as w (x - max), which keeps its terms small.
template <typename T>
void class_rows_forward(const Layout& layout, const T* input, const int64_t* target,
                        const ClassWeights<T>& w, const ClassLossOptions& o, T* losses,
                        LseParts<T> lse, int64_t first, int64_t count, double* totals,
                        FirstInvalid& invalid) {
    int64_t C = layout.classes;
    double smoothing = o.label_smoothing;
    for (int64_t n = first; n < first + count; ++n) {
        const T* x = input + n * C;
        int64_t t = target[n];
        double loss = 0;
        if (t == o.ignore_index) {
            if (lse.max) lse.max[n] = lse.log_sum[n] = T(0);
        } else if (t < 0 || t >= C) {
            invalid.note(n);
        } else if (!o.from_logits) {
            loss = -double(w[t]) * double(x[t]);
            totals[1] += double(w[t]);
        } else {
            T max = vec::extremum<true>(x, C);
            double sum =
                vec::lane_sum<T>(C, [&](int64_t c) { return vec::exp_nonpositive(T(x[c] - max)); });
            double log_sum = std::log(sum);
            if (lse.max) {
                lse.max[n] = max;
                lse.log_sum[n] = T(log_sum);
            }
            loss = (1 - smoothing) * double(w[t]) * (log_sum - double(x[t] - max));
            if (smoothing > 0) {
                double shifted =
                    w.data
                        ? vec::lane_sum<T>(C, [&](int64_t c) { return w.data[c] * (x[c] - max); })
                        : vec::lane_sum<T>(C, [&](int64_t c) { return x[c] - max; });
                loss += smoothing / double(C) * (w.total * log_sum - shifted);
            }
            totals[1] += double(w[t]);
        }
        if (losses) losses[n] = T(loss);
        totals[0] += loss;
    }
}

// log(x) for x >= 1 (a softmax denominator) in plain arithmetic, so that the per-position
// loops vectorize: x = m 2^e with m in [1, 2), log m = 2 atanh(s), s = (m - 1) / (m + 1)
// <= 1/3 (max relative error ~2e-7). x - x carries a NaN through. Double uses std::log.
inline float log_at_least_one(float x) {
    int32_t bits = std::bit_cast<int32_t>(x);
    float e = float((bits >> 23) - 127);
    float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f800000);
    float s = (m - 1.0f) / (m + 1.0f);
    return (e * 0.693147180559945f + loss_math::two_atanh_series(s)) + (x - x);
}
inline double log_at_least_one(double x) { return std::log(x); }

// keep ? value : 0 through the bits: GCC (default -ftrapping-math) moves the arithmetic of a
// value used only under a condition into a branch and then leaves the loop scalar.
template <typename T>
T zero_unless(bool keep, T value) {
    using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
    return std::bit_cast<T>(std::bit_cast<Bits>(value) & -Bits(keep));
}

// cls[j] = target[j] as int32, or -1 when it is ignore_index or outside [0, C); the latter
// are reported to `invalid` with their flat index (first + j).
void block_classes(const int64_t* target, int64_t width, int64_t classes, int64_t ignore_index,
                   int32_t* cls, int64_t first, FirstInvalid& invalid) {
    bool any_invalid = false;
    for (int64_t j = 0; j < width; ++j) {
        int64_t t = target[j];
        bool ignored = t == ignore_index, bad = !ignored && (t < 0 || t >= classes);
        any_invalid |= bad;
        cls[j] = ignored || bad ? -1 : int32_t(t);
    }
    if (!any_invalid) return;
    for (int64_t j = 0; j < width; ++j) {
        int64_t t = target[j];
        if (t != ignore_index && (t < 0 || t >= classes)) invalid.note(first + j);
    }
}

// Columns (S > 1): positions [s0, s0 + width) of sample n. The target's logit and weight are
// picked up during the pass over C by a compare-and-select (no gather), and every loop runs
// over the positions, so all of them vectorize.
template <typename T>
void class_block_forward(const Layout& layout, const T* input, const int64_t* target,
                         const ClassWeights<T>& w, const ClassLossOptions& o, T* losses,
                         LseParts<T> lse, int64_t n, int64_t s0, int64_t width, double* totals,
                         FirstInvalid& invalid) {
    int64_t C = layout.classes, S = layout.positions, i0 = n * S + s0;
    const T* base = input + n * C * S + s0;
    int32_t cls[kWidth];  // the target class, or -1 when ignored (or invalid)
    block_classes(target + i0, width, C, o.ignore_index, cls, i0, invalid);
    // x_t, w[t] (0 when ignored), and the sums over C.
    T max[kWidth], sum[kWidth], shifted[kWidth], picked[kWidth], picked_weight[kWidth];
    for (int64_t j = 0; j < width; ++j) {
        max[j] = o.from_logits ? base[j] : T(0);
        sum[j] = shifted[j] = picked[j] = picked_weight[j] = 0;
    }
    if (o.from_logits) {
        for (int64_t c = 1; c < C; ++c) {
            const T* row = base + c * S;
            for (int64_t j = 0; j < width; ++j)
                max[j] = ((row[j] > max[j]) | (row[j] != row[j])) ? row[j] : max[j];
        }
    }
    // Branches on the options stay outside the loops, which then vectorize.
    for (int64_t c = 0; c < C; ++c) {
        const T* row = base + c * S;
        T wc = w[c];
        for (int64_t j = 0; j < width; ++j) {
            bool hit = cls[j] == int32_t(c);
            picked[j] = hit ? row[j] : picked[j];
            picked_weight[j] = hit ? wc : picked_weight[j];
        }
        if (!o.from_logits) continue;
        for (int64_t j = 0; j < width; ++j) {
            T d = row[j] - max[j];
            sum[j] += vec::exp_nonpositive(d);
            shifted[j] += wc * d;
        }
    }
    T keep = T(1 - o.label_smoothing), spread = T(o.label_smoothing / double(C));
    T weight_total = T(w.total), loss[kWidth], log_sums[kWidth];
    if (o.from_logits) {
        // (1 - ls) w[t] (log_sum - (x_t - max)) + ls / C sum_c w_c (log_sum - (x_c - max))
        for (int64_t j = 0; j < width; ++j) {
            T log_sum = log_at_least_one(sum[j]);
            T value = keep * picked_weight[j] * (log_sum - (picked[j] - max[j])) +
                      spread * (weight_total * log_sum - shifted[j]);
            loss[j] = zero_unless(cls[j] >= 0, value);
            log_sums[j] = log_sum;
        }
    } else {
        for (int64_t j = 0; j < width; ++j) {
            T value = -picked_weight[j] * picked[j];
            loss[j] = zero_unless(cls[j] >= 0, value);
            log_sums[j] = 0;
        }
    }
    if (lse.max) {
        std::copy(max, max + width, lse.max + i0);
        std::copy(log_sums, log_sums + width, lse.log_sum + i0);
    }
    if (losses) std::copy(loss, loss + width, losses + i0);
    T loss_total = 0, weight_sum = 0;
    for (int64_t j = 0; j < width; ++j) {
        loss_total += loss[j];
        weight_sum += picked_weight[j];
    }
    totals[0] += double(loss_total);
    totals[1] += double(weight_sum);
}

// ---- class-index targets, backward ----

// The coefficients of one sample's gradient row: grad_c = softmax_c * a - b * w[c], then
// grad_t -= target_term. All zero for an ignored sample.
struct ClassGradient {
    double a = 0, b = 0, target_term = 0;
};

template <typename T>
ClassGradient class_gradient(const ClassWeights<T>& w, const ClassLossOptions& o, int64_t t,
                             int64_t classes, double g) {
    ClassGradient k;
    if (t == o.ignore_index) return k;
    double smoothing = o.from_logits ? o.label_smoothing : 0.0;
    k.target_term = g * (1 - smoothing) * double(w[t]);
    if (!o.from_logits) return k;
    k.a = g * ((1 - smoothing) * double(w[t]) + smoothing / double(classes) * w.total);
    k.b = g * smoothing / double(classes);
    return k;
}

template <typename T>
void class_rows_backward(const Layout& layout, const T* input, const int64_t* target,
                         const ClassWeights<T>& w, const ClassLossOptions& o, LseParts<const T> lse,
                         const T* grad_losses, double scale, T* grad_input, int64_t lo,
                         int64_t hi) {
    int64_t C = layout.classes;
    for (int64_t n = lo; n < hi; ++n) {
        const T* x = input + n * C;
        T* gx = grad_input + n * C;
        int64_t t = target[n];
        double g = scale * (grad_losses ? double(grad_losses[n]) : 1.0);
        ClassGradient k = class_gradient(w, o, t, C, g);
        if (t == o.ignore_index || !o.from_logits) {
            std::fill(gx, gx + C, T(0));
        } else {
            T a = T(k.a), b = T(k.b), max = lse.max[n], log_sum = lse.log_sum[n];
            auto p = [&](int64_t c) {
                return loss_math::class_probability<ClassMath>(x[c], max, log_sum);
            };
            if (w.data && k.b != 0) {
                for (int64_t c = 0; c < C; ++c) gx[c] = p(c) * a - b * w.data[c];
            } else {
                for (int64_t c = 0; c < C; ++c) gx[c] = p(c) * a - b;
            }
        }
        if (t != o.ignore_index) gx[t] -= T(k.target_term);
    }
}

// grad = softmax * a - b w_c - [c == t] target_term per position, with the coefficients
// prepared over the positions first; an ignored position (and every nll position) gets
// max = inf, so its softmax term is exactly 0 without a branch.
template <typename T>
void class_block_backward(const Layout& layout, const T* input, const int64_t* target,
                          const ClassWeights<T>& w, const ClassLossOptions& o,
                          LseParts<const T> lse, const T* grad_losses, double scale, T* grad_input,
                          int64_t n, int64_t s0, int64_t width) {
    int64_t C = layout.classes, S = layout.positions, i0 = n * S + s0;
    const T* base = input + n * C * S + s0;
    T* out = grad_input + n * C * S + s0;
    const int64_t* t = target + i0;
    int32_t cls[kWidth];
    T a[kWidth], b[kWidth], target_term[kWidth], max[kWidth], log_sum[kWidth];
    double smoothing = o.from_logits ? o.label_smoothing : 0.0;
    for (int64_t j = 0; j < width; ++j) {
        bool ignored = t[j] == o.ignore_index;
        cls[j] = ignored ? -1 : int32_t(t[j]);
        double g = ignored ? 0.0 : scale * (grad_losses ? double(grad_losses[i0 + j]) : 1.0);
        double wt = ignored ? 0.0 : double(w[t[j]]);
        target_term[j] = T(g * (1 - smoothing) * wt);
        a[j] = o.from_logits ? T(g * ((1 - smoothing) * wt + smoothing / double(C) * w.total)) : 0;
        b[j] = T(g * smoothing / double(C));
        bool softmax = !ignored && o.from_logits;
        max[j] = softmax ? lse.max[i0 + j] : std::numeric_limits<T>::infinity();
        log_sum[j] = softmax ? lse.log_sum[i0 + j] : T(0);
    }
    for (int64_t c = 0; c < C; ++c) {
        const T* row = base + c * S;
        T* grad_row = out + c * S;
        T wc = w[c];
        for (int64_t j = 0; j < width; ++j) {
            T picked = cls[j] == int32_t(c) ? target_term[j] : T(0);
            T p = loss_math::class_probability<ClassMath>(row[j], max[j], log_sum[j]);
            grad_row[j] = p * a[j] - b[j] * wc - picked;
        }
    }
}

}  // namespace

int64_t class_loss_forward(const StridedView& input, const StridedView& target,
                           const StridedView& weight, const ClassLossOptions& options,
                           const StridedView& losses, const StridedView& lse, double totals[2]) {
    Layout layout = layout_of(input);
    FirstInvalid invalid;
    totals[0] = totals[1] = 0;
    if (layout.samples * layout.positions == 0) return -1;
    const int64_t* targets = target.ptr<const int64_t>();
    const char* op = options.from_logits ? "cross_entropy" : "nll_loss";
    dispatch_floating(input.dtype, op, [&]<typename T>() {
        const T* x = input.ptr<const T>();
        T* out = losses.data ? losses.ptr<T>() : nullptr;
        LseParts<T> log_z = lse_parts<T, T>(lse, layout.samples * layout.positions);
        ClassWeights<T> w = class_weights<T>(weight, layout.classes);
        std::array<double, 2> sums;
        if (layout.positions == 1) {
            int64_t rows = rows_per_task(layout);
            int64_t tasks = (layout.samples + rows - 1) / rows;
            sums = sum_tasks<2>(tasks, rows * layout.classes, [&](int64_t task, double* acc) {
                int64_t first = task * rows, count = std::min(rows, layout.samples - first);
                class_rows_forward(layout, x, targets, w, options, out, log_z, first, count, acc,
                                   invalid);
            });
        } else {
            int64_t blocks = blocks_per_sample(layout);
            sums = sum_tasks<2>(layout.samples * blocks, kWidth * layout.classes,
                                [&](int64_t task, double* acc) {
                                    int64_t n = task / blocks, s0 = task % blocks * kWidth;
                                    int64_t width = std::min(kWidth, layout.positions - s0);
                                    class_block_forward(layout, x, targets, w, options, out, log_z,
                                                        n, s0, width, acc, invalid);
                                });
        }
        totals[0] = sums[0];
        totals[1] = sums[1];
    });
    return invalid.index.load();
}

void class_loss_backward(const StridedView& input, const StridedView& target,
                         const StridedView& weight, const ClassLossOptions& options,
                         const StridedView& lse, const StridedView& grad_losses, double scale,
                         const StridedView& grad_input) {
    Layout layout = layout_of(input);
    if (layout.samples * layout.classes * layout.positions == 0) return;
    const int64_t* targets = target.ptr<const int64_t>();
    const char* op = options.from_logits ? "cross_entropy" : "nll_loss";
    dispatch_floating(input.dtype, op, [&]<typename T>() {
        const T* x = input.ptr<const T>();
        auto log_z = lse_parts<T, const T>(lse, layout.samples * layout.positions);
        const T* g = grad_losses.data ? grad_losses.ptr<const T>() : nullptr;
        T* gx = grad_input.ptr<T>();
        ClassWeights<T> w = class_weights<T>(weight, layout.classes);
        if (layout.positions == 1) {
            int64_t grain = std::max<int64_t>(1, kGrainSize / layout.classes);
            parallel_for(0, layout.samples, grain, [&](int64_t lo, int64_t hi) {
                class_rows_backward(layout, x, targets, w, options, log_z, g, scale, gx, lo, hi);
            });
            return;
        }
        int64_t blocks = blocks_per_sample(layout);
        int64_t grain = std::max<int64_t>(1, kGrainSize / (kWidth * layout.classes));
        parallel_for(0, layout.samples * blocks, grain, [&](int64_t lo, int64_t hi) {
            for (int64_t task = lo; task < hi; ++task) {
                int64_t n = task / blocks, s0 = task % blocks * kWidth;
                int64_t width = std::min(kWidth, layout.positions - s0);
                class_block_backward(layout, x, targets, w, options, log_z, g, scale, gx, n, s0,
                                     width);
            }
        });
    });
}

// ---- class-probability targets ----
// One sample at a time with its classes `stride` (= S) apart: soft targets are mostly used
// for classification (S == 1, stride 1), where these loops are contiguous.

namespace {

template <typename T>
struct SoftSample {
    double log_sum = 0, max = 0, weighted_q = 0;  // sum_c w[c] q[c]
};

template <typename T>
SoftSample<T> soft_sample(const T* x, const T* q_raw, const ClassWeights<T>& w, int64_t C,
                          int64_t stride, double smoothing, double* shifted) {
    SoftSample<T> s;
    T max = x[0];
    for (int64_t c = 1; c < C; ++c) {
        T v = x[c * stride];
        max = ((v > max) | (v != v)) ? v : max;
    }
    double sum = 0, weighted_q = 0, weighted_shift = 0;
    for (int64_t c = 0; c < C; ++c) {
        T d = x[c * stride] - max;
        sum += double(vec::exp_nonpositive(d));
        double wq =
            double(w[c]) * ((1 - smoothing) * double(q_raw[c * stride]) + smoothing / double(C));
        weighted_q += wq;
        weighted_shift += wq * double(d);
    }
    s.log_sum = std::log(sum);
    s.max = double(max);
    s.weighted_q = weighted_q;
    if (shifted) *shifted = weighted_shift;
    return s;
}

}  // namespace

void soft_cross_entropy_forward(const StridedView& input, const StridedView& target,
                                const StridedView& weight, double label_smoothing,
                                const StridedView& losses, const StridedView& lse, double* total) {
    Layout layout = layout_of(input);
    *total = 0;
    int64_t samples = layout.samples * layout.positions;
    if (samples == 0) return;
    dispatch_floating(input.dtype, "cross_entropy", [&]<typename T>() {
        const T* x = input.ptr<const T>();
        const T* q = target.ptr<const T>();
        T* out = losses.data ? losses.ptr<T>() : nullptr;
        LseParts<T> log_z = lse_parts<T, T>(lse, samples);
        ClassWeights<T> w = class_weights<T>(weight, layout.classes);
        int64_t C = layout.classes, S = layout.positions;
        int64_t rows = rows_per_task(layout);
        int64_t tasks = (samples + rows - 1) / rows;
        auto sums = sum_tasks<1>(tasks, rows * C, [&](int64_t task, double* acc) {
            for (int64_t i = task * rows; i < std::min(samples, (task + 1) * rows); ++i) {
                int64_t offset = (i / S) * C * S + i % S;
                double shifted = 0;
                SoftSample<T> s =
                    soft_sample(x + offset, q + offset, w, C, S, label_smoothing, &shifted);
                // sum_c w q (lse - x) = log_sum sum_c w q - sum_c w q (x - max)
                double loss = s.log_sum * s.weighted_q - shifted;
                log_z.max[i] = T(s.max);
                log_z.log_sum[i] = T(s.log_sum);
                if (out) out[i] = T(loss);
                acc[0] += loss;
            }
        });
        *total = sums[0];
    });
}

void soft_cross_entropy_backward(const StridedView& input, const StridedView& target,
                                 const StridedView& weight, double label_smoothing,
                                 const StridedView& lse, const StridedView& grad_losses,
                                 double scale, const StridedView& grad_input,
                                 const StridedView& grad_target) {
    Layout layout = layout_of(input);
    int64_t samples = layout.samples * layout.positions;
    if (samples * layout.classes == 0) return;
    dispatch_floating(input.dtype, "cross_entropy", [&]<typename T>() {
        const T* x = input.ptr<const T>();
        const T* q = target.ptr<const T>();
        auto log_z = lse_parts<T, const T>(lse, samples);
        const T* g = grad_losses.data ? grad_losses.ptr<const T>() : nullptr;
        T* gx = grad_input.data ? grad_input.ptr<T>() : nullptr;
        T* gq = grad_target.data ? grad_target.ptr<T>() : nullptr;
        ClassWeights<T> w = class_weights<T>(weight, layout.classes);
        int64_t C = layout.classes, S = layout.positions;
        double smoothing = label_smoothing;
        parallel_for(0, samples, std::max<int64_t>(1, kGrainSize / C), [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) {
                int64_t offset = (i / S) * C * S + i % S;
                double gi = scale * (g ? double(g[i]) : 1.0);
                T max = log_z.max[i], log_sum = log_z.log_sum[i];
                double weighted_q = 0;
                for (int64_t c = 0; c < C; ++c)
                    weighted_q += double(w[c]) * ((1 - smoothing) * double(q[offset + c * S]) +
                                                  smoothing / double(C));
                for (int64_t c = 0; c < C; ++c) {
                    int64_t at = offset + c * S;
                    T wc = w[c];
                    if (gx) {
                        T qc = T((1 - smoothing) * double(q[at]) + smoothing / double(C));
                        T p = loss_math::class_probability<ClassMath>(x[at], max, log_sum);
                        gx[at] = T(gi) * (p * T(weighted_q) - wc * qc);
                    }
                    if (gq) {
                        T lse_minus_x = loss_math::lse_minus(x[at], max, log_sum);
                        gq[at] = T(gi * (1 - smoothing)) * wc * lse_minus_x;
                    }
                }
            }
        });
    });
}

}  // namespace lumen::cpu
