// CPU/CUDA parity of the index ops: gather / scatter_add, index_select / index_add, embedding
// (padding_idx, weight gradient through atomics), repeat_interleave and one_hot, with int64 and
// int32 indices, repeated indices, strided inputs, every dtype for the pure moves and the
// integer dtypes for the adds; gradients with the same upstream gradient; and the error paths
// on the GPU (out-of-range indices reported by value, mixed devices). Skips without a GPU.
#include <optional>
#include <vector>

#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

Tensor ints(const std::vector<int64_t>& values, const Shape& shape) {
    return from_vector(values, shape);
}

double tolerance(DType dtype) { return dtype == DType::float32 ? 1e-5 : 1e-12; }

}  // namespace

TEST_CASE("gather and scatter_add match the CPU on the GPU", "[cuda][ops][index]") {
    if (!have_gpu()) return;
    for (DType index_dtype : {DType::int64, DType::int32}) {
        for (int64_t dim : {0, 1, 2}) {
            INFO("dim " << dim << " index " << dtype_name(index_dtype));
            Shape x_shape = {5, 7, 9};
            Shape index_shape = {4, 6, 8};
            index_shape[size_t(dim)] = 11;  // longer than x along dim: repeated indices
            Tensor index =
                random_index(index_shape, x_shape[size_t(dim)], 3 + uint64_t(dim)).to(index_dtype);
            for (const Tensor& x : every_dtype(x_shape, 4)) {
                INFO("gather " << dtype_name(x.dtype()));
                require_same_on_gpu(gather(x.cuda(), dim, index.cuda()), gather(x, dim, index));
                // a transposed x and a transposed index (dim moves to 2 - dim)
                require_same_on_gpu(
                    gather(x.cuda().transpose(0, 2), 2 - dim, index.cuda().transpose(0, 2)),
                    gather(x.transpose(0, 2), 2 - dim, index.transpose(0, 2)));
            }
            for (DType dtype : {DType::int64, DType::int32, DType::uint8}) {
                INFO("scatter_add " << dtype_name(dtype));
                Tensor x = mul(random_input(x_shape, 5, 0, 1), 20.0).to(dtype);
                Tensor src = mul(random_input(index_shape, 6, 0, 1), 20.0).to(dtype);
                require_same_on_gpu(scatter_add(x.cuda(), dim, index.cuda(), src.cuda()),
                                    scatter_add(x, dim, index, src));
            }
            for (DType dtype : {DType::float32, DType::float64}) {
                INFO("float " << dtype_name(dtype));
                Tensor x = random_input(x_shape, 7).to(dtype);
                Tensor src = random_input(index_shape, 8).to(dtype);
                Tensor idx = index;
                double tol = tolerance(dtype);
                require_cuda_parity(
                    [&](const std::vector<Tensor>& in) {
                        return add(gather(in[0], dim, idx.to(in[0].device())),
                                   mul(in[1], 0.5));  // gather's backward is a scatter_add
                    },
                    {x, src}, tol, tol);
                require_cuda_parity(
                    [&](const std::vector<Tensor>& in) {
                        return scatter_add(in[0], dim, idx.to(in[0].device()), in[1]);
                    },
                    {x, src}, tol, tol);
            }
        }
    }
    // src larger than index: only the covered part of src gets a gradient
    Tensor x = random_input({4, 5}, 9), src = random_input({6, 5}, 10);
    Tensor index = random_index({3, 4}, 4, 11);
    require_cuda_parity(
        [&](const std::vector<Tensor>& in) {
            return scatter_add(in[0], 0, index.to(in[0].device()), in[1]);
        },
        {x, src}, 1e-12, 1e-12);
}

TEST_CASE("index_select and index_add match the CPU on the GPU", "[cuda][ops][index]") {
    if (!have_gpu()) return;
    Shape x_shape = {6, 5, 7};
    for (DType index_dtype : {DType::int64, DType::int32}) {
        for (int64_t dim : {0, 1, 2}) {
            INFO("dim " << dim << " index " << dtype_name(index_dtype));
            Tensor index = random_index({13}, x_shape[size_t(dim)], 12).to(index_dtype);
            for (const Tensor& x : every_dtype(x_shape, 13)) {
                INFO("index_select " << dtype_name(x.dtype()));
                require_same_on_gpu(index_select(x.cuda(), dim, index.cuda()),
                                    index_select(x, dim, index));
                int64_t moved = dim == 2 ? 2 : 1 - dim;  // the same dim of the transposed x
                require_same_on_gpu(index_select(x.cuda().transpose(0, 1), moved, index.cuda()),
                                    index_select(x.transpose(0, 1), moved, index));
            }
            Shape source_shape = x_shape;
            source_shape[size_t(dim)] = 13;
            for (DType dtype : {DType::int64, DType::int32, DType::uint8}) {
                INFO("index_add " << dtype_name(dtype));
                Tensor x = mul(random_input(x_shape, 14, 0, 1), 20.0).to(dtype);
                Tensor source = mul(random_input(source_shape, 15, 0, 1), 20.0).to(dtype);
                for (double alpha : {1.0, 3.0}) {
                    require_same_on_gpu(
                        index_add(x.cuda(), dim, index.cuda(), source.cuda(), alpha),
                        index_add(x, dim, index, source, alpha));
                }
            }
            for (DType dtype : {DType::float32, DType::float64}) {
                INFO("float " << dtype_name(dtype));
                Tensor x = random_input(x_shape, 16).to(dtype);
                Tensor source = random_input(source_shape, 17).to(dtype);
                double tol = tolerance(dtype);
                for (double alpha : {1.0, -2.5}) {
                    require_cuda_parity(
                        [&](const std::vector<Tensor>& in) {
                            return index_add(in[0], dim, index.to(in[0].device()), in[1], alpha);
                        },
                        {x, source}, tol, tol);
                }
                // index_select's backward is an index_add of the gradient
                require_cuda_parity(
                    [&](const std::vector<Tensor>& in) {
                        return add(index_select(in[0], dim, index.to(in[0].device())), in[1]);
                    },
                    {x, source}, tol, tol);
            }
        }
    }
    // a 0-d index selects one slice; rows wider than 16 bytes move in 16-byte units
    Tensor x = random_input({9, 24}, 18).to(DType::float32);
    Tensor scalar = ints({4}, {1}).reshape({});
    require_same_on_gpu(index_select(x.cuda(), 0, scalar.cuda()), index_select(x, 0, scalar));
    require_same_on_gpu(index_select(x.cuda().narrow(1, 1, 20), 0, ints({3, 3, 0}, {3}).cuda()),
                        index_select(x.narrow(1, 1, 20), 0, ints({3, 3, 0}, {3})));
}

TEST_CASE("embedding and its weight gradient match the CPU on the GPU", "[cuda][ops][index]") {
    if (!have_gpu()) return;
    for (DType dtype : {DType::float32, DType::float64}) {
        for (DType index_dtype : {DType::int64, DType::int32}) {
            INFO(dtype_name(dtype) << " indices " << dtype_name(index_dtype));
            Tensor weight = random_input({37, 19}, 19).to(dtype);
            // (4, 53) tokens from 37 rows: every row is hit several times
            Tensor tokens = random_index({4, 53}, 37, 20).to(index_dtype);
            for (std::optional<int64_t> padding :
                 {std::optional<int64_t>(), std::optional<int64_t>(3),
                  std::optional<int64_t>(-1)}) {
                INFO("padding_idx " << padding.value_or(999));
                require_cuda_parity(
                    [&](const std::vector<Tensor>& in) { return embedding(in[0], in[1], padding); },
                    {weight, tokens}, 0, tolerance(dtype));
            }
        }
    }
    // half-precision tables move by bits
    Tensor table = random_input({10, 8}, 22).to(DType::bfloat16);
    Tensor tokens = random_index({3, 5}, 10, 23);
    require_same_on_gpu(embedding(table.cuda(), tokens.cuda()), embedding(table, tokens));
}

TEST_CASE("repeat_interleave and one_hot match the CPU on the GPU", "[cuda][ops][index]") {
    if (!have_gpu()) return;
    Tensor x = random_input({3, 4, 5}, 24);
    for (std::optional<int64_t> dim :
         {std::optional<int64_t>(), std::optional<int64_t>(0), std::optional<int64_t>(2)}) {
        INFO("dim " << dim.value_or(-99));
        require_same_on_gpu(repeat_interleave(x.cuda(), 3, dim), repeat_interleave(x, 3, dim));
    }
    Tensor counts = ints({2, 0, 1, 3}, {4});
    require_same_on_gpu(repeat_interleave(x.cuda(), counts.cuda(), 1),
                        repeat_interleave(x, counts, 1));
    require_same_on_gpu(
        repeat_interleave(x.cuda().to(DType::int32), counts.to(DType::int32).cuda(), 1),
        repeat_interleave(x.to(DType::int32), counts.to(DType::int32), 1));
    // gradient: sums over each run of copies
    require_cuda_parity(
        [&](const std::vector<Tensor>& in) { return repeat_interleave(in[0], in[1], 1); },
        {x, counts}, 0, 1e-12);

    Tensor classes = random_index({7, 9}, 6, 26);
    for (DType dtype : {DType::int64, DType::int32}) {
        INFO("one_hot " << dtype_name(dtype));
        Tensor c = classes.to(dtype);
        require_same_on_gpu(one_hot(c.cuda()), one_hot(c));
        require_same_on_gpu(one_hot(c.cuda(), 11), one_hot(c, 11));
        require_same_on_gpu(one_hot(c.cuda().t(), 8), one_hot(c.t(), 8));
    }
    CHECK(one_hot(zeros({0}, DType::int64).cuda(), 5).shape() == Shape{0, 5});
}

TEST_CASE("index ops report bad indices and mixed devices on the GPU", "[cuda][ops][index]") {
    if (!have_gpu()) return;
    Tensor x = random_input({2, 7, 5}).cuda();
    // Several bad values: the first in row-major order is named, as on the CPU.
    Tensor bad = ints({0, 9, 1, -4}, {1, 4, 1}).cuda();
    require_error([&] { gather(x, 1, bad); }, {"[gather]", "index 9", "dim 1", "[0, 6]"});
    require_error([&] { gather(x, 1, bad.to(DType::int32)); }, {"[gather]", "index 9"});
    require_error([&] { gather(x, 1, ints({-1}, {1, 1, 1}).cuda()); }, {"[gather]", "index -1"});
    require_error(
        [&] {
            scatter_add(x, 1, bad, random_input({1, 4, 1}).cuda());
        },
        {"[scatter_add]", "index 9", "[0, 6]"});
    require_error(
        [&] {
            index_select(x, 2, ints({1, 5, 7}, {3}).cuda());
        },
        {"[index_select]", "index 5", "dim 2", "[0, 4]"});
    require_error(
        [&] {
            index_add(x, 0, ints({2}, {1}).cuda(), random_input({1, 7, 5}).cuda());
        },
        {"[index_add]", "index 2", "[0, 1]"});
    Tensor weight = random_input({4, 3}).cuda();
    require_error(
        [&] {
            embedding(weight, ints({1, 4}, {2}).cuda());
        },
        {"[embedding]", "index 4", "[0, 3]"});
    require_error([&] { embedding(weight, ints({-2}, {1}).to(DType::int32).cuda()); },
                  {"[embedding]", "index -2"});
    require_error([&] { one_hot(ints({1, -3}, {2}).cuda()); }, {"[one_hot]", "-3"});
    require_error([&] { one_hot(ints({1, 5}, {2}).cuda(), 4); }, {"[one_hot]", "5", "4 classes"});
    // mixed devices
    Tensor cpu_index = ints({0}, {1, 1, 1});
    require_error([&] { gather(x, 1, cpu_index); }, {"[gather]", "different devices"});
    require_error([&] { index_select(x, 0, ints({0}, {1})); },
                  {"[index_select]", "different devices"});
    require_error([&] { embedding(weight, ints({0}, {1})); }, {"[embedding]", "different devices"});
    require_error(
        [&] {
            scatter_add(x, 1, cpu_index.cuda(), random_input({1, 1, 1}));
        },
        {"[scatter_add]", "different devices"});
}
