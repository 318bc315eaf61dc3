// model.grad_checkpointing (nn/checkpoint.h) in the models beyond the ViTs (those are in
// tests/nn/test_checkpoint.cpp): context_swin (2-D, 3-D), sfree_vit (each tokenizer), sima_vit,
// utnet, pvt_segnet and the text models, built through the registry at a small size in training
// mode with their dropout on. A step with every k-th block checkpointed has floor(blocks / k)
// checkpoint nodes and gives the loss, every parameter gradient and every buffer (BatchNorm's
// running statistics) of the plain step bit for bit (utnet: gradients to rounding, in float64);
// a deep model's step peaks lower; a negative value is refused.
#include <set>

#include "core/autograd.h"
#include "core/storage.h"
#include "models/registry.h"
#include "nn/checkpoint.h"
#include "ops/random.h"
#include "support/gradcheck.h"
#include "train/cli/experiment.h"
#include "train/config.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// An input for the model from its own generator (the default one drives init and dropout).
using MakeInput = std::function<Tensor(Generator&)>;

Tensor images(Generator& g, Shape shape) { return randn(shape, DType::float32, &g); }

// Token ids in [1, 20) with the last three of the first sequence padding (id 0).
Tensor tokens(Generator& g) {
    Tensor t = randint(1, 20, {3, 10}, DType::int64, &g);
    t.select(0, 0).narrow(0, 7, 3).zero_();
    return t;
}

// One training step: the loss (the mean square of every output, so deep-supervision heads
// count too), each parameter's gradient and each buffer after the step, by name.
struct Step {
    Tensor loss;
    std::vector<nn::NamedTensor> grads, buffers;
    size_t checkpoints = 0;  // checkpoint nodes in the step's graph
};

// The nodes named "checkpoint" reachable from `root`'s grad_fn.
size_t count_checkpoints(const Tensor& root) {
    std::set<const Node*> seen;
    std::vector<const Node*> todo{root.grad_fn().get()};
    size_t count = 0;
    while (!todo.empty()) {
        const Node* node = todo.back();
        todo.pop_back();
        if (!node || !seen.insert(node).second) continue;
        count += node->name() == "checkpoint";
        for (const Edge& edge : node->inputs()) todo.push_back(edge.node.get());
    }
    return count;
}

Step train_step(const std::string& model, nn::Options o, int64_t every, const MakeInput& input,
                DType dtype) {
    manual_seed(11);
    o.set("grad_checkpointing", every);
    std::shared_ptr<nn::Module> net = models::build_model(model, models::model_options(model, o));
    net->to(dtype);
    net->train();
    Generator g(5);
    Tensor x = input(g);
    if (x.is_floating_point()) x = x.to(dtype);
    Step step{zeros({}, dtype), {}, {}};
    for (const Tensor& out : net->forward_outputs(x)) step.loss = add(step.loss, mean(square(out)));
    step.checkpoints = count_checkpoints(step.loss);
    step.loss.backward();
    for (const auto& [name, p] : net->named_parameters()) {
        INFO(name);
        REQUIRE(p.grad().defined());
        step.grads.emplace_back(name, p.grad());
    }
    step.buffers = net->named_buffers();
    return step;
}

void require_equal(const Tensor& got, const Tensor& want) {
    REQUIRE(got.to(DType::float64).to_vector<double>() ==
            want.to(DType::float64).to_vector<double>());
}

// Checkpointing every block and every second block (or `everies`) against the plain step:
// floor(blocks / k) checkpoint nodes; loss, gradients and buffers bit for bit, or with
// rtol > 0 the gradients within (rtol, atol).
void check_identical(const std::string& model, const nn::Options& o, const MakeInput& input,
                     size_t blocks, std::vector<int64_t> everies = {1, 2},
                     DType dtype = DType::float32, double rtol = 0, double atol = 0) {
    const Step plain = train_step(model, o, 0, input, dtype);
    CHECK(plain.checkpoints == 0);
    for (int64_t every : everies) {
        INFO(model << " grad_checkpointing " << every);
        const Step checkpointed = train_step(model, o, every, input, dtype);
        CHECK(checkpointed.checkpoints == blocks / size_t(every));
        require_equal(checkpointed.loss, plain.loss);
        REQUIRE(checkpointed.grads.size() == plain.grads.size());
        for (size_t i = 0; i < plain.grads.size(); ++i) {
            INFO(plain.grads[i].first);
            REQUIRE(checkpointed.grads[i].first == plain.grads[i].first);
            if (rtol > 0) {
                require_close(checkpointed.grads[i].second, plain.grads[i].second, rtol, atol);
            } else {
                require_equal(checkpointed.grads[i].second, plain.grads[i].second);
            }
        }
        REQUIRE(checkpointed.buffers.size() == plain.buffers.size());
        for (size_t i = 0; i < plain.buffers.size(); ++i) {
            INFO(plain.buffers[i].first);
            require_equal(checkpointed.buffers[i].second, plain.buffers[i].second);
        }
    }
}

}  // namespace

TEST_CASE("checkpointing: context_swin 2-D and 3-D, bit-identical", "[models][checkpoint]") {
    nn::Options o("context_swin");
    o.set("in_channels", int64_t(2));
    o.set("embed_dim", int64_t(8));
    // Odd stage depths: every second block falls on a different block of each stage than a
    // per-stage count would pick (the count runs across the stages).
    o.set("depths", std::vector<int64_t>{2, 1, 3, 1});
    o.set("num_heads", std::vector<int64_t>{2, 2, 2, 2});
    o.set("window_size", std::vector<int64_t>{4});
    o.set("img_size", std::vector<int64_t>{32, 32});
    check_identical("context_swin", o,
                    [](Generator& g) {
                        return images(g, {2, 2, 1, 32, 32});
                    },
                    7, {1, 2, 3});
    o.set("decoder", std::string("linear"));
    o.set("img_size", std::vector<int64_t>{4, 16, 16});
    check_identical(
        "context_swin", o,
        [](Generator& g) {
            return images(g, {2, 2, 4, 16, 16});
        },
        7);
}

TEST_CASE("checkpointing: sfree_vit with each tokenizer and attention, bit-identical",
          "[models][checkpoint]") {
    nn::Options o("sfree_vit");
    o.set("dim", int64_t(32));
    o.set("depth", int64_t(3));
    o.set("heads", int64_t(2));
    o.set("dim_head", int64_t(8));
    o.set("mlp_dim", int64_t(48));
    o.set("dropout", 0.1);
    o.set("emb_dropout", 0.1);
    o.set("channels", int64_t(2));
    o.set("image_size", std::vector<int64_t>{16, 16});
    o.set("patch_size", std::vector<int64_t>{4, 4});
    check_identical(
        "sfree_vit", o,
        [](Generator& g) {
            return images(g, {3, 2, 16, 16});
        },
        3);
    o.set("tokenizer", std::string("patch3d"));
    o.set("attn", std::string("seqnorm"));
    o.set("frames", int64_t(4));
    o.set("frame_patch_size", int64_t(2));
    check_identical(
        "sfree_vit", o,
        [](Generator& g) {
            return images(g, {3, 2, 4, 16, 16});
        },
        3);
    o.set("tokenizer", std::string("bag"));
    o.set("attn", std::string("sima"));
    o.set("feat_dim", int64_t(12));
    o.set("pool", std::string("mean"));
    check_identical(
        "sfree_vit", o,
        [](Generator& g) {
            return images(g, {3, 5, 12});
        },
        3);
}

TEST_CASE("checkpointing: sima_vit (SimA and class-attention blocks, BatchNorm), bit-identical",
          "[models][checkpoint]") {
    nn::Options o("sima_vit");
    o.set("patch_size", int64_t(8));
    o.set("in_chans", int64_t(2));
    o.set("embed_dim", int64_t(32));
    o.set("depth", int64_t(3));
    o.set("num_heads", int64_t(4));
    // The LPI's BatchNorm keeps its running statistics of one update: compared as buffers.
    // 3 SimA blocks and the 2 class-attention blocks.
    check_identical("sima_vit", o,
                    [](Generator& g) {
                        return images(g, {3, 2, 32, 32});
                    },
                    5, {1, 2, 4});
}

TEST_CASE("checkpointing: context_vit's blocks and its UNETR head, equal to rounding",
          "[models][checkpoint]") {
    nn::Options o("context_vit");
    o.set("img_size", std::vector<int64_t>{32, 32});
    o.set("patch_size", int64_t(16));
    o.set("hidden_size", int64_t(16));
    o.set("mlp_dim", int64_t(32));
    o.set("num_heads", int64_t(2));
    o.set("num_layers", int64_t(10));
    o.set("feature_size", int64_t(4));
    // The 10 ViT blocks, then the head's encoder1-4 and decoder5-2: 18. The head reads h_4,
    // h_7 and h_10 beside the next block, so their gradients are summed in another order when
    // a block is one node: float64, equal to rounding.
    check_identical(
        "context_vit", o,
        [](Generator& g) {
            return images(g, {2, 1, 32, 32});
        },
        18, {1, 3}, DType::float64, 1e-6, 1e-12);
}

TEST_CASE("checkpointing: utnet's residual blocks, conv and transformer, equal to rounding",
          "[models][checkpoint]") {
    nn::Options o("utnet");
    o.set("base_chan", int64_t(8));
    o.set("num_classes", int64_t(3));
    o.set("reduce_size", int64_t(2));
    o.set("block_list", std::string("01234"));
    o.set("num_blocks", std::vector<int64_t>{1, 1, 2, 1});
    o.set("num_heads", std::vector<int64_t>{2, 2, 2, 2, 2});
    // attn_drop and proj_drop 0.1 (the defaults), aux_loss on: four outputs. Each skip map
    // x1..x4 has three readers (the next encoder stage, the decoder block's bn_h and the cat
    // after it), so when a decoder block is one node their gradients are summed in another
    // order, as with UNETR. The BatchNorms after every sum cancel most of some gradients
    // (inc.0.bn1.weight's is 2e-5 beside 0.1 to 0.9 in its block; conv_ch's bias feeds only
    // BatchNorms, its true gradient is 0), so in float32 those differ far beyond 1e-6 relative.
    // The step runs in float64: loss and buffers bit-identical, gradients within 1e-6 relative
    // (1e-12 absolute for the zero ones).
    // Residual blocks: the encoder's levels 0-4 (BasicBlock + 1 transformer block, then per
    // level a BasicBlock + 1, 1, 2, 1 transformer blocks), then per decoder level 3-0 its
    // transformer decoder block and BasicBlock: 2 + 9 + 8.
    check_identical(
        "utnet", o,
        [](Generator& g) {
            return images(g, {2, 1, 32, 32});
        },
        19, {1, 2}, DType::float64, 1e-6, 1e-12);
}

TEST_CASE("checkpointing: pvt_segnet's encoder and decoder blocks, bit-identical",
          "[models][checkpoint]") {
    nn::Options o("pvt_segnet");
    o.set("encoder", std::string("b0"));
    o.set("encoder_depths", std::vector<int64_t>{1, 2, 1, 1});
    o.set("encoder_embed_dims", std::vector<int64_t>{16, 16, 32, 32});
    o.set("encoder_num_heads", std::vector<int64_t>{1, 2, 2, 2});
    o.set("encoder_mlp_ratios", std::vector<double>{2, 2, 2, 2});
    o.set("n_heads", std::vector<int64_t>{2, 2, 2, 2});
    o.set("n_classes", int64_t(3));
    o.set("drop_path_rate", 0.2);
    for (const std::string decoder : {"gdla", "sa", "da"}) {
        o.set("decoder", decoder);
        // 5 encoder blocks, then de1, de2, de3.
        check_identical(
            "pvt_segnet", o,
            [](Generator& g) {
                return images(g, {2, 1, 32, 32});
            },
            8);
    }
}

TEST_CASE("checkpointing: transformer, diff_transformer and dgt with padding, bit-identical",
          "[models][checkpoint]") {
    for (const std::string model : {"transformer", "diff_transformer", "dgt"}) {
        nn::Options o(model);
        o.set("vocab_size", int64_t(20));
        o.set("embed_dim", int64_t(32));
        o.set("depth", int64_t(3));
        o.set("num_heads", int64_t(2));
        o.set("max_len", int64_t(16));
        o.set("drop", 0.1);
        check_identical(model, o, tokens, 3);
    }
}

TEST_CASE("checkpointing: a deep sfree_vit's training step peaks lower", "[models][checkpoint]") {
    auto peak = [](int64_t every) {
        nn::Options o("sfree_vit");
        o.set("dim", int64_t(64));
        o.set("depth", int64_t(8));
        o.set("heads", int64_t(4));
        o.set("dim_head", int64_t(16));
        o.set("mlp_dim", int64_t(128));
        o.set("dropout", 0.1);
        o.set("channels", int64_t(1));
        o.set("image_size", std::vector<int64_t>{32, 32});
        o.set("patch_size", std::vector<int64_t>{4, 4});
        o.set("grad_checkpointing", every);
        manual_seed(2);
        auto net = models::build_model("sfree_vit", models::model_options("sfree_vit", o));
        net->train();
        Generator g(3);
        Tensor x = images(g, {32, 1, 32, 32});
        cpu_reset_peak_memory_stats();
        const size_t before = cpu_memory_stats().allocated;
        mean(square(net->forward(x))).backward();
        return cpu_memory_stats().peak_allocated - before;
    };
    const size_t plain = peak(0), every_second = peak(2), every = peak(1);
    INFO("peak bytes: " << plain << " plain, " << every_second << " every second block, " << every
                        << " every block");
    CHECK(double(every) < 0.5 * double(plain));
    CHECK(every < every_second);
    CHECK(every_second < plain);
}

TEST_CASE("checkpointing: a negative model.grad_checkpointing is refused", "[models][checkpoint]") {
    for (const std::string model : {"context_swin", "sfree_vit", "sima_vit", "utnet", "pvt_segnet",
                                    "transformer", "diff_transformer", "dgt"}) {
        INFO(model);
        train::RawConfig raw = train::RawConfig::parse(
            R"({"name": "neg", "model": {"name": ")" + model + R"(", "grad_checkpointing": -1}})",
            "test");
        require_error([&] { train::cli::resolve_training_config(raw); },
                      {"model.grad_checkpointing", "-1"});
    }
    // A config built in C++ is refused at its first checkpointing decision.
    require_error([] { nn::is_checkpointed(-2, 0); }, {"[checkpoint]", "grad_checkpointing", "-2"});
}
