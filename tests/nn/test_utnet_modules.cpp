// UTNet's convolutional blocks and relative positions (Gao et al. 2021, Sec. 2.3-2.4): parameter
// names, shapes, naive-loop references at sizes other than the vectors (including the map width ==
// r case the official embedding crashed on), float64 gradchecks, errors.
#include "nn/attention/utnet_relative_position.h"
#include "nn/conv.h"
#include "nn/utnet/conv_blocks.h"
#include "utnet_testing.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::nn::utnet;
using lumen::nn::DepthwiseSeparableConv;
using lumen::nn::attention::RelativePositionBias;
using lumen::nn::attention::RelativePositionEmbedding;

namespace {

bool has_key(const nn::Module& m, const std::string& key) { return m.state_dict().count(key) > 0; }

Tensor f32(const Tensor& t) { return t.to(DType::float32); }

}  // namespace

TEST_CASE("DepthwiseSeparableConv is a bias-free depthwise 3x3 then a 1x1", "[nn][utnet]") {
    DepthwiseSeparableConv conv(3, 5);
    CHECK(conv.depthwise->weight.shape() == Shape{3, 1, 3, 3});
    CHECK(conv.pointwise->weight.shape() == Shape{5, 3, 1, 1});
    CHECK(conv.state_dict().size() == 2);
    Tensor x = f32(random_input({2, 3, 5, 4}, 1));
    Tensor want = conv2d(conv2d(x, conv.depthwise->weight, Tensor(), {1}, {1}, {1}, 3),
                         conv.pointwise->weight);
    require_close(conv.forward(x), want, 1e-5, 1e-6);
}

TEST_CASE("BasicBlock: pre-activation, identity or projection shortcut", "[nn][utnet]") {
    BasicBlock same(4, 4);
    CHECK(!same.shortcut);
    CHECK(!has_key(same, "shortcut.0.weight"));
    BasicBlock proj(3, 5, 2);
    for (const char* key : {"bn1.running_var", "conv1.weight", "bn2.weight", "conv2.weight",
                            "shortcut.0.running_mean", "shortcut.2.weight"})
        CHECK(has_key(proj, key));
    CHECK(proj.conv1->weight.shape() == Shape{5, 3, 3, 3});
    CHECK(proj.state_dict().at("shortcut.2.weight").shape() == Shape{5, 3, 1, 1});
    Tensor x = f32(random_input({2, 3, 7, 6}, 2));
    CHECK(proj.forward(x).shape() == Shape{2, 5, 4, 3});
    // Eval mode with fresh running stats (mean 0, var 1): bn(x) = x / sqrt(1 + eps).
    same.eval();
    Tensor y = f32(random_input({1, 4, 5, 5}, 3));
    double s = 1.0 / std::sqrt(1.0 + 1e-5);
    Tensor inner = conv2d(relu(mul(y, s)), same.conv1->weight, Tensor(), {1}, {1});
    Tensor want = add(conv2d(relu(mul(inner, s)), same.conv2->weight, Tensor(), {1}, {1}), y);
    require_close(same.forward(y), want, 1e-5, 1e-6);
    require_error([&] { proj.forward(ones({2, 4, 5, 5})); }, {"[BatchNorm2d]", "[2, 4, 5, 5]"});
    require_error([] { BasicBlock bad(0, 3); }, {"[BasicBlock]", "positive"});
}

TEST_CASE("BasicBlock and DepthwiseSeparableConv gradients match finite differences",
          "[nn][utnet]") {
    BasicBlock proj(2, 3);
    module_gradcheck(proj, random_input({2, 2, 4, 3}, 4));
    DepthwiseSeparableConv conv(2, 3);
    module_gradcheck(conv, random_input({1, 2, 4, 5}, 5));
}

TEST_CASE("down and up stages keep the official Sequential indices", "[nn][utnet]") {
    DownBlock down(2, 4, 2);
    CHECK(has_key(down, "conv.1.bn1.weight"));
    CHECK(has_key(down, "conv.2.conv2.weight"));
    CHECK(down.forward(f32(random_input({1, 2, 8, 6}, 6))).shape() == Shape{1, 4, 4, 3});
    UpBlock up(6, 3);
    CHECK(up.conv_ch->bias.defined());
    CHECK(has_key(up, "conv.0.shortcut.2.weight"));  // BasicBlock(6, 3)
    CHECK(has_key(up, "conv.1.conv1.weight"));
    Tensor x1 = f32(random_input({2, 6, 3, 2}, 7)), x2 = f32(random_input({2, 3, 6, 4}, 8));
    CHECK(up.forward(x1, x2).shape() == Shape{2, 3, 6, 4});
    require_error(
        [&] {
            up.forward(x1, f32(random_input({2, 3, 5, 4}, 8)));
        },
        {"[UpBlock]", "twice"});
    require_error([&] { up.forward(x2, x2); }, {"[UpBlock]", "x1"});
}

TEST_CASE("RelativePositionBias matches the index formula and sums shared gradients",
          "[nn][utnet]") {
    RelativePositionBias bias(2, 3);
    CHECK(bias.relative_position_bias_table.shape() == Shape{25, 2});
    CHECK(bias.relative_position_index.dtype() == DType::int64);
    // index[i, j] for i = (1, 2), j = (2, 0): (1 - 2 + 2) * 5 + (2 - 0 + 2) = 9
    CHECK(bias.relative_position_index.at<int64_t>({5, 6}) == 9);
    CHECK(std::abs(lumen::std(bias.relative_position_bias_table).item<double>() - 0.02) < 0.012);
    bias.to(DType::float64);
    for (auto [H, W] : {std::pair<int64_t, int64_t>{6, 9}, {3, 3}, {3, 12}}) {
        INFO(H << " x " << W);
        require_close(bias.forward(H, W), naive_bias(bias.relative_position_bias_table, 2, 3, H, W),
                      0, 0);
        require_close(bias.forward(H, W, 0.5),
                      mul(naive_bias(bias.relative_position_bias_table, 2, 3, H, W), 0.5), 1e-15);
    }
    // d sum(bias * w) / d table = the sum of w over every (query, key) that reads the entry.
    const int64_t H = 6, W = 9, r = 3;
    Tensor w = random_input({1, 2, H * W, r * r}, 9);
    bias.zero_grad();
    sum(mul(bias.forward(H, W), w)).backward();
    std::vector<double> want(50, 0.0);
    for (int64_t m = 0; m < 2; ++m)
        for (int64_t q = 0; q < H * W; ++q)
            for (int64_t k = 0; k < r * r; ++k) {
                int64_t y = q / W, x = q % W, a = k / r, c = k % r;
                int64_t row = (y / (H / r) - a + r - 1) * (2 * r - 1) + x / (W / r) - c + r - 1;
                want[size_t(row * 2 + m)] += w.at<double>({0, m, q, k});
            }
    require_close(bias.relative_position_bias_table.grad(), from_vector(want, {25, 2}), 1e-12,
                  1e-12);
    require_error([&] { bias.forward(7, 9); }, {"[RelativePositionBias]", "7 x 9"});
    require_error([&] { bias.forward(2, 3); }, {"[RelativePositionBias]", "multiple"});
}

TEST_CASE("RelativePositionEmbedding follows eq. 3-4, also when the map width equals r",
          "[nn][utnet]") {
    RelativePositionEmbedding embedding(3, 3);
    CHECK(embedding.key_rel_w.shape() == Shape{5, 3});
    CHECK(embedding.relative_position_index.at<int64_t>({0, 2}) == 4);  // j - i + r - 1
    embedding.to(DType::float64);
    for (auto [H, W] : {std::pair<int64_t, int64_t>{6, 3}, {3, 9}, {3, 3}}) {
        INFO(H << " x " << W);
        Tensor q = random_input({2, 2, H * W, 3}, uint64_t(10 + H + W));
        auto [rel_w, rel_h] = embedding.forward(q, 2, H, W);
        auto [want_w, want_h] =
            naive_relative_logits(q, embedding.key_rel_w, embedding.key_rel_h, 3, H, W);
        require_close(rel_w, want_w, 1e-12, 1e-14);
        require_close(rel_h, want_h, 1e-12, 1e-14);
    }
    RelativePositionEmbedding small(2, 2);
    module_gradcheck(small,
                     [&](const std::vector<Tensor>& in) {
                         auto [rel_w, rel_h] = small.forward(in[0], 1, 2, 4);
                         return add(rel_w, mul(rel_h, 3.0));
                     },
                     {random_input({2, 1, 8, 2}, 11)});
    require_error(
        [&] {
            embedding.forward(ones({1, 2, 9, 4}, DType::float64), 2, 3, 3);
        },
        {"[RelativePositionEmbedding]", "[1, 2, 9, 4]"});
    require_error(
        [&] {
            embedding.forward(ones({1, 2, 10, 3}, DType::float64), 2, 5, 2);
        },
        {"[RelativePositionEmbedding]", "multiple"});
}

TEST_CASE("UTNet vectors: conv blocks and relative positions", "[nn][utnet][oracle]") {
    require_oracle_vectors({"utnet_basic_block_proj", "utnet_basic_block_id",
                            "utnet_basic_block_eval", "utnet_bn_train_running_stats",
                            "utnet_rel_pos_bias", "utnet_rel_pos_embedding", "utnet_up_block"},
                           "sfree_utnet");
}
