// Mixed precision (core/autocast.h): the guard's state, the GEMM policy of matmul and linear
// (float32 operands rounded to the half dtype, float32 accumulation and output, float32
// gradients computed from the rounded incoming gradient), what stays untouched (float64,
// softmax/norm/loss inputs, the plain half path), and a ViT training forward and backward
// under both half dtypes. On the CPU the lowered GEMMs are emulated with the same numbers.
#include <cmath>

#include "core/autocast.h"
#include "models/vit.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/reduce.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// x rounded to `half` and back: the operand a lowered GEMM multiplies.
Tensor rounded(const Tensor& x, DType half) { return x.detach().to(half).to(DType::float32); }

double max_abs(const Tensor& x) { return amax(abs(x)).item<double>(); }

}  // namespace

TEST_CASE("autocast: the guard turns the policy on per thread and nests", "[autocast]") {
    CHECK_FALSE(autocast::enabled());
    {
        autocast::Guard outer(DType::bfloat16);
        CHECK(autocast::enabled());
        CHECK(autocast::dtype() == DType::bfloat16);
        {
            autocast::Guard inner(DType::float16);
            CHECK(autocast::dtype() == DType::float16);
            autocast::Guard off(DType::float32);
            CHECK_FALSE(autocast::enabled());
        }
        CHECK(autocast::enabled());
        CHECK(autocast::dtype() == DType::bfloat16);
        DType half;
        CHECK(autocast::lowers_gemm(DType::float32, DType::float32, half));
        CHECK(half == DType::bfloat16);
        CHECK(autocast::lowers_gemm(DType::float32, DType::bfloat16, half));
        CHECK_FALSE(autocast::lowers_gemm(DType::bfloat16, DType::bfloat16, half));
        CHECK_FALSE(autocast::lowers_gemm(DType::float64, DType::float64, half));
        CHECK_FALSE(autocast::lowers_gemm(DType::float32, DType::float16, half));
    }
    CHECK_FALSE(autocast::enabled());
    require_error([] { autocast::Guard bad(DType::float64); },
                  {"[autocast]", "float16 or bfloat16", "float64"});
}

TEST_CASE("autocast: linear and matmul multiply rounded operands into float32", "[autocast]") {
    Tensor x = random_input({3, 5, 24}, 1, -3, 3).to(DType::float32);
    Tensor w = random_input({16, 24}, 2).to(DType::float32);
    Tensor b = random_input({16}, 3).to(DType::float32);
    Tensor q = random_input({2, 7, 8}, 4).to(DType::float32);
    Tensor k = random_input({2, 9, 8}, 5).to(DType::float32);
    for (DType half : {DType::bfloat16, DType::float16}) {
        INFO(half);
        Tensor y, scores;
        {
            autocast::Guard autocast(half);
            y = linear(x, w, b);
            scores = matmul(q, k.transpose(-2, -1));
        }
        CHECK(y.dtype() == DType::float32);
        CHECK(scores.dtype() == DType::float32);
        // The float32 kernel on the rounded operands: the same numbers (bias kept float32).
        require_close(y, linear(rounded(x, half), rounded(w, half), b), 0, 0);
        require_close(scores, matmul(rounded(q, half), rounded(k, half).transpose(-2, -1)), 0, 0);
        // ... and not the float32 product: the rounding is real (bf16 keeps 8 bits).
        const double error = max_abs(sub(y, linear(x, w, b)));
        CHECK(error > 0);
        CHECK(error < (half == DType::bfloat16 ? 0.2 : 0.02));
    }
}

TEST_CASE("autocast: the backward rounds the incoming gradient and returns float32 gradients",
          "[autocast]") {
    const DType half = DType::bfloat16;
    Tensor x = random_input({6, 12}, 6, -2, 2).to(DType::float32).requires_grad_();
    Tensor w = random_input({10, 12}, 7).to(DType::float32).requires_grad_();
    Tensor b = random_input({10}, 8).to(DType::float32).requires_grad_();
    Tensor g = random_input({6, 10}, 9, -3, 3).to(DType::float32);
    Tensor y;
    {
        autocast::Guard autocast(half);
        y = linear(x, w, b);
    }
    std::vector<Tensor> grads = grad({sum(mul(y, g))}, {x, w, b});
    for (const Tensor& t : grads) CHECK(t.dtype() == DType::float32);
    // dL/dx = round(g) round(W), dL/dW = round(g)^T round(x), dL/db = sum of g (unrounded).
    require_close(grads[0], matmul(rounded(g, half), rounded(w, half)), 1e-6, 1e-6);
    require_close(grads[1], matmul(rounded(g, half).t(), rounded(x, half)), 1e-6, 1e-6);
    require_close(grads[2], sum(g, {0}), 1e-6, 1e-6);
}

TEST_CASE("autocast: float64, the plain half path and other ops are left alone", "[autocast]") {
    Tensor a = random_input({4, 6}, 10), c = random_input({6, 3}, 11);  // float64
    Tensor logits = random_input({4, 5}, 12).to(DType::float32);
    Tensor target = from_vector(std::vector<int64_t>{0, 1, 2, 4});
    Tensor plain = matmul(a, c), plain_loss = cross_entropy(logits, target);
    autocast::Guard autocast(DType::bfloat16);
    require_close(matmul(a, c), plain, 0, 0);
    Tensor loss = cross_entropy(logits, target);  // losses see float32 inputs and compute so
    CHECK(loss.dtype() == DType::float32);
    require_close(loss, plain_loss, 0, 0);
    // Two half operands take the op's own half path, which computes on CUDA only.
    require_error(
        [] {
            matmul(ones({2, 2}).to(DType::bfloat16), ones({2, 2}).to(DType::bfloat16));
        },
        {"[matmul]", "CUDA only"});
}

TEST_CASE("autocast: a ViT trains under bf16 and fp16 close to float32", "[autocast]") {
    models::ViTConfig config = models::vit_config(4, {8, 8}, 1, 0.0);
    config.embed_dim = 32;
    config.depth = 2;
    config.num_heads = 4;
    manual_seed(3);
    models::ViT model(config);
    Tensor images = random_input({8, 1, 8, 8}, 13).to(DType::float32);
    Tensor labels = from_vector(std::vector<int64_t>{0, 1, 2, 3, 0, 1, 2, 3});
    auto step = [&](DType precision) {
        for (const Tensor& p : model.parameters()) p.set_grad(Tensor());
        Tensor loss;
        {
            autocast::Guard autocast(precision);
            loss = cross_entropy(model.forward(images), labels);
        }
        loss.backward();
        std::vector<Tensor> grads;
        for (const Tensor& p : model.parameters()) grads.push_back(p.grad());
        return std::make_pair(loss.item<double>(), grads);
    };
    auto [loss32, grads32] = step(DType::float32);
    for (DType half : {DType::bfloat16, DType::float16}) {
        INFO(half);
        auto [loss, grads] = step(half);
        CHECK(std::abs(loss - loss32) < (half == DType::bfloat16 ? 2e-2 : 3e-3) * loss32);
        CHECK(loss != loss32);
        for (size_t i = 0; i < grads.size(); ++i) {
            INFO("parameter " << i);
            REQUIRE(grads[i].dtype() == DType::float32);
            const double scale = max_abs(grads32[i]) + 1e-6;
            CHECK(max_abs(sub(grads[i], grads32[i])) <
                  (half == DType::bfloat16 ? 0.1 : 0.02) * scale);
        }
    }
}
