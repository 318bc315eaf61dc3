// Spec gdla 3.3, 3.4, 3.6: GMLP against plain NCHW convolutions, GDLAM against its formula,
// Upsample's exact 2x size, ResBlk in eval (closed form) and train mode (running statistics),
// gradchecks, errors and the oracle vectors.
#include "gdla_testing.h"
#include "nn/gdla/blocks.h"
#include "nn/gdla/stem.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::testing::gdla_check;

namespace {

Tensor reference_gmlp(const nn::gdla::GMLP& m, const Tensor& x, int64_t height, int64_t width) {
    int64_t hidden = m.hidden_features;
    Tensor map = silu(conv2d(to_map(x, height, width), m.pwc1->weight, m.pwc1->bias));
    map = conv2d(map, m.dwc->weight, m.dwc->bias, {1}, {1}, {1}, 2 * hidden);
    Tensor a = map.narrow(1, 0, hidden), g = map.narrow(1, hidden, hidden);
    return to_tokens(conv2d(mul(a, silu(g)), m.pwc2->weight));
}

}  // namespace

TEST_CASE("GMLP: equals the NCHW convolution form, float64 gradients", "[nn][gdla]") {
    nn::gdla::GMLP mlp(6, 10, 4);
    CHECK(mlp.pwc1->weight.shape() == Shape{20, 6, 1, 1});
    CHECK(mlp.dwc->weight.shape() == Shape{20, 1, 3, 3});
    CHECK(mlp.pwc2->weight.shape() == Shape{4, 10, 1, 1});
    CHECK(mlp.state_dict().count("pwc2.bias") == 0);
    mlp.to(DType::float64);
    randomize(mlp, 80);
    Tensor x = random_input({2, 12, 6}, 81);
    require_close(mlp.forward(x, 3, 4), reference_gmlp(mlp, x, 3, 4), 1e-12, 1e-13);
    require_close(mlp.forward(noncontiguous(x), 4, 3), reference_gmlp(mlp, x, 4, 3), 1e-12, 1e-13);
    nn::gdla::GMLP small(3, 4);
    randomize(small, 82);
    module_gradcheck(small,
                     [&](const std::vector<Tensor>& in) { return small.forward(in[0], 2, 3); },
                     {random_input({2, 6, 3}, 83)});
    require_error([&] { mlp.forward(x, 3, 5); }, {"[GMLP]", "3 x 5", "[2, 12, 6]"});
}

TEST_CASE("GDLAM: dense positional conv replaces the attention input, residuals, gradients",
          "[nn][gdla]") {
    nn::gdla::GDLAM block(8, 2, true, 1e-5, 2.0);
    CHECK(block.dwc->weight.shape() == Shape{8, 8, 3, 3});
    CHECK(block.mlp->hidden_features == 16);
    CHECK(block.state_dict().count("attn.lambda_scale_main") == 1);
    block.to(DType::float64);
    randomize(block, 90);
    Tensor x = random_input({2, 8, 3, 2}, 91);
    Tensor t = to_tokens(x);
    Tensor u = silu(conv2d(to_map(block.norm1->forward(t), 3, 2), block.dwc->weight,
                           block.dwc->bias, {1}, {1}));
    t = add(t, reference_gdla(*block.attn, to_tokens(u), 3, 2));
    t = add(t, reference_gmlp(*block.mlp, block.norm2->forward(t), 3, 2));
    require_close(block.forward(x), to_map(t, 3, 2), 1e-11, 1e-12);

    nn::gdla::GDLAM small(4, 1, true, 1e-5, 1.0);
    randomize(small, 92);
    module_gradcheck(
        small, [&](const std::vector<Tensor>& in) { return small.forward(in[0]); },
        {random_input({1, 4, 2, 3}, 93)}, 1e-5, 1e-6, 5);
    require_error(
        [&] {
            block.forward(ones({2, 6, 3, 2}, DType::float64));
        },
        {"[GDLAM]", "[2, 6, 3, 2]"});
}

TEST_CASE("Upsample: stride-2 transposed conv, exactly twice the size for ks 3 and 5",
          "[nn][gdla]") {
    for (int64_t ks : {3, 5}) {
        nn::gdla::Upsample up(6, 4, ks);
        CHECK(up.up->weight.shape() == Shape{6, 4, ks, ks});
        CHECK(up.state_dict().size() == 1);
        up.to(DType::float64);
        Tensor x = random_input({2, 6, 3, 5}, 100);
        Tensor y = up.forward(x);
        CHECK(y.shape() == Shape{2, 4, 6, 10});
        require_close(y, conv_transpose2d(x, up.up->weight, Tensor(), {2}, {ks / 2}, {1}), 1e-14,
                      1e-15);
    }
    nn::gdla::Upsample small(2, 3);
    module_gradcheck(small, random_input({1, 2, 2, 3}, 101));
    require_error([] { nn::gdla::Upsample bad(4, 4, 4); }, {"[Upsample]", "odd", "4"});
}

TEST_CASE("ResBlk: eval is the closed form with running statistics; identity shortcut",
          "[nn][gdla]") {
    nn::gdla::ResBlk same(3, 3);
    CHECK(same.conv3 == nullptr);
    CHECK(same.state_dict().size() == 2 + 2 * 5);  // two convs, two norms with 5 entries each
    nn::gdla::ResBlk widen(2, 5);
    CHECK(widen.conv3->weight.shape() == Shape{5, 2, 1, 1});
    CHECK(widen.state_dict().count("norm3.running_var") == 1);
    // Fresh statistics (mean 0, var 1, weight 1, bias 0): BN in eval divides by sqrt(1 + eps).
    same.to(DType::float64);
    same.eval();
    Tensor x = random_input({2, 3, 4, 5}, 110);
    double scale = 1.0 / std::sqrt(1.0 + 1e-5);
    Tensor inner = relu(mul(conv2d(x, same.conv1->weight, Tensor(), {1}, {1}), scale));
    Tensor want = relu(add(mul(conv2d(inner, same.conv2->weight, Tensor(), {1}, {1}), scale), x));
    require_close(same.forward(x), want, 1e-13, 1e-14);
    require_error([] { nn::gdla::ResBlk bad(0, 3); }, {"[ResBlk]", "in_chs 0"});
}

TEST_CASE("ResBlk: training uses batch statistics and advances the running ones", "[nn][gdla]") {
    nn::gdla::ResBlk block(2, 4);
    block.to(DType::float64);
    randomize(block, 120);
    Tensor x = random_input({3, 2, 4, 3}, 121);
    Tensor y = block.forward(x);
    // The shortcut branch: BN3 of conv3 x with batch mean and biased variance.
    Tensor s = conv2d(x, block.conv3->weight);
    Tensor batch_mean = mean(s, {0, 2, 3}, true);
    Tensor unbiased = var(s, {0, 2, 3}, 1.0);
    require_close(block.norm3->running_mean, mul(batch_mean.flatten(), 0.1), 1e-12, 1e-14);
    require_close(block.norm3->running_var, add(mul(unbiased, 0.1), 0.9), 1e-12, 1e-14);
    CHECK(block.norm3->num_batches_tracked.item<int64_t>() == 1);
    CHECK(y.shape() == Shape{3, 4, 4, 3});
    CHECK(min(y).item<double>() >= 0.0);
    nn::gdla::ResBlk small(1, 2);
    module_gradcheck(small, random_input({2, 1, 3, 3}, 122));
}

TEST_CASE("gdla oracle vectors: GMLP, GDLAM, Upsample and ResBlk pass check-vectors",
          "[nn][gdla][oracle]") {
    require_oracle_vectors(
        {"mixffn_gmlp_C8_6x5", "gdlam_block_C16_h2_5x6", "gdlam_block_C12_h3_7x7",
         "upsample_k3_12to8_3x5", "upsample_k5_6to4_4x3", "resblk_eval_1to8_9x7",
         "resblk_eval_3to3_identity_5x6", "resblk_train_3to6_8x6"},
        "gdla");
}
