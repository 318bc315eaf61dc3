// scaled_dot_product_attention (the fused op, ops/attention.h): finite differences in float64,
// and the fused outputs and gradients against the unfused composition (attention_reference)
// on shapes of several tiles (64 query rows, 128 keys per tile) with every option: broadcast
// key-padding and learned biases, causal masking, dropout, non-contiguous operands; fully
// masked rows, empty dims, and the argument errors.
#include <cmath>
#include <limits>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

struct Case {
    Tensor q, k, v, bias;
};

Case make_case(int64_t b, int64_t h, int64_t n, int64_t m, int64_t d, int64_t dv, DType dtype,
               uint64_t seed) {
    Case c;
    c.q = random_input({b, h, n, d}, seed, -2.0, 2.0).to(dtype);
    c.k = random_input({b, h, m, d}, seed + 1, -2.0, 2.0).to(dtype);
    c.v = random_input({b, h, m, dv}, seed + 2).to(dtype);
    return c;
}

// Outputs and the gradients of sum(out * w) with respect to q, k, v (and the bias when it
// requires grad), by the fused op or by the reference.
std::vector<Tensor> run(bool fused, const Case& c, AttentionOptions options) {
    std::vector<Tensor> leaves;
    for (const Tensor& t : {c.q, c.k, c.v}) leaves.push_back(t.detach().requires_grad_());
    if (options.bias.defined() && c.bias.defined()) {
        options.bias = c.bias.detach();
        options.bias.requires_grad_();
        leaves.push_back(options.bias);
    }
    Tensor out = fused ? scaled_dot_product_attention(leaves[0], leaves[1], leaves[2], options)
                       : attention_reference(leaves[0], leaves[1], leaves[2], options);
    Tensor w = random_input(out.shape(), 99).to(out.dtype());
    std::vector<Tensor> grads = grad({sum(mul(out, w))}, leaves);
    grads.insert(grads.begin(), out.detach());
    return grads;
}

void require_same(const Case& c, const AttentionOptions& options, double rtol, double atol) {
    std::vector<Tensor> fused = run(true, c, options), reference = run(false, c, options);
    REQUIRE(fused.size() == reference.size());
    const char* names[] = {"out", "grad q", "grad k", "grad v", "grad bias"};
    for (size_t i = 0; i < fused.size(); ++i) {
        INFO(names[i]);
        require_close(fused[i], reference[i], rtol, atol);
    }
}

}  // namespace

TEST_CASE("scaled_dot_product_attention: gradients match finite differences", "[attention]") {
    Tensor bias = random_input({3, 5, 7}, 7);
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return scaled_dot_product_attention(in[0], in[1], in[2], {.bias = in[3]});
        },
        {random_input({2, 3, 5, 4}, 1, -2, 2), random_input({2, 3, 7, 4}, 2, -2, 2),
         random_input({2, 3, 7, 3}, 3), bias});
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return scaled_dot_product_attention(in[0], in[1], in[2],
                                                {.scale = 0.7, .causal = true});
        },
        {random_input({1, 2, 6, 3}, 4, -2, 2), random_input({1, 2, 6, 3}, 5, -2, 2),
         random_input({1, 2, 6, 5}, 6)});
    // Dropout: the same draw in every call, so the function is deterministic.
    AttentionDropout draw{0.4, 11, 3};
    gradcheck(
        [draw](const std::vector<Tensor>& in) {
            return scaled_dot_product_attention(in[0], in[1], in[2], {.dropout = draw});
        },
        {random_input({2, 1, 5, 4}, 7, -2, 2), random_input({2, 1, 9, 4}, 8, -2, 2),
         random_input({2, 1, 9, 2}, 9)});
}

TEST_CASE("scaled_dot_product_attention: fused equals the unfused ops over several tiles",
          "[attention]") {
    // 150 queries and 300 keys: three query tiles and three key tiles, the last ones partial.
    Case c = make_case(2, 3, 150, 300, 16, 8, DType::float64, 1);
    SECTION("plain") { require_same(c, {}, 1e-10, 1e-12); }
    SECTION("explicit scale") { require_same(c, {.scale = 0.05}, 1e-10, 1e-12); }
    SECTION("key padding mask as a (B, 1, 1, M) bias of -inf") {
        std::vector<double> values(600, 0.0);
        for (int64_t j = 500; j < 600; ++j)  // sample 1: the last 100 keys are padding
            values[size_t(j)] = -std::numeric_limits<double>::infinity();
        Tensor pad = from_vector(values, {2, 1, 1, 300});
        require_same(c, {.bias = pad}, 1e-10, 1e-12);
    }
    SECTION("learned (H, N, M) bias, gradient summed over the batch") {
        c.bias = random_input({3, 150, 300}, 5, -3, 3);
        require_same(c, {.bias = c.bias}, 1e-10, 1e-12);
    }
    SECTION("learned bias broadcast over rows and heads (1, 1, 1, M)") {
        c.bias = random_input({1, 1, 1, 300}, 6, -3, 3);
        require_same(c, {.bias = c.bias}, 1e-10, 1e-12);
    }
    SECTION("causal") {
        Case square = make_case(1, 2, 200, 200, 8, 8, DType::float64, 3);
        require_same(square, {.causal = true}, 1e-10, 1e-12);
    }
    SECTION("dropout: the mask dropout() draws for the map") {
        Generator gen(42);
        gen.set_offset(17);
        AttentionDropout draw =
            draw_attention_dropout(0.3, 2 * 3 * 150 * 300, DType::float64, &gen);
        require_same(c, {.dropout = draw}, 1e-10, 1e-12);
        require_same(c, {.causal = false, .dropout = {1.0, 42, 17}}, 1e-10, 1e-12);
    }
    SECTION("non-contiguous operands (heads split off a fused qkv projection)") {
        Tensor qkv = random_input({2, 150, 3, 3, 16}, 4, -2, 2).permute({2, 0, 3, 1, 4});
        Case views{qkv.select(0, 0), qkv.select(0, 1), qkv.select(0, 2), Tensor()};
        REQUIRE_FALSE(views.q.is_contiguous());
        require_same(views, {}, 1e-10, 1e-12);
    }
    SECTION("float32 with dropout, a bias and causal masking") {
        Case f = make_case(2, 2, 130, 130, 32, 32, DType::float32, 8);
        f.bias = random_input({2, 130, 130}, 9).to(DType::float32);
        AttentionDropout draw = draw_attention_dropout(0.2, 2 * 2 * 130 * 130, DType::float32);
        require_same(f, {.bias = f.bias, .causal = true, .dropout = draw}, 2e-4, 2e-5);
    }
}

TEST_CASE("scaled_dot_product_attention: the dropout draw advances the generator as dropout",
          "[attention]") {
    Generator a(5), b(5);
    draw_attention_dropout(0.5, 1001, DType::float32, &a);
    dropout(zeros({1001}), 0.5, true, &b);
    CHECK(a.offset() == b.offset());
    AttentionDropout none = draw_attention_dropout(0.0, 1001, DType::float32, &a);
    CHECK(none.p == 0.0);
    CHECK(a.offset() == b.offset());
}

TEST_CASE("scaled_dot_product_attention: masked rows and empty dims as the unfused ops",
          "[attention]") {
    Case c = make_case(1, 1, 3, 4, 2, 2, DType::float64, 2);
    std::vector<double> values(12, 0.0);
    for (size_t j = 4; j < 8; ++j) values[j] = -std::numeric_limits<double>::infinity();
    Tensor mask = from_vector(values, {1, 1, 3, 4});  // row 1 masked entirely
    Tensor out = scaled_dot_product_attention(c.q, c.k, c.v, {.bias = mask});
    std::vector<double> got = out.to_vector<double>();
    CHECK(std::isnan(got[2]));  // row 1: softmax of only -inf is NaN
    CHECK(std::isfinite(got[0]));
    require_close(out.select(2, 0),
                  attention_reference(c.q, c.k, c.v, {.bias = mask}).select(2, 0));
    // No keys: the product with an empty map is 0.
    Tensor none = scaled_dot_product_attention(c.q, zeros({1, 1, 0, 2}, DType::float64),
                                               zeros({1, 1, 0, 2}, DType::float64));
    require_close(none, zeros({1, 1, 3, 2}, DType::float64));
    CHECK(
        scaled_dot_product_attention(zeros({0, 2, 3, 4}), zeros({0, 2, 5, 4}), zeros({0, 2, 5, 6}))
            .shape() == Shape{0, 2, 3, 6});
}

TEST_CASE("scaled_dot_product_attention: argument errors name the op and the values",
          "[attention]") {
    Tensor q = zeros({1, 2, 3, 4}), k = zeros({1, 2, 5, 4}), v = zeros({1, 2, 5, 6});
    require_error(
        [&] {
            scaled_dot_product_attention(q, zeros({1, 2, 5, 3}), v);
        },
        {"[scaled_dot_product_attention]", "[1, 2, 5, 3]"});
    require_error(
        [&] {
            scaled_dot_product_attention(q, k, zeros({2, 2, 5, 6}));
        },
        {"[scaled_dot_product_attention]", "equal batch dims"});
    require_error(
        [&] {
            scaled_dot_product_attention(zeros({3, 4}), zeros({5, 4}), zeros({5, 6}));
        },
        {"[scaled_dot_product_attention]", "at least one batch dim"});
    require_error([&] { scaled_dot_product_attention(q, k, v, {.causal = true}); },
                  {"causal", "N = 3, M = 5"});
    require_error(
        [&] {
            scaled_dot_product_attention(q, k, v, {.bias = zeros({2, 3, 4})});
        },
        {"bias of shape [2, 3, 4]", "[1, 2, 3, 5]"});
    require_error(
        [&] {
            scaled_dot_product_attention(q, k, v, {.dropout = {1.5, 0, 0}});
        },
        {"dropout p must be in [0, 1], got 1.5"});
    require_error([&] { scaled_dot_product_attention(q.to(DType::float64), k, v); },
                  {"share a dtype"});
    require_error([&] { scaled_dot_product_attention(q.to(DType::int64), k, v); },
                  {"float32 or float64"});
}
