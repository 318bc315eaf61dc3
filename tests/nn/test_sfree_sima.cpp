// The official SimA model parts: ClassAttention against a head-by-head reference, the
// ClassAttentionBlock quirks (patch tokens pass through and are doubled), LPI against the conv
// ops and its grid from the context, float64 gradchecks, and the error messages.
#include "nn/attention/class_attention.h"
#include "nn/init.h"
#include "nn/sima/sima_block.h"
#include "sfree_testing.h"

using namespace lumen;
using namespace lumen::testing;
using nn::sima::SimALayerOptions;

namespace {

void randomize(nn::Module& m, uint64_t seed) {
    Generator generator(seed);
    for (auto& [name, p] : m.named_parameters()) nn::init::uniform_(p, -0.8, 0.8, &generator);
}

// ClassAttention computed head by head: l1 over all tokens (eps 1e-6), token 0 queries.
Tensor class_attention_reference(nn::attention::ClassAttention& m, const Tensor& x) {
    Tensor t = linear(x, m.qkv->weight, m.qkv->bias);
    int64_t c = m.dim, d = c / m.num_heads;
    std::vector<Tensor> heads;
    for (int64_t h = 0; h < m.num_heads; ++h) {
        Tensor q = t.narrow(2, h * d, d), k = t.narrow(2, c + h * d, d);
        Tensor v = t.narrow(2, 2 * c + h * d, d);
        q = div(q, clamp(sum(abs(q), {1}, true), 1e-6, std::nullopt));
        k = div(k, clamp(sum(abs(k), {1}, true), 1e-6, std::nullopt));
        Tensor a = sum(mul(q.narrow(1, 0, 1), k), {2}, true);  // (B, N, 1)
        heads.push_back(sum(mul(a, v), {1}, true));            // (B, 1, d)
    }
    Tensor cls = linear(cat(heads, 2), m.proj->weight, m.proj->bias);
    return cat({cls, x.narrow(1, 1, x.size(1) - 1)}, 1);
}

}  // namespace

TEST_CASE("ClassAttention: only the class token queries, the others pass through",
          "[nn][sfree][sima]") {
    for (int64_t heads : {1, 4}) {
        nn::attention::ClassAttention attention(16, heads, heads == 4);
        randomize(attention, 3);
        Tensor x = random_input({3, 6, 16}, 4, -2, 2).to(DType::float32);
        Tensor y = attention.forward(x);
        require_close(y, class_attention_reference(attention, x), 1e-4, 1e-6);
        require_close(y.narrow(1, 1, 5), x.narrow(1, 1, 5), 0, 0);
    }
    nn::attention::ClassAttention attention(8, 2);
    CHECK(attention.forward(ones({2, 1, 8})).shape() == Shape{2, 1, 8});
    require_error([&] { attention.forward(ones({2, 3, 6})); }, {"[ClassAttention]", "[2, 3, 6]"});
}

TEST_CASE("ClassAttentionBlock keeps the official quirks in both tokens_norm variants",
          "[nn][sfree][sima]") {
    Tensor x = random_input({2, 5, 8}, 5, -2, 2).to(DType::float32);
    nn::sima::ClassAttentionBlock plain(8, 2, {});  // eta None: no gammas
    CHECK(!plain.gamma1.defined());
    CHECK(plain.num_parameters() == 2 * 16 + 8 * 24 + 8 * 8 + 8 + 32 * 8 + 32 + 8 * 32 + 8);
    randomize(plain, 6);
    // patches: x + norm1(x), not normalised again, then doubled by the last residual
    Tensor patches = add(x, plain.norm1->forward(x)).narrow(1, 1, 4);
    require_close(plain.forward(x).narrow(1, 1, 4), mul(patches, 2.0), 1e-5, 1e-6);
    CHECK(plain.forward(ones({2, 1, 8})).shape() == Shape{2, 1, 8});  // the class token alone

    nn::sima::ClassAttentionBlock normed(8, 2, {.eta = 0.5, .tokens_norm = true});
    require_close(normed.gamma2, full({8}, 0.5), 0, 0);
    randomize(normed, 7);
    Tensor u = add(x, mul(normed.gamma1, normed.attn->forward(normed.norm1->forward(x))));
    Tensor v = normed.norm2->forward(u);
    Tensor want_cls =
        add(v.narrow(1, 0, 1), mul(normed.gamma2, normed.mlp->forward(v.narrow(1, 0, 1))));
    Tensor y = normed.forward(x);
    require_close(y.narrow(1, 1, 4), mul(v.narrow(1, 1, 4), 2.0), 1e-5, 1e-6);
    require_close(y.narrow(1, 0, 1), want_cls, 1e-5, 1e-6);
    require_error([&] { normed.forward(ones({2, 5})); }, {"[ClassAttentionBlock]", "[2, 5]"});
}

TEST_CASE("LPI is two depthwise convs around GELU and BatchNorm on the row-major grid",
          "[nn][sfree][sima]") {
    nn::sima::LPI lpi(4);
    randomize(lpi, 8);
    Tensor x = random_input({2, 12, 4}, 9).to(DType::float32);  // grid 3 x 4
    Tensor grid = x.transpose(1, 2).reshape({2, 4, 3, 4});
    Tensor h = conv2d(grid, lpi.conv1->weight, lpi.conv1->bias, {1}, {1}, {1}, 4);
    h = batch_norm(gelu(h), Tensor(), Tensor(), lpi.bn->weight, lpi.bn->bias, true);
    h = conv2d(h, lpi.conv2->weight, lpi.conv2->bias, {1}, {1}, {1}, 4);
    Tensor want = h.reshape({2, 4, 12}).transpose(1, 2);
    require_close(lpi.forward(x, 3, 4), want, 1e-5, 1e-6);
    nn::attention::AttentionContext context;
    context.grid = {3, 4};
    require_close(lpi.forward(x, context), want, 1e-5, 1e-6);
    require_error([&] { lpi.forward(x, 4, 4); }, {"[LPI]", "4 x 4", "[2, 12, 4]"});
    context.prefix_tokens = 1;
    require_error([&] { lpi.forward(x, context); }, {"[LPI]", "prefix"});
    require_error([] { nn::sima::LPI bad(4, 2); }, {"[LPI]", "odd kernel_size"});
}

TEST_CASE("SimA model parts: float64 gradients match finite differences",
          "[nn][sfree][sima][gradcheck]") {
    Tensor x = random_input({2, 6, 8}, 10, -1.5, 1.5);
    nn::attention::ClassAttention attention(8, 2, true);
    nn::sima::ClassAttentionBlock block(8, 2, {.qkv_bias = true, .eta = 0.7});
    nn::sima::ClassAttentionBlock block_tn(8, 2, {.eta = 1.0, .tokens_norm = true});
    nn::Module* modules[] = {&attention, &block, &block_tn};
    for (size_t i = 0; i < 3; ++i) {
        INFO(modules[i]->type_name() << " #" << i);
        randomize(*modules[i], 30 + i);
        modules[i]->to(DType::float64);
        module_gradcheck(*modules[i],
                         [&](const std::vector<Tensor>& in) { return modules[i]->forward(in[0]); },
                         {x});
    }
    nn::sima::LPI lpi(3);
    nn::sima::SimABlock sima_block(8, 2, {.mlp_ratio = 1.5, .qkv_bias = true, .eta = 0.6});
    randomize(lpi, 40);
    randomize(sima_block, 41);
    lpi.to(DType::float64);
    sima_block.to(DType::float64);
    module_gradcheck(lpi, [&](const std::vector<Tensor>& in) { return lpi.forward(in[0], 2, 3); },
                     {random_input({2, 6, 3}, 11)});
    module_gradcheck(sima_block,
                     [&](const std::vector<Tensor>& in) { return sima_block.forward(in[0], 3, 2); },
                     {x});
    // eval-mode BatchNorm at batch 1 (PyTorch 1.13's CPU BatchNorm backward is wrong there when
    // the incoming gradient is transposed; lumen is checked against finite differences instead)
    lpi.eval();
    module_gradcheck(lpi, [&](const std::vector<Tensor>& in) { return lpi.forward(in[0], 3, 2); },
                     {random_input({1, 6, 3}, 12)});
}

TEST_CASE("SimABlock: shapes, gammas and errors", "[nn][sfree][sima]") {
    nn::sima::SimABlock block(16, 4, {.qkv_bias = true});
    require_close(block.gamma3, ones({16}), 0, 0);  // eta unset: 1.0
    CHECK(block.forward(random_input({2, 12, 16}, 13).to(DType::float32), 3, 4).shape() ==
          Shape{2, 12, 16});
    CHECK(block.tensor("local_mp.bn.running_var").shape() == Shape{16});
    require_error([&] { block.forward(ones({2, 12, 16}), 4, 4); }, {"[LPI]", "4 x 4"});
    require_error([&] { block.forward(ones({2, 12, 8}), 3, 4); }, {"[SimABlock]", "[2, 12, 8]"});
    require_error([] { nn::sima::SimABlock bad(16, 4, {.attn_drop = 0.1}); },
                  {"[SimA]", "attn_drop"});
}
