// Normalization modules: parameters, buffers and the mode logic of batch norm (which
// statistics to use and how the running ones advance).
#include "nn/norm.h"

#include <algorithm>

#include "core/autograd.h"
#include "nn/checkpoint.h"
#include "nn/repr_text.h"
#include "ops/elementwise.h"
#include "ops/norm.h"

namespace lumen::nn {

LayerNorm::LayerNorm(Shape shape, double epsilon, bool elementwise_affine, bool has_bias)
    : Module("LayerNorm"), normalized_shape(std::move(shape)), eps(epsilon) {
    LUMEN_CHECK(!normalized_shape.empty() && shape_numel(normalized_shape) > 0, "LayerNorm",
                "normalized_shape must be non-empty with positive sizes, got ", normalized_shape);
    if (elementwise_affine) {
        weight = register_parameter("weight", ones(normalized_shape));
        if (has_bias) bias = register_parameter("bias", zeros(normalized_shape));
    }
}
Tensor LayerNorm::forward(const Tensor& x) {
    return layer_norm(x, normalized_shape, weight, bias, eps);
}
std::string LayerNorm::extra_repr() const {
    return py_tuple(normalized_shape) + ", eps=" + py_float(eps) +
           ", elementwise_affine=" + py_bool(weight.defined());
}

RMSNorm::RMSNorm(Shape shape, double epsilon, bool elementwise_affine)
    : Module("RMSNorm"), normalized_shape(std::move(shape)), eps(epsilon) {
    LUMEN_CHECK(!normalized_shape.empty() && shape_numel(normalized_shape) > 0, "RMSNorm",
                "normalized_shape must be non-empty with positive sizes, got ", normalized_shape);
    if (elementwise_affine) weight = register_parameter("weight", ones(normalized_shape));
}
Tensor RMSNorm::forward(const Tensor& x) { return rms_norm(x, normalized_shape, weight, eps); }
std::string RMSNorm::extra_repr() const {
    return py_tuple(normalized_shape) + ", eps=" + py_float(eps) +
           ", elementwise_affine=" + py_bool(weight.defined());
}

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double epsilon, bool affine)
    : Module("GroupNorm"), num_groups(groups), num_channels(channels), eps(epsilon) {
    LUMEN_CHECK(groups > 0 && channels > 0 && channels % groups == 0, "GroupNorm", "num_channels ",
                channels, " must be a positive multiple of num_groups ", groups);
    if (affine) {
        weight = register_parameter("weight", ones({channels}));
        bias = register_parameter("bias", zeros({channels}));
    }
}
Tensor GroupNorm::forward(const Tensor& x) { return group_norm(x, num_groups, weight, bias, eps); }
std::string GroupNorm::extra_repr() const {
    return std::to_string(num_groups) + ", " + std::to_string(num_channels) +
           ", eps=" + py_float(eps) + ", affine=" + py_bool(weight.defined());
}

BatchNorm::BatchNorm(const char* type_name, std::vector<int64_t> input_ndims, int64_t features,
                     double epsilon, std::optional<double> mom, bool affine,
                     bool track_running_stats)
    : Module(type_name),
      num_features(features),
      eps(epsilon),
      momentum(mom),
      input_ndims_(std::move(input_ndims)) {
    LUMEN_CHECK(features > 0, type_name, "num_features must be positive, got ", features);
    if (affine) {
        weight = register_parameter("weight", ones({features}));
        bias = register_parameter("bias", zeros({features}));
    }
    if (track_running_stats) {
        running_mean = register_buffer("running_mean", zeros({features}));
        running_var = register_buffer("running_var", ones({features}));
        num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, DType::int64));
    }
}

Tensor BatchNorm::forward(const Tensor& x) {
    bool rank_ok =
        std::find(input_ndims_.begin(), input_ndims_.end(), x.ndim()) != input_ndims_.end();
    LUMEN_CHECK(rank_ok && x.size(1) == num_features, type_name(), "expects input (B, ",
                num_features, ", ...) of rank ", input_ndims_, ", got shape ", x.shape());
    bool tracking = running_mean.defined();
    if (!is_training() && tracking)
        return batch_norm(x, running_mean, running_var, weight, bias, false, 0.0, eps);
    // A checkpointed block's second forward (nn/checkpoint.h) normalizes with the same batch
    // statistics but leaves the running ones alone: they were updated by the first.
    if (is_recomputing()) tracking = false;
    double factor = momentum.value_or(0.0);
    if (is_training() && tracking) {
        NoGradGuard no_grad;
        // Stays on the device: no host round trip unless the cumulative average needs the count.
        num_batches_tracked.copy_(add(num_batches_tracked, 1.0));
        if (!momentum) factor = 1.0 / double(num_batches_tracked.item<int64_t>());
    }
    Tensor mean = tracking ? running_mean : Tensor(), var = tracking ? running_var : Tensor();
    if (sync_all_reduce && is_training())
        return sync_batch_norm(x, mean, var, weight, bias, factor, eps, sync_all_reduce);
    return batch_norm(x, mean, var, weight, bias, true, factor, eps);
}

std::string BatchNorm::extra_repr() const {
    return std::to_string(num_features) + ", eps=" + py_float(eps) +
           ", momentum=" + (momentum ? py_float(*momentum) : "None") +
           ", affine=" + py_bool(weight.defined()) +
           ", track_running_stats=" + py_bool(running_mean.defined());
}

int64_t convert_sync_batchnorm(Module& module, const AllReduceSum& all_reduce) {
    int64_t converted = 0;
    for (auto& [name, child] : module.named_modules()) {
        if (auto* norm = dynamic_cast<BatchNorm*>(child)) {
            norm->sync_all_reduce = all_reduce;
            ++converted;
        }
    }
    return converted;
}

}  // namespace lumen::nn
