// Random draws keyed per sample for data-parallel training (docs/distributed.md, "Dropout and
// augmentation"). Rank r of N holds global batch positions r, r + N, r + 2N, ... (the
// DistributedSampler sharding of datasets/loader.h); under a SampleShardGuard, a random op
// gives that rank exactly those rows of the tensor one process would draw for the global batch.
// The ops that honour it: ops/random.cpp, ops/dropout.cpp and the fused attention's dropout.
#pragma once

#include <cstdint>

#include "core/philox.h"
#include "core/shape.h"

namespace lumen {

// Where a local random tensor lies in the global one: local element i is global element
//   global(i) = ((i / per) * world + rank) * per + i % per,
// per the elements of one sample. world = 1 (the default) is the identity.
struct ShardMap {
    int64_t per = 1;
    int64_t world = 1;
    int64_t rank = 0;

    LUMEN_HOST_DEVICE int64_t global(int64_t i) const {
        return world == 1 ? i : ((i / per) * world + rank) * per + i % per;
    }
    bool is_identity() const { return world == 1; }
};

// The calling thread's context: rank r of `world` ranks, `batch` samples per rank. Inactive
// (world 1) unless a SampleShardGuard is alive on this thread.
struct SampleShard {
    int64_t rank = 0;
    int64_t world = 1;
    int64_t batch = 0;
    bool active() const { return world > 1; }
};

const SampleShard& sample_shard();

// Sets the calling thread's context for its lifetime and restores the previous one after.
// world = 1 sets the inactive context. Throws [sample shard] for world < 1, a rank outside
// 0..world-1 or, when world > 1, a batch < 1.
class SampleShardGuard {
  public:
    SampleShardGuard(int64_t rank, int64_t world, int64_t batch);
    ~SampleShardGuard();
    SampleShardGuard(const SampleShardGuard&) = delete;
    SampleShardGuard& operator=(const SampleShardGuard&) = delete;

  private:
    SampleShard previous_;
};

// The map a random op drawing a tensor of `shape` uses under the calling thread's context:
// per = numel / batch (the batch outermost, alone or merged with other dims as (B * heads, ...)),
// or the identity when no context is active or the tensor is empty. Throws [op] when the
// context is active and numel is not a multiple of the local batch: such a draw has no
// per-sample meaning, and giving each rank its own numbers would break the equivalence.
ShardMap sample_shard_map(const char* op, const Shape& shape);

}  // namespace lumen
