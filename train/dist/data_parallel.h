// What data-parallel training does with a process group (train/dist/process_group.h), as
// PyTorch's DistributedDataParallel: the same start on every rank (rank 0's weights, the same
// config), then gradients averaged over the ranks after each backward, in buckets. How the
// data is split (each rank a disjoint shard of the epoch's permutation) is the loader's
// (datasets/loader.h: DataLoaderOptions::num_replicas). docs/distributed.md has the whole story.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/autograd.h"
#include "nn/module.h"
#include "train/dist/process_group.h"

namespace lumen::train::dist {

// Copies rank `root`'s parameters and buffers into every rank's module, in place (tensors keep
// their identity, so an optimizer made before still points at them). The modules must have the
// same structure; a mismatch in shape or dtype across ranks is a collective mismatch (MPI
// reports it or hangs), so check the config first (check_same_config).
void broadcast_module(ProcessGroup& group, nn::Module& module, int root = 0);
// The buffers only (batch norm's running statistics, which each rank updates from its own
// shard): the trainer calls it before evaluating, so that every rank evaluates rank 0's model
// and takes the same decisions from the metrics (best checkpoint, early stopping).
void broadcast_buffers(ProcessGroup& group, nn::Module& module, int root = 0);

// Every rank's numbers (any length on each), in rank order, on every rank.
std::vector<std::vector<double>> all_gather_numbers(ProcessGroup& group,
                                                    const std::vector<double>& numbers);

// Rank `root`'s text on every rank.
std::string broadcast_string(ProcessGroup& group, const std::string& text, int root = 0);

// Compares a 64-bit hash of `config_json` (the resolved config) across the ranks. Throws
// [dist] on every rank alike, naming the ranks whose config differs from rank 0's, so that
// a job started with different files or --set flags stops before training.
void check_same_config(ProcessGroup& group, const std::string& config_json);

// FNV-1a, 64 bits: the hash check_same_config compares.
uint64_t fnv1a_hash(const std::string& text);

// Averages the gradients of a model's parameters over the ranks: grad = (sum over ranks) / N.
// Parameters go into buckets of about `bucket_bytes` (25 MiB, as DDP's bucket_cap_mb), in
// reverse order (the order backward makes them); each bucket is one flat buffer and one
// all-reduce, instead of one per parameter. With hook() installed around backward, a bucket's
// all-reduce starts as soon as backward has made all of its gradients, and runs while backward
// computes the rest (DDP's overlap). A parameter without a gradient on some ranks (not used by
// their forward) counts as zero there; one without a gradient on every rank keeps none.
class GradientReducer {
  public:
    // Throws [GradientReducer] for bucket_bytes < 1.
    GradientReducer(std::shared_ptr<ProcessGroup> group, const std::vector<Tensor>& parameters,
                    int64_t bucket_bytes = int64_t(25) << 20);
    // The hook to install (LeafReadyHookGuard, core/autograd.h) around the backward of the last
    // micro-batch of a step: it starts the buckets whose gradients are final, in bucket order
    // (every rank starts the same collectives in the same order, whatever its graph), and
    // polls those under way. Empty (no hook) with one rank. Throws [GradientReducer] when a
    // parameter's gradient is made again after its bucket has started (two backward passes
    // with the hook in one step).
    LeafReadyHook hook();
    // Call after backward (after the last micro-batch when accumulating) and before clipping
    // and the optimizer step; every rank must call it. Starts the buckets backward did not
    // (every bucket without the hook), waits for all and writes the averages into .grad().
    void average();
    int64_t num_buckets() const { return int64_t(buckets_.size()); }
    // How many buckets the last average() found already started by the hook during backward.
    int64_t started_in_backward() const { return started_in_backward_; }

  private:
    struct Bucket {
        std::vector<Tensor> parameters;
        int64_t numel = 0;           // their elements together
        int64_t waiting = 0;         // parameters whose gradient backward has not finished
        std::vector<bool> ready;     // per parameter, this step
        Tensor flat;                 // the buffer being reduced
        std::unique_ptr<Work> work;  // its all-reduce, once started
    };
    void mark_ready(const TensorImpl* leaf);
    void start(Bucket& bucket);
    void finish(Bucket& bucket);
    void reset();

    std::shared_ptr<ProcessGroup> group_;
    std::vector<Bucket> buckets_;
    std::unordered_map<const TensorImpl*, std::pair<size_t, size_t>> where_;  // bucket, index
    size_t next_ = 0;  // the next bucket to start
    int64_t started_in_backward_ = 0;
};

}  // namespace lumen::train::dist
