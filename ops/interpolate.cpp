// interpolate: F.interpolate's argument rules and output sizes, the contiguous (planes, D, H, W)
// layout the kernels take (lower ranks get leading spatial dims of size 1), "area" through the
// adaptive average pools, and the backward rule (a dedicated kernel). Kernels in
// ops/cpu/interpolate.cpp and ops/cuda/interpolate.cu.
#include "ops/interpolate.h"

#include <cmath>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/interpolate_kernels.h"
#include "ops/pool.h"

namespace lumen {

namespace {

constexpr const char* kOp = "interpolate";

// The rank a linear mode needs, or 0 for the modes that take any spatial rank.
int64_t rank_of_mode(const std::string& mode) {
    if (mode == "linear") return 3;
    if (mode == "bilinear") return 4;
    if (mode == "trilinear") return 5;
    LUMEN_CHECK(mode == "nearest" || mode == "nearest-exact" || mode == "area", kOp,
                "unknown mode '", mode,
                "' (expected nearest, nearest-exact, linear, bilinear, trilinear or area)");
    return 0;
}

void check_arguments(const Tensor& x, const Dims& size, const std::vector<double>& scale_factor,
                     const std::string& mode, std::optional<bool> align_corners,
                     std::optional<bool> recompute_scale_factor) {
    LUMEN_CHECK(x.ndim() >= 3 && x.ndim() <= 5, kOp,
                "expects a 3-D, 4-D or 5-D input (B, C, spatial...), got shape ", x.shape());
    LUMEN_CHECK(x.dtype() == DType::float32 || x.dtype() == DType::float64, kOp,
                "expects a float32 or float64 input, got ", x.dtype(), " (shape ", x.shape(), ")");
    int64_t rank = rank_of_mode(mode);
    LUMEN_CHECK(rank == 0 || x.ndim() == rank, kOp, "mode '", mode, "' needs a ", rank,
                "-D input, got shape ", x.shape());
    LUMEN_CHECK(rank != 0 || !align_corners.has_value(), kOp,
                "align_corners can only be set with the linear modes (linear, bilinear, "
                "trilinear), got mode '",
                mode, "'");
    LUMEN_CHECK(!size.empty() || !scale_factor.empty(), kOp,
                "either size or scale_factor must be given");
    LUMEN_CHECK(size.empty() || scale_factor.empty(), kOp,
                "only one of size and scale_factor may be given, got size ", size,
                " and scale_factor ", scale_factor);
    LUMEN_CHECK(!(recompute_scale_factor.value_or(false) && !size.empty()), kOp,
                "recompute_scale_factor is not meaningful with an explicit size");
    size_t spatial = size_t(x.ndim() - 2);
    const char* given = size.empty() ? "scale_factor" : "size";
    size_t count = size.empty() ? scale_factor.size() : size.size();
    LUMEN_CHECK(count == 1 || count == spatial, kOp, given, " must have 1 or ", spatial,
                " values for an input with ", spatial, " spatial dims (shape ", x.shape(),
                "), got ", size.empty() ? detail::cat(scale_factor) : detail::cat(size));
}

// Area mode: adaptive average pooling; a 1-D input goes through the 2-D pool with H = 1.
Tensor area(const Tensor& x, const Dims& out) {
    if (out.size() == 1) return adaptive_avg_pool2d(x.unsqueeze(2), {1, out[0]}).squeeze(2);
    return out.size() == 2 ? adaptive_avg_pool2d(x, out) : adaptive_avg_pool3d(x, out);
}

}  // namespace

Tensor interpolate(const Tensor& x, const Dims& size, const std::vector<double>& scale_factor,
                   const std::string& mode, std::optional<bool> align_corners,
                   std::optional<bool> recompute_scale_factor) {
    profiler::Scope profile(profiler::Kind::op, kOp, x);
    check_arguments(x, size, scale_factor, mode, align_corners, recompute_scale_factor);
    int spatial = int(x.ndim()) - 2;
    InterpolateGeometry g;
    g.planes = x.size(0) * x.size(1);
    // Sizes and scale factors as the kernels index them: (D, H, W), leading dims of size 1.
    Dims out(static_cast<size_t>(spatial));
    for (int i = 0; i < spatial; ++i) {
        int s = 3 - spatial + i;
        g.in[s] = x.size(2 + i);
        if (!size.empty()) {
            g.out[s] = size.size() == 1 ? size[0] : size[size_t(i)];
        } else {
            double factor = scale_factor.size() == 1 ? scale_factor[0] : scale_factor[size_t(i)];
            g.out[s] = int64_t(std::floor(double(g.in[s]) * factor));
            // Without recompute_scale_factor PyTorch maps through 1 / scale_factor.
            bool recompute = recompute_scale_factor.value_or(false) || mode == "area";
            g.scale_factor[s] = recompute ? 0.0 : factor;
        }
        out[size_t(i)] = g.out[s];
    }
    for (int s = 3 - spatial; s < 3; ++s)
        LUMEN_CHECK(g.in[s] > 0 && g.out[s] > 0, kOp,
                    "input and output sizes must be positive, got input shape ", x.shape(),
                    " and output spatial size ", out);
    if (mode == "area") return area(x, out);

    g.mode = rank_of_mode(mode) != 0 ? InterpolateMode::linear
             : mode == "nearest"     ? InterpolateMode::nearest
                                     : InterpolateMode::nearest_exact;
    g.align_corners = align_corners.value_or(false);
    Tensor input;
    {
        NoGradGuard no_grad;  // the node below maps the gradient to x directly
        input = x.contiguous();
    }
    Shape out_shape = {x.size(0), x.size(1)};
    out_shape.insert(out_shape.end(), out.begin(), out.end());
    Tensor y = empty(out_shape, x.dtype(), x.device());
    LUMEN_DISPATCH(x, interpolate_forward, strided(input, kOp), strided(y, kOp), g);
    // dx[i] = sum over outputs o that read input i of weight(o, i) * grad_out[o]
    record_backward(kOp, {x}, y, [g, shape = x.shape(), dtype = x.dtype()](const Tensor& grad_out) {
        Tensor go = grad_out.contiguous();
        Tensor grad_x = empty(shape, dtype, go.device());
        LUMEN_DISPATCH(go, interpolate_backward, strided(go, kOp), strided(grad_x, kOp), g);
        return std::vector<Tensor>{grad_x};
    });
    return y;
}

}  // namespace lumen
