// The generic parameter-free layers of nn/layers.h: option checks, the 1-D views, and
// PyTorch's printouts.
#include "nn/layers.h"

#include "core/error.h"
#include "nn/repr_text.h"
#include "ops/dropout.h"
#include "ops/interpolate.h"
#include "ops/pool.h"

namespace lumen::nn {

namespace {

// An int when one value, else a tuple (how PyTorch prints its `int | tuple` arguments).
std::string int_or_tuple(const Dims& values) {
    return values.size() == 1 ? std::to_string(values[0]) : py_tuple(values);
}

void check_count(const Dims& values, int nd, const std::string& type, const char* what) {
    LUMEN_CHECK(values.size() == 1 || values.size() == size_t(nd), type, what, " needs 1 or ", nd,
                " values, got ", values);
}

// The type name of an nd-dimensional layer from {1-D, 2-D, 3-D} names.
const char* name_for(int nd, const char* const (&names)[3], const char* family) {
    LUMEN_CHECK(nd >= 1 && nd <= 3, family, "spatial dims must be 1, 2 or 3, got ", nd);
    return names[nd - 1];
}
constexpr const char* kMaxPool[3] = {"MaxPool1d", "MaxPool2d", "MaxPool3d"};
constexpr const char* kAvgPool[3] = {"AvgPool1d", "AvgPool2d", "AvgPool3d"};
constexpr const char* kAdaptiveAvg[3] = {"AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
                                         "AdaptiveAvgPool3d"};
constexpr const char* kAdaptiveMax[3] = {"AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
                                         "AdaptiveMaxPool3d"};
constexpr const char* kDropout[3] = {"Dropout1d", "Dropout2d", "Dropout3d"};

// A 1-D argument as the 2-D op's: (1, v).
Dims widened(const Dims& values, int64_t one) {
    return values.empty() ? Dims{} : Dims{one, values.back()};
}

}  // namespace

Pool::Pool(int nd, bool average, Dims kernel, PoolOptions opts)
    : Module(name_for(nd, average ? kAvgPool : kMaxPool, "Pool")),
      kernel_size(std::move(kernel)),
      options(std::move(opts)),
      nd_(nd),
      average_(average) {
    check_count(kernel_size, nd, type_name(), "kernel_size");
    if (!options.stride.empty()) check_count(options.stride, nd, type_name(), "stride");
    check_count(options.padding, nd, type_name(), "padding");
    check_count(options.dilation, nd, type_name(), "dilation");
}

Tensor Pool::forward(const Tensor& x) {
    const PoolOptions& o = options;
    if (nd_ == 1) {  // (B, C, L) -> (B, C, 1, L), the 2-D op with a 1-row window
        LUMEN_CHECK(x.ndim() == 2 || x.ndim() == 3, type_name(),
                    "expects (B, C, L) or (C, L), got shape ", x.shape());
        const Tensor y = x.unsqueeze(-2);
        Dims stride = o.stride.empty() ? widened(kernel_size, 1) : widened(o.stride, 1);
        Tensor out = average_
                         ? avg_pool2d(y, widened(kernel_size, 1), stride, widened(o.padding, 0),
                                      o.ceil_mode, o.count_include_pad, o.divisor_override)
                         : max_pool2d(y, widened(kernel_size, 1), stride, widened(o.padding, 0),
                                      widened(o.dilation, 1), o.ceil_mode);
        return out.squeeze(-2);
    }
    if (average_) {
        auto pool = nd_ == 2 ? avg_pool2d : avg_pool3d;
        return pool(x, kernel_size, o.stride, o.padding, o.ceil_mode, o.count_include_pad,
                    o.divisor_override);
    }
    auto pool = nd_ == 2 ? max_pool2d : max_pool3d;
    return pool(x, kernel_size, o.stride, o.padding, o.dilation, o.ceil_mode);
}

std::string Pool::extra_repr() const {
    std::string out = "kernel_size=" + int_or_tuple(kernel_size) + ", stride=" +
                      int_or_tuple(options.stride.empty() ? kernel_size : options.stride) +
                      ", padding=" + int_or_tuple(options.padding);
    if (!average_)
        out += ", dilation=" + int_or_tuple(options.dilation) +
               ", ceil_mode=" + py_bool(options.ceil_mode);
    return out;
}

AdaptivePool::AdaptivePool(int nd, bool average, IntList size)
    : Module(name_for(nd, average ? kAdaptiveAvg : kAdaptiveMax, "AdaptivePool")),
      output_size(std::move(size.values)),
      nd_(nd),
      average_(average) {
    check_count(output_size, nd, type_name(), "output_size");
}

Tensor AdaptivePool::forward(const Tensor& x) {
    if (nd_ == 1) {
        LUMEN_CHECK(x.ndim() == 2 || x.ndim() == 3, type_name(),
                    "expects (B, C, L) or (C, L), got shape ", x.shape());
        const Dims size = {1, output_size[0]};
        const Tensor y = x.unsqueeze(-2);
        return (average_ ? adaptive_avg_pool2d(y, size) : adaptive_max_pool2d(y, size)).squeeze(-2);
    }
    if (nd_ == 2)
        return average_ ? adaptive_avg_pool2d(x, output_size) : adaptive_max_pool2d(x, output_size);
    return average_ ? adaptive_avg_pool3d(x, output_size) : adaptive_max_pool3d(x, output_size);
}

std::string AdaptivePool::extra_repr() const { return "output_size=" + int_or_tuple(output_size); }

Upsample::Upsample(UpsampleOptions opts) : Module("Upsample"), options(std::move(opts)) {
    LUMEN_CHECK(options.size.empty() != options.scale_factor.empty(), "Upsample",
                "needs exactly one of size and scale_factor, got size ", options.size,
                " and scale_factor ", options.scale_factor);
}

Tensor Upsample::forward(const Tensor& x) {
    return interpolate(x, options.size, options.scale_factor, options.mode, options.align_corners);
}

std::string Upsample::extra_repr() const {
    std::string out;
    if (!options.size.empty()) {
        out = "size=" + int_or_tuple(options.size);
    } else if (options.scale_factor.size() == 1) {
        out = "scale_factor=" + py_float(options.scale_factor[0]);
    } else {
        out = "scale_factor=(";
        for (size_t i = 0; i < options.scale_factor.size(); ++i)
            out += (i ? ", " : "") + py_float(options.scale_factor[i]);
        out += ")";
    }
    return out + ", mode='" + options.mode + "'";
}

Flatten::Flatten(int64_t start, int64_t end) : Module("Flatten"), start_dim(start), end_dim(end) {}

std::string Flatten::extra_repr() const {
    return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

ChannelDropout::ChannelDropout(int nd, double probability)
    : Module(name_for(nd, kDropout, "ChannelDropout")), p(probability), nd_(nd) {
    LUMEN_CHECK(p >= 0 && p <= 1, type_name(), "p must be in [0, 1], got ", p);
}

Tensor ChannelDropout::forward(const Tensor& x) {
    return channel_dropout(x, nd_, p, is_training());
}

std::string ChannelDropout::extra_repr() const { return "p=" + py_float(p) + ", inplace=False"; }

}  // namespace lumen::nn
