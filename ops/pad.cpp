// pad: F.pad's argument rules (PyTorch's order: the last dim's pair first), the contiguous
// (outer, padded dims...) layout the kernels take, and the backward rule (a dedicated kernel:
// a crop for constant padding, a scatter-add for the others). Kernels in ops/cpu/pad.cpp and
// ops/cuda/pad.cu.
#include "ops/pad.h"

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/pad_kernels.h"

namespace lumen {

namespace {

constexpr const char* kOp = "pad";

PadMode mode_of(const std::string& mode) {
    if (mode == "constant") return PadMode::constant;
    if (mode == "reflect") return PadMode::reflect;
    if (mode == "replicate") return PadMode::replicate;
    LUMEN_CHECK(mode == "circular", kOp, "unknown mode '", mode,
                "' (expected constant, reflect, replicate or circular)");
    return PadMode::circular;
}

// The rules the non-constant modes add: 1-3 padded dims of a (B, C, spatial...) or
// (C, spatial...) input, float only, and per-mode limits on the pad sizes.
void check_border_mode(const Tensor& x, const PadGeometry& g, const std::string& mode,
                       std::optional<double> value) {
    LUMEN_CHECK(!value || *value == 0.0, kOp, "mode '", mode, "' takes no value, got value ",
                *value);
    LUMEN_CHECK(g.dims >= 1 && g.dims <= 3 && (x.ndim() == g.dims + 1 || x.ndim() == g.dims + 2),
                kOp, "mode '", mode, "' pads 1 to 3 trailing dims of a (B, C, spatial...) or ",
                "(C, spatial...) input: got ", 2 * g.dims, " pad values for an input of shape ",
                x.shape());
    LUMEN_CHECK(x.dtype() == DType::float32 || x.dtype() == DType::float64, kOp, "mode '", mode,
                "' expects a float32 or float64 input, got ", x.dtype());
    for (int j = 0; j < g.dims; ++j) {
        int64_t in = g.in[j], before = g.before[j], after = g.out[j] - in - before;
        int64_t dim = x.ndim() - g.dims + j;
        if (g.mode == PadMode::reflect) {
            LUMEN_CHECK(before < in && after < in, kOp,
                        "reflect padding must be smaller than the padded dim: got padding (",
                        before, ", ", after, ") for dim ", dim, " of size ", in, " (shape ",
                        x.shape(), ")");
        } else if (g.mode == PadMode::circular) {
            LUMEN_CHECK(before <= in && after <= in, kOp,
                        "circular padding must be at most the padded dim: got padding (", before,
                        ", ", after, ") for dim ", dim, " of size ", in, " (shape ", x.shape(),
                        ")");
        }
        LUMEN_CHECK(in > 0 && g.out[j] > 0, kOp, "mode '", mode,
                    "' needs non-empty input and output dims: got padding (", before, ", ", after,
                    ") for dim ", dim, " of size ", in, " (shape ", x.shape(), ")");
    }
}

PadGeometry geometry_of(const Tensor& x, const Dims& pads, const std::string& mode,
                        std::optional<double> value) {
    LUMEN_CHECK(pads.size() % 2 == 0, kOp,
                "pad must hold (before, after) pairs, got an odd number of values ", pads);
    LUMEN_CHECK(int64_t(pads.size()) <= 2 * x.ndim(), kOp, "pad has ", pads.size(),
                " values, more than two per dim of an input of shape ", x.shape());
    PadGeometry g;
    g.mode = mode_of(mode);
    g.value = value.value_or(0.0);
    // Zero pads pad the last dim by nothing: the result is a copy.
    g.dims = pads.empty() ? std::min<int>(1, int(x.ndim())) : int(pads.size() / 2);
    int first = int(x.ndim()) - g.dims;
    for (int d = 0; d < first; ++d) g.outer *= x.size(d);
    for (int j = 0; j < g.dims; ++j) {
        // Pair k of `pads` pads dim ndim - 1 - k.
        size_t pair = size_t(g.dims - 1 - j);
        int64_t before = pads.empty() ? 0 : pads[2 * pair];
        int64_t after = pads.empty() ? 0 : pads[2 * pair + 1];
        g.in[j] = x.size(first + j);
        g.before[j] = before;
        g.out[j] = g.in[j] + before + after;
        LUMEN_CHECK(g.out[j] >= 0, kOp, "padding (", before, ", ", after, ") of dim ", first + j,
                    " (size ", g.in[j], ") gives a negative size ", g.out[j], " (shape ", x.shape(),
                    ")");
    }
    if (g.mode != PadMode::constant) check_border_mode(x, g, mode, value);
    return g;
}

}  // namespace

Tensor pad(const Tensor& x, const Dims& pad, const std::string& mode, std::optional<double> value) {
    profiler::Scope profile(profiler::Kind::op, kOp, x);
    LUMEN_CHECK(x.ndim() >= 1, kOp, "expects an input with at least one dim, got a 0-d tensor");
    PadGeometry g = geometry_of(x, pad, mode, value);
    Tensor input;
    {
        NoGradGuard no_grad;  // the node below maps the gradient to x directly
        input = x.contiguous();
    }
    Shape out_shape = x.shape();
    for (int j = 0; j < g.dims; ++j) out_shape[size_t(x.ndim() - g.dims + j)] = g.out[j];
    Tensor y = empty(out_shape, x.dtype(), x.device());
    LUMEN_DISPATCH(x, pad_forward, strided(input, kOp), strided(y, kOp), g);
    // dx[i] = sum of grad_out[o] over the outputs o that copied x[i]
    record_backward(kOp, {x}, y, [g, shape = x.shape(), dtype = x.dtype()](const Tensor& grad_out) {
        Tensor go = grad_out.contiguous();
        Tensor grad_x = empty(shape, dtype, go.device());
        LUMEN_DISPATCH(go, pad_backward, strided(go, kOp), strided(grad_x, kOp), g);
        return std::vector<Tensor>{grad_x};
    });
    return y;
}

}  // namespace lumen
