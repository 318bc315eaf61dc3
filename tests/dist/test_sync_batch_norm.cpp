// Synchronized batch norm across the ranks of the job: each rank takes its shard of a fixed
// global batch (samples r, r + N, ...; uneven, and empty on some ranks for a batch smaller than
// N) and must get the rows of one process's result on the whole batch: output, input gradient,
// running statistics, and weight/bias gradients summed over the ranks. As one process (plain
// `lumen_tests "[dist]"`) it checks that the group's all-reduce makes it plain batch norm.
#include "support/sync_batch_norm.h"
#include "train/dist/process_group.h"

using namespace lumen;
using namespace lumen::testing;
namespace dist = lumen::train::dist;

TEST_CASE("sync batch norm: every rank's rows equal one process's global batch", "[dist]") {
    dist::ProcessGroup& group = *dist::ProcessGroup::from_environment();
    const int world = group.world_size(), rank = group.rank();
    const AllReduceSum all_reduce = [&group](Tensor& t) { group.all_reduce(t); };
    // 2N + 1 samples: shards of unequal size; 1 sample: every rank but rank 0 has none.
    for (int64_t batch : {int64_t(2 * world + 1), int64_t(1)}) {
        for (DType dtype : {DType::float64, DType::float32}) {
            const double tol = dtype == DType::float64 ? 1e-12 : 1e-6;
            for (Shape shape :
                 {Shape{0, 4}, Shape{0, 4, 5}, Shape{0, 4, 3, 2}, Shape{0, 4, 2, 3, 2}}) {
                shape[0] = batch;
                if (shape_numel(shape) == 4) continue;  // (1, C): one value per channel
                INFO("shape " << text(shape) << ", " << dtype << ", rank " << rank << " of "
                              << world);
                auto [x, g] = global_batch(shape, dtype, 40);
                BatchNormRun want = run_batch_norm(x, g, strided_rows(batch, 0, 1));
                std::vector<int64_t> mine = strided_rows(batch, rank, world);
                BatchNormRun got = run_batch_norm(x, g, mine, all_reduce);
                Tensor rows = from_vector<int64_t>(mine, {int64_t(mine.size())});
                require_near(got.y, index_select(want.y, 0, rows), tol);
                require_near(got.grad_x, index_select(want.grad_x, 0, rows), tol);
                require_near(got.running_mean, want.running_mean, tol);
                require_near(got.running_var, want.running_var, tol);
                Tensor grad_weight = got.grad_weight.contiguous().clone();
                Tensor grad_bias = got.grad_bias.contiguous().clone();
                group.all_reduce(grad_weight);
                group.all_reduce(grad_bias);
                require_near(grad_weight, want.grad_weight, tol);
                require_near(grad_bias, want.grad_bias, tol);
            }
        }
    }
}

TEST_CASE("sync batch norm: a global batch of one value per channel fails on every rank",
          "[dist]") {
    dist::ProcessGroup& group = *dist::ProcessGroup::from_environment();
    const AllReduceSum all_reduce = [&group](Tensor& t) { group.all_reduce(t); };
    // One sample in all, on rank 0.
    Tensor x = random_input({group.rank() == 0 ? 1 : 0, 3}, 50);
    require_error([&] { sync_batch_norm(x, {}, {}, {}, {}, 0.1, 1e-5, all_reduce); },
                  {"[sync_batch_norm]", "more than 1 value per channel", "over all processes"});
}
