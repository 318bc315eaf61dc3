// CachedDataset (datasets/cache.h): a map from index to example plus a recency list.
#include "datasets/cache.h"

#include "core/error.h"

namespace lumen::datasets {

namespace {

int64_t bytes_of(const Example& example) {
    int64_t bytes = 0;
    for (const Tensor& t : example)
        if (t.defined()) bytes += t.numel() * int64_t(t.element_size());
    return bytes;
}

}  // namespace

CachedDataset::CachedDataset(std::shared_ptr<const Dataset> dataset, int64_t max_bytes)
    : dataset_(std::move(dataset)), max_bytes_(max_bytes) {
    LUMEN_CHECK(dataset_ != nullptr, "CachedDataset", "needs a dataset, got null");
    LUMEN_CHECK(max_bytes_ >= 0, "CachedDataset", "max_bytes must be >= 0, got ", max_bytes_);
}

Example CachedDataset::get(int64_t index) const {
    {
        std::lock_guard lock(mutex_);
        if (auto it = entries_.find(index); it != entries_.end()) {
            recent_.splice(recent_.begin(), recent_, it->second.recent);
            ++stats_.hits;
            return it->second.example;
        }
        ++stats_.misses;
    }
    Example example = dataset_->get(index);  // outside the lock: reading is the slow part
    const int64_t bytes = bytes_of(example);
    if (bytes > max_bytes_) return example;
    std::lock_guard lock(mutex_);
    if (entries_.count(index)) return example;  // another thread cached it meanwhile
    while (stats_.bytes + bytes > max_bytes_) {
        auto victim = entries_.find(recent_.back());
        stats_.bytes -= victim->second.bytes;
        entries_.erase(victim);
        recent_.pop_back();
    }
    recent_.push_front(index);
    entries_.emplace(index, Entry{example, bytes, recent_.begin()});
    stats_.bytes += bytes;
    stats_.entries = int64_t(entries_.size());
    return example;
}

CachedDataset::Stats CachedDataset::stats() const {
    std::lock_guard lock(mutex_);
    Stats out = stats_;
    out.entries = int64_t(entries_.size());
    return out;
}

}  // namespace lumen::datasets
