// Training-step utilities: the plain LR schedules (constant, step, exponential, linear warm-up
// + decay) and the interval names, weight-decay groups of a DGViT, global-norm clipping against
// hand values, the NaN/inf guard's message, and ten AdamW steps with two parameter groups, a
// warm-up/decay schedule and clipping against PyTorch 1.13's float64 values.
#include <cmath>
#include <limits>

#include "models/vit.h"
#include "support/gradcheck.h"
#include "train/grad_utils.h"
#include "train/param_groups.h"
#include "train/schedule_basic.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("plain schedules: constant, step, exponential, linear warm-up + decay",
          "[train][schedule]") {
    CHECK(train::ConstantLR(0.3).lr(0) == 0.3);
    CHECK(train::ConstantLR(0.3).lr(1000) == 0.3);
    train::StepLR step(0.1, 3, 0.5);
    CHECK(step.lr(0) == 0.1);
    CHECK(step.lr(2) == 0.1);
    CHECK(step.lr(3) == 0.05);
    CHECK(step.lr(7) == Approx(0.025).epsilon(1e-15));
    train::ExponentialLR exponential(0.2, 0.9);
    CHECK(exponential.lr(0) == 0.2);
    CHECK(exponential.lr(3) == Approx(0.2 * 0.729).epsilon(1e-15));
    train::LinearWarmupDecayLR linear(1.0, 4, 12);
    CHECK(linear.lr(0) == 0.0);
    CHECK(linear.lr(1) == 0.25);
    CHECK(linear.lr(4) == 1.0);
    CHECK(linear.lr(8) == 0.5);
    CHECK(linear.lr(12) == 0.0);
    CHECK(linear.lr(20) == 0.0);
    CHECK(train::LinearWarmupDecayLR(1.0, 0, 4).lr(0) == 1.0);
    CHECK(train::parse_schedule_interval("epoch") == train::ScheduleInterval::epoch);
    CHECK(std::string(train::schedule_interval_name(train::ScheduleInterval::step)) == "step");
    require_error([] { train::parse_schedule_interval("batch"); }, {"[schedule]", "\"batch\""});
    require_error([] { train::StepLR(0.1, 0); }, {"[StepLR]", "step_size 0"});
    require_error([] { train::ExponentialLR(0.1, 0.0); }, {"[ExponentialLR]", "gamma 0"});
    require_error([] { train::LinearWarmupDecayLR(0.1, 5, 5); },
                  {"[LinearWarmupDecayLR]", "warmup_steps 5", "total_steps 5"});
    require_error([&] { linear.lr(-2); }, {"[LinearWarmupDecayLR]", "-2"});
    require_error([] { train::ConstantLR(-1.0); }, {"[ConstantLR]", "-1"});
}

namespace {

models::ViTConfig tiny_dgvit() {
    models::ViTConfig config = models::dgvit_config(3, {8, 8}, 1, 4.0, 0.0);
    config.embed_dim = 16;
    config.depth = 1;
    config.num_heads = 2;
    return config;
}

}  // namespace

TEST_CASE("weight_decay_groups with PVT-GDLA's rule exempt every parameter below 2 dims",
          "[train][param_groups]") {
    models::ViT model(tiny_dgvit());
    std::vector<std::string> exempt = train::weight_decay_exempt_names(model, {.below_2d = true});
    size_t below = 0;
    for (const auto& [name, p] : model.named_parameters()) {
        INFO(name);
        const bool listed = std::find(exempt.begin(), exempt.end(), name) != exempt.end();
        CHECK(listed == (p.ndim() < 2));
        below += p.ndim() < 2;
    }
    CHECK(exempt.size() == below);
    // The class token and position table (3-D) decay under this rule.
    CHECK(std::find(exempt.begin(), exempt.end(), "pos_embed") == exempt.end());
}

TEST_CASE("weight_decay_groups exempt biases, norm weights and embeddings of a DGViT",
          "[train][param_groups]") {
    models::ViT model(tiny_dgvit());
    std::vector<std::string> exempt = train::weight_decay_exempt_names(model);
    auto has = [&](const std::string& name) {
        return std::find(exempt.begin(), exempt.end(), name) != exempt.end();
    };
    for (const char* name :
         {"patch_embed.proj.bias", "cls_token", "pos_embed", "blocks.0.norm1.weight",
          "blocks.0.norm1.bias", "blocks.0.attn.subln.weight", "blocks.0.mlp.fc1.bias",
          "norm.weight", "head.bias"}) {
        INFO(name);
        CHECK(has(name));
    }
    for (const char* name : {"patch_embed.proj.weight", "blocks.0.attn.q_proj.weight",
                             "blocks.0.mlp.fc1.weight", "head.weight"}) {
        INFO(name);
        CHECK_FALSE(has(name));
    }
    std::vector<train::ParamGroup> groups = train::weight_decay_groups(model, 1e-3, 0.05);
    REQUIRE(groups.size() == 2);
    CHECK(groups[0].weight_decay == 0.05);
    CHECK(groups[1].weight_decay == 0.0);
    CHECK(groups[1].params.size() == exempt.size());
    CHECK(groups[0].params.size() + groups[1].params.size() == model.parameters().size());
    // Everything decays when nothing is exempt: one group.
    train::WeightDecayExemptions none{.biases = false, .norm_weights = false, .embeddings = false};
    CHECK(train::weight_decay_groups(model, 1e-3, 0.05, none).size() == 1);
    // Only the embeddings exempt.
    train::WeightDecayExemptions embeddings{.biases = false, .norm_weights = false};
    CHECK(train::weight_decay_exempt_names(model, embeddings) ==
          std::vector<std::string>{"cls_token", "pos_embed"});
}

TEST_CASE("clip_grad_norm_ returns the global norm and scales like PyTorch", "[train][clip]") {
    Tensor a = tensor({1.0, 2.0}, {2}, DType::float64).requires_grad_();
    Tensor b = tensor({2.0}, {1}, DType::float64).requires_grad_();
    Tensor no_grad = tensor({5.0}, {1}, DType::float64).requires_grad_();
    a.set_grad(tensor({3.0, 0.0}, {2}, DType::float64));
    b.set_grad(tensor({-4.0}, {1}, DType::float64));
    std::vector<Tensor> params{a, b, no_grad};
    CHECK(train::total_grad_norm(params) == Approx(5.0));
    CHECK(train::total_grad_norm(params, 1.0) == Approx(7.0));
    CHECK(train::total_grad_norm(params, std::numeric_limits<double>::infinity()) == 4.0);
    // Below max_norm nothing changes.
    CHECK(train::clip_grad_norm_(params, 10.0) == Approx(5.0));
    require_close(a.grad(), {3.0, 0.0});
    // Above: every gradient times max_norm / (norm + 1e-6).
    CHECK(train::clip_grad_norm_(params, 1.0) == Approx(5.0));
    const double scale = 1.0 / (5.0 + 1e-6);
    require_close(a.grad(), {3.0 * scale, 0.0}, 1e-12);
    require_close(b.grad(), {-4.0 * scale}, 1e-12);
    CHECK(train::total_grad_norm(params) == Approx(1.0).epsilon(1e-6));
    b.set_grad(tensor({std::nan("")}, {1}, DType::float64));
    CHECK(std::isnan(train::clip_grad_norm_(params, 1.0)));
    require_error([&] { train::clip_grad_norm_(params, 1.0, 2.0, true); },
                  {"[clip_grad_norm_]", "nan"});
    require_error([&] { train::clip_grad_norm_(params, 0.0); }, {"[clip_grad_norm_]", "0"});
    require_error([&] { train::total_grad_norm(params, -1.0); }, {"[clip_grad_norm_]", "-1"});
}

TEST_CASE("the NaN guard names the step and the first non-finite parameter or gradient",
          "[train][nan_guard]") {
    models::ViT model(tiny_dgvit());
    for (Tensor& p : model.parameters()) p.set_grad(zeros_like(p));
    train::check_finite(model, 0.5, 3);  // all finite: nothing happens
    Tensor qkv = model.tensor("blocks.0.attn.k_proj.weight");
    Tensor grad = zeros_like(qkv);
    grad.view({-1}).select(0, 7).fill_(std::numeric_limits<double>::infinity());
    qkv.set_grad(grad);
    require_error(
        [&] { train::check_finite(model, 0.5, 12); },
        {"[nan_guard]", "step 12", "gradient of blocks.0.attn.k_proj.weight", "index 7", "inf"});
    // A broken value is named before any gradient.
    model.tensor("head.bias").detach().select(0, 1).fill_(std::nan(""));
    require_error([&] { train::check_finite(model, std::nan(""), 13); },
                  {"step 13", "loss is nan", "parameter head.bias at index 1"});
    qkv.set_grad(zeros_like(qkv));
    model.tensor("head.bias").detach().fill_(0.0);
    require_error([&] { train::check_finite(model, std::nan(""), 14); },
                  {"step 14", "every parameter and gradient is finite"});
}

TEST_CASE("ten AdamW steps with two groups, warm-up + decay and clipping match PyTorch",
          "[train][optim]") {
    Tensor w = tensor({0.5, -1.0, 2.0, 0.25}, {2, 2}, DType::float64).requires_grad_();
    Tensor b = tensor({0.3, -0.7}, {2}, DType::float64).requires_grad_();
    train::AdamW optimizer({{{w}, 0.1, 0.1}, {{b}, 0.1, 0.0}});
    train::LinearWarmupDecayLR schedule(0.1, 3, 10);
    // torch.nn.utils.clip_grad_norm_([w, b], 2.0) at each step, PyTorch 1.13, float64.
    const std::vector<double> norms = {7.7063772890031448, 6.1352497264741697, 6.714151537603759,
                                       7.3538280642110347, 5.5873103184902622, 7.8356442260595465,
                                       5.7041645507388106, 7.1984395607559231, 6.9018593400712813,
                                       5.9600686063589592};
    for (int k = 1; k <= 10; ++k) {
        std::vector<double> g;
        for (int i = 0; i < 6; ++i) g.push_back(std::sin(1.3 * k + 0.7 * i) * (1 + i));
        w.set_grad(from_vector(std::vector<double>(g.begin(), g.begin() + 4), {2, 2}));
        b.set_grad(from_vector(std::vector<double>(g.begin() + 4, g.end()), {2}));
        schedule.apply(optimizer, k - 1);
        CHECK(train::clip_grad_norm_({w, b}, 2.0) == Approx(norms[size_t(k - 1)]).epsilon(1e-13));
        optimizer.step();
        if (k == 1) require_close(w, {0.5, -1.0, 2.0, 0.25}, 0, 0);  // lr 0 at step 0
        if (k == 5) {
            require_close(w,
                          {0.45320088080481891, -0.94337781251608965, 2.0279520800893729,
                           0.33349991652183614},
                          1e-12, 1e-14);
            require_close(b, {0.35820610334389225, -0.69603666793279895}, 1e-12, 1e-14);
        }
    }
    require_close(
        w, {0.40995197567313651, -0.93823657597129795, 1.992728645674928, 0.35376634286426095},
        1e-12, 1e-14);
    require_close(b, {0.39497243437544444, -0.67013201935665911}, 1e-12, 1e-14);
}
