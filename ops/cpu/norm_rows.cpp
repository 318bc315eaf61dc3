// CPU row normalization (layer_norm, rms_norm, group_norm, instance_norm with input
// statistics): each contiguous row is normalized by its own mean and variance, computed in two
// passes (the second hits L1/L2) with double totals. The backward needs two sums per row, then
// one pass for grad_x; weight/bias gradients are summed per thread chunk (float blocks folded
// into double) and the chunks added in a fixed order, so results do not depend on timing.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/dispatch.h"
#include "core/parallel.h"
#include "ops/norm_kernels.h"
#include "ops/norm_math.h"
#include "ops/reduce_kernels.h"

namespace lumen::cpu {

namespace {

// weight/bias pointers, or buffers of ones/zeros when the view is absent.
template <typename T>
struct Affine {
    std::vector<T> ones, zeros;
    const T* w;
    const T* b;
    Affine(const StridedView& weight, const StridedView& bias, int64_t size) {
        if (!weight.data) ones.assign(size_t(size), T(1));
        if (!bias.data) zeros.assign(size_t(size), T(0));
        w = weight.data ? weight.ptr<T>() : ones.data();
        b = bias.data ? bias.ptr<T>() : zeros.data();
    }
};

template <typename T>
void forward_typed(const RowNormLayout& lay, const T* x, const T* w, const T* b, double eps, T* y,
                   T* mean_out, T* rstd_out) {
    const int64_t n = lay.length, spatial = lay.spatial, cpg = lay.channels_per_group;
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(n, 1));  // n may be 0
    parallel_for(0, lay.rows, grain, [&](int64_t lo, int64_t hi) {
        for (int64_t r = lo; r < hi; ++r) {
            const T* xr = x + r * n;
            T* yr = y + r * n;
            double mean = 0;
            if (lay.center)
                mean = vec::lane_sum<T>(n, [&](int64_t i) { return xr[i]; }) / double(n);
            T m = T(mean);
            double var = vec::lane_sum<T>(n, [&](int64_t i) {
                             T d = xr[i] - m;
                             return T(d * d);
                         }) / double(n);
            // An empty row gets mean 0 and variance 0 (not 0 / 0), so that the backward's sums
            // of nothing times rstd stay 0: PyTorch's weight and bias gradients there.
            if (n == 0) m = T(0), var = 0.0;
            // The mean's rounding to T, taken off x - m (exact when x is near m) as well: half an
            // ulp of a mean far above the spread would be an error of every output otherwise.
            const T m_low = n ? T(mean - double(m)) : T(0);
            T rstd = T(norm_math::inv_std(var, eps));
            mean_out[r] = m;
            rstd_out[r] = rstd;
            int64_t first = (r % lay.groups) * cpg;
            if (spatial == 1) {
                const T* wr = w + first;
                const T* br = b + first;
                for (int64_t i = 0; i < n; ++i)
                    yr[i] = norm_math::affine(T(xr[i] - m), m_low, rstd, wr[i], br[i]);
                continue;
            }
            for (int64_t j = 0; j < cpg; ++j) {  // (x - m) first, as in the backward
                T scale = rstd * w[first + j];
                T shift = b[first + j];
                const T* xs = xr + j * spatial;
                T* ys = yr + j * spatial;
                for (int64_t s = 0; s < spatial; ++s) ys[s] = ((xs[s] - m) - m_low) * scale + shift;
            }
        }
    });
}

// Per-chunk accumulators of the affine gradients: float partials folded into double every
// kFold rows (spatial == 1), or double sums per channel (spatial > 1).
constexpr int64_t kFold = 64;

template <typename T>
void backward_typed(const RowNormLayout& lay, const T* x, const T* w, const T* mean,
                    const T* rstd_in, const T* g, T* dx, double* dw, double* db) {
    const int64_t n = lay.length, spatial = lay.spatial, cpg = lay.channels_per_group;
    const int64_t params = lay.groups * cpg;
    const bool want_affine = dw || db;
    int64_t chunks = std::clamp<int64_t>(lay.rows * n / kGrainSize, 1, get_num_threads());
    chunks = std::min(chunks, lay.rows);
    std::vector<double> dw_parts(want_affine ? size_t(chunks * params) : 0, 0.0);
    std::vector<double> db_parts(want_affine ? size_t(chunks * params) : 0, 0.0);
    const T inv_n = T(1) / T(n);
    parallel_for(0, chunks, 1, [&](int64_t c_lo, int64_t c_hi) {
        std::vector<T> gw(static_cast<size_t>(spatial == 1 ? n : 0));
        std::vector<T> fw(static_cast<size_t>(spatial == 1 && want_affine ? n : 0), T(0));
        std::vector<T> fb(static_cast<size_t>(spatial == 1 && want_affine ? n : 0), T(0));
        std::vector<T> ch_g(static_cast<size_t>(cpg)), ch_gx(static_cast<size_t>(cpg));
        for (int64_t chunk = c_lo; chunk < c_hi; ++chunk) {
            int64_t r_lo = lay.rows * chunk / chunks, r_hi = lay.rows * (chunk + 1) / chunks;
            double* pdw = want_affine ? dw_parts.data() + chunk * params : nullptr;
            double* pdb = want_affine ? db_parts.data() + chunk * params : nullptr;
            int64_t pending = 0;
            for (int64_t r = r_lo; r < r_hi; ++r) {
                const T* xr = x + r * n;
                const T* gr = g + r * n;
                const T m = mean[r], rstd = rstd_in[r];
                // x - mean to more than T's precision: the saved mean is rounded to T, which
                // is a large error against x - m when the mean lies far above the spread, and
                // the gradient's terms cancel (1 - xhat^2 for two entries); m_low is that
                // rounding, the mean of (x - m) over the row (small terms, summed in double).
                const T m_low =
                    lay.center && n
                        ? T(vec::lane_sum<T>(n, [&](int64_t i) { return T(xr[i] - m); }) /
                            double(n))
                        : T(0);
                auto dev = [&](T v) { return T(T(v - m) - m_low); };
                T sum_gw, sum_gwx;  // sums of g w and g w xhat over the row
                int64_t first = (r % lay.groups) * cpg;
                if (spatial == 1) {
                    // fw/fb hold the entries of this row's group: with groups > 1 (rows of
                    // different groups follow each other) they are folded after every row.
                    const T* wr = w + first;
                    for (int64_t i = 0; i < n; ++i) gw[i] = gr[i] * wr[i];
                    sum_gw = T(vec::lane_sum<T>(n, [&](int64_t i) { return gw[i]; }));
                    sum_gwx =
                        T(vec::lane_sum<T>(n, [&](int64_t i) { return T(gw[i] * dev(xr[i])); })) *
                        rstd;
                    if (want_affine) {
                        for (int64_t i = 0; i < n; ++i) {
                            fw[i] += gr[i] * (dev(xr[i]) * rstd);
                            fb[i] += gr[i];
                        }
                        if (++pending == kFold || r + 1 == r_hi || lay.groups > 1) {
                            for (int64_t i = 0; i < n; ++i) {
                                pdw[first + i] += double(fw[i]);
                                pdb[first + i] += double(fb[i]);
                                fw[i] = fb[i] = T(0);
                            }
                            pending = 0;
                        }
                    }
                    if (dx) {
                        T a = lay.center ? sum_gw * inv_n : T(0);
                        T c = sum_gwx * inv_n;
                        T* dr = dx + r * n;
                        for (int64_t i = 0; i < n; ++i)
                            dr[i] = norm_math::grad_x(gw[i], T(xr[i] - m), m_low, rstd, a, c);
                    }
                    continue;
                }
                double total_gw = 0, total_gwx = 0;
                for (int64_t j = 0; j < cpg; ++j) {
                    const T* xs = xr + j * spatial;
                    const T* gs = gr + j * spatial;
                    T sg = T(vec::lane_sum<T>(spatial, [&](int64_t s) { return gs[s]; }));
                    T sgx = T(vec::lane_sum<T>(spatial,
                                               [&](int64_t s) { return T(gs[s] * dev(xs[s])); })) *
                            rstd;
                    ch_g[j] = sg;
                    ch_gx[j] = sgx;
                    total_gw += double(sg) * double(w[first + j]);
                    total_gwx += double(sgx) * double(w[first + j]);
                }
                if (want_affine) {
                    for (int64_t j = 0; j < cpg; ++j) {
                        pdw[first + j] += double(ch_gx[j]);
                        pdb[first + j] += double(ch_g[j]);
                    }
                }
                if (dx) {
                    // dx = rstd w g - rstd a - (x - m) rstd^2 c, per channel:
                    // g k1 + (x - m) k2 + k3, x - m formed first (x k2 - m k2 cancels when |m|
                    // is far above the spread)
                    T a = lay.center ? T(total_gw / double(n)) : T(0);
                    T c = T(total_gwx / double(n));
                    T k2 = -rstd * rstd * c;
                    T k3 = -rstd * a;
                    T* dr = dx + r * n;
                    for (int64_t j = 0; j < cpg; ++j) {
                        T k1 = rstd * w[first + j];
                        const T* xs = xr + j * spatial;
                        const T* gs = gr + j * spatial;
                        T* ds = dr + j * spatial;
                        for (int64_t s = 0; s < spatial; ++s)
                            ds[s] = gs[s] * k1 + dev(xs[s]) * k2 + k3;
                    }
                }
            }
        }
    });
    if (!want_affine) return;
    for (int64_t k = 0; k < params; ++k) {
        double tw = 0, tb = 0;
        for (int64_t chunk = 0; chunk < chunks; ++chunk) {
            tw += dw_parts[size_t(chunk * params + k)];
            tb += db_parts[size_t(chunk * params + k)];
        }
        if (dw) dw[k] = tw;
        if (db) db[k] = tb;
    }
}

}  // namespace

void row_norm_forward(const RowNormLayout& layout, const StridedView& x, const StridedView& weight,
                      const StridedView& bias, double eps, const StridedView& y,
                      const StridedView& mean, const StridedView& rstd) {
    if (layout.rows == 0) return;
    dispatch_floating(x.dtype, "norm", [&]<typename T>() {
        Affine<T> affine(weight, bias, layout.groups * layout.channels_per_group);
        forward_typed<T>(layout, x.ptr<T>(), affine.w, affine.b, eps, y.ptr<T>(), mean.ptr<T>(),
                         rstd.ptr<T>());
    });
}

void row_norm_backward(const RowNormLayout& layout, const StridedView& x, const StridedView& weight,
                       const StridedView& mean, const StridedView& rstd,
                       const StridedView& grad_out, const StridedView& grad_x,
                       const StridedView& grad_weight, const StridedView& grad_bias) {
    int64_t params = layout.groups * layout.channels_per_group;
    dispatch_floating(x.dtype, "norm backward", [&]<typename T>() {
        std::vector<double> dw(grad_weight.data ? size_t(params) : 0, 0.0);
        std::vector<double> db(grad_bias.data ? size_t(params) : 0, 0.0);
        if (layout.rows > 0) {
            Affine<T> affine(weight, StridedView{}, params);
            backward_typed<T>(layout, x.ptr<T>(), affine.w, mean.ptr<T>(), rstd.ptr<T>(),
                              grad_out.ptr<T>(), grad_x.data ? grad_x.ptr<T>() : nullptr,
                              grad_weight.data ? dw.data() : nullptr,
                              grad_bias.data ? db.data() : nullptr);
        }
        for (int64_t k = 0; k < (grad_weight.data ? params : 0); ++k) grad_weight.ptr<T>()[k] = T(dw[size_t(k)]);
        for (int64_t k = 0; k < (grad_bias.data ? params : 0); ++k) grad_bias.ptr<T>()[k] = T(db[size_t(k)]);
    });
}

}  // namespace lumen::cpu
