// Normalization ops: argument checks with PyTorch's messages, the layout each op hands to the
// row or channel kernels (ops/{cpu,cuda}/norm_rows, ops/{cpu,cuda}/norm_channels) of the
// input's device, running-stat updates, and the backward rules, which run dedicated kernels on
// the saved input and statistics. Inputs are made contiguous once, without recording (the
// nodes map gradients to the original tensors).
#include "ops/norm.h"

#include <cmath>
#include <optional>
#include <string>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/elementwise.h"
#include "ops/norm_kernels.h"
#include "ops/shape.h"

namespace lumen {

namespace {

StridedView view_or_null(const Tensor& t, const char* op) {
    return t.defined() ? strided(t, op) : StridedView{};
}

Tensor contiguous_or_null(const Tensor& t) {
    NoGradGuard no_grad;
    return t.defined() ? t.contiguous() : Tensor();
}

// float32/float64 on both devices; `half_on_cuda` also admits float16/bfloat16 CUDA inputs
// (layer_norm, rms_norm).
void check_input(const Tensor& x, const char* op, bool half_on_cuda = false) {
    LUMEN_CHECK(x.defined(), op, "got an undefined input");
    bool half = x.dtype() == DType::float16 || x.dtype() == DType::bfloat16;
    if (half_on_cuda && half && x.is_cuda()) return;
    LUMEN_CHECK(x.dtype() == DType::float32 || x.dtype() == DType::float64, op,
                "expects a float32 or float64 input",
                half_on_cuda ? " (or a half one on CUDA)" : "", ", got ", x.dtype(), " on ",
                x.device(), " (shape ", x.shape(), ")");
}

// An optional per-channel (or normalized_shape) tensor: x's dtype and device, shape `shape`.
void check_param(const Tensor& t, const char* name, const Shape& shape, const Tensor& x,
                 const char* op) {
    if (!t.defined()) return;
    check_same_device(op, {x, t});
    LUMEN_CHECK(t.shape() == shape, op, "expected ", name, " of shape ", shape, ", got ", name,
                " of shape ", t.shape(), " (input shape ", x.shape(), ")");
    LUMEN_CHECK(t.dtype() == x.dtype(), op, name, " has dtype ", t.dtype(), " but the input has ",
                x.dtype());
}

// PyTorch: "Given normalized_shape=[5], expected input with shape [*, 5], but got input of
// size[2, 7, 4]".
void check_trailing(const Tensor& x, const Shape& normalized_shape, const char* op) {
    int64_t k = int64_t(normalized_shape.size());
    bool matches = x.ndim() >= k;
    for (int64_t i = 0; matches && i < k; ++i)
        matches = x.size(x.ndim() - k + i) == normalized_shape[size_t(i)];
    if (matches) return;
    std::string dims;
    for (int64_t size : normalized_shape) dims += ", " + std::to_string(size);
    LUMEN_FAIL(op, "given normalized_shape=", normalized_shape, ", expected input with shape [*",
               dims, "], but got input of size ", x.shape());
}

int64_t spatial_size(const Tensor& x) {
    int64_t s = 1;
    for (int64_t d = 2; d < x.ndim(); ++d) s *= x.size(d);
    return s;
}

// ---- the kernels of the input's device ----

void row_forward_kernel(const char* op, const RowNormLayout& layout, const Tensor& x,
                        const Tensor& w, const Tensor& b, double eps, const Tensor& y,
                        const Tensor& mean, const Tensor& rstd) {
    StridedView views[] = {strided(x, op), view_or_null(w, op), view_or_null(b, op),
                           strided(y, op), strided(mean, op),   strided(rstd, op)};
    LUMEN_DISPATCH(x, row_norm_forward, layout, views[0], views[1], views[2], eps, views[3],
                   views[4], views[5]);
}

void row_backward_kernel(const char* op, const RowNormLayout& layout, const Tensor& x,
                         const Tensor& w, const Tensor& mean, const Tensor& rstd, const Tensor& g,
                         const Tensor& gx, const Tensor& gw, const Tensor& gb) {
    StridedView views[] = {strided(x, op),       view_or_null(w, op), strided(mean, op),
                           strided(rstd, op),    strided(g, op),      view_or_null(gx, op),
                           view_or_null(gw, op), view_or_null(gb, op)};
    LUMEN_DISPATCH(x, row_norm_backward, layout, views[0], views[1], views[2], views[3], views[4],
                   views[5], views[6], views[7]);
}

void moments_kernel(const char* op, const ChannelNormLayout& layout, const Tensor& x,
                    const Tensor& mean, const Tensor& var) {
    LUMEN_DISPATCH(x, channel_moments, layout, strided(x, op), strided(mean, op), strided(var, op));
}

void channel_forward_kernel(const char* op, const ChannelNormLayout& layout, const Tensor& x,
                            const Tensor& mean, const Tensor& var, double eps, const Tensor& w,
                            const Tensor& b, const Tensor& y) {
    StridedView views[] = {strided(x, op),      strided(mean, op),   strided(var, op),
                           view_or_null(w, op), view_or_null(b, op), strided(y, op)};
    LUMEN_DISPATCH(x, channel_norm_forward, layout, views[0], views[1], views[2], eps, views[3],
                   views[4], views[5]);
}

void channel_backward_kernel(const char* op, const ChannelNormLayout& layout, const Tensor& x,
                             const Tensor& mean, const Tensor& var, double eps, const Tensor& w,
                             bool batch_stats, const Tensor& g, const Tensor& gx, const Tensor& gw,
                             const Tensor& gb) {
    StridedView views[] = {strided(x, op),       strided(mean, op),   strided(var, op),
                           view_or_null(w, op),  strided(g, op),      view_or_null(gx, op),
                           view_or_null(gw, op), view_or_null(gb, op)};
    LUMEN_DISPATCH(x, channel_norm_backward, layout, views[0], views[1], views[2], eps, views[3],
                   batch_stats, views[4], views[5], views[6], views[7]);
}

// Row-statistics ops (layer_norm, rms_norm, group_norm, instance_norm with input stats). The
// saved mean/rstd have x's dtype, float32 for half inputs (CUDA).
Tensor row_norm(const char* op, const Tensor& x_in, const RowNormLayout& layout,
                const Tensor& weight, const Tensor& bias, double eps) {
    profiler::Scope profile(profiler::Kind::op, op, x_in);
    Tensor x = contiguous_or_null(x_in);
    Tensor w = contiguous_or_null(weight), b = contiguous_or_null(bias);
    Tensor y = empty(x.shape(), x.dtype(), x.device());
    DType stat_dtype = x.dtype() == DType::float64 ? DType::float64 : DType::float32;
    Tensor mean = empty({layout.rows}, stat_dtype, x.device());
    Tensor rstd = empty({layout.rows}, stat_dtype, x.device());
    row_forward_kernel(op, layout, x, w, b, eps, y, mean, rstd);
    if (!needs_recording({x_in, weight, bias})) return y;
    bool need_x = x_in.requires_grad();
    bool need_w = weight.defined() && weight.requires_grad();
    bool need_b = bias.defined() && bias.requires_grad();
    record_backward(op, {x_in, weight, bias}, y,
                    [op, layout, need_x, need_w, need_b, sx = save(x), sw = save(w),
                     smean = save(mean), srstd = save(rstd),
                     bias_shape = bias.defined() ? bias.shape() : Shape{}](const Tensor& grad_out) {
                        Tensor x = sx.get(), w = sw.get();
                        Tensor g = grad_out.contiguous();
                        Tensor gx = need_x ? empty_like(x) : Tensor();
                        Tensor gw = need_w ? empty_like(w) : Tensor();
                        Tensor gb = need_b ? empty(bias_shape, x.dtype(), x.device()) : Tensor();
                        row_backward_kernel(op, layout, x, w, smean.get(), srstd.get(), g, gx, gw,
                                            gb);
                        return std::vector<Tensor>{gx, gw, gb};
                    });
    return y;
}

// What the backward of sync_batch_norm needs beyond batch_norm's: the all-reduce, the count
// of values per channel over every process, and `shift` (C, float64) = the exact global mean
// minus the saved one, which is rounded to x's dtype.
struct GlobalBatch {
    AllReduceSum all_reduce;
    int64_t count = 0;
    Tensor shift;
};

// sync_batch_norm's backward. The kernel with constant statistics gives grad_x0 = g w rstd and
// this process's sum_g = sum g and sum_gxhat = sum g (x - m) rstd around the saved mean m (the
// bias and weight gradients, as batch_norm's). With the sums over all N values, centred at the
// exact mean mu = m + shift, grad_x = grad_x0 - w rstd / N (sum_g + xhat sum_gxhat),
// xhat = (x - mu) rstd. The correction is formed from x - m (exact in x's dtype, as x is near
// m) rather than as x scale + offset: in float32 that loses every digit when the mean is far
// above the spread, as the kernel's careful grad_x (ops/cpu/norm_channels.cpp) explains.
std::vector<Tensor> sync_channel_backward(const char* op, const ChannelNormLayout& layout,
                                          const GlobalBatch& global, const Tensor& x,
                                          const Tensor& mean, const Tensor& var, double eps,
                                          const Tensor& w, const Tensor& g, bool need_x,
                                          bool need_w, bool need_b) {
    const int64_t channels = layout.channels;
    Tensor gx = need_x ? empty_like(x) : Tensor();
    Tensor sum_gxhat = empty({channels}, x.dtype(), x.device());
    Tensor sum_g = empty({channels}, x.dtype(), x.device());
    channel_backward_kernel(op, layout, x, mean, var, eps, w, false, g, gx, sum_gxhat, sum_g);
    if (need_x) {
        NoGradGuard no_grad;
        Tensor sums = cat({sum_g, sum_gxhat}).to(DType::float64);
        global.all_reduce(sums);
        const double total = double(std::max<int64_t>(global.count, 1));
        Tensor rstd = rsqrt(add(var.to(DType::float64), eps));
        Tensor all_g = sums.narrow(0, 0, channels);
        // sum g xhat around mu: sum g (x - m) rstd - shift rstd sum g
        Tensor all_gxhat =
            sub(sums.narrow(0, channels, channels), mul(mul(global.shift, rstd), all_g));
        Tensor k = mul(rstd, -1.0 / total);
        if (w.defined()) k = mul(k, w.to(DType::float64));
        // correction = k (sum_g + ((x - m) - shift) rstd sum_gxhat) = (x - m) slope + offset
        Tensor slope = mul(mul(k, rstd), all_gxhat);
        Tensor offset = sub(mul(k, all_g), mul(slope, global.shift));
        Shape per_channel(size_t(x.ndim() - 1), 1);
        per_channel[0] = channels;  // (C, 1, ..., 1): broadcasts against (B, C, *)
        Tensor centred = sub(x, mean.view(per_channel));
        gx = add(gx, add(mul(centred, slope.to(x.dtype()).view(per_channel)),
                         offset.to(x.dtype()).view(per_channel)));
    }
    return {gx, need_w ? sum_gxhat : Tensor(), need_b ? sum_g : Tensor()};
}

// Channel-statistics ops (batch_norm, instance_norm with running stats, seq_norm,
// sync_batch_norm with `global`). `mean`/`var` hold one entry per statistic (contiguous, x's
// dtype); batch_stats says they were computed from x.
Tensor channel_norm(const char* op, const Tensor& x_in, const ChannelNormLayout& layout,
                    const Tensor& mean, const Tensor& var, bool batch_stats, const Tensor& weight,
                    const Tensor& bias, double eps, const GlobalBatch* global = nullptr) {
    profiler::Scope profile(profiler::Kind::op, op, x_in);
    Tensor x = contiguous_or_null(x_in);
    Tensor w = contiguous_or_null(weight), b = contiguous_or_null(bias);
    Tensor y = empty(x.shape(), x.dtype(), x.device());
    channel_forward_kernel(op, layout, x, mean, var, eps, w, b, y);
    if (!needs_recording({x_in, weight, bias})) return y;
    bool need_x = x_in.requires_grad();
    bool need_w = weight.defined() && weight.requires_grad();
    bool need_b = bias.defined() && bias.requires_grad();
    std::optional<GlobalBatch> sync = global ? std::optional(*global) : std::nullopt;
    record_backward(op, {x_in, weight, bias}, y,
                    [op, layout, eps, batch_stats, need_x, need_w, need_b, sync, sx = save(x),
                     sw = save(w), smean = save(mean), svar = save(var),
                     bias_shape = bias.defined() ? bias.shape() : Shape{}](const Tensor& grad_out) {
                        Tensor x = sx.get(), w = sw.get();
                        Tensor g = grad_out.contiguous();
                        if (sync)
                            return sync_channel_backward(op, layout, *sync, x, smean.get(),
                                                         svar.get(), eps, w, g, need_x, need_w,
                                                         need_b);
                        Tensor gx = need_x ? empty_like(x) : Tensor();
                        Tensor gw = need_w ? empty_like(w) : Tensor();
                        Tensor gb = need_b ? empty(bias_shape, x.dtype(), x.device()) : Tensor();
                        channel_backward_kernel(op, layout, x, smean.get(), svar.get(), eps, w,
                                                batch_stats, g, gx, gw, gb);
                        return std::vector<Tensor>{gx, gw, gb};
                    });
    return y;
}

// running = (1 - momentum) running + momentum * value, in place (no autograd), computed in
// float64 with lumen ops on the tensors' device.
void update_running(const Tensor& running, const Tensor& value, double momentum) {
    NoGradGuard no_grad;
    Tensor r = running.to(DType::float64), v = value.to(DType::float64);
    Tensor out = add(mul(r, 1.0 - momentum), mul(v, momentum));
    Tensor target = running;  // a handle on the same storage
    target.copy_(out);
}

void check_running(const Tensor& t, const char* name, int64_t channels, const Tensor& x,
                   const char* op) {
    if (!t.defined()) return;
    check_param(t, name, {channels}, x, op);
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
    const char* op = "layer_norm";
    check_input(x, op, true);
    int64_t k = int64_t(normalized_shape.size());
    LUMEN_CHECK(k >= 1, op, "expected normalized_shape to be at least 1-dimensional, got ",
                normalized_shape);
    check_trailing(x, normalized_shape, op);
    check_param(weight, "weight", normalized_shape, x, op);
    check_param(bias, "bias", normalized_shape, x, op);
    RowNormLayout layout;
    layout.length = shape_numel(normalized_shape);
    layout.rows = layout.length == 0 ? 0 : x.numel() / layout.length;
    layout.channels_per_group = layout.length;
    return row_norm(op, x, layout, weight, bias, eps);
}

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, double eps) {
    const char* op = "rms_norm";
    check_input(x, op, true);
    int64_t k = int64_t(normalized_shape.size());
    LUMEN_CHECK(k >= 1, op, "expected normalized_shape to be at least 1-dimensional, got ",
                normalized_shape);
    check_trailing(x, normalized_shape, op);
    check_param(weight, "weight", normalized_shape, x, op);
    RowNormLayout layout;
    layout.length = shape_numel(normalized_shape);
    layout.rows = layout.length == 0 ? 0 : x.numel() / layout.length;
    layout.channels_per_group = layout.length;
    layout.center = false;
    return row_norm(op, x, layout, weight, Tensor(), eps);
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias,
                  double eps) {
    const char* op = "group_norm";
    check_input(x, op);
    LUMEN_CHECK(x.ndim() >= 2, op, "expected an input of shape (N, C, *), got ", x.shape());
    int64_t channels = x.size(1);
    LUMEN_CHECK(num_groups > 0, op, "num_groups must be positive, got ", num_groups);
    LUMEN_CHECK(channels % num_groups == 0, op, "expected number of channels in input to be ",
                "divisible by num_groups, but got input of shape ", x.shape(),
                " and num_groups=", num_groups);
    check_param(weight, "weight", {channels}, x, op);
    check_param(bias, "bias", {channels}, x, op);
    RowNormLayout layout;
    layout.groups = num_groups;
    layout.channels_per_group = channels / num_groups;
    layout.spatial = spatial_size(x);
    layout.rows = x.size(0) * num_groups;
    layout.length = layout.channels_per_group * layout.spatial;
    return row_norm(op, x, layout, weight, bias, eps);
}

namespace {

// batch_norm's input: (N, C) to (N, C, D, H, W), float32 or float64.
void check_batch_input(const Tensor& x, const char* op) {
    check_input(x, op);
    LUMEN_CHECK(x.ndim() >= 2 && x.ndim() <= 5, op,
                "expected an input of shape (N, C), (N, C, L), ",
                "(N, C, H, W) or (N, C, D, H, W), got ", x.shape());
}

// Per-channel weight/bias and running statistics (each optional; the two statistics together).
void check_channel_params(const Tensor& x, int64_t channels, const Tensor& weight,
                          const Tensor& bias, const Tensor& running_mean, const Tensor& running_var,
                          const char* op) {
    check_param(weight, "weight", {channels}, x, op);
    check_param(bias, "bias", {channels}, x, op);
    check_running(running_mean, "running_mean", channels, x, op);
    check_running(running_var, "running_var", channels, x, op);
    LUMEN_CHECK(running_mean.defined() == running_var.defined(), op,
                "running_mean and running_var must be given together");
}

}  // namespace

Tensor instance_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                     const Tensor& weight, const Tensor& bias, bool use_input_stats,
                     double momentum, double eps) {
    const char* op = "instance_norm";
    profiler::Scope profile(profiler::Kind::op, op, x);
    check_input(x, op);
    LUMEN_CHECK(x.ndim() >= 3, op, "expected an input of shape (N, C, *spatial) with at least one ",
                "spatial dim, got ", x.shape());
    int64_t batch = x.size(0), channels = x.size(1), spatial = spatial_size(x);
    check_channel_params(x, channels, weight, bias, running_mean, running_var, op);
    if (!use_input_stats) {
        LUMEN_CHECK(running_mean.defined(), op,
                    "Expected running_mean and running_var to be defined when use_input_stats is "
                    "false");
        ChannelNormLayout layout{1, batch, channels, spatial};
        Tensor mean = running_mean.detach().contiguous().clone();
        Tensor var = running_var.detach().contiguous().clone();
        return channel_norm(op, x, layout, mean, var, false, weight, bias, eps);
    }
    // PyTorch refuses exactly one spatial element; none gives an empty result.
    LUMEN_CHECK(spatial != 1, op, "Expected more than 1 spatial element when training, got input ",
                "size ", x.shape());
    if (running_mean.defined() && x.numel() > 0) {
        // per-instance mean and biased variance, averaged over the batch in float64
        ChannelNormLayout per{batch * channels, 1, 1, spatial};
        Tensor c = contiguous_or_null(x);
        Tensor m = empty({batch, channels}, x.dtype(), x.device());
        Tensor v = empty({batch, channels}, x.dtype(), x.device());
        moments_kernel(op, per, c, m, v);
        ChannelNormLayout over_batch{1, batch, channels, 1};
        Tensor md = m.to(DType::float64), vd = v.to(DType::float64);
        Tensor bm = empty({channels}, DType::float64, x.device());
        Tensor bv = empty({channels}, DType::float64, x.device());
        Tensor unused = empty({channels}, DType::float64, x.device());
        moments_kernel(op, over_batch, md, bm, unused);
        moments_kernel(op, over_batch, vd, bv, unused);
        NoGradGuard no_grad;
        update_running(running_mean, bm, momentum);
        update_running(running_var, mul(bv, double(spatial) / double(spatial - 1)), momentum);
    }
    RowNormLayout layout;
    layout.groups = channels;
    layout.channels_per_group = 1;
    layout.spatial = spatial;
    layout.rows = batch * channels;
    layout.length = spatial;
    return row_norm(op, x, layout, weight, bias, eps);
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, double momentum,
                  double eps) {
    const char* op = "batch_norm";
    profiler::Scope profile(profiler::Kind::op, op, x);
    check_batch_input(x, op);
    int64_t batch = x.size(0), channels = x.size(1), spatial = spatial_size(x);
    check_channel_params(x, channels, weight, bias, running_mean, running_var, op);
    ChannelNormLayout layout{1, batch, channels, spatial};
    if (!training) {
        LUMEN_CHECK(running_mean.defined(), op,
                    "running_mean and running_var must be defined in evaluation mode");
        Tensor mean = running_mean.detach().contiguous().clone();
        Tensor var = running_var.detach().contiguous().clone();
        return channel_norm(op, x, layout, mean, var, false, weight, bias, eps);
    }
    int64_t count = batch * spatial;
    // PyTorch refuses exactly one value per channel; none gives an empty result and leaves the
    // running statistics alone (zeros keep the backward's rstd finite, as in seq_norm).
    LUMEN_CHECK(count != 1, op,
                "Expected more than 1 value per channel when training, got input size ", x.shape());
    Tensor c = contiguous_or_null(x);
    Tensor mean = empty({channels}, x.dtype(), x.device());
    Tensor var = empty({channels}, x.dtype(), x.device());
    if (count == 0) {
        mean.zero_();
        var.zero_();
        return channel_norm(op, x, layout, mean, var, true, weight, bias, eps);
    }
    moments_kernel(op, layout, c, mean, var);
    if (running_mean.defined()) {
        update_running(running_mean, mean, momentum);
        NoGradGuard no_grad;
        Tensor unbiased = mul(var.to(DType::float64), double(count) / double(count - 1));
        update_running(running_var, unbiased, momentum);
    }
    return channel_norm(op, x, layout, mean, var, true, weight, bias, eps);
}

namespace {

// Per channel, in float64: the mean and M2 = sum (x - mean)^2 over every process's values, and
// their count. Each process's count n, mean m and M2 = n var (from x in float64, so that the
// mean is not rounded to float32) merge as in Chan, Golub & LeVeque (1979): an all-reduce of
// (n m, n) gives the global mean mu, a second one of M2 + n (m - mu)^2 the global M2. One
// all-reduce of the sums of x and x^2 would save a call but cancels away the variance's digits
// when the mean is far above the spread.
struct GlobalMoments {
    Tensor mean, m2;
    int64_t count = 0;
};

GlobalMoments global_moments(const char* op, const Tensor& x, const ChannelNormLayout& layout,
                             const AllReduceSum& all_reduce) {
    const int64_t channels = layout.channels, local = layout.count();
    NoGradGuard no_grad;
    Tensor m = zeros({channels}, DType::float64, x.device());
    Tensor var = zeros({channels}, DType::float64, x.device());
    if (local > 0) moments_kernel(op, layout, x.to(DType::float64).contiguous(), m, var);
    Tensor first =
        cat({mul(m, double(local)), full({1}, double(local), DType::float64, x.device())});
    all_reduce(first);
    GlobalMoments out;
    out.count = int64_t(first.narrow(0, channels, 1).item<double>());
    const double total = double(std::max<int64_t>(out.count, 1));  // no values anywhere: zeros
    out.mean = div(first.narrow(0, 0, channels), total);
    out.m2 = mul(add(var, square(sub(m, out.mean))), double(local));
    all_reduce(out.m2);
    return out;
}

}  // namespace

Tensor sync_batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                       const Tensor& weight, const Tensor& bias, double momentum, double eps,
                       const AllReduceSum& all_reduce) {
    const char* op = "sync_batch_norm";
    profiler::Scope profile(profiler::Kind::op, op, x);
    check_batch_input(x, op);
    LUMEN_CHECK(bool(all_reduce), op, "needs an all_reduce function (the identity for one ",
                "process), got none for input shape ", x.shape());
    const int64_t channels = x.size(1);
    check_channel_params(x, channels, weight, bias, running_mean, running_var, op);
    ChannelNormLayout layout{1, x.size(0), channels, spatial_size(x)};
    GlobalMoments moments = global_moments(op, x, layout, all_reduce);
    const int64_t count = moments.count;
    // Every process sees the same count, so they all throw or none does.
    LUMEN_CHECK(count != 1, op, "Expected more than 1 value per channel when training, got 1 ",
                "over all processes (input size ", x.shape(), " on this one)");
    const double total = double(std::max<int64_t>(count, 1));
    Tensor mean, var;
    {
        NoGradGuard no_grad;
        mean = moments.mean.to(x.dtype()).contiguous();
        var = div(moments.m2, total).to(x.dtype()).contiguous();
        if (running_mean.defined() && count > 0) {
            update_running(running_mean, moments.mean, momentum);
            update_running(running_var, div(moments.m2, double(count - 1)), momentum);
        }
    }
    GlobalBatch global{all_reduce, count, sub(moments.mean, mean.to(DType::float64))};
    return channel_norm(op, x, layout, mean, var, true, weight, bias, eps, &global);
}

Tensor seq_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
    const char* op = "seq_norm";
    profiler::Scope profile(profiler::Kind::op, op, x);
    check_input(x, op);
    LUMEN_CHECK(x.ndim() == 3, op, "expected an input of shape (B, N, D), got ", x.shape());
    int64_t features = x.size(2);
    check_param(weight, "weight", {features}, x, op);
    check_param(bias, "bias", {features}, x, op);
    ChannelNormLayout layout{x.size(0), x.size(1), features, 1};
    Tensor c = contiguous_or_null(x);
    Tensor mean = empty({x.size(0) * features}, x.dtype(), x.device());
    Tensor var = empty({x.size(0) * features}, x.dtype(), x.device());
    // N == 0: no elements per statistic; zeros keep the backward's rstd finite, so the weight
    // and bias gradients (sums over no elements) come out 0
    if (x.numel() > 0) {
        moments_kernel(op, layout, c, mean, var);
    } else {
        mean.zero_();
        var.zero_();
    }
    return channel_norm(op, x, layout, mean, var, true, weight, bias, eps);
}

Tensor normalize(const Tensor& x, double p, int64_t dim, double eps) {
    const char* op = "normalize";
    profiler::Scope profile(profiler::Kind::op, op, x);
    check_input(x, op);
    LUMEN_CHECK(std::isfinite(p) && p >= 1.0, op, "p must be finite and >= 1, got ", p);
    LUMEN_CHECK(x.ndim() >= 1, op, "expected an input with at least one dim, got a 0-d tensor");
    int d = wrap_dim(dim, x.ndim(), op);
    ChannelNormLayout layout;
    for (int i = 0; i < d; ++i) layout.outer *= x.size(i);
    int64_t inner = 1;
    for (int64_t i = d + 1; i < x.ndim(); ++i) inner *= x.size(i);
    // a norm along the last dim sums contiguous runs; otherwise down columns of `inner`
    if (inner == 1) {
        layout.spatial = x.size(d);
    } else {
        layout.length = x.size(d);
        layout.channels = inner;
    }
    Tensor c = contiguous_or_null(x);
    Tensor y = empty(x.shape(), x.dtype(), x.device());
    Tensor norm = empty({layout.outer * layout.channels}, x.dtype(), x.device());
    if (x.numel() > 0)
        LUMEN_DISPATCH(x, normalize_forward, layout, strided(c, op), p, eps, strided(y, op),
                       strided(norm, op));
    record_backward(
        op, {x}, y, [op, layout, p, eps, sx = save(c), snorm = save(norm)](const Tensor& grad_out) {
            Tensor x = sx.get();
            Tensor g = grad_out.contiguous();
            Tensor gx = empty_like(x);
            StridedView views[] = {strided(x, op), strided(snorm.get(), op), strided(g, op),
                                   strided(gx, op)};
            if (x.numel() > 0)
                LUMEN_DISPATCH(x, normalize_backward, layout, views[0], views[1], p, eps, views[2],
                               views[3]);
            return std::vector<Tensor>{gx};
        });
    return y;
}

}  // namespace lumen
