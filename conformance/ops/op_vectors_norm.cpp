// check-vectors adapters for the normalization ops and the activations added with them
// (leaky_relu, hardtanh). Keyword names and defaults are those of torch.nn.functional.
#include <limits>

#include "conformance/op_vectors.h"
#include "lumen/lumen.h"

namespace lumen::conformance {

namespace {

TensorMap output(const Tensor& y) { return {{"y", y}}; }

// A running-stat argument: an input tensor (in.<name>) or a buffer (b.<name>), else absent.
Tensor running_stat(VectorCall& call, const std::string& name) {
    Tensor t = call.optional_input(name);
    if (t.defined()) return t;
    auto it = call.buffers.find(name);
    return it == call.buffers.end() ? Tensor() : it->second;
}

const VectorAdapterRegistration kLayerNorm("op.layer_norm", [](VectorCall& call) {
    Shape normalized_shape = call.config.get_ints("normalized_shape", {});
    double eps = call.config.get_double("eps", 1e-5);
    return output(layer_norm(call.input("input"), normalized_shape, call.optional_input("weight"),
                             call.optional_input("bias"), eps));
});

// F.rms_norm(input, normalized_shape, weight=None, eps=None): None means finfo(dtype).eps.
const VectorAdapterRegistration kRmsNorm("op.rms_norm", [](VectorCall& call) {
    const Tensor& x = call.input("input");
    Shape normalized_shape = call.config.get_ints("normalized_shape", {});
    double eps = x.dtype() == DType::float64 ? std::numeric_limits<double>::epsilon()
                                             : double(std::numeric_limits<float>::epsilon());
    if (!call.config.get("eps").is_null()) eps = call.config.get_double("eps", eps);
    return output(rms_norm(x, normalized_shape, call.optional_input("weight"), eps));
});

const VectorAdapterRegistration kGroupNorm("op.group_norm", [](VectorCall& call) {
    int64_t num_groups = call.config.get_int("num_groups");
    double eps = call.config.get_double("eps", 1e-5);
    return output(group_norm(call.input("input"), num_groups, call.optional_input("weight"),
                             call.optional_input("bias"), eps));
});

const VectorAdapterRegistration kInstanceNorm("op.instance_norm", [](VectorCall& call) {
    bool use_input_stats = call.config.get_bool("use_input_stats", true);
    double momentum = call.config.get_double("momentum", 0.1);
    double eps = call.config.get_double("eps", 1e-5);
    return output(instance_norm(call.input("input"), running_stat(call, "running_mean"),
                                running_stat(call, "running_var"), call.optional_input("weight"),
                                call.optional_input("bias"), use_input_stats, momentum, eps));
});

const VectorAdapterRegistration kBatchNorm("op.batch_norm", [](VectorCall& call) {
    bool training = call.config.get_bool("training", false);
    double momentum = call.config.get_double("momentum", 0.1);
    double eps = call.config.get_double("eps", 1e-5);
    return output(batch_norm(call.input("input"), running_stat(call, "running_mean"),
                             running_stat(call, "running_var"), call.optional_input("weight"),
                             call.optional_input("bias"), training, momentum, eps));
});

const VectorAdapterRegistration kNormalize("op.normalize", [](VectorCall& call) {
    double p = call.config.get_double("p", 2.0);
    int64_t dim = call.config.get_int("dim", 1);
    double eps = call.config.get_double("eps", 1e-12);
    return output(normalize(call.input("input"), p, dim, eps));
});

const VectorAdapterRegistration kLeakyRelu("op.leaky_relu", [](VectorCall& call) {
    call.config.get_bool("inplace", false);  // where the result is stored, not its values
    double slope = call.config.get_double("negative_slope", 0.01);
    return output(leaky_relu(call.input("input"), slope));
});

const VectorAdapterRegistration kHardtanh("op.hardtanh", [](VectorCall& call) {
    call.config.get_bool("inplace", false);
    double min_val = call.config.get_double("min_val", -1.0);
    double max_val = call.config.get_double("max_val", 1.0);
    return output(hardtanh(call.input("input"), min_val, max_val));
});

}  // namespace

}  // namespace lumen::conformance
