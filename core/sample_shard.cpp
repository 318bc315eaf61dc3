// The per-thread sample-shard context (thread-local, as grad mode is: the loader's worker
// threads and other trainers in the process never see it).
#include "core/sample_shard.h"

#include "core/error.h"

namespace lumen {

namespace {
thread_local SampleShard current;
}  // namespace

const SampleShard& sample_shard() { return current; }

SampleShardGuard::SampleShardGuard(int64_t rank, int64_t world, int64_t batch)
    : previous_(current) {
    LUMEN_CHECK(world >= 1 && rank >= 0 && rank < world, "sample shard",
                "expects a rank in 0..world-1 with world >= 1, got rank ", rank, " of ", world);
    LUMEN_CHECK(world == 1 || batch >= 1, "sample shard",
                "expects a local batch of at least 1 sample, got ", batch);
    current = world == 1 ? SampleShard{} : SampleShard{rank, world, batch};
}

SampleShardGuard::~SampleShardGuard() { current = previous_; }

ShardMap sample_shard_map(const char* op, const Shape& shape) {
    const int64_t numel = shape_numel(shape);
    if (!current.active() || numel == 0) return {};
    LUMEN_CHECK(numel % current.batch == 0, op, "data-parallel sample sharding (rank ",
                current.rank, " of ", current.world, ", local batch ", current.batch,
                ") keys random draws per sample, but the random tensor of shape ", shape, " has ",
                numel, " elements, not a multiple of the local batch ", current.batch);
    return {numel / current.batch, current.world, current.rank};
}

}  // namespace lumen
