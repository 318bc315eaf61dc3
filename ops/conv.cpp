// conv1d/2d/3d and conv_transpose2d/3d: argument checks, output sizes, the contiguous layout
// the kernels need, and the backward rules. Both ops reduce to one ConvShape (the problem seen
// as 3-D) and the three kernels of ops/conv_kernels.h: a transposed convolution is the adjoint
// of a convolution, so its forward is the convolution's grad_input kernel and vice versa.
#include "ops/conv.h"

#include <algorithm>

#include "core/autograd.h"
#include "core/cuda_guard.h"
#include "core/profiler.h"
#include "ops/conv_kernels.h"

namespace lumen {

namespace {

// A stride/padding/dilation list: one value for all spatial dims or one per dim.
std::vector<int64_t> per_dim(const std::vector<int64_t>& values, int nd, const char* op,
                             const char* name, int64_t min) {
    LUMEN_CHECK(values.size() == 1 || int(values.size()) == nd, op, name, " must have 1 or ", nd,
                " values, got ", values);
    std::vector<int64_t> out(size_t(nd), values[0]);
    if (values.size() > 1) out = values;
    for (int64_t v : out)
        LUMEN_CHECK(v >= min, op, name, " must be ", min == 0 ? "non-negative" : "positive",
                    ", got ", values);
    return out;
}

// Input with a batch dim (an unbatched input gets one) after the checks shared by conv and
// conv_transpose: devices, dtypes, ranks, the bias.
Tensor checked_input(const char* op, int nd, const Tensor& input, const Tensor& weight,
                     const Tensor& bias, int64_t groups) {
    check_same_device(op, {input, weight, bias});
    LUMEN_CHECK(input.ndim() == nd + 1 || input.ndim() == nd + 2, op, "expects input of rank ",
                nd + 1, " (unbatched) or ", nd + 2, " (batched), got shape ", input.shape());
    LUMEN_CHECK(weight.ndim() == nd + 2, op, "expects weight of rank ", nd + 2, ", got shape ",
                weight.shape());
    LUMEN_CHECK(input.dtype() == DType::float32 || input.dtype() == DType::float64, op,
                "expects a float32 or float64 input, got ", input.dtype());
    LUMEN_CHECK(weight.dtype() == input.dtype(), op, "weight dtype ", weight.dtype(),
                " differs from input dtype ", input.dtype());
    LUMEN_CHECK(groups > 0, op, "groups must be positive, got ", groups);
    if (bias.defined()) {
        LUMEN_CHECK(bias.dtype() == input.dtype(), op, "bias dtype ", bias.dtype(),
                    " differs from input dtype ", input.dtype());
    }
    return input.ndim() == nd + 1 ? input.unsqueeze(0) : input;
}

void check_bias(const char* op, const Tensor& bias, int64_t out_channels) {
    if (!bias.defined()) return;
    LUMEN_CHECK(bias.ndim() == 1 && bias.size(0) == out_channels, op, "expects bias of shape (",
                out_channels, "), got ", bias.shape());
}

Tensor contiguous_no_grad(const Tensor& t) {
    NoGradGuard no_grad;  // the recorded node maps gradients to t itself
    return t.defined() ? t.contiguous() : t;
}

StridedView view_or_none(const Tensor& t, const char* op) {
    return t.defined() ? strided(t, op) : StridedView{};
}

// The kernels of ops/conv_kernels.h on the device of their output: lumen::cpu or lumen::cuda.
void run_forward(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias,
                 const Tensor& y, const ConvShape& s) {
    StridedView xv = strided(x, op), wv = strided(weight, op), bv = view_or_none(bias, op);
    LUMEN_DISPATCH(y, conv_forward, xv, wv, bv, strided(y, op), s);
}

void run_backward_input(const char* op, const Tensor& grad_y, const Tensor& weight,
                        const Tensor& grad_x, const ConvShape& s) {
    StridedView gv = strided(grad_y, op), wv = strided(weight, op);
    LUMEN_DISPATCH(grad_x, conv_backward_input, gv, wv, strided(grad_x, op), s);
}

void run_backward_weight(const char* op, const Tensor& x, const Tensor& grad_y,
                         const Tensor& grad_weight, const ConvShape& s) {
    StridedView xv = strided(x, op), gv = strided(grad_y, op);
    LUMEN_DISPATCH(grad_weight, conv_backward_weight, xv, gv, strided(grad_weight, op), s);
}

void run_backward_bias(const char* op, const Tensor& grad_y, const Tensor& grad_bias) {
    LUMEN_DISPATCH(grad_bias, conv_backward_bias, strided(grad_y, op), strided(grad_bias, op));
}

void run_add_bias(const char* op, const Tensor& y, const Tensor& bias) {
    LUMEN_DISPATCH(y, conv_add_bias, strided(y, op), strided(bias, op));
}

// y = conv(x, weight) + bias for a batched x and the checked problem `s`; records backward.
// grad_x = conv^T(grad_y, weight); grad_weight = sum_b grad_y im2col(x)^T; grad_bias = sum grad_y.
Tensor conv_recorded(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias,
                     const ConvShape& s, const Shape& out_shape) {
    profiler::Scope profile(profiler::Kind::op, op, x);
    Tensor xc = contiguous_no_grad(x), wc = contiguous_no_grad(weight);
    Tensor bc = contiguous_no_grad(bias);
    Tensor y = empty(out_shape, x.dtype(), x.device());
    run_forward(op, xc, wc, bc, y, s);
    if (!needs_recording({x, weight, bias})) return y;
    bool need_x = x.requires_grad(), need_w = weight.requires_grad();
    bool need_b = bias.defined() && bias.requires_grad();
    SavedTensor saved_x = need_w ? save(xc) : SavedTensor();
    SavedTensor saved_w = need_x ? save(wc) : SavedTensor();
    Shape x_shape = x.shape(), w_shape = weight.shape();
    record_backward(op, {x, weight, bias}, y, [=](const Tensor& grad_out) {
        Tensor g = grad_out.contiguous();
        std::vector<Tensor> grads(3);
        if (need_x) {
            grads[0] = empty(x_shape, g.dtype(), g.device());
            run_backward_input(op, g, saved_w.get(), grads[0], s);
        }
        if (need_w) {
            grads[1] = empty(w_shape, g.dtype(), g.device());
            run_backward_weight(op, saved_x.get(), g, grads[1], s);
        }
        if (need_b) {
            grads[2] = empty({s.out_channels}, g.dtype(), g.device());
            run_backward_bias(op, g, grads[2]);
        }
        return grads;
    });
    return y;
}

// padding_after: the padding at the end of each dim (differs from `padding` only for "same").
Tensor conv_nd(const char* op, int nd, const Tensor& input, const Tensor& weight,
               const Tensor& bias, const std::vector<int64_t>& stride_arg,
               const std::vector<int64_t>& padding, const std::vector<int64_t>& padding_after,
               const std::vector<int64_t>& dilation_arg, int64_t groups) {
    Tensor x = checked_input(op, nd, input, weight, bias, groups);
    std::vector<int64_t> stride = per_dim(stride_arg, nd, op, "stride", 1);
    std::vector<int64_t> dilation = per_dim(dilation_arg, nd, op, "dilation", 1);
    int64_t in_channels = x.size(1), out_channels = weight.size(0);
    LUMEN_CHECK(in_channels % groups == 0 && out_channels % groups == 0, op, "groups = ", groups,
                " must divide both input channels (", in_channels, ") and output channels (",
                out_channels, ")");
    LUMEN_CHECK(weight.size(1) * groups == in_channels, op, "input has ", in_channels,
                " channels but weight ", weight.shape(), " with groups = ", groups, " expects ",
                weight.size(1) * groups, " (input shape ", input.shape(), ")");
    check_bias(op, bias, out_channels);
    ConvShape s;
    s.batch = x.size(0);
    s.in_channels = in_channels;
    s.out_channels = out_channels;
    s.groups = groups;
    Shape out_shape = {s.batch, out_channels};
    for (int d = 0; d < nd; ++d) {
        int e = 3 - nd + d;  // position in the 3-D view
        int64_t size = x.size(2 + d), k = weight.size(2 + d);
        int64_t padded = size + padding[d] + padding_after[d];
        int64_t extent = dilation[d] * (k - 1) + 1;
        LUMEN_CHECK(k > 0 && extent <= padded, op, "kernel size ", k, " (", extent,
                    " with dilation) is larger than the padded input size ", padded,
                    " in spatial dim ", d, " (input shape ", input.shape(), ", weight shape ",
                    weight.shape(), ")");
        s.input[e] = size;
        s.kernel[e] = k;
        s.stride[e] = stride[d];
        s.padding[e] = padding[d];
        s.dilation[e] = dilation[d];
        s.output[e] = (padded - extent) / stride[d] + 1;
        out_shape.push_back(s.output[e]);
    }
    Tensor y = conv_recorded(op, x, weight, bias, s, out_shape);
    return input.ndim() == nd + 1 ? y.squeeze(0) : y;
}

Tensor conv_numeric(const char* op, int nd, const Tensor& input, const Tensor& weight,
                    const Tensor& bias, const std::vector<int64_t>& stride,
                    const std::vector<int64_t>& padding_arg, const std::vector<int64_t>& dilation,
                    int64_t groups) {
    std::vector<int64_t> padding = per_dim(padding_arg, nd, op, "padding", 0);
    return conv_nd(op, nd, input, weight, bias, stride, padding, padding, dilation, groups);
}

// "same": total padding dilation (k - 1) per dim, the odd element after (as PyTorch).
Tensor conv_mode(const char* op, int nd, const Tensor& input, const Tensor& weight,
                 const Tensor& bias, const std::vector<int64_t>& stride_arg,
                 const ConvPadding& mode, const std::vector<int64_t>& dilation_arg,
                 int64_t groups) {
    std::vector<int64_t> before(size_t(nd), 0), after(size_t(nd), 0);
    if (mode.mode == "same") {
        std::vector<int64_t> stride = per_dim(stride_arg, nd, op, "stride", 1);
        for (int64_t v : stride)
            LUMEN_CHECK(v == 1, op,
                        "padding='same' is not supported for strided convolutions, "
                        "got stride ",
                        stride_arg);
        std::vector<int64_t> dilation = per_dim(dilation_arg, nd, op, "dilation", 1);
        LUMEN_CHECK(weight.ndim() == nd + 2, op, "expects weight of rank ", nd + 2, ", got shape ",
                    weight.shape());
        for (int d = 0; d < nd; ++d) {
            int64_t total = dilation[d] * (weight.size(2 + d) - 1);
            before[d] = total / 2;
            after[d] = total - before[d];
        }
    } else {
        LUMEN_CHECK(mode.mode == "valid", op, "padding must be 'same', 'valid' or numbers, got '",
                    mode.mode, "'");
    }
    return conv_nd(op, nd, input, weight, bias, stride_arg, before, after, dilation_arg, groups);
}

// y = conv_transpose(x, weight) + bias for a batched x, `s` describing the convolution whose
// input is y (in and out swapped), so the forward is that convolution's grad_input kernel.
// grad_x = conv(grad_y, weight); grad_weight = conv's grad_weight with x as its grad_y;
// grad_bias = sum grad_y.
Tensor conv_transpose_recorded(const char* op, const Tensor& x, const Tensor& weight,
                               const Tensor& bias, const ConvShape& s, const Shape& out_shape) {
    Tensor xc = contiguous_no_grad(x), wc = contiguous_no_grad(weight);
    Tensor bc = contiguous_no_grad(bias);
    Tensor y = empty(out_shape, x.dtype(), x.device());
    run_backward_input(op, xc, wc, y, s);
    if (bias.defined()) run_add_bias(op, y, bc);
    if (!needs_recording({x, weight, bias})) return y;
    bool need_x = x.requires_grad(), need_w = weight.requires_grad();
    bool need_b = bias.defined() && bias.requires_grad();
    SavedTensor saved_x = need_w ? save(xc) : SavedTensor();
    SavedTensor saved_w = need_x ? save(wc) : SavedTensor();
    Shape x_shape = x.shape(), w_shape = weight.shape();
    record_backward(op, {x, weight, bias}, y, [=](const Tensor& grad_out) {
        Tensor g = grad_out.contiguous();
        std::vector<Tensor> grads(3);
        if (need_x) {
            grads[0] = empty(x_shape, g.dtype(), g.device());
            run_forward(op, g, saved_w.get(), Tensor(), grads[0], s);
        }
        if (need_w) {
            grads[1] = empty(w_shape, g.dtype(), g.device());
            run_backward_weight(op, g, saved_x.get(), grads[1], s);
        }
        if (need_b) {
            grads[2] = empty({s.in_channels}, g.dtype(), g.device());
            run_backward_bias(op, g, grads[2]);
        }
        return grads;
    });
    return y;
}

Tensor conv_transpose_nd(const char* op, int nd, const Tensor& input, const Tensor& weight,
                         const Tensor& bias, const std::vector<int64_t>& stride_arg,
                         const std::vector<int64_t>& padding_arg,
                         const std::vector<int64_t>& output_padding_arg, int64_t groups,
                         const std::vector<int64_t>& dilation_arg) {
    Tensor x = checked_input(op, nd, input, weight, bias, groups);
    std::vector<int64_t> stride = per_dim(stride_arg, nd, op, "stride", 1);
    std::vector<int64_t> padding = per_dim(padding_arg, nd, op, "padding", 0);
    std::vector<int64_t> output_padding = per_dim(output_padding_arg, nd, op, "output_padding", 0);
    std::vector<int64_t> dilation = per_dim(dilation_arg, nd, op, "dilation", 1);
    int64_t in_channels = x.size(1);
    LUMEN_CHECK(weight.size(0) == in_channels, op, "input has ", in_channels,
                " channels but weight ", weight.shape(), " expects ", weight.size(0),
                " (input shape ", input.shape(), ")");
    LUMEN_CHECK(in_channels % groups == 0, op, "groups = ", groups,
                " must divide the input channels (", in_channels, ")");
    check_bias(op, bias, weight.size(1) * groups);
    ConvShape s;  // the adjoint convolution: in and out swapped
    s.batch = x.size(0);
    s.in_channels = weight.size(1) * groups;
    s.out_channels = in_channels;
    s.groups = groups;
    Shape out_shape = {s.batch, s.in_channels};
    for (int d = 0; d < nd; ++d) {
        int e = 3 - nd + d;
        int64_t size = x.size(2 + d), k = weight.size(2 + d);
        // As PyTorch: only the batch or the channels may be empty.
        LUMEN_CHECK(size > 0, op, "input has an empty spatial dim ", d, " (input shape ",
                    input.shape(), "); only zero batch or zero channel inputs are supported");
        LUMEN_CHECK(output_padding[d] < stride[d] || output_padding[d] < dilation[d], op,
                    "output_padding ", output_padding_arg, " must be smaller than either stride ",
                    stride_arg, " or dilation ", dilation_arg);
        int64_t out =
            (size - 1) * stride[d] - 2 * padding[d] + dilation[d] * (k - 1) + output_padding[d] + 1;
        LUMEN_CHECK(k > 0 && out > 0, op, "output size ", out, " in spatial dim ", d,
                    " is not positive (input shape ", input.shape(), ", weight shape ",
                    weight.shape(), ", padding ", padding_arg, ")");
        s.input[e] = out;
        s.output[e] = size;
        s.kernel[e] = k;
        s.stride[e] = stride[d];
        s.padding[e] = padding[d];
        s.dilation[e] = dilation[d];
        out_shape.push_back(out);
    }
    Tensor y = conv_transpose_recorded(op, x, weight, bias, s, out_shape);
    return input.ndim() == nd + 1 ? y.squeeze(0) : y;
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
              const std::vector<int64_t>& dilation, int64_t groups) {
    return conv_numeric("conv1d", 1, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const ConvPadding& padding,
              const std::vector<int64_t>& dilation, int64_t groups) {
    return conv_mode("conv1d", 1, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
              const std::vector<int64_t>& dilation, int64_t groups) {
    return conv_numeric("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const ConvPadding& padding,
              const std::vector<int64_t>& dilation, int64_t groups) {
    return conv_mode("conv2d", 2, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
              const std::vector<int64_t>& dilation, int64_t groups) {
    return conv_numeric("conv3d", 3, input, weight, bias, stride, padding, dilation, groups);
}
Tensor conv3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const std::vector<int64_t>& stride, const ConvPadding& padding,
              const std::vector<int64_t>& dilation, int64_t groups) {
    return conv_mode("conv3d", 3, input, weight, bias, stride, padding, dilation, groups);
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation) {
    return conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding,
                             output_padding, groups, dilation);
}

Tensor conv_transpose3d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const std::vector<int64_t>& stride, const std::vector<int64_t>& padding,
                        const std::vector<int64_t>& output_padding, int64_t groups,
                        const std::vector<int64_t>& dilation) {
    return conv_transpose_nd("conv_transpose3d", 3, input, weight, bias, stride, padding,
                             output_padding, groups, dilation);
}

}  // namespace lumen
