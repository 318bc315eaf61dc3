// Test helpers for synchronized batch norm (ops/norm.h sync_batch_norm): one rank's share of a
// fixed global batch run through a BatchNorm module, the same module run on the whole batch in
// one process, and ranks simulated by threads of one process. tests/ops/test_sync_batch_norm.cpp
// (threads) and tests/dist/test_sync_batch_norm.cpp (mpirun) compare the two.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <vector>

#include "support/gradcheck.h"

namespace lumen::testing {

// What one forward and backward of a fresh BatchNorm1d/2d/3d (by x's rank; weight and bias
// random, momentum 0.1) gives: the output, the gradients of loss = sum(y * g), and the running
// statistics after the step.
struct BatchNormRun {
    Tensor y, grad_x, grad_weight, grad_bias, running_mean, running_var;
};

// The samples `rows` of the global batch x (B, C, *) and of the upstream gradient g (x's
// shape) through the module, synchronized with `all_reduce` when it is given (plain batch norm
// otherwise). x's dtype is the module's. An empty `rows` gives this rank a batch of 0.
BatchNormRun run_batch_norm(const Tensor& x, const Tensor& g, const std::vector<int64_t>& rows,
                            const AllReduceSum& all_reduce = {});

// Rows r, r + world, r + 2 world, ... of a batch of `batch` (the data-parallel shard of rank r).
std::vector<int64_t> strided_rows(int64_t batch, int rank, int world);

// The global batch of the tests: x (B, C, *) with values around 1.5 and a spread of 1, and an
// upstream gradient, both of `dtype`, fixed by `seed`.
std::pair<Tensor, Tensor> global_batch(const Shape& shape, DType dtype, uint64_t seed);

// REQUIREs |got - want| <= tol * max(1, |want| over the tensor) elementwise: relative to the
// tensor's largest value, absolute below 1 (a gradient that nearly cancels, as that of a
// batch of 2 values per channel, is then compared with the size of its terms, about 1).
void require_near(const Tensor& got, const Tensor& want, double tol);

// Ranks simulated by threads: run(body) calls body(rank, all_reduce) on `world` threads at once,
// where all_reduce(t) waits for every rank's call and gives each the sum, added in rank order.
// Returns once all are done; rethrows the first exception a rank threw.
class ThreadRanks {
  public:
    explicit ThreadRanks(int world) : world_(world), slots_(static_cast<size_t>(world)) {}
    void run(const std::function<void(int rank, const AllReduceSum& all_reduce)>& body);

  private:
    void all_reduce(int rank, Tensor& t);

    int world_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<Tensor> slots_;
    Tensor sum_;
    int arrived_ = 0;
    int64_t round_ = 0;
};

}  // namespace lumen::testing
