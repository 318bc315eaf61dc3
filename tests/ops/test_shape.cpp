// cat, stack, split and chunk: values, gradients and errors. (The view methods are covered
// in tests/core/test_tensor.cpp and test_autograd.cpp.)
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

TEST_CASE("cat joins along any dim and promotes dtypes", "[ops][shape]") {
    Tensor a = arange(0, 4, 1, DType::float32).reshape({2, 2});
    Tensor b = tensor({9, 8}, {2, 1});
    require_close(cat({a, b}, 1), {0, 1, 9, 2, 3, 8});
    require_close(cat({a, a}, 0), {0, 1, 2, 3, 0, 1, 2, 3});
    require_close(cat({a, b.t()}, -2), {0, 1, 2, 3, 9, 8});
    CHECK(cat({a, b.to(DType::float64)}, 1).dtype() == DType::float64);
    require_error([&] { cat({a, b}, 0); }, {"[cat]", "[2, 1]", "[2, 2]"});
    require_error([] { cat({}, 0); }, {"[cat]", "at least one"});
}

TEST_CASE("stack adds a dim", "[ops][shape]") {
    Tensor a = tensor({1, 2});
    Tensor b = tensor({3, 4});
    Tensor s0 = stack({a, b}, 0);
    CHECK(s0.shape() == Shape{2, 2});
    require_close(s0, {1, 2, 3, 4});
    require_close(stack({a, b}, 1), {1, 3, 2, 4});
    require_close(stack({a, b}, -1), {1, 3, 2, 4});
    require_error([&] { stack({a, tensor({1})}, 0); }, {"[stack]", "[1]", "[2]"});
}

TEST_CASE("split and chunk return views of the right sizes", "[ops][shape]") {
    Tensor x = arange(0, 10, 1, DType::float32);
    auto pieces = split(x, 4);
    REQUIRE(pieces.size() == 3);
    CHECK(pieces[2].shape() == Shape{2});
    CHECK(pieces[1].storage() == x.storage());
    require_close(pieces[1], {4, 5, 6, 7});
    auto sized = split(x, std::vector<int64_t>{3, 7});
    require_close(sized[0], {0, 1, 2});
    CHECK(chunk(x, 3).size() == 3);              // sizes 4, 4, 2
    CHECK(chunk(arange(0, 6), 4).size() == 3);   // sizes 2, 2, 2, as torch.chunk
    auto qkv = chunk(zeros({2, 5, 12}), 3, -1);
    CHECK(qkv[2].shape() == Shape{2, 5, 4});
    require_error([&] { split(x, std::vector<int64_t>{3, 3}); }, {"[split]", "add up to 6", "10"});
    require_error([&] { chunk(x, 0); }, {"[chunk]", "positive"});
}

TEST_CASE("cat and split gradients match finite differences", "[ops][shape][gradcheck]") {
    gradcheck([](const std::vector<Tensor>& in) { return cat({in[0], in[1]}, 0); },
              {random_input({2, 3}, 1), noncontiguous(random_input({3, 3}, 2))});
    gradcheck([](const std::vector<Tensor>& in) {
        auto parts = split(in[0], std::vector<int64_t>{1, 3}, 1);
        return mul(parts[0], sum(parts[1], {1}, true));
    }, {random_input({3, 4}, 3)});
}
