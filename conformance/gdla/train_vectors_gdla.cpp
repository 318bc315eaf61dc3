// check-vectors adapters for PVT-GDLA's training pieces (Zheng et al. 2026, Sec. 4): the Boundary
// DoU, soft Dice and Dice + CE losses and their deep-supervision sum (train/loss_seg.h), and
// the TransUNet per-case DSC/HD95 (train/metrics_seg.h). Scalars come back with shape [1].
#include "conformance/op_vectors.h"
#include "train/loss_seg.h"
#include "train/metrics_seg.h"

namespace lumen::conformance {

namespace {

TensorMap scalar_output(const Tensor& loss) { return {{"y", loss.reshape({1})}}; }

train::BoundaryDoULossOptions bdou_options(VectorCall& call) {
    train::BoundaryDoULossOptions o;
    o.eps = call.config.get_double("eps", 1e-5);
    o.alpha_max = call.config.get_double("alpha_max", 0.8);
    o.activation = train::parse_class_activation(call.module.c_str(),
                                                 call.config.get_string("activation", "softmax"));
    return o;
}

const VectorAdapterRegistration kBoundaryDoU("gdla.BoundaryDoULoss", [](VectorCall& call) {
    return scalar_output(
        train::boundary_dou_loss(call.input("input"), call.input("target"), bdou_options(call)));
});

const VectorAdapterRegistration kDice("gdla.DiceLoss", [](VectorCall& call) {
    auto activation = train::parse_class_activation(
        call.module.c_str(), call.config.get_string("activation", "softmax"));
    return scalar_output(train::soft_dice_loss(call.input("input"), call.input("target"),
                                               call.config.get_double("eps", 1e-5), activation));
});

const VectorAdapterRegistration kDiceCE("gdla.DiceCELoss", [](VectorCall& call) {
    train::SoftDiceCELossOptions o;
    o.eps = call.config.get_double("eps", 1e-5);
    o.lambda_dice = call.config.get_double("lambda_dice", 0.5);
    o.lambda_ce = call.config.get_double("lambda_ce", 0.5);
    return scalar_output(train::soft_dice_ce_loss(call.input("input"), call.input("target"), o));
});

// The official loss list order [x4, x3, x2, x1], each weighted 1.
const VectorAdapterRegistration kDeepSupervision("gdla.DeepSupervisionLoss", [](VectorCall& call) {
    std::string criterion = call.config.get_string("criterion", "BoundaryDoULoss");
    LUMEN_CHECK(criterion == "BoundaryDoULoss", call.module,
                "only criterion BoundaryDoULoss is supported, got '", criterion, "'");
    train::BoundaryDoULoss loss(bdou_options(call));
    std::vector<Tensor> outputs{call.input("x4"), call.input("x3"), call.input("x2"),
                                call.input("x1")};
    return scalar_output(train::deep_supervision_loss(outputs, call.input("target"),
                                                      std::vector<double>(4, 1.0), loss));
});

const VectorAdapterRegistration kTransUNetCase("gdla.metric.transunet_case", [](VectorCall& call) {
    std::vector<train::CaseMetric> metrics = train::transunet_case_metrics(
        call.input("pred"), call.input("target"), call.config.get_int("n_classes"));
    std::vector<float> dice, hd95;
    for (const train::CaseMetric& m : metrics) {
        dice.push_back(float(m.dice));
        hd95.push_back(float(m.hd95));
    }
    const int64_t n = int64_t(metrics.size());
    return TensorMap{{"dice", from_vector(dice, {n}, call.device)},
                     {"hd95", from_vector(hd95, {n}, call.device)}};
});

}  // namespace

}  // namespace lumen::conformance
