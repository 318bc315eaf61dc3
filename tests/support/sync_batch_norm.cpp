// The synchronized batch norm helpers: a module per input rank, the run of one rank's rows, and
// threads standing in for ranks (a barrier per all-reduce).
#include "support/sync_batch_norm.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <thread>

namespace lumen::testing {

namespace {

std::shared_ptr<nn::BatchNorm> make_batch_norm(int64_t ndim, int64_t channels) {
    if (ndim <= 3) return std::make_shared<nn::BatchNorm1d>(channels);
    if (ndim == 4) return std::make_shared<nn::BatchNorm2d>(channels);
    return std::make_shared<nn::BatchNorm3d>(channels);
}

}  // namespace

BatchNormRun run_batch_norm(const Tensor& x, const Tensor& g, const std::vector<int64_t>& rows,
                            const AllReduceSum& all_reduce) {
    const int64_t channels = x.size(1);
    std::shared_ptr<nn::BatchNorm> norm = make_batch_norm(x.ndim(), channels);
    norm->to(x.dtype());
    {
        NoGradGuard no_grad;
        norm->weight.copy_(random_input({channels}, 11, 0.5, 1.5).to(x.dtype()));
        norm->bias.copy_(random_input({channels}, 12).to(x.dtype()));
    }
    if (all_reduce) nn::convert_sync_batchnorm(*norm, all_reduce);
    Tensor index = from_vector<int64_t>(rows, {int64_t(rows.size())});
    Tensor mine = index_select(x, 0, index).detach().requires_grad_();
    Tensor y = norm->forward(mine);
    sum(mul(y, index_select(g, 0, index))).backward();
    return {y.detach(),        mine.grad(),        norm->weight.grad(),
            norm->bias.grad(), norm->running_mean, norm->running_var};
}

std::vector<int64_t> strided_rows(int64_t batch, int rank, int world) {
    std::vector<int64_t> rows;
    for (int64_t i = rank; i < batch; i += world) rows.push_back(i);
    return rows;
}

std::pair<Tensor, Tensor> global_batch(const Shape& shape, DType dtype, uint64_t seed) {
    return {random_input(shape, seed, 0.5, 2.5).to(dtype), random_input(shape, seed + 1).to(dtype)};
}

void require_near(const Tensor& got, const Tensor& want, double tol) {
    REQUIRE(got.defined());
    double scale = 1;
    for (double v : want.to_vector<double>()) scale = std::max(scale, std::abs(v));
    require_close(got, want, 0, tol * scale);
}

void ThreadRanks::all_reduce(int rank, Tensor& t) {
    std::unique_lock<std::mutex> lock(mutex_);
    slots_[size_t(rank)] = t.clone();
    const int64_t round = round_;
    if (++arrived_ == world_) {
        sum_ = slots_[0];
        for (int r = 1; r < world_; ++r) sum_ = add(sum_, slots_[size_t(r)]);
        arrived_ = 0;
        ++round_;
        changed_.notify_all();
    } else {
        changed_.wait(lock, [&] { return round_ != round; });
    }
    // Under the lock: the next round cannot finish (and replace sum_) before this rank joins it.
    t.copy_(sum_);
}

void ThreadRanks::run(const std::function<void(int, const AllReduceSum&)>& body) {
    std::vector<std::exception_ptr> errors(static_cast<size_t>(world_));
    std::vector<std::thread> threads;
    for (int rank = 0; rank < world_; ++rank) {
        threads.emplace_back([this, rank, &body, &errors] {
            try {
                body(rank, [this, rank](Tensor& t) { all_reduce(rank, t); });
            } catch (...) {
                errors[size_t(rank)] = std::current_exception();
            }
        });
    }
    for (std::thread& thread : threads) thread.join();
    for (const std::exception_ptr& error : errors)
        if (error) std::rethrow_exception(error);
}

}  // namespace lumen::testing
