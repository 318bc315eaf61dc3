// Index ops: gather / scatter_add, index_select / index_add, embedding, repeat_interleave and
// one_hot against hand-computed values and naive references (row-major loops in double), float64
// gradients against finite differences (repeated indices, non-contiguous inputs), sizes that
// take the parallel paths, the oracle vectors, and the error messages.
#include <string>

#include "conformance/check_vectors.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

Tensor ints(const std::vector<int64_t>& values, const Shape& shape) {
    return from_vector(values, shape);
}

std::vector<double> gather_reference(const Tensor& x, int64_t dim, const Tensor& index) {
    std::vector<double> xs = x.to_vector<double>(), out;
    std::vector<int64_t> idx = index.to_vector<int64_t>();
    for (int64_t i = 0; i < index.numel(); ++i) {
        Shape coords = unravel(i, index.shape());
        coords[size_t(dim)] = idx[size_t(i)];
        out.push_back(xs[size_t(ravel(coords, x.shape()))]);
    }
    return out;
}

std::vector<double> scatter_add_reference(const Tensor& x, int64_t dim, const Tensor& index,
                                          const Tensor& src) {
    std::vector<double> out = x.to_vector<double>(), s = src.to_vector<double>();
    std::vector<int64_t> idx = index.to_vector<int64_t>();
    for (int64_t i = 0; i < index.numel(); ++i) {
        Shape coords = unravel(i, index.shape());
        double value = s[size_t(ravel(coords, src.shape()))];
        coords[size_t(dim)] = idx[size_t(i)];
        out[size_t(ravel(coords, x.shape()))] += value;
    }
    return out;
}

std::vector<double> index_add_reference(const Tensor& x, int64_t dim, const Tensor& index,
                                        const Tensor& source, double alpha) {
    std::vector<double> out = x.to_vector<double>(), s = source.to_vector<double>();
    std::vector<int64_t> idx = index.to_vector<int64_t>();
    for (int64_t i = 0; i < source.numel(); ++i) {
        Shape coords = unravel(i, source.shape());
        coords[size_t(dim)] = idx[size_t(coords[size_t(dim)])];
        out[size_t(ravel(coords, x.shape()))] += alpha * s[size_t(i)];
    }
    return out;
}

}  // namespace

TEST_CASE("gather: hand-computed values along both dims", "[ops][index]") {
    Tensor x = tensor({1, 2, 3, 4}, {2, 2});
    require_close(gather(x, 1, ints({0, 0, 1, 0}, {2, 2})), {1, 1, 4, 3});
    require_close(gather(x, 0, ints({1, 0}, {1, 2})), {3, 2});
    require_close(gather(x, -1, ints({1}, {1, 1})), {2});
    Tensor picked = gather(x.to(DType::int64), 1, ints({1, 1, 0, 0}, {2, 2}).to(DType::int32));
    CHECK(picked.dtype() == DType::int64);
    CHECK(picked.to_vector<int64_t>() == std::vector<int64_t>{2, 2, 3, 3});
}

TEST_CASE("gather and scatter_add match a naive reference", "[ops][index]") {
    // The last shape is big enough for the parallel row walk.
    for (Shape shape : {Shape{2, 7, 5}, Shape{3, 1, 4}, Shape{4, 120, 70}}) {
        Tensor base = random_input(shape, 3);
        for (int64_t dim = 0; dim < 3; ++dim) {
            Shape index_shape = shape;
            index_shape[size_t(dim)] = shape[size_t(dim)] + 2;  // more picks than entries
            if (dim != 2) index_shape[2] = std::max<int64_t>(1, shape[2] - 1);
            Tensor index = random_index(index_shape, shape[size_t(dim)], 7 + uint64_t(dim));
            for (const Tensor& x : {base, noncontiguous(base)}) {
                INFO("shape " << text(shape) << " dim " << dim);
                require_close(gather(x, dim, index), gather_reference(x, dim, index), 0, 0);
                require_close(gather(x.to(DType::float32), dim, index.to(DType::int32)),
                              gather_reference(x, dim, index), 1e-7, 0);
                Tensor src = random_input(index_shape, 5);
                Tensor target = noncontiguous(random_input(shape, 9));
                require_close(scatter_add(target, dim, index, src),
                              scatter_add_reference(target, dim, index, src), 1e-12, 1e-12);
                // Strided index and src read the same values.
                require_close(scatter_add(target, dim, noncontiguous(index), noncontiguous(src)),
                              scatter_add_reference(target, dim, index, src), 1e-12, 1e-12);
                require_close(gather(x, dim, noncontiguous(index)), gather_reference(x, dim, index),
                              0, 0);
            }
        }
    }
}

TEST_CASE("gather and scatter_add: gradients match finite differences", "[ops][index]") {
    Tensor index = ints(
        {0, 6, 6, 2, 1, 0, 6, 6, 3, 3, 5, 4, 0, 1, 2, 0, 0, 0, 1, 1, 2, 2, 6, 5, 4, 3, 2, 1, 0, 6},
        {2, 3, 5});
    gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0], 1, index); },
              {random_input({2, 7, 5})});
    gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0], 1, index); },
              {noncontiguous(random_input({2, 7, 5}))});
    Tensor last = random_index({3, 4, 6}, 3, 11);
    gradcheck([&](const std::vector<Tensor>& in) { return gather(in[0], -1, last); },
              {random_input({3, 5, 3})});
    // src larger than index: the uncovered part of src gets zero gradient.
    gradcheck([&](const std::vector<Tensor>& in) { return scatter_add(in[0], 1, index, in[1]); },
              {random_input({2, 7, 5}, 2), random_input({2, 4, 6}, 3)});
    gradcheck([&](const std::vector<Tensor>& in) { return scatter_add(in[0], 2, last, in[1]); },
              {noncontiguous(random_input({3, 4, 3}, 4)), random_input({3, 4, 6}, 5)});
}

TEST_CASE("index_select and index_add match a naive reference", "[ops][index]") {
    for (Shape shape : {Shape{4, 5, 3}, Shape{1, 9, 1}, Shape{12, 150, 20}}) {
        Tensor base = random_input(shape, 13);
        for (int64_t dim = 0; dim < 3; ++dim) {
            int64_t n = shape[size_t(dim)];
            Tensor index = random_index({2 * n + 1}, n, 17 + uint64_t(dim));
            for (const Tensor& x : {base, noncontiguous(base)}) {
                INFO("shape " << text(shape) << " dim " << dim);
                Tensor full_index = arange(double(n));
                require_close(index_select(x, dim, full_index), x.contiguous().to_vector<double>(),
                              0, 0);
                Shape picked = shape;
                picked[size_t(dim)] = index.numel();
                Tensor source = random_input(picked, 19);
                std::vector<double> added = index_add_reference(x, dim, index, source, 1.0);
                require_close(index_add(x, dim, index, source), added, 1e-12, 1e-12);
                require_close(index_add(x, dim, index.to(DType::int32), source, -0.5),
                              index_add_reference(x, dim, index, source, -0.5), 1e-12, 1e-12);
                // index_select is gather with the index broadcast over the other dims.
                Shape view(3, 1);
                view[size_t(dim)] = index.numel();
                Tensor expanded = index.reshape(view).expand(picked).contiguous();
                require_close(index_select(x, dim, index), gather_reference(x, dim, expanded), 0,
                              0);
                require_close(index_select(x, dim, noncontiguous(index)),
                              gather_reference(x, dim, expanded), 0, 0);
            }
        }
    }
    Tensor counts =
        index_add(zeros({3}, DType::int64), 0, ints({2, 2, 0}, {3}), ones({3}, DType::int64), 2);
    CHECK(counts.to_vector<int64_t>() == std::vector<int64_t>{2, 0, 4});
    require_close(index_select(tensor({1, 2, 3}, {3}), 0, ints({2}, {})), {3});
}

TEST_CASE("index_select and index_add: gradients match finite differences", "[ops][index]") {
    Tensor index = ints({4, 0, 4, 2, 4}, {5});
    for (int64_t dim : {0, 1, -1}) {
        INFO("dim " << dim);
        Shape shape = {5, 5, 5};
        Shape picked = shape;
        picked[size_t(dim < 0 ? dim + 3 : dim)] = 5;
        gradcheck([&](const std::vector<Tensor>& in) { return index_select(in[0], dim, index); },
                  {noncontiguous(random_input({5, 5, 5}, 21))});
        gradcheck(
            [&](const std::vector<Tensor>& in) { return index_add(in[0], dim, index, in[1], 1.5); },
            {random_input(shape, 22), noncontiguous(random_input(picked, 23))});
    }
}

TEST_CASE("embedding: rows, accumulated gradient, padding row", "[ops][index]") {
    Tensor weight = tensor({0, 1, 10, 11, 20, 21}, {3, 2}, DType::float64);
    Tensor idx = ints({2, 0, 2, 1}, {2, 2});
    Tensor out = embedding(weight, idx);
    CHECK(out.shape() == Shape{2, 2, 2});
    require_close(out, {20, 21, 0, 1, 20, 21, 10, 11});
    Tensor w = weight.detach().requires_grad_();
    embedding(w, idx).backward(ones({2, 2, 2}, DType::float64));
    require_close(w.grad(), {1, 1, 1, 1, 2, 2});
    Tensor padded = weight.detach().requires_grad_();
    embedding(padded, idx, -1).backward(ones({2, 2, 2}, DType::float64));
    require_close(padded.grad(), {1, 1, 1, 1, 0, 0});
    require_close(embedding(weight.to(DType::float32), idx.to(DType::int32)),
                  out.to_vector<double>());
    // Tokens avoid the padding row 5: its zeroed gradient is not the derivative of the output.
    Tensor tokens = random_index({3, 8}, 5, 29);
    gradcheck([&](const std::vector<Tensor>& in) { return embedding(in[0], tokens, 5); },
              {noncontiguous(random_input({6, 4}, 31))});
    // Many repeated tokens in a big table: the row-parallel gradient equals index_add.
    Tensor big = random_index({32, 100}, 50, 37);
    Tensor table = random_input({50, 64}, 41).requires_grad_();
    Tensor grad_out = random_input({32, 100, 64}, 43);
    embedding(table, big).backward(grad_out);
    require_close(table.grad(),
                  index_add_reference(zeros({50, 64}, DType::float64), 0, big.reshape({-1}),
                                      grad_out.reshape({-1, 64}), 1.0),
                  1e-12, 1e-12);
}

TEST_CASE("repeat_interleave: scalar and tensor repeats", "[ops][index]") {
    Tensor x = tensor({1, 2, 3, 4}, {2, 2}, DType::float64);
    require_close(repeat_interleave(x, 2), {1, 1, 2, 2, 3, 3, 4, 4});
    Tensor rows = repeat_interleave(x, 2, 0);
    CHECK(rows.shape() == Shape{4, 2});
    require_close(rows, {1, 2, 1, 2, 3, 4, 3, 4});
    require_close(repeat_interleave(x, ints({1, 2}, {2}), -1), {1, 2, 2, 3, 4, 4});
    require_close(repeat_interleave(x, ints({0, 3}, {2}), 0), {3, 4, 3, 4, 3, 4});
    require_close(repeat_interleave(x, ints({2}, {1}), 1), {1, 1, 2, 2, 3, 3, 4, 4});
    CHECK(repeat_interleave(x, 0, 1).shape() == Shape{2, 0});
    gradcheck([](const std::vector<Tensor>& in) { return repeat_interleave(in[0], 3, 1); },
              {noncontiguous(random_input({3, 4}))});
    Tensor counts = ints({2, 0, 1, 3}, {4});
    gradcheck([&](const std::vector<Tensor>& in) { return repeat_interleave(in[0], counts, 0); },
              {random_input({4, 3})});
}

TEST_CASE("one_hot: int64 rows, inferred class count", "[ops][index]") {
    Tensor hot = one_hot(ints({2, 0, 1, 2}, {2, 2}));
    CHECK(hot.dtype() == DType::int64);
    CHECK(hot.shape() == Shape{2, 2, 3});
    CHECK(hot.to_vector<int64_t>() == std::vector<int64_t>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1});
    CHECK(one_hot(ints({1}, {1}).to(DType::int32), 4).to_vector<int64_t>() ==
          std::vector<int64_t>{0, 1, 0, 0});
    CHECK(one_hot(zeros({0}, DType::int64), 5).shape() == Shape{0, 5});
}

TEST_CASE("index ops: bad indices and shapes throw naming the values", "[ops][index]") {
    Tensor x = random_input({2, 7, 5});
    Tensor bad = ints({0, 9, 1}, {1, 3, 1});
    require_error([&] { gather(x, 1, bad); }, {"[gather]", "index 9", "dim 1", "[0, 6]"});
    require_error([&] { gather(x, 1, ints({-1}, {1, 1, 1})); }, {"[gather]", "index -1"});
    require_error([&] { gather(x, 1, bad.to(DType::float32)); }, {"[gather]", "int64", "float32"});
    require_error([&] { gather(x, 1, ints({0}, {1, 1})); }, {"[gather]", "rank", "[1, 1]"});
    require_error(
        [&] {
            gather(x, 1, zeros({1, 1, 6}, DType::int64));
        },
        {"[gather]", "[1, 1, 6]", "dim 2"});
    require_error([&] { gather(x, 3, bad); }, {"[gather]"});
    require_error(
        [&] {
            scatter_add(x, 1, bad, random_input({1, 3, 1}));
        },
        {"[scatter_add]", "index 9", "[0, 6]"});
    Tensor src32 = random_input({1, 1, 1}).to(DType::float32);
    require_error(
        [&] {
            scatter_add(x, 1, ints({0}, {1, 1, 1}), src32);
        },
        {"[scatter_add]", "dtype", "float32", "float64"});
    require_error([&] { index_select(x, 2, ints({5}, {1})); },
                  {"[index_select]", "index 5", "dim 2", "[0, 4]"});
    require_error([&] { index_select(x, 0, ints({0, 1}, {1, 2})); }, {"[index_select]", "1-D"});
    require_error(
        [&] {
            index_add(x, 0, ints({2}, {1}), random_input({1, 7, 5}));
        },
        {"[index_add]", "index 2", "[0, 1]"});
    require_error(
        [&] {
            index_add(x, 0, ints({1}, {1}), random_input({2, 7, 5}));
        },
        {"[index_add]", "[2, 7, 5]", "[1, 7, 5]"});
    Tensor table = random_input({4, 3});
    require_error(
        [&] {
            embedding(table, ints({1, 4}, {2}));
        },
        {"[embedding]", "index 4", "[0, 3]"});
    require_error([&] { embedding(table, ints({0}, {1}), 4); }, {"[embedding]", "padding_idx 4"});
    require_error([&] { embedding(random_input({4}), ints({0}, {1})); }, {"[embedding]", "2-D"});
    require_error([&] { embedding(table, tensor({0}, {1})); }, {"[embedding]", "float32"});
    require_error([&] { repeat_interleave(x, -1, 0); }, {"[repeat_interleave]", "-1"});
    require_error(
        [&] {
            repeat_interleave(x, ints({1, 2}, {2}), 1);
        },
        {"[repeat_interleave]", "size of dim 1", "(7)"});
    require_error([&] { one_hot(ints({0, 3}, {2}), 3); }, {"[one_hot]", "class value 3"});
    require_error([&] { one_hot(ints({-2}, {1})); }, {"[one_hot]", "non-negative", "-2"});
    require_error([&] { one_hot(zeros({0}, DType::int64)); }, {"[one_hot]", "empty"});
}

TEST_CASE("index ops: oracle vectors pass", "[ops][index]") {
    require_oracle_vectors({"embedding", "gather"});
}
