// Pooling: argument checks (PyTorch's rules and output sizes), the contiguous (planes, D, H, W)
// layout the kernels take (a 2-D pool is a 3-D pool of depth 1), and the backward rules, which
// run dedicated kernels. Kernels in ops/cpu/pool.cpp and ops/cuda/pool.cu.
#include "ops/pool.h"

#include <string>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/pool_kernels.h"

namespace lumen {

namespace {

// One value for every spatial dim, or one per dim (PyTorch's `int | tuple`).
Dims per_dim(const Dims& values, int spatial, const char* op, const char* name) {
    LUMEN_CHECK(values.size() == 1 || values.size() == size_t(spatial), op, name,
                " must have 1 or ", spatial, " values, got ", values);
    return values.size() == 1 ? Dims(size_t(spatial), values[0]) : values;
}

// Checks x is (B, C, spatial...) or (C, spatial...) and fills planes and in (D = 1 for 2-D).
PoolGeometry input_geometry(const Tensor& x, int spatial, const char* op) {
    const char* layout =
        spatial == 2 ? "(B, C, H, W) or (C, H, W)" : "(B, C, D, H, W) or (C, D, H, W)";
    LUMEN_CHECK(x.ndim() == spatial + 1 || x.ndim() == spatial + 2, op, "expects a ", layout,
                " input, got shape ", x.shape());
    LUMEN_CHECK(x.dtype() == DType::float32 || x.dtype() == DType::float64, op,
                "expects a float32 or float64 input, got ", x.dtype(), " (shape ", x.shape(), ")");
    int lead = int(x.ndim()) - spatial;
    for (int d = lead == 2 ? 1 : 0; d < x.ndim(); ++d)
        LUMEN_CHECK(x.size(d) > 0, op, "expects non-zero channel and spatial sizes, got shape ",
                    x.shape());
    PoolGeometry g;
    g.planes = 1;
    for (int d = 0; d < lead; ++d) g.planes *= x.size(d);
    for (int i = 0; i < spatial; ++i) g.in[3 - spatial + i] = x.size(lead + i);
    return g;
}

// x's leading (batch, channel) dims followed by the pooled sizes.
Shape output_shape(const Tensor& x, int spatial, const PoolGeometry& g) {
    Shape shape(x.shape().begin(), x.shape().end() - spatial);
    for (int i = 0; i < spatial; ++i) shape.push_back(g.out[3 - spatial + i]);
    return shape;
}

// PyTorch's pooling_output_shape: in ceil mode a last window that would start in the right
// padding is dropped.
int64_t pooled_size(int64_t in, int64_t kernel, int64_t padding, int64_t stride, int64_t dilation,
                    bool ceil_mode) {
    int64_t span = in + 2 * padding - dilation * (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0);
    // Floor division: span may be negative for a too-small input.
    int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
    if (ceil_mode && (out - 1) * stride >= in + padding) --out;
    return out;
}

PoolGeometry window_geometry(const Tensor& x, int spatial, const char* op, const Dims& kernel_size,
                             const Dims& stride, const Dims& padding, const Dims& dilation,
                             bool ceil_mode) {
    PoolGeometry g = input_geometry(x, spatial, op);
    Dims kernel = per_dim(kernel_size, spatial, op, "kernel_size");
    Dims steps = per_dim(stride.empty() ? kernel : stride, spatial, op, "stride");
    Dims pads = per_dim(padding, spatial, op, "padding");
    Dims dilations = per_dim(dilation, spatial, op, "dilation");
    for (int i = 0; i < spatial; ++i) {
        LUMEN_CHECK(kernel[i] > 0 && steps[i] > 0 && dilations[i] > 0, op,
                    "kernel_size, stride and dilation must be positive, got kernel_size ", kernel,
                    ", stride ", steps, ", dilation ", dilations);
        LUMEN_CHECK(pads[i] >= 0 && pads[i] <= kernel[i] / 2, op,
                    "padding must be between 0 and half the kernel size, got padding ", pads,
                    " for kernel_size ", kernel);
        int s = 3 - spatial + i;
        g.kernel[s] = kernel[i];
        g.stride[s] = steps[i];
        g.padding[s] = pads[i];
        g.dilation[s] = dilations[i];
        g.out[s] = pooled_size(g.in[s], kernel[i], pads[i], steps[i], dilations[i], ceil_mode);
    }
    for (int s = 3 - spatial; s < 3; ++s)
        LUMEN_CHECK(g.out[s] >= 1, op, "input of shape ", x.shape(),
                    " is too small for kernel_size ", kernel, ", stride ", steps, ", padding ",
                    pads, ", dilation ", dilations, ": the output would be ",
                    output_shape(x, spatial, g));
    return g;
}

PoolGeometry adaptive_geometry(const Tensor& x, int spatial, const char* op,
                               const Dims& output_size) {
    PoolGeometry g = input_geometry(x, spatial, op);
    g.adaptive = true;
    Dims sizes = per_dim(output_size, spatial, op, "output_size");
    for (int i = 0; i < spatial; ++i) {
        LUMEN_CHECK(sizes[i] > 0, op, "output_size must be positive, got ", sizes);
        g.out[3 - spatial + i] = sizes[i];
    }
    return g;
}

Tensor contiguous_input(const Tensor& x) {
    NoGradGuard no_grad;  // the op's node maps the gradient to x directly
    return x.contiguous();
}

// The max pools' common tail: dx[plane, indices[o]] += grad_out[o] (each output's gradient
// goes to the element it picked).
void record_max_backward(const char* op, const Tensor& x, const Tensor& y, const Tensor& indices,
                         const PoolGeometry& g) {
    record_backward(op, {x}, y,
                    [op, g, shape = x.shape(), dtype = x.dtype(),
                     saved = save(indices)](const Tensor& grad_out) {
                        Tensor go = grad_out.contiguous();
                        Tensor grad_x = empty(shape, dtype, go.device());
                        StridedView gv = strided(go, op), iv = strided(saved.get(), op);
                        LUMEN_DISPATCH(go, max_pool_backward, gv, iv, strided(grad_x, op), g);
                        return std::vector<Tensor>{grad_x};
                    });
}

ValuesIndices max_pool(const Tensor& x, int spatial, const char* op, const Dims& kernel_size,
                       const Dims& stride, const Dims& padding, const Dims& dilation,
                       bool ceil_mode) {
    profiler::Scope profile(profiler::Kind::op, op, x);
    PoolGeometry g =
        window_geometry(x, spatial, op, kernel_size, stride, padding, dilation, ceil_mode);
    Tensor input = contiguous_input(x);
    Tensor y = empty(output_shape(x, spatial, g), x.dtype(), x.device());
    Tensor indices = empty(y.shape(), DType::int64, x.device());
    LUMEN_DISPATCH(x, max_pool_forward, strided(input, op), strided(y, op), strided(indices, op),
                   g);
    record_max_backward(op, x, y, indices, g);
    return {y, indices};
}

ValuesIndices adaptive_max_pool(const Tensor& x, int spatial, const char* op,
                                const Dims& output_size) {
    profiler::Scope profile(profiler::Kind::op, op, x);
    PoolGeometry g = adaptive_geometry(x, spatial, op, output_size);
    Tensor input = contiguous_input(x);
    Tensor y = empty(output_shape(x, spatial, g), x.dtype(), x.device());
    Tensor indices = empty(y.shape(), DType::int64, x.device());
    LUMEN_DISPATCH(x, adaptive_max_pool_forward, strided(input, op), strided(y, op),
                   strided(indices, op), g);
    record_max_backward(op, x, y, indices, g);
    return {y, indices};
}

Tensor avg_pool(const Tensor& x, int spatial, const char* op, const Dims& kernel_size,
                const Dims& stride, const Dims& padding, bool ceil_mode, bool count_include_pad,
                std::optional<int64_t> divisor_override) {
    profiler::Scope profile(profiler::Kind::op, op, x);
    LUMEN_CHECK(!divisor_override || *divisor_override != 0, op, "divisor_override must not be 0");
    PoolGeometry g = window_geometry(x, spatial, op, kernel_size, stride, padding, {1}, ceil_mode);
    int64_t divisor = divisor_override.value_or(0);
    Tensor input = contiguous_input(x);
    Tensor y = empty(output_shape(x, spatial, g), x.dtype(), x.device());
    LUMEN_DISPATCH(x, avg_pool_forward, strided(input, op), strided(y, op), g, count_include_pad,
                   divisor);
    // dx = sum over the windows containing x of grad_out / divisor
    record_backward(op, {x}, y, [=, shape = x.shape(), dtype = x.dtype()](const Tensor& grad_out) {
        Tensor go = grad_out.contiguous();
        Tensor grad_x = empty(shape, dtype, go.device());
        StridedView gv = strided(go, op), xv = strided(grad_x, op);
        LUMEN_DISPATCH(go, avg_pool_backward, gv, xv, g, count_include_pad, divisor);
        return std::vector<Tensor>{grad_x};
    });
    return y;
}

Tensor adaptive_avg_pool(const Tensor& x, int spatial, const char* op, const Dims& output_size) {
    profiler::Scope profile(profiler::Kind::op, op, x);
    PoolGeometry g = adaptive_geometry(x, spatial, op, output_size);
    Tensor input = contiguous_input(x);
    Tensor y = empty(output_shape(x, spatial, g), x.dtype(), x.device());
    LUMEN_DISPATCH(x, adaptive_avg_pool_forward, strided(input, op), strided(y, op), g);
    // dx = sum over the cells containing x of grad_out / cell size
    record_backward(op, {x}, y, [=, shape = x.shape(), dtype = x.dtype()](const Tensor& grad_out) {
        Tensor go = grad_out.contiguous();
        Tensor grad_x = empty(shape, dtype, go.device());
        StridedView gv = strided(go, op), xv = strided(grad_x, op);
        LUMEN_DISPATCH(go, adaptive_avg_pool_backward, gv, xv, g);
        return std::vector<Tensor>{grad_x};
    });
    return y;
}

}  // namespace

Tensor max_pool2d(const Tensor& x, const Dims& kernel_size, const Dims& stride, const Dims& padding,
                  const Dims& dilation, bool ceil_mode) {
    return max_pool(x, 2, "max_pool2d", kernel_size, stride, padding, dilation, ceil_mode).values;
}

ValuesIndices max_pool2d_with_indices(const Tensor& x, const Dims& kernel_size, const Dims& stride,
                                      const Dims& padding, const Dims& dilation, bool ceil_mode) {
    return max_pool(x, 2, "max_pool2d", kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor max_pool3d(const Tensor& x, const Dims& kernel_size, const Dims& stride, const Dims& padding,
                  const Dims& dilation, bool ceil_mode) {
    return max_pool(x, 3, "max_pool3d", kernel_size, stride, padding, dilation, ceil_mode).values;
}

ValuesIndices max_pool3d_with_indices(const Tensor& x, const Dims& kernel_size, const Dims& stride,
                                      const Dims& padding, const Dims& dilation, bool ceil_mode) {
    return max_pool(x, 3, "max_pool3d", kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor avg_pool2d(const Tensor& x, const Dims& kernel_size, const Dims& stride, const Dims& padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
    return avg_pool(x, 2, "avg_pool2d", kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override);
}

Tensor avg_pool3d(const Tensor& x, const Dims& kernel_size, const Dims& stride, const Dims& padding,
                  bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
    return avg_pool(x, 3, "avg_pool3d", kernel_size, stride, padding, ceil_mode, count_include_pad,
                    divisor_override);
}

Tensor adaptive_avg_pool2d(const Tensor& x, const Dims& output_size) {
    return adaptive_avg_pool(x, 2, "adaptive_avg_pool2d", output_size);
}

Tensor adaptive_avg_pool3d(const Tensor& x, const Dims& output_size) {
    return adaptive_avg_pool(x, 3, "adaptive_avg_pool3d", output_size);
}

Tensor adaptive_max_pool2d(const Tensor& x, const Dims& output_size) {
    return adaptive_max_pool(x, 2, "adaptive_max_pool2d", output_size).values;
}

ValuesIndices adaptive_max_pool2d_with_indices(const Tensor& x, const Dims& output_size) {
    return adaptive_max_pool(x, 2, "adaptive_max_pool2d", output_size);
}

Tensor adaptive_max_pool3d(const Tensor& x, const Dims& output_size) {
    return adaptive_max_pool(x, 3, "adaptive_max_pool3d", output_size).values;
}

ValuesIndices adaptive_max_pool3d_with_indices(const Tensor& x, const Dims& output_size) {
    return adaptive_max_pool(x, 3, "adaptive_max_pool3d", output_size);
}

}  // namespace lumen
