// CachedDataset: decoded examples kept in memory up to a byte budget, so that volumes are read
// and decoded once instead of every epoch (the idea of MONAI's CacheDataset, bounded and
// filled on first use). The random transforms run after it, on the loader's workers, so
// caching never changes what a seed gives.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "datasets/dataset.h"

namespace lumen::datasets {

class CachedDataset : public Dataset {
  public:
    // Keeps at most `max_bytes` of example tensors (their element bytes), evicting the least
    // recently used. Throws [CachedDataset] for a null dataset or max_bytes < 0.
    CachedDataset(std::shared_ptr<const Dataset> dataset, int64_t max_bytes);
    int64_t size() const override { return dataset_->size(); }
    // The example from the cache, or from the dataset (then cached when it fits the budget on
    // its own). Safe to call concurrently; two threads missing the same index both read it.
    // The returned tensors are shared with the cache: callers must not write into them (the
    // transforms of datasets/ never do).
    Example get(int64_t index) const override;

    struct Stats {
        int64_t hits = 0, misses = 0, bytes = 0, entries = 0;
    };
    Stats stats() const;

  private:
    struct Entry {
        Example example;
        int64_t bytes = 0;
        std::list<int64_t>::iterator recent;  // its place in recent_
    };
    std::shared_ptr<const Dataset> dataset_;
    int64_t max_bytes_;
    mutable std::mutex mutex_;
    mutable std::unordered_map<int64_t, Entry> entries_;
    mutable std::list<int64_t> recent_;  // most recently used first
    mutable Stats stats_;
};

}  // namespace lumen::datasets
