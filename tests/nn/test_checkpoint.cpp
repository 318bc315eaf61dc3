// Activation checkpointing (nn/checkpoint.h): finite-difference gradients through the node
// (inputs and params, in float64); a ViT with dropout, attention dropout and drop path gives
// bit-identical loss, gradients and generator state with every block or every second block
// checkpointed, and so does the context study's ViT with a linear head through the registry's
// model.grad_checkpointing (with the UNETR head, to rounding); the peak memory of a deep ViT's step
// falls; which blocks checkpoint_every picks; no graph without grad mode; errors. The other
// models' model.grad_checkpointing: tests/models/test_checkpoint_models.cpp.
#include "models/registry.h"
#include "models/vit.h"
#include "nn/checkpoint.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// One training step's loss and parameter gradients of a small ViT with every kind of dropout.
struct StepResult {
    std::vector<float> loss;
    std::vector<std::vector<float>> grads;
    uint64_t generator_offset = 0;
};

StepResult vit_step(int64_t grad_checkpointing, int64_t depth = 3, int64_t batch = 4) {
    manual_seed(7);
    models::ViTConfig config = models::vit_config(/*num_classes=*/5, {16, 16}, /*in_chans=*/2);
    config.embed_dim = 32;
    config.depth = depth;
    config.num_heads = 4;
    config.block.drop = 0.1;
    config.block.attn_drop = 0.1;
    config.block.drop_path = 0.2;
    config.grad_checkpointing = grad_checkpointing;
    models::ViT vit(config);
    vit.train();
    Tensor images = randn({batch, 2, 16, 16});
    Tensor labels = randint(0, 5, {batch});
    Tensor loss = cross_entropy(vit(images), labels);
    loss.backward();
    StepResult result{loss.to_vector<float>(), {}, default_generator().offset()};
    for (const Tensor& p : vit.parameters()) result.grads.push_back(p.grad().to_vector<float>());
    return result;
}

}  // namespace

TEST_CASE("checkpoint: finite-difference gradients of the inputs and params, float64",
          "[nn][checkpoint]") {
    manual_seed(0);
    Tensor w = randn({3, 4}, DType::float64).requires_grad_();
    Tensor b = randn({4}, DType::float64).requires_grad_();
    auto block = [w, b](const std::vector<Tensor>& in) {
        return tanh(add(matmul(in[0], w), b)) * in[1];
    };
    GradientCheckResult check = check_gradients(
        [&](const std::vector<Tensor>& in) {
            return nn::checkpoint(block, in, {w, b});
        },
        {randn({2, 3}, DType::float64), randn({2, 4}, DType::float64)}, {w, b});
    INFO(check.failure);
    CHECK(check.passed);
    // The gradients come back through the node, not as a side effect on .grad().
    CHECK_FALSE(w.grad().defined());
}

TEST_CASE("checkpoint: a ViT with dropout gets bit-identical gradients", "[nn][checkpoint]") {
    const StepResult plain = vit_step(0);
    for (int64_t every : {1, 2}) {
        INFO("grad_checkpointing " << every);
        const StepResult checkpointed = vit_step(every);
        CHECK(checkpointed.loss == plain.loss);
        REQUIRE(checkpointed.grads.size() == plain.grads.size());
        for (size_t i = 0; i < plain.grads.size(); ++i) {
            INFO("parameter " << i);
            CHECK(checkpointed.grads[i] == plain.grads[i]);
        }
        // The replay leaves the generator where the plain run left it.
        CHECK(checkpointed.generator_offset == plain.generator_offset);
    }
}

TEST_CASE("checkpoint: context_vit through the registry's model.grad_checkpointing",
          "[nn][checkpoint]") {
    auto step = [](const std::string& decoder, int64_t every) {
        manual_seed(3);
        nn::Options o("context_vit");
        o.set("decoder", decoder);
        o.set("img_size", std::vector<int64_t>{32, 32});
        o.set("patch_size", int64_t(16));
        o.set("hidden_size", int64_t(32));
        o.set("mlp_dim", int64_t(64));
        o.set("num_heads", int64_t(2));
        o.set("num_layers", int64_t(10));
        o.set("feature_size", int64_t(8));
        o.set("grad_checkpointing", every);
        std::shared_ptr<nn::Module> net =
            models::build_model("context_vit", models::model_options("context_vit", o));
        net->train();
        Tensor x = randn({2, 1, 1, 32, 32});
        Tensor loss = mean(square((*net)(x)));
        loss.backward();
        std::vector<Tensor> out{loss.detach()};
        for (const Tensor& p : net->parameters()) out.push_back(p.grad());
        return out;
    };
    for (int64_t every : {1, 3}) {
        INFO("grad_checkpointing " << every);
        // Linear head: each block output has one reader, so the sums are the plain run's.
        std::vector<Tensor> plain = step("linear", 0), checkpointed = step("linear", every);
        REQUIRE(plain.size() == checkpointed.size());
        for (size_t i = 0; i < plain.size(); ++i) {
            INFO((i == 0 ? std::string("loss") : "parameter " + std::to_string(i - 1)));
            CHECK(checkpointed[i].to_vector<float>() == plain[i].to_vector<float>());
        }
        // UNETR also reads blocks 4, 7 and 10, so their outputs' gradients add three
        // contributions, in another order when a block is one node: equal to rounding.
        plain = step("unetr", 0), checkpointed = step("unetr", every);
        REQUIRE(plain.size() == checkpointed.size());
        for (size_t i = 0; i < plain.size(); ++i) {
            INFO((i == 0 ? std::string("loss") : "parameter " + std::to_string(i - 1)));
            require_close(checkpointed[i], plain[i], 1e-4, 1e-7);
        }
    }
}

TEST_CASE("checkpoint: a deep ViT's training step peaks lower", "[nn][checkpoint]") {
    auto peak = [](int64_t every) {
        cpu_reset_peak_memory_stats();
        const size_t before = cpu_memory_stats().allocated;
        vit_step(every, /*depth=*/8, /*batch=*/64);
        return cpu_memory_stats().peak_allocated - before;
    };
    const size_t plain = peak(0), checkpointed = peak(1);
    INFO("peak bytes: " << plain << " plain, " << checkpointed << " checkpointed");
    CHECK(double(checkpointed) < 0.6 * double(plain));
}

TEST_CASE("checkpoint_every: blocks k-1, 2k-1, ... go through checkpoint", "[nn][checkpoint]") {
    std::vector<int64_t> picked;
    for (int64_t index = 0; index < 7; ++index)
        if (nn::is_checkpointed(3, index)) picked.push_back(index);
    CHECK(picked == std::vector<int64_t>{2, 5});
    for (int64_t index = 0; index < 7; ++index) CHECK_FALSE(nn::is_checkpointed(0, index));
    Tensor x = randn({3}).requires_grad_();
    auto twice = [](const std::vector<Tensor>& in) { return mul(in[0], 2.0); };
    CHECK(nn::checkpoint_every(2, 1, twice, {x}).grad_fn()->name() == "checkpoint");
    CHECK(nn::checkpoint_every(2, 2, twice, {x}).grad_fn()->name() != "checkpoint");
}

TEST_CASE("checkpoint: without grad it is the function; errors", "[nn][checkpoint]") {
    Tensor x = randn({3}).requires_grad_();
    auto twice = [](const std::vector<Tensor>& in) { return mul(in[0], 2.0); };
    {
        NoGradGuard no_grad;
        Tensor y = nn::checkpoint(twice, {x});
        CHECK_FALSE(y.requires_grad());
        require_close(y, mul(x.detach(), 2.0));
    }
    Tensor y = nn::checkpoint(twice, {x});
    CHECK(y.grad_fn()->name() == "checkpoint");
    sum(y).backward();
    require_close(x.grad(), {2.0, 2.0, 2.0});
    require_error([&] { nn::checkpoint([](const std::vector<Tensor>&) { return Tensor(); }, {x}); },
                  {"[checkpoint]", "undefined"});
}
