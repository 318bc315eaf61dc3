// CPU channel normalization (batch_norm, instance_norm with running statistics, seq_norm,
// normalize) over x seen as (outer, length, channels, spatial), one statistic per
// (outer, channel). Sums per statistic go through channel_sum: spatial > 1 sums each
// contiguous run of `spatial` elements in parallel, then adds the runs per statistic in a fixed
// order; spatial == 1 walks blocks of adjacent channels down the length so the loop over
// channels vectorizes. Elementwise passes see runs of one statistic (spatial > 1) or runs of
// consecutive statistics (spatial == 1).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/norm_kernels.h"
#include "ops/norm_math.h"
#include "ops/reduce_kernels.h"

namespace lumen::cpu {

namespace {

using Layout = ChannelNormLayout;

// out[s] = sum of term(index, s) over the elements of statistic s, in double.
template <typename T, typename Term>
void channel_sum(const Layout& lay, double* out, const Term& term) {
    const int64_t A = lay.outer, L = lay.length, C = lay.channels, S = lay.spatial;
    std::fill(out, out + A * C, 0.0);
    if (L * S == 0) return;  // no elements (S == 0 would read rows of C from none)
    if (S > 1) {
        const int64_t runs = A * L * C;
        std::vector<double> partial(static_cast<size_t>(runs));
        parallel_for(0, runs, std::max<int64_t>(1, kGrainSize / S), [&](int64_t lo, int64_t hi) {
            for (int64_t run = lo; run < hi; ++run) {
                int64_t stat = (run / (L * C)) * C + run % C;
                int64_t base = run * S;
                partial[size_t(run)] =
                    vec::lane_sum<T>(S, [&](int64_t s) { return term(base + s, stat); });
            }
        });
        for (int64_t a = 0; a < A; ++a)
            for (int64_t l = 0; l < L; ++l)
                for (int64_t c = 0; c < C; ++c) out[a * C + c] += partial[size_t((a * L + l) * C + c)];
        return;
    }
    constexpr int64_t kBlock = 64, kFoldRows = 256;
    const int64_t blocks = (C + kBlock - 1) / kBlock;
    parallel_for(0, A * blocks, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, L * kBlock)),  // L may be 0
                 [&](int64_t lo, int64_t hi) {
                     T acc[kBlock];
                     double total[kBlock];
                     for (int64_t task = lo; task < hi; ++task) {
                         int64_t a = task / blocks, c0 = (task % blocks) * kBlock;
                         int64_t width = std::min(kBlock, C - c0);
                         std::fill(total, total + kBlock, 0.0);
                         for (int64_t l0 = 0; l0 < L; l0 += kFoldRows) {
                             std::fill(acc, acc + kBlock, T(0));
                             int64_t l1 = std::min(L, l0 + kFoldRows);
                             for (int64_t l = l0; l < l1; ++l) {
                                 int64_t base = (a * L + l) * C + c0;
                                 for (int64_t j = 0; j < width; ++j)
                                     acc[j] += term(base + j, a * C + c0 + j);
                             }
                             for (int64_t j = 0; j < width; ++j) total[j] += double(acc[j]);
                         }
                         for (int64_t j = 0; j < width; ++j) out[a * C + c0 + j] = total[j];
                     }
                 });
}

// body(offset, count, stat, per_element): elements [offset, offset + count) belong to
// statistic `stat` (per_element false) or to stat, stat + 1, ... (per_element true).
template <typename Body>
void for_each_run(const Layout& lay, const Body& body) {
    const int64_t L = lay.length, C = lay.channels, S = lay.spatial;
    if (lay.outer * L * C * S == 0) return;  // S == 0 would read rows of C from no elements
    if (S > 1) {
        parallel_for(0, lay.outer * L * C, std::max<int64_t>(1, kGrainSize / S),
                     [&](int64_t lo, int64_t hi) {
                         for (int64_t run = lo; run < hi; ++run)
                             body(run * S, S, (run / (L * C)) * C + run % C, std::false_type{});
                     });
        return;
    }
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, C));  // C may be 0
    parallel_for(0, lay.outer * L, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t row = lo; row < hi; ++row) body(row * C, C, (row / L) * C, std::true_type{});
    });
}

// y[i] = x[i] * scale[s] + shift[s] over every element.
template <typename T>
void scale_shift(const Layout& lay, const T* x, const T* scale, const T* shift, T* y) {
    for_each_run(lay, [&](int64_t offset, int64_t count, int64_t stat, auto per_element) {
        const T* xs = x + offset;
        T* ys = y + offset;
        if constexpr (decltype(per_element)::value) {
            const T* k = scale + stat;
            const T* b = shift + stat;
            for (int64_t i = 0; i < count; ++i) ys[i] = xs[i] * k[i] + b[i];
        } else {
            const T k = scale[stat], b = shift[stat];
            for (int64_t i = 0; i < count; ++i) ys[i] = xs[i] * k + b;
        }
    });
}

template <typename T>
T param(const StridedView& v, int64_t c, T fallback) {
    return v.data ? v.ptr<T>()[c] : fallback;
}

// dx of batch statistics, PyTorch's grouping: w rstd ((g - mean(g)) - (x - mu) k) with
// k = rstd^2 mean(g (x - mu)). The two terms cancel almost completely when a statistic has few
// elements (a 1 x 1 map of a batch of 2 leaves eps / (var + eps) of each), so mu must be the
// exact mean: the stored one is rounded to T, which is a large error against x - mu when the
// values are nearly equal, and a following conv over features nearly equal across the batch
// amplifies what that does to the sum of dx (0 exactly). mu = mean + shift, with shift the
// mean of (x - mean) summed in T (small terms, so accurate); sum_gx (around the stored mean)
// is moved to mu the same way.
template <typename T>
void batch_stats_grad_x(const Layout& lay, const T* xp, const T* gp, const T* mp, const T* rstd,
                        const StridedView& weight, const std::vector<double>& sum_g,
                        const std::vector<double>& sum_gx, T* dx) {
    const int64_t stats = lay.outer * lay.channels;
    const double n = double(lay.count());
    std::vector<double> shift(static_cast<size_t>(stats));
    channel_sum<T>(lay, shift.data(), [&](int64_t i, int64_t s) { return T(xp[i] - mp[s]); });
    std::vector<T> sh(static_cast<size_t>(stats)), gm(static_cast<size_t>(stats)),
        k(static_cast<size_t>(stats)), scale(static_cast<size_t>(stats));
    for (int64_t s = 0; s < stats; ++s) {
        double r = double(rstd[s]), d = shift[size_t(s)] / n;
        double centred = sum_gx[size_t(s)] - d * sum_g[size_t(s)];
        sh[size_t(s)] = T(d);
        gm[size_t(s)] = T(sum_g[size_t(s)] / n);
        k[size_t(s)] = T(centred * r * r / n);
        scale[size_t(s)] = T(double(param<T>(weight, s % lay.channels, T(1))) * r);
    }
    for_each_run(lay, [&](int64_t offset, int64_t count, int64_t stat, auto per_element) {
        const T* xs = xp + offset;
        const T* gs = gp + offset;
        T* ds = dx + offset;
        if constexpr (decltype(per_element)::value) {
            const T *m = mp + stat, *d = sh.data() + stat, *g = gm.data() + stat;
            const T *kk = k.data() + stat, *a = scale.data() + stat;
            for (int64_t i = 0; i < count; ++i)
                ds[i] = ((gs[i] - g[i]) - ((xs[i] - m[i]) - d[i]) * kk[i]) * a[i];
        } else {
            const T m = mp[stat], d = sh[size_t(stat)], g = gm[size_t(stat)], kk = k[size_t(stat)],
                    a = scale[size_t(stat)];
            for (int64_t i = 0; i < count; ++i) ds[i] = ((gs[i] - g) - ((xs[i] - m) - d) * kk) * a;
        }
    });
}

}  // namespace

void channel_moments(const Layout& lay, const StridedView& x, const StridedView& mean,
                     const StridedView& var) {
    const int64_t stats = lay.outer * lay.channels;
    dispatch_floating(x.dtype, "norm", [&]<typename T>() {
        const T* xp = x.ptr<T>();
        std::vector<double> sums(static_cast<size_t>(stats));
        const double count = double(lay.count());
        channel_sum<T>(lay, sums.data(), [&](int64_t i, int64_t) { return xp[i]; });
        std::vector<T> m(static_cast<size_t>(stats));
        for (int64_t s = 0; s < stats; ++s) m[size_t(s)] = T(sums[size_t(s)] / count);
        const T* mp = m.data();
        channel_sum<T>(lay, sums.data(), [&](int64_t i, int64_t s) {
            T d = xp[i] - mp[s];
            return T(d * d);
        });
        for (int64_t s = 0; s < stats; ++s) {
            mean.ptr<T>()[s] = m[size_t(s)];
            var.ptr<T>()[s] = T(sums[size_t(s)] / count);
        }
    });
}

void channel_norm_forward(const Layout& lay, const StridedView& x, const StridedView& mean,
                          const StridedView& var, double eps, const StridedView& weight,
                          const StridedView& bias, const StridedView& y) {
    const int64_t stats = lay.outer * lay.channels;
    dispatch_floating(x.dtype, "norm", [&]<typename T>() {
        std::vector<T> scale(static_cast<size_t>(stats)), shift(static_cast<size_t>(stats));
        for (int64_t s = 0; s < stats; ++s) {
            int64_t c = s % lay.channels;
            double k, b;
            norm_math::scale_shift(double(mean.ptr<T>()[s]), double(var.ptr<T>()[s]), eps,
                                   double(param<T>(weight, c, T(1))),
                                   double(param<T>(bias, c, T(0))), k, b);
            scale[size_t(s)] = T(k);
            shift[size_t(s)] = T(b);
        }
        scale_shift<T>(lay, x.ptr<T>(), scale.data(), shift.data(), y.ptr<T>());
    });
}

void channel_norm_backward(const Layout& lay, const StridedView& x, const StridedView& mean,
                           const StridedView& var, double eps, const StridedView& weight,
                           bool batch_stats, const StridedView& grad_out,
                           const StridedView& grad_x, const StridedView& grad_weight,
                           const StridedView& grad_bias) {
    const int64_t stats = lay.outer * lay.channels, C = lay.channels;
    dispatch_floating(x.dtype, "norm backward", [&]<typename T>() {
        const T* xp = x.ptr<T>();
        const T* gp = grad_out.ptr<T>();
        const T* mp = mean.ptr<T>();
        std::vector<double> sum_g(static_cast<size_t>(stats), 0.0), sum_gx(static_cast<size_t>(stats), 0.0);
        std::vector<T> rstd(static_cast<size_t>(stats));
        for (int64_t s = 0; s < stats; ++s)
            rstd[size_t(s)] = T(norm_math::inv_std(double(var.ptr<T>()[s]), eps));
        bool need_sums = batch_stats || grad_weight.data || grad_bias.data;
        if (need_sums) {
            channel_sum<T>(lay, sum_g.data(), [&](int64_t i, int64_t) { return gp[i]; });
            // sum of g (x - mean); times rstd gives sum of g xhat
            channel_sum<T>(lay, sum_gx.data(), [&](int64_t i, int64_t s) { return T(gp[i] * (xp[i] - mp[s])); });
        }
        for (int64_t c = 0; c < C; ++c) {
            double tw = 0, tb = 0;
            for (int64_t a = 0; a < lay.outer; ++a) {
                tw += sum_gx[size_t(a * C + c)] * double(rstd[size_t(a * C + c)]);
                tb += sum_g[size_t(a * C + c)];
            }
            if (grad_weight.data) grad_weight.ptr<T>()[c] = T(tw);
            if (grad_bias.data) grad_bias.ptr<T>()[c] = T(tb);
        }
        if (!grad_x.data) return;
        if (batch_stats) {
            batch_stats_grad_x<T>(lay, xp, gp, mp, rstd.data(), weight, sum_g, sum_gx,
                                  grad_x.ptr<T>());
            return;
        }
        std::vector<T> k(static_cast<size_t>(stats));
        for (int64_t s = 0; s < stats; ++s)
            k[size_t(s)] = T(double(param<T>(weight, s % C, T(1))) * double(rstd[size_t(s)]));
        std::vector<T> zero(static_cast<size_t>(stats), T(0));
        scale_shift<T>(lay, gp, k.data(), zero.data(), grad_x.ptr<T>());
    });
}

namespace {

template <typename T>
T sign_of(T v) {
    return T((v > 0) - (v < 0));
}

}  // namespace

void normalize_forward(const Layout& lay, const StridedView& x, double p, double eps,
                       const StridedView& y, const StridedView& norm) {
    const int64_t stats = lay.outer * lay.channels;
    dispatch_floating(x.dtype, "normalize", [&]<typename T>() {
        const T* xp = x.ptr<T>();
        std::vector<double> sums(static_cast<size_t>(stats));
        const T tp = T(p);
        if (p == 2.0) {
            channel_sum<T>(lay, sums.data(), [&](int64_t i, int64_t) { return T(xp[i] * xp[i]); });
        } else if (p == 1.0) {
            channel_sum<T>(lay, sums.data(), [&](int64_t i, int64_t) { return std::abs(xp[i]); });
        } else {
            channel_sum<T>(lay, sums.data(), [&](int64_t i, int64_t) { return T(std::pow(std::abs(xp[i]), tp)); });
        }
        std::vector<T> inv(static_cast<size_t>(stats)), zero(static_cast<size_t>(stats), T(0));
        for (int64_t s = 0; s < stats; ++s) {
            double total = sums[size_t(s)];
            double nv = norm_math::p_norm(total, p);
            norm.ptr<T>()[s] = T(nv);
            inv[size_t(s)] = T(1.0 / std::max(double(T(nv)), eps));
        }
        scale_shift<T>(lay, xp, inv.data(), zero.data(), y.ptr<T>());
    });
}

void normalize_backward(const Layout& lay, const StridedView& x, const StridedView& norm, double p,
                        double eps, const StridedView& grad_out, const StridedView& grad_x) {
    const int64_t stats = lay.outer * lay.channels;
    dispatch_floating(x.dtype, "normalize backward", [&]<typename T>() {
        const T* xp = x.ptr<T>();
        const T* gp = grad_out.ptr<T>();
        std::vector<double> sum_gx(static_cast<size_t>(stats));
        channel_sum<T>(lay, sum_gx.data(), [&](int64_t i, int64_t) { return T(gp[i] * xp[i]); });
        // dx = g / d - dn(x) * c with c = sum(g x) / d^2 where unclamped (0 where clamped),
        // dn(x) = sign(x) |x / n|^(p-1): x / n for p = 2, sign(x) for p = 1.
        std::vector<T> inv_d(static_cast<size_t>(stats)), coef(static_cast<size_t>(stats)), inv_n(static_cast<size_t>(stats));
        for (int64_t s = 0; s < stats; ++s) {
            double nv = double(norm.ptr<T>()[s]);
            double d = std::max(nv, eps);
            inv_d[size_t(s)] = T(1.0 / d);
            bool through = nv >= eps;
            coef[size_t(s)] = through ? T(sum_gx[size_t(s)] / (d * d)) : T(0);
            inv_n[size_t(s)] = through && nv > 0 ? T(1.0 / nv) : T(0);
        }
        const T pm1 = T(p - 1.0);
        T* dx = grad_x.ptr<T>();
        auto run = [&](auto derivative) {
            for_each_run(lay, [&](int64_t offset, int64_t count, int64_t stat, auto per_element) {
                const T* xs = xp + offset;
                const T* gs = gp + offset;
                T* ds = dx + offset;
                for (int64_t i = 0; i < count; ++i) {
                    int64_t st = decltype(per_element)::value ? stat + i : stat;
                    ds[i] = gs[i] * inv_d[size_t(st)] - derivative(xs[i], inv_n[size_t(st)]) * coef[size_t(st)];
                }
            });
        };
        if (p == 2.0) {
            run([](T v, T in) { return v * in; });
        } else if (p == 1.0) {
            run([](T v, T) { return sign_of(v); });
        } else {
            run([&](T v, T in) { return sign_of(v) * T(std::pow(std::abs(v * in), pm1)); });
        }
    });
}

}  // namespace lumen::cpu
