// Vector adapters for the losses ("op.<torch.nn.functional name>"): kwargs by PyTorch name,
// PyTorch's defaults when absent. Oracle vectors store a scalar loss with shape [1], so a
// reduced (0-d) result is returned as [1].
#include "conformance/op_vectors.h"
#include "ops/loss.h"

namespace lumen::conformance {

namespace {

TensorMap loss_output(const Tensor& loss) {
    return {{"y", loss.ndim() == 0 ? loss.reshape({1}) : loss}};
}

std::string reduction_of(VectorCall& call) { return call.config.get_string("reduction", "mean"); }

// Class-index target: the vectors store a 0-d tensor as [1] too, so an unbatched input (C)
// gets its target back as a 0-d tensor.
Tensor class_target(VectorCall& call) {
    Tensor target = call.input("target");
    bool unbatched = call.input("input").ndim() == 1 && !target.is_floating_point();
    return unbatched && target.shape() == Shape{1} ? target.reshape({}) : target;
}

// Optional weights come as inputs (in.weight, in.pos_weight).
const VectorAdapterRegistration kCrossEntropy("op.cross_entropy", [](VectorCall& call) {
    return loss_output(cross_entropy(call.input("input"), class_target(call),
                                     call.optional_input("weight"),
                                     call.config.get_int("ignore_index", -100), reduction_of(call),
                                     call.config.get_double("label_smoothing", 0.0)));
});
const VectorAdapterRegistration kNllLoss("op.nll_loss", [](VectorCall& call) {
    return loss_output(nll_loss(call.input("input"), class_target(call),
                                call.optional_input("weight"),
                                call.config.get_int("ignore_index", -100), reduction_of(call)));
});
const VectorAdapterRegistration kBceWithLogits(
    "op.binary_cross_entropy_with_logits", [](VectorCall& call) {
        return loss_output(binary_cross_entropy_with_logits(
            call.input("input"), call.input("target"), call.optional_input("weight"),
            reduction_of(call), call.optional_input("pos_weight")));
    });
const VectorAdapterRegistration kBce("op.binary_cross_entropy", [](VectorCall& call) {
    return loss_output(binary_cross_entropy(call.input("input"), call.input("target"),
                                            call.optional_input("weight"), reduction_of(call)));
});
const VectorAdapterRegistration kMseLoss("op.mse_loss", [](VectorCall& call) {
    return loss_output(mse_loss(call.input("input"), call.input("target"), reduction_of(call)));
});
const VectorAdapterRegistration kL1Loss("op.l1_loss", [](VectorCall& call) {
    return loss_output(l1_loss(call.input("input"), call.input("target"), reduction_of(call)));
});
const VectorAdapterRegistration kSmoothL1Loss("op.smooth_l1_loss", [](VectorCall& call) {
    return loss_output(smooth_l1_loss(call.input("input"), call.input("target"), reduction_of(call),
                                      call.config.get_double("beta", 1.0)));
});
const VectorAdapterRegistration kHuberLoss("op.huber_loss", [](VectorCall& call) {
    return loss_output(huber_loss(call.input("input"), call.input("target"), reduction_of(call),
                                  call.config.get_double("delta", 1.0)));
});

}  // namespace

}  // namespace lumen::conformance
