// Spec gdla 3.1-3.2: linear_attention against the explicit kernel matrix, MultiHeadLinearAttn
// and the GDLA mixer against head-by-head references, float64 gradchecks, the registry entries
// and the error messages; the oracle vectors of the function and the mixers.
#include "gdla_testing.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::testing::gdla_check;

TEST_CASE("linear_attention: equals the explicit kernel-matrix form, eps in the denominator",
          "[nn][attention][gdla]") {
    Tensor q = random_input({2, 3, 7, 4}, 1, -2, 2), k = random_input({2, 3, 5, 4}, 2, -2, 2);
    Tensor v = random_input({2, 3, 5, 6}, 3);
    require_close(nn::attention::linear_attention(q, k, v), quadratic_linear_attention(q, k, v),
                  1e-12, 1e-13);
    require_close(nn::attention::linear_attention(q, k, v, 0.5),
                  quadratic_linear_attention(q, k, v, 0.5), 1e-12, 1e-13);
    // phi = elu + 1 is 1 + x for x > 0 and e^x otherwise.
    Tensor x = from_vector(std::vector<double>{-2.0, 0.0, 0.5}, {3});
    require_close(nn::attention::elu_feature_map(x), {std::exp(-2.0), 1.0, 1.5}, 1e-15, 0);
    // One key: every query gets v (up to eps).
    Tensor one_v = random_input({1, 1, 1, 3}, 4);
    Tensor y = nn::attention::linear_attention(random_input({1, 1, 4, 2}, 5),
                                               random_input({1, 1, 1, 2}, 6), one_v, 0.0);
    require_close(y, one_v.expand({1, 1, 4, 3}), 1e-14, 1e-15);
    // Broadcast batch dims, as matmul.
    Tensor shared_k = random_input({1, 3, 5, 4}, 7), shared_v = random_input({1, 3, 5, 6}, 8);
    require_close(
        nn::attention::linear_attention(q, shared_k, shared_v),
        quadratic_linear_attention(q, shared_k.expand({2, 3, 5, 4}), shared_v.expand({2, 3, 5, 6})),
        1e-12, 1e-13);
}

TEST_CASE("linear_attention: float64 gradients in q, k and v, non-contiguous inputs",
          "[nn][attention][gdla]") {
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return nn::attention::linear_attention(in[0], in[1], in[2]);
        },
        {random_input({2, 5, 3}, 1, -2, 2), random_input({2, 4, 3}, 2, -2, 2),
         noncontiguous(random_input({2, 4, 2}, 3))});
    require_error(
        [] {
            nn::attention::linear_attention(ones({4}), ones({4, 2}), ones({4, 2}));
        },
        {"[linear_attention]", "[4]"});
    require_error(
        [] {
            nn::attention::linear_attention(ones({4, 3}), ones({5, 2}), ones({5, 2}));
        },
        {"[linear_attention]", "[4, 3]", "[5, 2]"});
    require_error(
        [] {
            nn::attention::linear_attention(ones({4, 2}), ones({5, 2}), ones({6, 2}));
        },
        {"[linear_attention]", "[6, 2]"});
}

TEST_CASE("MultiHeadLinearAttn: heads of consecutive channels, no scale, float64 gradients",
          "[nn][attention][gdla]") {
    nn::attention::MultiHeadLinearAttn attn(12, 3);
    CHECK(attn.head_dim == 4);
    CHECK(attn.qkv->weight.shape() == Shape{36, 12});
    CHECK(attn.state_dict().size() == 4);
    attn.to(DType::float64);
    randomize(attn, 10);
    Tensor x = random_input({2, 6, 12}, 11, -2, 2);
    Tensor t = linear(x, attn.qkv->weight, attn.qkv->bias);
    std::vector<Tensor> heads;
    for (int64_t j = 0; j < 3; ++j) {
        heads.push_back(quadratic_linear_attention(
            channels(t, 4 * j, 4), channels(t, 12 + 4 * j, 4), channels(t, 24 + 4 * j, 4)));
    }
    Tensor want = linear(cat(heads, -1), attn.out_proj->weight, attn.out_proj->bias);
    require_close(attn.forward(x), want, 1e-11, 1e-12);

    nn::attention::MultiHeadLinearAttn small(4, 2, false);
    CHECK(small.state_dict().count("qkv.bias") == 0);
    module_gradcheck(small, random_input({2, 3, 4}, 12));
    require_error([] { nn::attention::MultiHeadLinearAttn bad(10, 3); },
                  {"[MultiHeadLinearAttn]", "dim 10", "n_heads 3"});
    require_error(
        [&] {
            attn.forward(ones({2, 6, 8}, DType::float64));
        },
        {"[MultiHeadLinearAttn]", "[2, 6, 8]"});
    nn::attention::AttentionContext causal{.causal = true};
    require_error(
        [&] {
            attn.forward(ones({2, 6, 12}, DType::float64), causal);
        },
        {"[MultiHeadLinearAttn]", "causal"});
}

TEST_CASE("GatedDiffLinearAttn: equals the head-by-head reference on non-square grids",
          "[nn][attention][gdla]") {
    nn::attention::GatedDiffLinearAttn attn(12, 2);
    CHECK(attn.head_dim == 6);
    CHECK(attn.named_parameters().size() == 11);
    CHECK(attn.dwc->weight.shape() == Shape{48, 1, 3, 3});
    CHECK(attn.pwc->weight.shape() == Shape{48, 48, 1, 1});
    CHECK(attn.out_proj->weight.shape() == Shape{12, 24});
    CHECK(attn.lambda_scale_aux.shape() == Shape{2, 6});
    attn.to(DType::float64);
    randomize(attn, 20);
    Tensor x = random_input({2, 15, 12}, 21);
    require_close(attn.forward(x, 3, 5), reference_gdla(attn, x, 3, 5), 1e-11, 1e-12);
    nn::attention::AttentionContext grid{.grid = {5, 3}};
    require_close(attn.forward(x, grid), reference_gdla(attn, x, 5, 3), 1e-11, 1e-12);

    nn::attention::GatedDiffLinearAttn no_bias(4, 1, false);
    CHECK(no_bias.state_dict().count("qkvg.bias") == 0);
    no_bias.to(DType::float64);
    randomize(no_bias, 22);
    Tensor one = random_input({1, 1, 4}, 23);
    require_close(no_bias.forward(one, 1, 1), reference_gdla(no_bias, one, 1, 1), 1e-11, 1e-12);
}

TEST_CASE("GatedDiffLinearAttn: float64 gradients of the input and every parameter",
          "[nn][attention][gdla]") {
    nn::attention::GatedDiffLinearAttn attn(8, 2);
    randomize(attn, 30);
    module_gradcheck(
        attn, [&](const std::vector<Tensor>& in) { return attn.forward(in[0], 2, 3); },
        {random_input({2, 6, 8}, 31)}, 1e-5, 1e-6, 7);
}

TEST_CASE("GatedDiffLinearAttn: errors name the module, the grid and the shapes",
          "[nn][attention][gdla]") {
    require_error([] { nn::attention::GatedDiffLinearAttn bad(12, 4); },
                  {"[GatedDiffLinearAttn]", "even head dim", "n_heads 4"});
    nn::attention::GatedDiffLinearAttn attn(8, 2);
    require_error([&] { attn.forward(ones({1, 6, 8})); }, {"[GatedDiffLinearAttn]", "grid"});
    nn::attention::AttentionContext wrong{.grid = {2, 2}};
    require_error(
        [&] {
            attn.forward(ones({1, 6, 8}), wrong);
        },
        {"[GatedDiffLinearAttn]", "[2, 2]", "6 tokens"});
    nn::attention::AttentionContext prefix{.grid = {2, 3}, .prefix_tokens = 1};
    require_error(
        [&] {
            attn.forward(ones({1, 7, 8}), prefix);
        },
        {"[GatedDiffLinearAttn]", "prefix"});
    require_error(
        [&] {
            attn.forward(ones({1, 6, 4}), 2, 3);
        },
        {"[GatedDiffLinearAttn]", "[1, 6, 4]"});
}

TEST_CASE("attention registry: linear and gdla build from config and swap into a model",
          "[nn][attention][gdla]") {
    nn::attention::AttentionConfig config{
        .type = "linear", .dim = 16, .num_heads = 4, .qkv_bias = false};
    auto linear_attn = nn::attention::make_attention(config);
    CHECK(linear_attn->type_name() == "MultiHeadLinearAttn");
    CHECK(linear_attn->state_dict().count("qkv.bias") == 0);
    CHECK(linear_attn->forward(ones({1, 5, 16})).shape() == Shape{1, 5, 16});
    config.type = "gdla";
    config.qkv_bias = true;
    auto gdla = nn::attention::make_attention(config);
    CHECK(gdla->type_name() == "GatedDiffLinearAttn");
    nn::attention::AttentionContext grid{.grid = {2, 3}};
    CHECK(gdla->forward(ones({2, 6, 16}), grid).shape() == Shape{2, 6, 16});
    config.options = {{"eps", 1e-3}};
    require_error([&] { nn::attention::make_attention(config); }, {"[gdla]", "eps"});
    config.type = "linear";
    config.head_dim = 8;
    require_error([&] { nn::attention::make_attention(config); }, {"[linear]", "head_dim"});
}

TEST_CASE("gdla oracle vectors: linear attention and the mixers pass check-vectors",
          "[nn][gdla][oracle]") {
    require_oracle_vectors({"linear_attention_core", "mhla_C12_h3_N15", "gdla_mixer_C16_h2_5x7",
                            "gdla_mixer_C12_h3_4x4_nobias", "gdla_mixer_C8_h1_3x6"},
                           "gdla");
}
