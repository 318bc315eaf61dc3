// matmul and linear: every torch.matmul shape class against a naive triple loop, strided and
// broadcast operands, empty and size-1 dims, float64 gradchecks, gradient layout, and errors.
#include <sstream>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// torch.matmul by definition: 1-D operands get a dim that is dropped again, batch dims
// broadcast, and each output element is a plain sum over k in double.
Tensor reference_matmul(Tensor a, Tensor b) {
    NoGradGuard no_grad;
    bool a_vector = a.ndim() == 1, b_vector = b.ndim() == 1;
    if (a_vector) a = a.unsqueeze(0);
    if (b_vector) b = b.unsqueeze(1);
    int64_t n = a.size(-2), k = a.size(-1), m = b.size(-1);
    Shape batch = broadcast_shapes(Shape(a.shape().begin(), a.shape().end() - 2),
                                   Shape(b.shape().begin(), b.shape().end() - 2), "reference");
    Shape a_full = batch, b_full = batch, out_shape = batch;
    a_full.insert(a_full.end(), {n, k});
    b_full.insert(b_full.end(), {k, m});
    std::vector<double> av = a.expand(a_full).to_vector<double>();
    std::vector<double> bv = b.expand(b_full).to_vector<double>();
    int64_t batches = shape_numel(batch);
    std::vector<double> out(size_t(batches * n * m), 0.0);
    for (int64_t i = 0; i < batches; ++i)
        for (int64_t r = 0; r < n; ++r)
            for (int64_t c = 0; c < m; ++c) {
                double total = 0;
                for (int64_t j = 0; j < k; ++j)
                    total += av[size_t((i * n + r) * k + j)] * bv[size_t((i * k + j) * m + c)];
                out[size_t((i * n + r) * m + c)] = total;
            }
    if (!a_vector) out_shape.push_back(n);
    if (!b_vector) out_shape.push_back(m);
    return from_vector(out).reshape(out_shape);  // out_shape may be 0-d
}

void check_against_reference(const Tensor& a, const Tensor& b, double rtol = 1e-12) {
    INFO("shapes " << text(a.shape()) << " @ " << text(b.shape()) << ", " << a.dtype());
    Tensor got = matmul(a, b);
    CHECK(got.dtype() == a.dtype());
    require_close(got, reference_matmul(a, b), rtol, rtol);
}

struct ShapePair {
    Shape a, b;
};

// One pair per torch.matmul shape class, plus the batch layouts the implementation treats
// separately (batch @ matrix folded into one GEMM, matrix @ batch, broadcast size-1 dims).
const std::vector<ShapePair> kShapeClasses = {
    {{5}, {5}},
    {{5}, {5, 3}},
    {{4, 5}, {5}},
    {{4, 5}, {5, 3}},
    {{2, 3, 4, 5}, {3, 5, 6}},
    {{3, 4, 5}, {5}},
    {{5}, {3, 5, 2}},
    {{3, 4, 5}, {5, 2}},
    {{4, 5}, {3, 5, 2}},
    {{2, 1, 4, 5}, {3, 5, 2}},
    {{1, 4, 5}, {3, 5, 2}},
};

}  // namespace

TEST_CASE("matmul: every shape class matches a naive reference in float64 and float32",
          "[ops][matmul]") {
    uint64_t seed = 1;
    for (const ShapePair& pair : kShapeClasses) {
        Tensor a = random_input(pair.a, seed++), b = random_input(pair.b, seed++);
        check_against_reference(a, b);
        check_against_reference(a.to(DType::float32), b.to(DType::float32), 1e-5);
    }
    Tensor dot = matmul(tensor({1, 2, 3}), tensor({4, 5, 6}));
    CHECK(dot.ndim() == 0);
    CHECK(dot.item<double>() == 32.0);
}

TEST_CASE("matmul: transposed, sliced, permuted and expanded operands need no contiguous input",
          "[ops][matmul]") {
    Tensor a = random_input({6, 5}, 1), b = random_input({5, 4}, 2);
    check_against_reference(noncontiguous(a), b);             // column-major a
    check_against_reference(a, noncontiguous(b));             // column-major b
    check_against_reference(random_input({5, 6}, 3).t(), b);  // transposed view
    Tensor wide = random_input({6, 10}, 4);
    check_against_reference(wide.slice(1, 0, 10, 2), b);                 // both strides > 1: copied
    check_against_reference(wide.slice(0, 1, 6, 1).narrow(1, 2, 5), b);  // offset rows
    Tensor batch = random_input({4, 3, 5}, 5);
    check_against_reference(batch.permute({1, 0, 2}), b);  // batch @ matrix, not foldable
    check_against_reference(noncontiguous(batch), b);      // transposed batch stays batched
    check_against_reference(batch, random_input({5, 2}, 6).expand({4, 5, 2}));  // stride-0 batch
    check_against_reference(random_input({1, 5}, 7).expand({6, 5}), b);         // stride-0 rows
    Tensor q = random_input({2, 3, 7, 4}, 8), k = random_input({2, 3, 7, 4}, 9);
    check_against_reference(q, k.transpose(-2, -1));  // attention scores q k^T
    check_against_reference(q.to(DType::float32), k.to(DType::float32).transpose(-2, -1), 1e-5);
}

TEST_CASE("matmul: size-0 and size-1 dims", "[ops][matmul]") {
    CHECK(matmul(zeros({0, 3}), zeros({3, 4})).shape() == Shape{0, 4});
    CHECK(matmul(zeros({2, 3}), zeros({3, 0})).shape() == Shape{2, 0});
    CHECK(matmul(zeros({0, 2, 3}), zeros({3, 4})).shape() == Shape{0, 2, 4});
    CHECK(matmul(zeros({2, 0, 3}), zeros({2, 3, 4})).shape() == Shape{2, 0, 4});
    // An empty inner dim gives zeros (an empty sum), also when it comes from a 1-D operand.
    require_close(matmul(ones({2, 0}), ones({0, 3})), std::vector<double>(6, 0.0));
    require_close(matmul(ones({0}), ones({0})), {0.0});
    require_close(linear(ones({2, 0}), ones({3, 0}), tensor({1, 2, 3})), {1, 2, 3, 1, 2, 3});
    for (const ShapePair& pair : std::vector<ShapePair>{{{1}, {1}},
                                                        {{1, 1}, {1, 1}},
                                                        {{1, 3}, {3, 1}},
                                                        {{3, 1}, {1, 3}},
                                                        {{1, 1, 3}, {3, 1}},
                                                        {{4, 1, 3}, {1, 3, 2}}}) {
        check_against_reference(random_input(pair.a, 10), random_input(pair.b, 11));
    }
}

TEST_CASE("matmul: small float products skip Eigen's packing and still match the reference",
          "[ops][matmul]") {
    // Under 300,000 multiply-adds with unit-stride rows of b, 16 columns or more: six rows of a
    // by 16 columns of b in registers, the last columns zero-padded.
    auto f32 = [](const Shape& shape, uint64_t seed) {
        return random_input(shape, seed).to(DType::float32);
    };
    check_against_reference(f32({64, 64}, 1), f32({64, 64}, 2), 1e-5);
    check_against_reference(f32({13, 7}, 3), f32({7, 37}, 4), 1e-5);  // 6 + 6 + 1 rows, 5 left
    check_against_reference(f32({1, 20}, 5), f32({20, 16}, 6), 1e-5);
    check_against_reference(f32({6, 1}, 7), f32({1, 16}, 8), 1e-5);
    check_against_reference(f32({8, 11, 32}, 9), f32({8, 32, 32}, 10), 1e-5);  // per head
    check_against_reference(f32({9, 13}, 11).t(), f32({9, 40}, 12), 1e-5);     // a transposed
    check_against_reference(f32({5, 9}, 13), f32({9, 50}, 14).narrow(1, 3, 40),
                            1e-5);  // b rows 50 apart
    require_close(matmul(ones({5, 0}), ones({0, 20})), std::vector<double>(100, 0.0));
    // A bias, with a weight whose transpose has unit-stride rows (linear's x @ w^T).
    Tensor x = f32({10, 12}, 15), w_t = f32({12, 33}, 16), bias = f32({33}, 17);
    Tensor want = add(reference_matmul(x, w_t), bias.to(DType::float64));
    require_close(linear(x, w_t.t(), bias), want.to_vector<double>(), 1e-5, 1e-5);
}

TEST_CASE("matmul: large and many-batch products match the reference for any thread count",
          "[ops][matmul]") {
    // Big enough for Eigen's blocked, multithreaded GEMM; many small batches take the
    // parallel-over-batch path.
    Tensor a = random_input({150, 130}, 1).to(DType::float32);
    Tensor b = random_input({130, 170}, 2).to(DType::float32);
    Tensor batched_a = random_input({64, 9, 7}, 3), batched_b = random_input({64, 7, 5}, 4);
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        check_against_reference(a, b, 1e-5);
        check_against_reference(batched_a, batched_b);
        check_against_reference(batched_a, random_input({7, 5}, 5));
    }
    set_num_threads(0);
}

TEST_CASE("matmul: gradients match finite differences for every shape class",
          "[ops][matmul][gradcheck]") {
    auto product = [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); };
    const std::vector<ShapePair> small = {
        {{3}, {3}},
        {{3}, {3, 2}},
        {{2, 3}, {3}},
        {{2, 3}, {3, 4}},
        {{2, 3, 2, 4}, {3, 4, 2}},
        {{2, 3, 4}, {4}},
        {{3}, {2, 3, 2}},
        {{2, 3, 4}, {4, 2}},
        {{3, 4}, {2, 4, 2}},
        {{2, 1, 3, 2}, {3, 2, 2}},
    };
    uint64_t seed = 20;
    for (const ShapePair& pair : small) {
        INFO("shapes " << text(pair.a) << " @ " << text(pair.b));
        gradcheck(product, {random_input(pair.a, seed), random_input(pair.b, seed + 1)});
        seed += 2;
    }
    gradcheck(product, {noncontiguous(random_input({3, 4}, 40)), random_input({4, 2}, 41)});
    gradcheck(product, {random_input({2, 3, 4}, 42), noncontiguous(random_input({4, 3}, 43))});
    gradcheck(product, {random_input({2, 3, 4}, 44), noncontiguous(random_input({2, 4, 3}, 45))});
    gradcheck([](const std::vector<Tensor>& in) { return matmul(in[0], in[1].t()); },
              {random_input({2, 3, 4}, 46), random_input({5, 4}, 47)});
}

TEST_CASE("linear: values and gradients with and without bias", "[ops][matmul][gradcheck]") {
    Tensor x = random_input({2, 3, 4}, 1), weight = random_input({5, 4}, 2);
    Tensor bias = random_input({5}, 3);
    Tensor expected = reference_matmul(x, weight.t());
    require_close(linear(x, weight), expected, 1e-12);
    require_close(linear(x, weight, bias), add(expected, bias), 1e-12);
    require_close(linear(x.select(0, 0).select(0, 0), weight, bias),
                  add(reference_matmul(x.select(0, 0).select(0, 0), weight.t()), bias), 1e-12);
    Tensor shared_bias = scalar_tensor(1.5, DType::float64).expand({5});  // stride 0
    require_close(linear(x, weight, shared_bias), add(expected, 1.5), 1e-12);
    require_close(linear(x, weight, random_input({10}, 8).slice(0, 0, 10, 2)),
                  add(expected, random_input({10}, 8).slice(0, 0, 10, 2)), 1e-12);
    auto with_bias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); };
    auto without_bias = [](const std::vector<Tensor>& in) { return linear(in[0], in[1]); };
    gradcheck(with_bias, {x, weight, bias});
    gradcheck(with_bias, {random_input({4}, 4), weight, bias});
    gradcheck(with_bias, {noncontiguous(random_input({3, 4}, 5)), weight, bias});
    gradcheck(without_bias, {x, weight});
    gradcheck(without_bias, {random_input({6, 4}, 6), weight});
}

TEST_CASE("matmul and linear: gradients of transposed views come back contiguous",
          "[ops][matmul]") {
    Tensor x = random_input({2, 3, 4}, 1);
    Tensor weight = random_input({5, 4}, 2).requires_grad_();
    Tensor bias = random_input({5}, 3).requires_grad_();
    sum(linear(x, weight, bias)).backward();
    REQUIRE(weight.grad().defined());
    CHECK(weight.grad().is_contiguous());
    CHECK(weight.grad().shape() == Shape{5, 4});
    // d sum(y) / d bias = number of rows
    require_close(bias.grad(), std::vector<double>(5, 6.0));

    // Attention scores q k^T and a transposed left operand x^T y.
    Tensor q = random_input({2, 5, 3}, 4).requires_grad_();
    Tensor k = random_input({2, 5, 3}, 5).requires_grad_();
    sum(matmul(q, k.transpose(-2, -1))).backward();
    CHECK(q.grad().is_contiguous());
    CHECK(k.grad().is_contiguous());
    Tensor left = random_input({4, 3}, 6).requires_grad_();
    sum(matmul(left.t(), random_input({4, 2}, 7))).backward();
    CHECK(left.grad().is_contiguous());
}

TEST_CASE("matmul and linear: errors name the op and the offending shapes and dtypes",
          "[ops][matmul]") {
    require_error(
        [] {
            matmul(zeros({2, 3}), zeros({4, 5}));
        },
        {"[matmul] shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)"});
    require_error([] { matmul(zeros({2, 3, 4}), zeros({5})); }, {"[matmul]", "(4 != 5)"});
    require_error(
        [] {
            matmul(zeros({2, 3}), zeros({3, 2}, DType::float64));
        },
        {"[matmul]", "float32", "float64", "[2, 3]", "[3, 2]"});
    require_error([] { matmul(scalar_tensor(2), zeros({3})); },
                  {"[matmul]", "at least 1 dim", "[]"});
    require_error(
        [] {
            matmul(zeros({2, 2}, DType::int64), zeros({2, 2}, DType::int64));
        },
        {"[matmul]", "int64"});
    require_error(
        [] {
            matmul(zeros({2, 2, 3}), zeros({3, 3, 4}));
        },
        {"[matmul] batch dims [2] and [3] of shapes [2, 2, 3] and [3, 3, 4]"});
    require_error(
        [] {
            linear(zeros({2, 3}), zeros({4, 5}));
        },
        {"[linear]", "[2, 3]", "[4, 5]", "(3 != 5)"});
    require_error([] { linear(zeros({2, 3}), zeros({3})); }, {"[linear]", "weight", "[3]"});
    require_error(
        [] {
            linear(zeros({2, 3}), zeros({4, 3}), zeros({3}));
        },
        {"[linear]", "bias", "[3]"});
    require_error(
        [] {
            linear(zeros({2, 3}), zeros({4, 3}), zeros({4}, DType::float64));
        },
        {"[linear]", "float64", "float32"});
}
