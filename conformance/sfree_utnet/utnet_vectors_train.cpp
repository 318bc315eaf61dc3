// check-vectors adapters for UTNet's training pieces (Gao et al. 2021, Sec. 3.2; AUROC of Khader et
// al.): the Dice, CE + Dice and deep-supervision losses (train/loss.h), SGD steps (train/optim.h),
// the LR schedule (train/schedule.h) and AUROC (train/metrics.h). Scalars come back with shape [1].
#include "conformance/op_vectors.h"
#include "ops/shape.h"
#include "train/loss.h"
#include "train/metrics.h"
#include "train/optim.h"
#include "train/schedule.h"

namespace lumen::conformance {

namespace {

std::vector<double> doubles(VectorConfig& config, const char* key) {
    const nlohmann::json& value = config.get(key);
    LUMEN_CHECK(value.is_array(), "sfree_utnet", "config '", key, "' must be a list of numbers");
    std::vector<double> out;
    for (const nlohmann::json& item : value) out.push_back(item.get<double>());
    return out;
}

TensorMap scalar_output(const Tensor& loss) { return {{"y", loss.reshape({1})}}; }

const VectorAdapterRegistration kDiceLoss("sfree_utnet.utnet_dice_loss", [](VectorCall& call) {
    return scalar_output(train::adaptive_tversky_loss(call.input("input"), call.input("target")));
});

const VectorAdapterRegistration kCeDiceLoss("sfree_utnet.utnet_ce_dice_loss", [](VectorCall& call) {
    train::UTNetLoss loss(doubles(call.config, "class_weight"));
    return scalar_output(loss(call.input("input"), call.input("target")));
});

const VectorAdapterRegistration kDeepSupervision(
    "sfree_utnet.utnet_deep_supervision_loss", [](VectorCall& call) {
        train::UTNetLoss loss(doubles(call.config, "class_weight"));
        std::vector<Tensor> outputs{call.input("out"), call.input("out3"), call.input("out2"),
                                    call.input("out1")};
        return scalar_output(train::deep_supervision_loss(
            outputs, call.input("target"), doubles(call.config, "aux_weight"), loss));
    });

// Step t uses lr in.lr[t] and gradient in.grads[t]; out.params[t] is the parameter after it.
const VectorAdapterRegistration kSGD("sfree_utnet.sgd", [](VectorCall& call) {
    Tensor param = call.input("param").clone().detach().requires_grad_(true);
    Tensor grads = call.input("grads");
    std::vector<double> lrs = call.input("lr").to_vector<double>();
    LUMEN_CHECK(grads.size(0) == int64_t(lrs.size()), call.module, "in.grads has ", grads.size(0),
                " steps but in.lr ", lrs.size());
    train::SGDOptions options{.momentum = call.config.get_double("momentum", 0.0),
                              .dampening = call.config.get_double("dampening", 0.0),
                              .nesterov = call.config.get_bool("nesterov", false)};
    train::SGD sgd({param}, lrs.empty() ? 0.0 : lrs[0], options,
                   call.config.get_double("weight_decay", 0.0));
    std::vector<Tensor> after;
    for (size_t t = 0; t < lrs.size(); ++t) {
        sgd.set_lr(lrs[t]);
        param.set_grad(grads.select(0, int64_t(t)).contiguous());
        sgd.step();
        after.push_back(param.detach().clone());
    }
    return TensorMap{{"params", stack(after, 0)}};
});

const VectorAdapterRegistration kUTNetLR("sfree_utnet.utnet_lr", [](VectorCall& call) {
    train::ExpWarmupPolyLR schedule(call.config.get_double("init_lr", 0.05),
                                    call.config.get_int("warmup_epoch", 5),
                                    call.config.get_int("max_epoch", 150));
    std::vector<float> lrs;
    for (int64_t epoch : call.input("epoch").to_vector<int64_t>())
        lrs.push_back(float(schedule.lr(epoch)));
    return TensorMap{{"lr", from_vector(lrs, {int64_t(lrs.size())}, call.device)}};
});

const VectorAdapterRegistration kAUROC("sfree_utnet.auroc", [](VectorCall& call) {
    double value = train::auroc(call.input("scores"), call.input("labels"));
    return TensorMap{{"auroc", from_vector(std::vector<float>{float(value)}, {1}, call.device)}};
});

}  // namespace

}  // namespace lumen::conformance
