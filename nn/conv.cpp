// Conv and ConvTranspose modules: parameter shapes, PyTorch's default init, dispatch to the
// conv ops by dimensionality; DepthwiseSeparableConv composed of two Conv2d.
#include "nn/conv.h"

#include "nn/init.h"
#include "nn/repr_text.h"
#include "ops/conv.h"

namespace lumen::nn {

Conv::Conv(const char* type_name, int nd, bool transposed, int64_t in, int64_t out,
           const std::vector<int64_t>& kernel, ConvOptions opts)
    : Module(type_name),
      in_channels(in),
      out_channels(out),
      kernel_size(kernel),
      options(std::move(opts)),
      nd_(nd),
      transposed_(transposed) {
    LUMEN_CHECK(in > 0 && out > 0 && options.groups > 0, type_name,
                "channels and groups must be positive, got in ", in, ", out ", out, ", groups ",
                options.groups);
    LUMEN_CHECK(in % options.groups == 0 && out % options.groups == 0, type_name, "in_channels ",
                in, " and out_channels ", out, " must be divisible by groups ", options.groups);
    LUMEN_CHECK(kernel.size() == 1 || int(kernel.size()) == nd, type_name,
                "kernel_size needs 1 or ", nd, " values, got ", kernel);
    LUMEN_CHECK(!transposed || options.padding_mode.empty(), type_name, "padding_mode '",
                options.padding_mode, "' is not supported for transposed conv");
    if (kernel_size.size() == 1) kernel_size.assign(size_t(nd), kernel[0]);
    Shape shape = transposed ? Shape{in, out / options.groups} : Shape{out, in / options.groups};
    for (int64_t k : kernel_size) {
        LUMEN_CHECK(k > 0, type_name, "kernel sizes must be positive, got ", kernel);
        shape.push_back(k);
    }
    weight = register_parameter("weight", empty(shape));
    if (options.bias) bias = register_parameter("bias", empty({out}));
    init::torch_default_(weight, bias);
}

Tensor Conv::forward(const Tensor& x) {
    const ConvOptions& o = options;
    if (transposed_) {
        return nd_ == 2 ? conv_transpose2d(x, weight, bias, o.stride, o.padding, o.output_padding,
                                           o.groups, o.dilation)
                        : conv_transpose3d(x, weight, bias, o.stride, o.padding, o.output_padding,
                                           o.groups, o.dilation);
    }
    if (!o.padding_mode.empty()) {
        ConvPadding mode(o.padding_mode);
        if (nd_ == 1) return conv1d(x, weight, bias, o.stride, mode, o.dilation, o.groups);
        if (nd_ == 2) return conv2d(x, weight, bias, o.stride, mode, o.dilation, o.groups);
        return conv3d(x, weight, bias, o.stride, mode, o.dilation, o.groups);
    }
    if (nd_ == 1) return conv1d(x, weight, bias, o.stride, o.padding, o.dilation, o.groups);
    if (nd_ == 2) return conv2d(x, weight, bias, o.stride, o.padding, o.dilation, o.groups);
    return conv3d(x, weight, bias, o.stride, o.padding, o.dilation, o.groups);
}

// As torch's _ConvNd.extra_repr: padding, dilation, output_padding and groups only when they
// differ from the defaults; bias=False when there is none.
std::string Conv::extra_repr() const {
    const size_t n = size_t(nd_);
    auto each = [n](const std::vector<int64_t>& v) {
        return v.size() == 1 ? std::vector<int64_t>(n, v[0]) : v;
    };
    std::string out = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                      ", kernel_size=" + py_tuple(each(kernel_size)) +
                      ", stride=" + py_tuple(each(options.stride));
    if (!options.padding_mode.empty())
        out += ", padding=" + options.padding_mode;
    else if (each(options.padding) != std::vector<int64_t>(n, 0))
        out += ", padding=" + py_tuple(each(options.padding));
    if (each(options.dilation) != std::vector<int64_t>(n, 1))
        out += ", dilation=" + py_tuple(each(options.dilation));
    if (transposed_ && each(options.output_padding) != std::vector<int64_t>(n, 0))
        out += ", output_padding=" + py_tuple(each(options.output_padding));
    if (options.groups != 1) out += ", groups=" + std::to_string(options.groups);
    if (!options.bias) out += ", bias=False";
    return out;
}

DepthwiseSeparableConv::DepthwiseSeparableConv(int64_t in_ch, int64_t out_ch)
    : Module("DepthwiseSeparableConv") {
    depthwise = register_module(
        "depthwise", make<Conv2d>(in_ch, in_ch, std::vector<int64_t>{3},
                                  ConvOptions{.padding = {1}, .groups = in_ch, .bias = false}));
    pointwise = register_module("pointwise", make<Conv2d>(in_ch, out_ch, std::vector<int64_t>{1},
                                                          ConvOptions{.bias = false}));
}

Tensor DepthwiseSeparableConv::forward(const Tensor& x) {
    return pointwise->forward(depthwise->forward(x));
}

}  // namespace lumen::nn
