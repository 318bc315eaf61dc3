// linear_attention (the fused op, ops/linear_attention.h): finite differences in float64, and
// the fused outputs and gradients against the composition of ops (linear_attention_reference)
// on batched, broadcast and strided operands in float64 and float32; empty dims, 2-D operands
// and the argument errors.
#include "ops/linear_attention.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// Output and the gradients of sum(out * w) with respect to q, k, v, fused or by the reference.
std::vector<Tensor> run(bool fused, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                        double eps) {
    std::vector<Tensor> leaves;
    for (const Tensor& t : {q_in, k_in, v_in}) leaves.push_back(t.detach().requires_grad_());
    // The operands the op sees may be views of the leaves (transposes, expands).
    Tensor out = fused ? linear_attention(leaves[0], leaves[1], leaves[2], eps)
                       : linear_attention_reference(leaves[0], leaves[1], leaves[2], eps);
    Tensor w = random_input(out.shape(), 99).to(out.dtype());
    std::vector<Tensor> grads = grad({sum(mul(out, w))}, leaves);
    grads.insert(grads.begin(), out.detach());
    return grads;
}

void require_same(const Tensor& q, const Tensor& k, const Tensor& v, double rtol, double atol,
                  double eps = 1e-6) {
    std::vector<Tensor> fused = run(true, q, k, v, eps), reference = run(false, q, k, v, eps);
    const char* names[] = {"out", "grad q", "grad k", "grad v"};
    for (size_t i = 0; i < fused.size(); ++i) {
        INFO(names[i]);
        REQUIRE(fused[i].shape() == reference[i].shape());
        require_close(fused[i], reference[i], rtol, atol);
    }
}

}  // namespace

TEST_CASE("linear_attention: gradients match finite differences", "[attention][linear]") {
    gradcheck([](const std::vector<Tensor>& in) { return linear_attention(in[0], in[1], in[2]); },
              {random_input({2, 3, 5, 4}, 1, -2, 2), random_input({2, 3, 7, 4}, 2, -2, 2),
               random_input({2, 3, 7, 3}, 3)});
    // v shared by a broadcast dim (GDLA's two maps), a large eps, column-major q and k.
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return linear_attention(in[0].transpose(-2, -1), in[1].transpose(-2, -1), in[2], 0.5);
        },
        {random_input({2, 2, 4, 6}, 4, -2, 2), random_input({2, 2, 4, 5}, 5, -2, 2),
         random_input({2, 1, 5, 3}, 6)});
}

TEST_CASE("linear_attention: fused agrees with the composition of ops", "[attention][linear]") {
    SECTION("batched heads, N != M, dk != dv, float64") {
        require_same(random_input({2, 4, 37, 8}, 1, -3, 3), random_input({2, 4, 53, 8}, 2, -3, 3),
                     random_input({2, 4, 53, 6}, 3), 1e-12, 1e-13);
    }
    SECTION("broadcast v and k, strided q (PVT-GDLA's channel-major views), float64") {
        Tensor q = random_input({3, 2, 2, 16, 40}, 4, -2, 2).transpose(-2, -1);  // (.., 40, 16)
        Tensor k = random_input({3, 2, 1, 40, 16}, 5, -2, 2);
        Tensor v = random_input({3, 2, 1, 24, 40}, 6).transpose(-2, -1);  // column-major
        require_same(q, k, v, 1e-12, 1e-13);
    }
    SECTION("heads as strided slices of a packed projection, float32") {
        Tensor t = random_input({2, 50, 3 * 32}, 7, -2, 2).to(DType::float32);
        auto heads = [&](int64_t block) {
            return t.narrow(-1, block * 32, 32).view({2, 50, 4, 8}).transpose(1, 2);
        };
        require_same(heads(0), heads(1), heads(2), 2e-5, 1e-6);
    }
    SECTION("2-D operands and eps 0") {
        require_same(random_input({9, 3}, 8), random_input({11, 3}, 9), random_input({11, 2}, 10),
                     1e-12, 1e-13, 0.0);
    }
    SECTION("empty dims follow the reference") {
        Tensor y = linear_attention(zeros({2, 0, 3}), zeros({2, 4, 3}), zeros({2, 4, 5}));
        REQUIRE(y.shape() == Shape{2, 0, 5});
        Tensor no_keys = linear_attention(ones({1, 2, 3}), zeros({1, 0, 3}), zeros({1, 0, 4}), 0.5);
        REQUIRE(no_keys.shape() == Shape{1, 2, 4});
        REQUIRE(sum(abs(no_keys)).item<double>() == 0.0);
    }
}

TEST_CASE("linear_attention: argument errors name the op and the values", "[attention][linear]") {
    require_error(
        [] {
            linear_attention(ones({4}), ones({4, 2}), ones({4, 2}));
        },
        {"[linear_attention]", "[4]"});
    require_error(
        [] {
            linear_attention(ones({4, 3}), ones({5, 2}), ones({5, 2}));
        },
        {"[linear_attention]", "same feature size", "[4, 3]"});
    require_error(
        [] {
            linear_attention(ones({4, 2}), ones({5, 2}), ones({6, 2}));
        },
        {"[linear_attention]", "number of keys", "[6, 2]"});
    require_error(
        [] {
            linear_attention(ones({4, 2}), ones({5, 2}).to(DType::float64), ones({5, 2}));
        },
        {"[linear_attention]", "float64"});
    require_error(
        [] {
            linear_attention(ones({4, 2}), ones({5, 2}), ones({5, 2}), -1.0);
        },
        {"[linear_attention]", "eps", "-1"});
    require_error(
        [] {
            linear_attention(ones({2, 4, 2}), ones({3, 5, 2}), ones({3, 5, 2}));
        },
        {"[linear_attention]", "cannot be broadcast"});
}
