// The registry's cost estimate (models/registry.h ModelCost), which `lumen train` uses to
// refuse a config that cannot fit in memory before building anything: parameters within 10%
// of the built model's count, activations within a factor of 2 of the allocator's peak during
// one training forward and backward, for each attention variant the ViT offers and for DGViT.
#include <algorithm>

#include "core/storage.h"
#include "models/registry.h"
#include "ops/loss.h"
#include "ops/random.h"
#include "support/gradcheck.h"

using namespace lumen;

namespace {

void check_cost(const std::string& model, nn::Options overrides, int64_t batch) {
    nn::Options options = models::model_options(model, overrides);
    const models::ModelCost cost = models::find_model(model).cost(options);
    std::shared_ptr<nn::Module> net = models::build_model(model, options);
    const double parameters = double(net->num_parameters());
    INFO(model << " " << nn::format_option(options.get("embed_dim")) << " depth "
               << options.get_int("depth") << " estimate " << cost.parameters << " real "
               << parameters);
    CHECK(std::abs(cost.parameters - parameters) <= 0.1 * parameters);

    const std::vector<int64_t>& img = options.get_ints("img_size");
    Generator g(1);
    Tensor x = randn({batch, options.get_int("in_chans"), img[0], img[1]}, DType::float32, &g);
    Tensor y = randint(0, options.get_int("num_classes"), {batch}, DType::int64, &g);
    net->train();
    cpu_reset_peak_memory_stats();
    const double before = double(cpu_memory_stats().allocated);
    Tensor loss = cross_entropy(net->forward(x), y);
    const double forward_peak = double(cpu_memory_stats().peak_allocated) - before;
    loss.backward();
    const double peak = double(cpu_memory_stats().peak_allocated) - before;
    // The backward's peak also holds the gradients (one copy of the parameters).
    const double activations = std::max(forward_peak, peak - 4 * parameters);
    const double estimate = cost.activation_bytes * double(batch);
    INFO("activations: estimate " << estimate << " measured " << activations << " (forward "
                                  << forward_peak << ", whole step " << peak << ")");
    CHECK(estimate >= 0.5 * activations);
    CHECK(estimate <= 2.0 * activations);
}

}  // namespace

TEST_CASE("registry cost: ViT with each offered attention variant", "[models][registry]") {
    // gdla, pvt_sra, swin_window and utnet need a pure token grid: pool "auto" gives them the
    // token mean instead of a class token.
    for (const std::string& attn : models::find_model("vit").options.back().choices) {
        INFO(attn);
        nn::Options o("vit");
        o.set("attn_type", attn);
        o.set("embed_dim", int64_t(64));
        o.set("depth", int64_t(2));
        o.set("num_heads", int64_t(4));
        o.set("img_size", std::vector<int64_t>{32, 32});
        o.set("patch_size", int64_t(4));
        o.set("drop", 0.0);
        check_cost("vit", o, 4);
    }
}

TEST_CASE("registry cost: DGViT at the quickstart and Table 3 sizes", "[models][registry]") {
    nn::Options quick("dgvit");
    quick.set("embed_dim", int64_t(64));
    quick.set("depth", int64_t(4));
    quick.set("patch_size", int64_t(7));
    check_cost("dgvit", quick, 16);
    check_cost("dgvit", nn::Options("dgvit"), 8);  // D 256, depth 8, patch 4 on 28 x 28
}

TEST_CASE("registry cost: activation checkpointing (every block, every second block)",
          "[models][registry]") {
    for (int64_t every : {1, 2}) {
        INFO("grad_checkpointing " << every);
        nn::Options vit("vit");
        vit.set("embed_dim", int64_t(64));
        vit.set("depth", int64_t(6));
        vit.set("num_heads", int64_t(4));
        vit.set("img_size", std::vector<int64_t>{32, 32});
        vit.set("patch_size", int64_t(4));
        vit.set("grad_checkpointing", every);
        check_cost("vit", vit, 8);
        nn::Options dgvit("dgvit");
        dgvit.set("grad_checkpointing", every);
        check_cost("dgvit", dgvit, 8);
    }
}
