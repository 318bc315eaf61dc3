// `lumen check-vectors` adapters for the convolution ops: op.conv1d/2d/3d and
// op.conv_transpose2d/3d, reading torch.nn.functional's kwargs with PyTorch's defaults.
// padding may be a number, a list or the string "same"/"valid".
#include <string>
#include <vector>

#include "conformance/op_vectors.h"
#include "ops/conv.h"

namespace lumen::conformance {

namespace {

using ConvFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&, const std::vector<int64_t>&,
                          const std::vector<int64_t>&, const std::vector<int64_t>&, int64_t);
using ConvModeFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&,
                              const std::vector<int64_t>&, const ConvPadding&,
                              const std::vector<int64_t>&, int64_t);
using ConvTransposeFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&,
                                   const std::vector<int64_t>&, const std::vector<int64_t>&,
                                   const std::vector<int64_t>&, int64_t,
                                   const std::vector<int64_t>&);

VectorAdapter conv_adapter(ConvFn numeric, ConvModeFn mode) {
    return [numeric, mode](VectorCall& call) {
        const Tensor& input = call.input("input");
        const Tensor& weight = call.input("weight");
        Tensor bias = call.optional_input("bias");
        std::vector<int64_t> stride = call.config.get_ints("stride", {1});
        std::vector<int64_t> dilation = call.config.get_ints("dilation", {1});
        int64_t groups = call.config.get_int("groups", 1);
        Tensor y;
        if (call.config.get("padding").is_string()) {
            ConvPadding padding(call.config.get_string("padding", "valid"));
            y = mode(input, weight, bias, stride, padding, dilation, groups);
        } else {
            std::vector<int64_t> padding = call.config.get_ints("padding", {0});
            y = numeric(input, weight, bias, stride, padding, dilation, groups);
        }
        return TensorMap{{"y", y}};
    };
}

VectorAdapter conv_transpose_adapter(ConvTransposeFn op) {
    return [op](VectorCall& call) {
        Tensor y = op(call.input("input"), call.input("weight"), call.optional_input("bias"),
                      call.config.get_ints("stride", {1}), call.config.get_ints("padding", {0}),
                      call.config.get_ints("output_padding", {0}), call.config.get_int("groups", 1),
                      call.config.get_ints("dilation", {1}));
        return TensorMap{{"y", y}};
    };
}

const VectorAdapterRegistration kConv1d("op.conv1d", conv_adapter(conv1d, conv1d));
const VectorAdapterRegistration kConv2d("op.conv2d", conv_adapter(conv2d, conv2d));
const VectorAdapterRegistration kConv3d("op.conv3d", conv_adapter(conv3d, conv3d));
const VectorAdapterRegistration kConvTranspose2d("op.conv_transpose2d",
                                                 conv_transpose_adapter(conv_transpose2d));
const VectorAdapterRegistration kConvTranspose3d("op.conv_transpose3d",
                                                 conv_transpose_adapter(conv_transpose3d));

}  // namespace

}  // namespace lumen::conformance
