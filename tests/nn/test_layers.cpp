// The basic layers against their ops and PyTorch's conventions: shapes, parameter names and
// default initialisation, batch-norm statistics, embedding padding, dropout modes, the MLPs,
// patch embedding order, the sinusoidal table, the initialisers, and float64 gradchecks of
// whole modules.
#include <cmath>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

double max_abs(const Tensor& t) { return amax(abs(t.to(DType::float64))).item<double>(); }

}  // namespace

TEST_CASE("Linear: y = x W^T + b with PyTorch's default init bounds", "[nn][layers]") {
    manual_seed(5);
    nn::Linear fc(50, 7);
    CHECK(fc.weight.shape() == Shape{7, 50});
    CHECK(max_abs(fc.weight) <= 1.0 / std::sqrt(50.0));
    CHECK(max_abs(fc.bias) <= 1.0 / std::sqrt(50.0));
    CHECK(max_abs(fc.weight) > 0.8 / std::sqrt(50.0));  // spread over the whole range
    Tensor x = random_input({3, 4, 50}, 1).to(DType::float32);
    require_close(fc.forward(x), add(matmul(x, fc.weight.t()), fc.bias), 1e-5, 1e-6);
    nn::Linear no_bias(4, 2, false);
    CHECK(no_bias.named_parameters().size() == 1);
    require_error([&] { fc.forward(ones({2, 3})); }, {"[Linear]", "[2, 3]"});
}

TEST_CASE("Conv layers match the ops and use PyTorch's weight layouts", "[nn][layers]") {
    nn::Conv2d conv(4, 6, {3}, {.stride = {2}, .padding = {1}, .groups = 2});
    CHECK(conv.weight.shape() == Shape{6, 2, 3, 3});
    Tensor x = random_input({2, 4, 9, 8}, 2).to(DType::float32);
    require_close(conv.forward(x), conv2d(x, conv.weight, conv.bias, {2}, {1}, {1}, 2));
    nn::Conv1d same(3, 5, {4}, {.padding_mode = "same", .bias = false});
    CHECK(same.forward(random_input({2, 3, 11}).to(DType::float32)).shape() == Shape{2, 5, 11});
    nn::ConvTranspose2d up(6, 3, {2}, {.stride = {2}});
    CHECK(up.weight.shape() == Shape{6, 3, 2, 2});
    CHECK(up.forward(random_input({1, 6, 4, 5}).to(DType::float32)).shape() == Shape{1, 3, 8, 10});
    nn::Conv3d c3(2, 3, {1, 2, 2}, {.stride = {1, 2, 2}});
    CHECK(c3.forward(random_input({1, 2, 3, 4, 4}).to(DType::float32)).shape() ==
          Shape{1, 3, 3, 2, 2});
    require_error([] { nn::Conv2d bad(3, 4, {3}, {.groups = 2}); }, {"[Conv2d]", "groups"});
}

TEST_CASE("norm layers: defaults, shapes and batch-norm running statistics", "[nn][layers]") {
    nn::LayerNorm ln(Shape{8}, 1e-6);
    require_close(ln.weight, ones({8}), 0, 0);
    require_close(ln.bias, zeros({8}), 0, 0);
    Tensor x = random_input({3, 5, 8}, 3).to(DType::float32);
    require_close(ln.forward(x), layer_norm(x, {8}, ln.weight, ln.bias, 1e-6));
    nn::RMSNorm rms(Shape{8});
    CHECK(rms.named_parameters().size() == 1);
    nn::GroupNorm gn(2, 6);
    CHECK(gn.forward(random_input({2, 6, 3, 3}).to(DType::float32)).shape() == Shape{2, 6, 3, 3});

    nn::BatchNorm2d bn(3);
    Tensor image = random_input({4, 3, 5, 5}, 4, 1.0, 3.0).to(DType::float32);
    Tensor y = bn.forward(image);
    CHECK(bn.num_batches_tracked.item<int64_t>() == 1);
    Tensor batch_mean = mean(image, {0, 2, 3});
    require_close(bn.running_mean, mul(batch_mean, 0.1), 1e-5, 1e-6);
    require_close(mean(y, {0, 2, 3}), zeros({3}), 0, 1e-5);
    bn.eval();
    Tensor in_eval = bn.forward(image);
    CHECK(bn.num_batches_tracked.item<int64_t>() == 1);  // eval does not count
    require_close(in_eval, batch_norm(image, bn.running_mean, bn.running_var, bn.weight, bn.bias,
                                      false, 0.1, 1e-5));
    // momentum = None: cumulative average, so after two batches running_mean = their mean.
    nn::BatchNorm1d cumulative(2, 1e-5, std::nullopt);
    Tensor a = random_input({6, 2}, 5).to(DType::float32),
           b = random_input({6, 2}, 6).to(DType::float32);
    cumulative.forward(a);
    cumulative.forward(b);
    require_close(cumulative.running_mean, div(add(mean(a, {0}), mean(b, {0})), 2.0), 1e-5, 1e-6);
    require_error([&] { bn.forward(ones({2, 3, 4})); }, {"[BatchNorm2d]", "[2, 3, 4]"});
}

TEST_CASE("Embedding: N(0,1) rows, a zero padding row that gets no gradient", "[nn][layers]") {
    manual_seed(7);
    nn::Embedding emb(20, 6, 0);
    require_close(emb.weight.select(0, 0), zeros({6}), 0, 0);
    Tensor idx = from_vector(std::vector<int64_t>{0, 3, 3, 19}, {2, 2});
    Tensor y = emb.forward(idx);
    CHECK(y.shape() == Shape{2, 2, 6});
    sum(y).backward();
    require_close(emb.weight.grad().select(0, 0), zeros({6}), 0, 0);
    require_close(emb.weight.grad().select(0, 3), full({6}, 2.0), 0, 0);
    nn::Embedding negative(5, 2, -1);
    CHECK(*negative.padding_idx == 4);
}

TEST_CASE("Dropout and DropPath are active only in training mode", "[nn][layers]") {
    nn::Dropout drop(0.5);
    Tensor x = ones({1000});
    Tensor y = drop.forward(x);
    double kept = sum(ne(y, 0.0)).item<double>();
    CHECK(kept > 400);
    CHECK(kept < 600);
    require_close(sum(y), {kept * 2.0}, 1e-6);
    drop.eval();
    CHECK(drop.forward(x).impl() == x.impl());
    nn::DropPath path(0.5);
    Tensor samples = path.forward(ones({64, 3}));
    for (int64_t i = 0; i < 64; ++i) {
        double v = samples.at<double>({i, 0});
        CHECK((v == 0.0 || v == 2.0));
        CHECK(samples.at<double>({i, 2}) == v);  // whole samples
    }
}

TEST_CASE("Mlp and packed SwiGLU compose their linears as timm does", "[nn][layers]") {
    nn::Mlp mlp(6, 10);
    Tensor x = random_input({2, 3, 6}, 8).to(DType::float32);
    Tensor want =
        linear(gelu(linear(x, mlp.fc1->weight, mlp.fc1->bias)), mlp.fc2->weight, mlp.fc2->bias);
    require_close(mlp.forward(x), want);
    nn::SwiGLU glu(6, 5);
    CHECK(glu.fc1->weight.shape() == Shape{10, 6});
    Tensor u = linear(x, glu.fc1->weight, glu.fc1->bias);
    Tensor gated = mul(silu(u.narrow(-1, 0, 5)), u.narrow(-1, 5, 5));
    require_close(glu.forward(x), linear(gated, glu.fc2->weight, glu.fc2->bias));
    CHECK(nn::swiglu_hidden(256, 16, 3) == 682);
    CHECK(nn::swiglu_hidden(20, 16, 3) == 53);
    CHECK(nn::swiglu_hidden(24, 16, 3) == 64);
    CHECK(nn::swiglu_hidden(256, 4) == 512);
}

TEST_CASE("PatchEmbed orders tokens row-major over the patch grid", "[nn][layers]") {
    nn::PatchEmbed embed(2, 1, 3, {2});
    Tensor img = random_input({2, 1, 4, 6}, 9).to(DType::float32);
    Tensor tokens = embed.forward(img);
    CHECK(tokens.shape() == Shape{2, 6, 3});
    CHECK(embed.grid_size(img.shape()) == std::vector<int64_t>{2, 3});
    // token 4 = grid row 1, column 1 = pixels [2:4, 2:4]
    Tensor patch = img.narrow(2, 2, 2).narrow(3, 2, 2).reshape({2, 4});
    Tensor want = add(matmul(patch, embed.proj->weight.reshape({3, 4}).t()), embed.proj->bias);
    require_close(tokens.select(1, 4), want);
    require_error([&] { embed.forward(ones({1, 1, 5, 6})); }, {"[PatchEmbed]", "multiple"});
    nn::PatchEmbed embed3(3, 2, 4, {2, 4, 4});
    CHECK(embed3.forward(ones({1, 2, 4, 8, 8})).shape() == Shape{1, 8, 4});
}

TEST_CASE("sinusoidal table and class token", "[nn][layers]") {
    Tensor pe = nn::sinusoidal_position_table(5, 6);
    CHECK(pe.at<double>({3, 0}) == Approx(std::sin(3.0)));
    CHECK(pe.at<double>({3, 1}) == Approx(std::cos(3.0)));
    CHECK(pe.at<double>({2, 4}) == Approx(std::sin(2.0 / std::pow(10000.0, 4.0 / 6.0))));
    Tensor x = ones({2, 3, 4}), token = full({1, 1, 4}, 5.0);
    Tensor y = nn::prepend_token(x, token);
    CHECK(y.shape() == Shape{2, 4, 4});
    CHECK(y.at<double>({1, 0, 2}) == 5.0);
    CHECK(y.at<double>({1, 1, 2}) == 1.0);
}

TEST_CASE("initialisers follow torch.nn.init", "[nn][init]") {
    Generator gen(11);
    Tensor t = empty({200, 100});
    nn::init::trunc_normal_(t, 0.0, 0.02, -0.04, 0.04, &gen);
    CHECK(max_abs(t) <= 0.04);
    double s = lumen::std(t).item<double>();
    CHECK(s == Approx(0.02 * 0.8796).epsilon(0.03));  // std of N(0,1) truncated at +-2 sigma
    nn::init::kaiming_uniform_(t, std::sqrt(5.0), "fan_in", "leaky_relu", &gen);
    CHECK(max_abs(t) <= 1.0 / std::sqrt(100.0));
    nn::init::xavier_uniform_(t, 1.0, &gen);
    CHECK(max_abs(t) <= std::sqrt(6.0 / 300.0));
    nn::init::kaiming_normal_(t, 0.0, "fan_out", "relu", &gen);
    CHECK(lumen::std(t).item<double>() == Approx(std::sqrt(2.0 / 200.0)).epsilon(0.03));
    Generator again(11);
    Tensor u = empty({200, 100});
    nn::init::trunc_normal_(u, 0.0, 0.02, -0.04, 0.04, &again);  // same seed, same values
    Generator gen2(11);
    Tensor v = empty({200, 100});
    nn::init::trunc_normal_(v, 0.0, 0.02, -0.04, 0.04, &gen2);
    require_close(u, v, 0, 0);
    // Wide bounds make it the inverse normal CDF of the uniform draws: the CDF of each value
    // gives its draw back (float64; the tails beyond |y| = 0.9966 included), and the values do
    // not depend on the threads that computed them.
    Generator draws_gen(12), init_gen(12);
    std::vector<double> draws = rand({100000}, DType::float64, &draws_gen).to_vector<double>();
    Tensor wide = empty({100000}, DType::float64);
    nn::init::trunc_normal_(wide, 0.0, 1.0, -1e9, 1e9, &init_gen);
    std::vector<double> values = wide.to_vector<double>();
    double worst = 0.0;
    for (size_t i = 0; i < values.size(); ++i)
        worst = std::max(worst,
                         std::abs(0.5 * (1.0 + std::erf(values[i] / std::sqrt(2.0))) - draws[i]));
    INFO("worst |cdf(value) - draw| " << worst);
    CHECK(worst < 1e-13);
    int threads = get_num_threads();
    set_num_threads(1);
    Generator one_thread_gen(12);
    Tensor serial = empty({100000}, DType::float64);
    nn::init::trunc_normal_(serial, 0.0, 1.0, -1e9, 1e9, &one_thread_gen);
    set_num_threads(threads);
    require_close(serial, wide, 0, 0);
    CHECK(nn::init::calculate_gain("tanh") == Approx(5.0 / 3.0));
    require_error([] { nn::init::calculate_gain("softsign"); }, {"[calculate_gain]", "softsign"});
    require_error([] { nn::init::xavier_uniform_(empty({3})); }, {"[init]", "[3]"});
}

TEST_CASE("module gradients match finite differences in float64", "[nn][layers]") {
    nn::Mlp mlp(4, 6);
    module_gradcheck(mlp, random_input({2, 3, 4}, 12));
    nn::SwiGLU glu(4, 3);
    module_gradcheck(glu, random_input({2, 4}, 13));
    nn::BatchNorm2d bn(2);
    module_gradcheck(bn, random_input({3, 2, 2, 2}, 14));
}

TEST_CASE("Sequential chains children named 0, 1, ...", "[nn][module]") {
    nn::Sequential seq;
    seq.push_back(nn::make<nn::Linear>(3, 4));
    seq.push_back(nn::make<nn::GELU>());
    seq.push_back(nn::make<nn::Linear>(4, 2));
    CHECK(seq.state_dict().count("2.weight") == 1);
    Tensor x = ones({5, 3});
    auto& first = static_cast<nn::Linear&>(seq[0]);
    auto& last = static_cast<nn::Linear&>(seq[2]);
    require_close(seq.forward(x), last.forward(gelu(first.forward(x))));
}
