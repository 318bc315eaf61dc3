// check-vectors adapters for the context-length study's training pieces (Hooper &
// Xue, Sec. 3-4): the losses (ops/loss.h, train/loss_enhance.h), SSIM / Dice / AUROC
// (train/metrics_image.h, metrics_seg.h, metrics.h) and Adam under OneCycleLR
// (train/optim.h, schedule.h). Scalars come back with shape [1].
#include "conformance/op_vectors.h"
#include "ops/loss.h"
#include "ops/shape.h"
#include "train/loss_enhance.h"
#include "train/metrics.h"
#include "train/metrics_image.h"
#include "train/metrics_seg.h"
#include "train/optim.h"
#include "train/schedule.h"

namespace lumen::conformance {

namespace {

std::vector<double> doubles(VectorCall& call, const char* key,
                            const std::vector<double>& fallback) {
    const nlohmann::json& value = call.config.get(key);
    if (value.is_null()) return fallback;
    LUMEN_CHECK(value.is_array(), call.module, "config '", key, "' must be a list of numbers");
    std::vector<double> out;
    for (const nlohmann::json& item : value) out.push_back(item.get<double>());
    return out;
}

TensorMap scalar_output(const Tensor& value) { return {{"y", value.reshape({1})}}; }

TensorMap scalar_output(double value, Device device) {
    return {{"y", from_vector(std::vector<float>{float(value)}, {1}, device)}};
}

const VectorAdapterRegistration kMSE("context.loss.mse", [](VectorCall& call) {
    return scalar_output(mse_loss(call.input("out"), call.input("tgt")));
});

const VectorAdapterRegistration kCharbonnier("context.loss.charbonnier", [](VectorCall& call) {
    return scalar_output(charbonnier_loss(call.input("out"), call.input("tgt"),
                                          call.config.get_double("eps", 1e-3)));
});

const VectorAdapterRegistration kGaussian3D("context.loss.gaussian_deriv3d", [](VectorCall& call) {
    train::GaussianDeriv3DOptions o;
    o.sigmas = doubles(call, "sigmas", o.sigmas);
    o.sigmas_t = doubles(call, "sigmas_t", o.sigmas_t);
    o.halfwidth = call.config.get_int("halfwidth", 3);
    return scalar_output(train::gaussian_deriv3d_loss(call.input("out"), call.input("tgt"), o));
});

const VectorAdapterRegistration kCombined("context.loss.combined_enhance", [](VectorCall& call) {
    return scalar_output(train::combined_enhance_loss(call.input("out"), call.input("tgt"),
                                                      doubles(call, "weights", {1, 1, 1})));
});

const VectorAdapterRegistration kCrossEntropy("context.loss.cross_entropy", [](VectorCall& call) {
    return scalar_output(cross_entropy(call.input("out"), call.input("tgt"), Tensor(), -100,
                                       call.config.get_string("reduction", "mean")));
});

const VectorAdapterRegistration kSSIM("context.metric.ssim", [](VectorCall& call) {
    train::SSIMOptions o;
    if (!call.config.get("data_range").is_null())
        o.data_range = call.config.get_double("data_range", 0.0);
    o.gaussian_kernel = call.config.get_bool("gaussian_kernel", true);
    o.sigma = call.config.get_double("sigma", 1.5);
    o.kernel_size = call.config.get_int("kernel_size", 11);
    o.k1 = call.config.get_double("k1", 0.01);
    o.k2 = call.config.get_double("k2", 0.03);
    return scalar_output(train::ssim(call.input("preds"), call.input("target"), o));
});

const VectorAdapterRegistration kDice("context.metric.dice", [](VectorCall& call) {
    double value = train::samplewise_dice(call.input("preds"), call.input("target"),
                                          call.config.get_int("num_classes"));
    return scalar_output(value, call.device);
});

const VectorAdapterRegistration kAUROC("context.metric.auroc", [](VectorCall& call) {
    return scalar_output(train::auroc(call.input("scores"), call.input("labels")), call.device);
});

train::OneCycleOptions one_cycle_options(VectorCall& call) {
    train::OneCycleOptions o;
    o.max_lr = call.config.get_double("max_lr", 0.0);
    o.total_steps = call.config.get_int("total_steps");
    o.pct_start = call.config.get_double("pct_start", 0.3);
    o.anneal_strategy = call.config.get_string("anneal_strategy", "cos");
    o.cycle_momentum = call.config.get_bool("cycle_momentum", true);
    o.base_momentum = call.config.get_double("base_momentum", 0.85);
    o.max_momentum = call.config.get_double("max_momentum", 0.95);
    o.div_factor = call.config.get_double("div_factor", 25.0);
    o.final_div_factor = call.config.get_double("final_div_factor", 1e4);
    o.three_phase = call.config.get_bool("three_phase", false);
    return o;
}

// Step k: the schedule sets lr[k] and beta1[k] (recorded), Adam steps with in.grads[k], the
// parameter after it is params[k].
const VectorAdapterRegistration kOneCycleAdam(
    "context.schedule.onecycle_adam", [](VectorCall& call) {
        train::OneCycleLR schedule(one_cycle_options(call));
        std::vector<double> betas = doubles(call, "adam_betas", {0.9, 0.999});
        LUMEN_CHECK(betas.size() == 2, call.module, "config 'adam_betas' needs 2 values");
        train::AdamOptions adam_options{
            .beta1 = betas[0], .beta2 = betas[1], .eps = call.config.get_double("adam_eps", 1e-8)};
        Tensor param = call.input("param0").clone().detach().requires_grad_(true);
        Tensor grads = call.input("grads");
        train::Adam adam({param}, schedule.options.max_lr, adam_options,
                         call.config.get_double("weight_decay", 0.0));
        std::vector<float> lrs, beta1s;
        std::vector<Tensor> after;
        for (int64_t k = 0; k < grads.size(0); ++k) {
            schedule.apply(adam, k);
            lrs.push_back(float(adam.param_groups()[0].lr));
            beta1s.push_back(float(adam.options.beta1));
            param.set_grad(grads.select(0, k).contiguous());
            adam.step();
            after.push_back(param.detach().clone());
        }
        const int64_t steps = int64_t(lrs.size());
        return TensorMap{{"lr", from_vector(lrs, {steps}, call.device)},
                         {"beta1", from_vector(beta1s, {steps}, call.device)},
                         {"params", stack(after, 0)}};
    });

}  // namespace

}  // namespace lumen::conformance
