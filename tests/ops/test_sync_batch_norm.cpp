// Synchronized batch norm in one process: float64 gradients against finite differences (the
// identity all-reduce), equality with batch_norm for one process, ranks simulated by threads
// against one process holding the global batch (uneven and empty shards), and the errors.
// The same comparison across real processes is tests/dist/test_sync_batch_norm.cpp.
#include "support/gradcheck.h"
#include "support/sync_batch_norm.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

const AllReduceSum kOneProcess = [](Tensor&) {};

const Shape kShapes[] = {{5, 3}, {3, 3, 4}, {2, 3, 2, 3}, {2, 3, 2, 2, 3}};

}  // namespace

TEST_CASE("sync_batch_norm: gradient matches finite differences with one process",
          "[ops][norm][sync_batch_norm]") {
    GradcheckOptions options;
    options.rtol = 1e-4;
    options.atol = 1e-6;
    Tensor w = random_input({3}, 2, 0.5, 1.5), b = random_input({3}, 3);
    for (const Shape& shape : kShapes) {
        INFO("shape " << text(shape));
        gradcheck(
            [](const std::vector<Tensor>& in) {
                return sync_batch_norm(in[0], {}, {}, in[1], in[2], 0.1, 1e-5, kOneProcess);
            },
            {random_input(shape, 4), w, b}, options);
    }
    gradcheck(
        [](const std::vector<Tensor>& in) {
            return sync_batch_norm(in[0], {}, {}, {}, {}, 0.1, 1e-5, kOneProcess);
        },
        {noncontiguous(random_input({2, 3, 4, 3}, 8))}, options);
}

TEST_CASE("sync_batch_norm: with one process it is batch_norm in training",
          "[ops][norm][sync_batch_norm]") {
    for (DType dtype : {DType::float64, DType::float32}) {
        const double tol = dtype == DType::float64 ? 1e-12 : 1e-6;
        for (const Shape& shape : kShapes) {
            INFO("shape " << text(shape) << ", " << dtype);
            auto [x, g] = global_batch(shape, dtype, 20);
            std::vector<int64_t> all = strided_rows(shape[0], 0, 1);
            BatchNormRun want = run_batch_norm(x, g, all);
            BatchNormRun got = run_batch_norm(x, g, all, kOneProcess);
            require_near(got.y, want.y, tol);
            require_near(got.grad_x, want.grad_x, tol);
            require_near(got.grad_weight, want.grad_weight, tol);
            require_near(got.grad_bias, want.grad_bias, tol);
            require_near(got.running_mean, want.running_mean, tol);
            require_near(got.running_var, want.running_var, tol);
        }
    }
}

TEST_CASE("sync_batch_norm: ranks as threads match one process with the global batch",
          "[ops][norm][sync_batch_norm]") {
    // 3 ranks over 7 samples (3, 2, 2) and over 2 samples (one rank gets none).
    for (int64_t batch : {7, 2}) {
        for (DType dtype : {DType::float64, DType::float32}) {
            const double tol = dtype == DType::float64 ? 1e-12 : 1e-6;
            for (Shape shape : kShapes) {
                shape[0] = batch;
                INFO("shape " << text(shape) << ", " << dtype);
                auto [x, g] = global_batch(shape, dtype, 30);
                BatchNormRun want = run_batch_norm(x, g, strided_rows(batch, 0, 1));
                const int world = 3;
                std::vector<BatchNormRun> runs(world);
                ThreadRanks(world).run([&](int rank, const AllReduceSum& all_reduce) {
                    runs[size_t(rank)] =
                        run_batch_norm(x, g, strided_rows(batch, rank, world), all_reduce);
                });
                Tensor grad_weight = zeros_like(want.grad_weight);
                Tensor grad_bias = zeros_like(want.grad_bias);
                for (int rank = 0; rank < world; ++rank) {
                    INFO("rank " << rank);
                    const BatchNormRun& got = runs[size_t(rank)];
                    Tensor rows =
                        from_vector<int64_t>(strided_rows(batch, rank, world), {got.y.size(0)});
                    require_near(got.y, index_select(want.y, 0, rows), tol);
                    require_near(got.grad_x, index_select(want.grad_x, 0, rows), tol);
                    require_near(got.running_mean, want.running_mean, tol);
                    require_near(got.running_var, want.running_var, tol);
                    grad_weight = add(grad_weight, got.grad_weight);
                    grad_bias = add(grad_bias, got.grad_bias);
                }
                require_near(grad_weight, want.grad_weight, tol);
                require_near(grad_bias, want.grad_bias, tol);
            }
        }
    }
}

TEST_CASE("convert_sync_batchnorm sets every BatchNorm of a model", "[nn][sync_batch_norm]") {
    auto model = std::make_shared<nn::Sequential>();
    model->push_back(std::make_shared<nn::BatchNorm2d>(3));
    model->push_back(std::make_shared<nn::Identity>());
    model->push_back(std::make_shared<nn::BatchNorm2d>(3));
    CHECK(nn::convert_sync_batchnorm(*model, kOneProcess) == 2);
    auto& first = dynamic_cast<nn::BatchNorm&>(model->submodule("0"));
    CHECK(bool(first.sync_all_reduce));
    CHECK(nn::convert_sync_batchnorm(*model, {}) == 2);
    CHECK_FALSE(bool(first.sync_all_reduce));
}

TEST_CASE("sync_batch_norm: errors name the op and the shapes", "[ops][norm][sync_batch_norm]") {
    require_error(
        [] { sync_batch_norm(random_input({6}), {}, {}, {}, {}, 0.1, 1e-5, kOneProcess); },
        {"[sync_batch_norm]", "(N, C)", "[6]"});
    require_error(
        [] {
            sync_batch_norm(random_input({2, 3, 1, 1, 1, 2}), {}, {}, {}, {}, 0.1, 1e-5,
                            kOneProcess);
        },
        {"[sync_batch_norm]", "[2, 3, 1, 1, 1, 2]"});
    require_error(
        [] {
            sync_batch_norm(random_input({4, 3}), {}, {}, {}, {}, 0.1, 1e-5, {});
        },
        {"[sync_batch_norm]", "all_reduce", "[4, 3]"});
    require_error(
        [] {
            sync_batch_norm(random_input({4, 3}), {}, {}, random_input({4}), {}, 0.1, 1e-5,
                            kOneProcess);
        },
        {"[sync_batch_norm]", "weight", "[4]", "[4, 3]"});
    require_error(
        [] {
            sync_batch_norm(random_input({1, 3}), {}, {}, {}, {}, 0.1, 1e-5, kOneProcess);
        },
        {"[sync_batch_norm]", "more than 1 value per channel", "[1, 3]"});
    // A module with a reducer still checks its input rank first.
    nn::BatchNorm2d norm(3);
    nn::convert_sync_batchnorm(norm, kOneProcess);
    require_error([&] { norm.forward(zeros({2, 3, 4})); }, {"[BatchNorm2d]", "[2, 3, 4]", "[4]"});
}

TEST_CASE("sync_batch_norm: float32 gradients at a mean far above the spread",
          "[ops][norm][sync_batch_norm]") {
    // 2 ranks (threads) of a float32 batch around 1000 with a spread of 0.01 (x - mean and
    // the mean's rounding to float32 both matter), against the float64 result of one process.
    Shape shape{6, 3, 4};
    Tensor x64 = add(mul(random_input(shape, 60), 0.01), 1000.0), g64 = random_input(shape, 61);
    Tensor x = x64.to(DType::float32), g = g64.to(DType::float32);
    BatchNormRun want = run_batch_norm(x.to(DType::float64), g64, strided_rows(6, 0, 1));
    std::vector<BatchNormRun> runs(2);
    ThreadRanks(2).run([&](int rank, const AllReduceSum& all_reduce) {
        runs[size_t(rank)] = run_batch_norm(x, g, strided_rows(6, rank, 2), all_reduce);
    });
    for (int rank = 0; rank < 2; ++rank) {
        INFO("rank " << rank);
        const BatchNormRun& got = runs[size_t(rank)];
        Tensor rows = from_vector<int64_t>(strided_rows(6, rank, 2), {3});
        require_near(got.grad_x, index_select(want.grad_x, 0, rows), 1e-6);
        require_near(got.running_mean, want.running_mean, 1e-6);
        require_near(got.running_var, want.running_var, 1e-6);
        // The forward kernel's x scale + offset, as batch_norm's, keeps about 1e-2 here.
        require_near(got.y, index_select(want.y, 0, rows), 2e-2);
    }
}
