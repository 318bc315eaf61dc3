// The paper's UPerNet head (Hooper & Xue; its seg_heads.py): state_dict names (one shared smoothing
// conv), the PSP bottleneck's padding quirk, BatchNorm train/eval, 2-D and 3-D shapes, float64
// gradchecks, errors, and the oracle vectors.
#include "nn/upernet.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using lumen::nn::UperNet;

namespace {

std::vector<Tensor> features(const std::vector<int64_t>& channels, const std::vector<Shape>& sizes,
                             int64_t batch, uint64_t seed) {
    std::vector<Tensor> out;
    for (size_t k = 0; k < channels.size(); ++k) {
        Shape shape = {batch, channels[k]};
        shape.insert(shape.end(), sizes[k].begin(), sizes[k].end());
        out.push_back(random_input(shape, seed + k));
    }
    return out;
}

}  // namespace

TEST_CASE("UperNet: names of the paper's head, one shared smoothing conv", "[nn][upernet]") {
    UperNet head(2, {6, 12, 24, 48}, 3, {40, 56});
    std::map<std::string, Tensor> state = head.state_dict();
    for (const char* key :
         {"PPN.stages.0.1.weight", "PPN.stages.3.2.running_var", "PPN.bottleneck.0.weight",
          "PPN.bottleneck.1.num_batches_tracked", "FPN.conv1x1.2.weight", "FPN.smooth_conv.0.bias",
          "FPN.conv_fusion.0.weight", "FPN.conv_fusion.1.running_mean", "head.bias"})
        CHECK(state.count(key) == 1);
    CHECK(state.count("FPN.smooth_conv.1.weight") == 0);  // the same conv as .0
    CHECK(state.count("PPN.stages.0.1.bias") == 0);
    CHECK(state.at("PPN.stages.0.1.weight").shape() == Shape{12, 48, 1, 1});
    CHECK(state.at("PPN.bottleneck.0.weight").shape() == Shape{48, 96, 1, 1});
    CHECK(state.at("FPN.conv_fusion.0.weight").shape() == Shape{6, 24, 3, 3});
    // The paper's Swin-T head (vessel task, 2 classes): 9,263,618 parameters (the paper's Table 7).
    UperNet paper(2, {192, 384, 768, 1536}, 2, {1024, 1024});
    CHECK(paper.num_parameters() == 9263618);
}

TEST_CASE("UperNet loads a PyTorch state_dict that lists the shared conv three times",
          "[nn][upernet]") {
    UperNet head(2, {2, 4, 4, 8}, 2, {6, 5});
    std::map<std::string, Tensor> state;
    for (const auto& [name, tensor] : head.state_dict()) state["decoder." + name] = tensor;
    for (const char* copy : {"1", "2"})
        for (const char* what : {"weight", "bias"})
            state[std::string("decoder.FPN.smooth_conv.") + copy + "." + what] =
                state.at(std::string("decoder.FPN.smooth_conv.0.") + what);
    std::map<std::string, Tensor> merged = nn::drop_shared_smooth_conv_copies(state);
    CHECK(merged.size() == head.state_dict().size());
    CHECK(merged.count("decoder.FPN.smooth_conv.0.bias") == 1);
    state["decoder.FPN.smooth_conv.2.bias"] = zeros({2});
    require_error([&] { nn::drop_shared_smooth_conv_copies(state); },
                  {"[UperNet]", "smooth_conv.2.bias"});
}

TEST_CASE("PSPModule's padding-1 bottleneck grows the map by 2 [quirk]", "[nn][upernet]") {
    nn::PSPModule psp(2, 8);
    psp.eval();
    Tensor y = psp.forward(random_input({1, 8, 3, 2}, 1).to(DType::float32));
    CHECK(y.shape() == Shape{1, 8, 5, 4});
    // The border saw only zero padding: ReLU(BN(0)) = ReLU(bias - mean * w / sqrt(var + eps)),
    // 0 at init (bias 0, mean 0).
    require_close(y.select(2, 0), zeros({1, 8, 4}), 0, 0);
}

TEST_CASE("UperNet outputs the requested size in 2-D and 3-D, train and eval", "[nn][upernet]") {
    UperNet head(2, {4, 8, 16, 32}, 3, {20, 28});
    std::vector<Tensor> f = features({4, 8, 16, 32}, {{5, 7}, {3, 4}, {2, 2}, {1, 1}}, 2, 1);
    head.to(DType::float64);
    CHECK(head.forward(f).shape() == Shape{2, 3, 20, 28});
    head.eval();
    CHECK(head.forward(f).shape() == Shape{2, 3, 20, 28});
    UperNet head3(3, {2, 4, 8, 16}, 2, {8, 8, 12});
    head3.eval();
    std::vector<Tensor> f3 =
        features({2, 4, 8, 16}, {{4, 4, 6}, {2, 2, 3}, {1, 1, 2}, {1, 1, 1}}, 1, 5);
    head3.to(DType::float64);
    CHECK(head3.forward(f3).shape() == Shape{1, 2, 8, 8, 12});
    require_error([&] { head.forward({f[0], f[1], f[2]}); }, {"[UperNet]", "4 feature maps"});
    require_error([&] { head.forward({f[1], f[1], f[2], f[3]}); }, {"[UperNet]", "map 1"});
    require_error([] { UperNet bad(2, {4, 8, 16, 30}, 3, {8, 8}); }, {"[UperNet]", "bins"});
}

TEST_CASE("UperNet gradients match finite differences (BN train and eval)", "[nn][upernet]") {
    UperNet head(2, {2, 4, 4, 8}, 2, {6, 5});
    std::vector<Tensor> f = features({2, 4, 4, 8}, {{3, 3}, {2, 2}, {1, 2}, {1, 1}}, 2, 9);
    // Dropout2d off: a finite-difference check needs the same function at every evaluation.
    dynamic_cast<nn::ChannelDropout&>((*head.ppn->bottleneck)[3]).p = 0.0;
    // BN biases away from 0: at init the bottleneck's border is ReLU(BN(0)) = ReLU(0), a kink.
    for (const Tensor& p : head.parameters())
        if (p.ndim() == 1) nn::init::uniform_(p, 0.5, 1.5);
    for (bool train : {false, true}) {
        head.train(train);
        INFO("train " << train);
        module_gradcheck(
            head, [&](const std::vector<Tensor>& in) { return head.forward(in); }, f, 1e-5, 1e-6,
            3);
    }
}

TEST_CASE("UperNet vectors pass", "[nn][upernet][vectors]") {
    require_oracle_vectors({"upernet_2d_eval", "upernet_2d_trainbn", "upernet_3d_eval"}, "context");
}
