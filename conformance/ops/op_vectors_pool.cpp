// Vector adapters for the pooling, interpolation and padding ops ("op.max_pool2d",
// "op.interpolate", "op.pad", ...): kwargs by their torch.nn.functional names, PyTorch's
// defaults when absent.
#include <optional>
#include <vector>

#include "conformance/op_vectors.h"
#include "core/error.h"
#include "ops/interpolate.h"
#include "ops/pad.h"
#include "ops/pool.h"

namespace lumen::conformance {

namespace {

using Json = nlohmann::json;

// A value that is null (PyTorch's None) or absent gives nullopt.
std::optional<bool> optional_bool(VectorCall& call, const std::string& key) {
    const Json& value = call.config.get(key);
    if (value.is_null()) return std::nullopt;
    LUMEN_CHECK(value.is_boolean(), call.module, "config '", key,
                "' must be true, false or null, got ", value.dump());
    return value.get<bool>();
}

// A number or a list of numbers (PyTorch's `float | tuple`); null or absent gives {}.
std::vector<double> doubles(VectorCall& call, const std::string& key) {
    const Json& value = call.config.get(key);
    if (value.is_null()) return {};
    if (value.is_number()) return {value.get<double>()};
    std::vector<double> out;
    bool ok = value.is_array();
    for (const Json& item : ok ? value : Json::array()) {
        ok = ok && item.is_number();
        if (ok) out.push_back(item.get<double>());
    }
    LUMEN_CHECK(ok, call.module, "config '", key, "' must be a number or a list of numbers, got ",
                value.dump());
    return out;
}

// Adaptive pools' output_size: an int or a list whose null entries keep the input's size.
Dims output_size(VectorCall& call, const Tensor& x, int spatial) {
    const Json& value = call.config.get("output_size");
    LUMEN_CHECK(value.is_number_integer() || value.is_array(), call.module,
                "config 'output_size' must be an integer or a list, got ", value.dump());
    if (value.is_number_integer()) return {value.get<int64_t>()};
    Dims sizes;
    for (size_t i = 0; i < value.size(); ++i) {
        const Json& item = value[i];
        LUMEN_CHECK(item.is_number_integer() || item.is_null(), call.module,
                    "config 'output_size' entries must be integers or null, got ", value.dump());
        int64_t dim = x.ndim() - spatial + int64_t(i);
        sizes.push_back(item.is_null() ? x.size(dim) : item.get<int64_t>());
    }
    return sizes;
}

TensorMap values_or_both(const ValuesIndices& result, bool return_indices) {
    if (return_indices) return {{"y", result.values}, {"indices", result.indices}};
    return {{"y", result.values}};
}

// F.max_pool2d/3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
// return_indices=False)
TensorMap max_pool_adapter(VectorCall& call, int spatial) {
    const Tensor& x = call.input("input");
    Dims kernel = call.config.get_ints("kernel_size", {});
    Dims stride = call.config.get_ints("stride", {});
    Dims padding = call.config.get_ints("padding", {0});
    Dims dilation = call.config.get_ints("dilation", {1});
    bool ceil_mode = call.config.get_bool("ceil_mode", false);
    bool return_indices = call.config.get_bool("return_indices", false);
    auto pool = spatial == 2 ? max_pool2d_with_indices : max_pool3d_with_indices;
    return values_or_both(pool(x, kernel, stride, padding, dilation, ceil_mode), return_indices);
}

// F.avg_pool2d/3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
// count_include_pad=True, divisor_override=None)
TensorMap avg_pool_adapter(VectorCall& call, int spatial) {
    const Tensor& x = call.input("input");
    Dims kernel = call.config.get_ints("kernel_size", {});
    Dims stride = call.config.get_ints("stride", {});
    Dims padding = call.config.get_ints("padding", {0});
    bool ceil_mode = call.config.get_bool("ceil_mode", false);
    bool count_include_pad = call.config.get_bool("count_include_pad", true);
    std::optional<int64_t> divisor;
    if (!call.config.get("divisor_override").is_null())
        divisor = call.config.get_int("divisor_override");
    auto pool = spatial == 2 ? avg_pool2d : avg_pool3d;
    return {{"y", pool(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor)}};
}

// F.adaptive_max_pool2d/3d(input, output_size, return_indices=False)
TensorMap adaptive_max_adapter(VectorCall& call, int spatial) {
    const Tensor& x = call.input("input");
    Dims sizes = output_size(call, x, spatial);
    bool return_indices = call.config.get_bool("return_indices", false);
    auto pool = spatial == 2 ? adaptive_max_pool2d_with_indices : adaptive_max_pool3d_with_indices;
    return values_or_both(pool(x, sizes), return_indices);
}

const VectorAdapterRegistration kMaxPool2d("op.max_pool2d", [](VectorCall& call) {
    return max_pool_adapter(call, 2);
});
const VectorAdapterRegistration kMaxPool3d("op.max_pool3d", [](VectorCall& call) {
    return max_pool_adapter(call, 3);
});
const VectorAdapterRegistration kAvgPool2d("op.avg_pool2d", [](VectorCall& call) {
    return avg_pool_adapter(call, 2);
});
const VectorAdapterRegistration kAvgPool3d("op.avg_pool3d", [](VectorCall& call) {
    return avg_pool_adapter(call, 3);
});
const VectorAdapterRegistration kAdaptiveAvgPool2d("op.adaptive_avg_pool2d", [](VectorCall& call) {
    const Tensor& x = call.input("input");
    return TensorMap{{"y", adaptive_avg_pool2d(x, output_size(call, x, 2))}};
});
const VectorAdapterRegistration kAdaptiveAvgPool3d("op.adaptive_avg_pool3d", [](VectorCall& call) {
    const Tensor& x = call.input("input");
    return TensorMap{{"y", adaptive_avg_pool3d(x, output_size(call, x, 3))}};
});
const VectorAdapterRegistration kAdaptiveMaxPool2d("op.adaptive_max_pool2d", [](VectorCall& call) {
    return adaptive_max_adapter(call, 2);
});
const VectorAdapterRegistration kAdaptiveMaxPool3d("op.adaptive_max_pool3d", [](VectorCall& call) {
    return adaptive_max_adapter(call, 3);
});

// F.interpolate(input, size=None, scale_factor=None, mode='nearest', align_corners=None,
// recompute_scale_factor=None, antialias=False)
const VectorAdapterRegistration kInterpolate("op.interpolate", [](VectorCall& call) {
    const Tensor& x = call.input("input");
    Dims size = call.config.get_ints("size", {});
    std::vector<double> scale_factor = doubles(call, "scale_factor");
    std::string mode = call.config.get_string("mode", "nearest");
    std::optional<bool> align_corners = optional_bool(call, "align_corners");
    std::optional<bool> recompute = optional_bool(call, "recompute_scale_factor");
    LUMEN_CHECK(!call.config.get_bool("antialias", false), call.module,
                "antialias=True is not supported");
    return TensorMap{{"y", interpolate(x, size, scale_factor, mode, align_corners, recompute)}};
});

// F.pad(input, pad, mode='constant', value=None)
const VectorAdapterRegistration kPad("op.pad", [](VectorCall& call) {
    const Tensor& x = call.input("input");
    Dims pads = call.config.get_ints("pad", {});
    std::string mode = call.config.get_string("mode", "constant");
    std::optional<double> value;
    if (!call.config.get("value").is_null()) value = call.config.get_double("value", 0.0);
    return TensorMap{{"y", pad(x, pads, mode, value)}};
});

}  // namespace

}  // namespace lumen::conformance
