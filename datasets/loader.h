// DataLoader: batches a Dataset in a seeded order, optionally shuffled, with per-sample
// transforms and prefetching on worker threads (torch.utils.data.DataLoader). Every random
// choice derives from (seed, epoch) and (seed, epoch, index), so the batches are identical for
// any number of workers and any thread timing.
#pragma once

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "datasets/dataset.h"
#include "datasets/sample.h"
#include "datasets/transforms.h"

namespace lumen::datasets {

// Tensor k of a batch stacks tensor k of each example along a new first dim:
// {images (B, C, H, W), labels (B)} from examples {image (C, H, W), label ()}.
using Batch = std::vector<Tensor>;

// How examples become a batch: `stack` needs equal shapes (collate); `pad` also takes fields
// of varying length (token sequences, feature bags) and adds their masks (collate_padded).
enum class Collate { stack, pad };

struct DataLoaderOptions {
    int64_t batch_size = 1;
    bool shuffle = false;         // a fresh permutation each epoch, fixed by (seed, epoch)
    bool drop_last = false;       // drop a last batch smaller than batch_size
    uint64_t seed = 0;            // shuffling and transforms
    int64_t num_workers = 0;      // 0: batches are made on the calling thread, in next()
    int64_t prefetch_factor = 2;  // batches made ahead per worker (the queue's bound)
    // Applied on the workers to tensor 0 of each example (the input; labels pass unchanged),
    // with a Generator seeded from (seed, epoch, dataset index). May be null.
    TransformPtr transform;
    // Applied after `transform` to the whole example seen as a Sample (sample_of: the image
    // with its label map or target, moved together), with the same generator. May be null.
    SampleTransformPtr sample_transform;
    Collate collate = Collate::stack;
    double pad_value = 0.0;  // Collate::pad: the value of padded positions
    // Data-parallel training (torch.utils.data.DistributedSampler): each of `num_replicas`
    // processes takes a disjoint shard of the epoch's order (the same permutation everywhere,
    // from `seed`). The order is padded by wrapping around to a multiple of num_replicas
    // (its first examples repeated), then process `rank` takes positions rank, rank +
    // num_replicas, ...: ceil(size / num_replicas) examples each. Batch k of the N shards
    // together is then batch k of one process with batch_size N * batch_size, when
    // size is a multiple of that.
    int64_t num_replicas = 1;
    int64_t rank = 0;
    // For evaluation: rank r takes instead the r-th of num_replicas consecutive blocks of the
    // order, without padding (their sizes differ by at most one), so that every example counts
    // once and the blocks in rank order are the whole order.
    bool contiguous_shards = false;
};

// A uniformly random permutation of [0, n) (Fisher-Yates on the generator's Philox stream);
// the result depends only on the generator's seed and offset, which it advances.
std::vector<int64_t> random_permutation(int64_t n, Generator& generator);

// Stacks the examples field by field into a batch (see Batch). Throws [collate] when there are
// no examples or they disagree in the number of tensors, a shape or a dtype (naming the
// example and the field), or a tensor is not on the CPU.
Batch collate(const std::vector<Example>& examples);

// For inputs of varying length (token sequences (L), feature bags (N, D)): the first field
// of each example is padded at the end of its first dim to the batch's longest with
// `pad_value`, and a (B, L_max) bool mask, true at the real positions, is appended:
// {tokens (B, L_max), label (B), mask (B, L_max)}. The other fields are stacked as by
// collate. Throws [collate] as collate does, and when a first field is 0-dimensional or its
// shapes differ past the first dim.
Batch collate_padded(const std::vector<Example>& examples, double pad_value = 0.0);

class DataLoader {
  public:
    // Throws [DataLoader] for a null dataset, batch_size < 1, num_workers < 0,
    // prefetch_factor < 1, num_replicas < 1 or a rank outside 0..num_replicas-1. The dataset
    // (and transform) must allow concurrent calls.
    explicit DataLoader(std::shared_ptr<const Dataset> dataset, DataLoaderOptions options = {});
    // Stops the workers of an unfinished epoch and waits for them.
    ~DataLoader();
    DataLoader(const DataLoader&) = delete;
    DataLoader& operator=(const DataLoader&) = delete;

    // Examples per epoch of this rank: the dataset's size, or ceil(size / num_replicas), or
    // with contiguous_shards its block's size.
    int64_t num_examples() const;
    // Batches per epoch: ceil(num_examples() / batch_size), or floor with drop_last.
    int64_t num_batches() const;
    const DataLoaderOptions& options() const { return options_; }
    const Dataset& dataset() const { return *dataset_; }

    // The dataset indices of epoch `epoch` in the order they are batched (this rank's shard).
    std::vector<int64_t> epoch_order(int64_t epoch) const;
    // The seed of the transform's generator for dataset example `index` in epoch `epoch`.
    uint64_t sample_seed(int64_t epoch, int64_t index) const;

    // Starts epoch `epoch` at batch `first_batch` (stopping any unfinished epoch): workers
    // begin making batches. A run resumed from a checkpoint taken after k batches of epoch e
    // calls start_epoch(e, k) and gets the same remaining batches as the uninterrupted run.
    // Throws [DataLoader] unless 0 <= first_batch <= num_batches().
    void start_epoch(int64_t epoch, int64_t first_batch = 0);
    // The next batch of the current epoch in order, or nullopt after its last. Re-throws
    // an exception raised while making that batch (by the dataset, the transform or collate),
    // which also ends the epoch. Throws [DataLoader] before the first start_epoch.
    std::optional<Batch> next();

    // Range over one epoch: for (Batch& batch : loader.epoch(e)) { ... } calls
    // start_epoch(e, first_batch) and then next() until the epoch ends.
    class Iterator {
      public:
        using value_type = Batch;
        using difference_type = std::ptrdiff_t;
        explicit Iterator(DataLoader* loader) : loader_(loader), current_(loader->next()) {}
        Batch& operator*() { return *current_; }
        Iterator& operator++() {
            current_ = loader_->next();
            return *this;
        }
        bool operator==(std::default_sentinel_t) const { return !current_.has_value(); }

      private:
        DataLoader* loader_;
        std::optional<Batch> current_;
    };
    struct EpochRange {
        DataLoader* loader;
        Iterator begin() { return Iterator(loader); }
        std::default_sentinel_t end() { return {}; }
    };
    EpochRange epoch(int64_t epoch, int64_t first_batch = 0) {
        start_epoch(epoch, first_batch);
        return EpochRange{this};
    }

  private:
    struct Run;
    Batch make_batch(const Run& run, int64_t batch) const;
    void work(Run& run) const;
    void stop(Run& run);

    std::shared_ptr<const Dataset> dataset_;
    DataLoaderOptions options_;
    std::unique_ptr<Run> run_;
};

}  // namespace lumen::datasets
