// The Dataset interface (a size and random access to examples), TensorDataset, which slices
// examples out of tensors held in memory, and Subset. Batching and worker threads are in
// loader.h.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace lumen::datasets {

// The tensors of one sample, e.g. {image (C, H, W) float32, label () int64}.
using Example = std::vector<Tensor>;

// Random access to `size()` examples. get() is called from the loader's worker threads at the
// same time, so it must be safe to call concurrently (a const, read-only lookup is).
class Dataset {
  public:
    virtual ~Dataset() = default;
    // The number of examples.
    virtual int64_t size() const = 0;
    // Example `index`, 0 <= index < size(). Every call for the same index returns tensors of
    // the same shapes and dtypes; the loader stacks them into batches.
    virtual Example get(int64_t index) const = 0;
};

// Examples are the rows of some tensors sharing the first dim N: get(i) = {t[i] for t in
// tensors} (views, no copy), as torch.utils.data.TensorDataset.
class TensorDataset : public Dataset {
  public:
    // Throws [TensorDataset] when `tensors` is empty, a tensor is undefined, 0-dimensional or
    // not on the CPU, or the first dims differ.
    explicit TensorDataset(std::vector<Tensor> tensors);
    int64_t size() const override { return size_; }
    // Throws [TensorDataset] when index is outside [0, size()).
    Example get(int64_t index) const override;
    const std::vector<Tensor>& tensors() const { return tensors_; }

  private:
    std::vector<Tensor> tensors_;
    int64_t size_ = 0;
};

// The examples of `dataset` at `indices`, in that order: get(i) = dataset.get(indices[i]), as
// torch.utils.data.Subset (e.g. the first 1,000 training images for a quick run, or a
// held-out validation part). Throws [Subset] for a null dataset or an index outside
// [0, dataset.size()).
class Subset : public Dataset {
  public:
    Subset(std::shared_ptr<const Dataset> dataset, std::vector<int64_t> indices);
    int64_t size() const override { return int64_t(indices_.size()); }
    // Throws [Subset] when index is outside [0, size()).
    Example get(int64_t index) const override;
    const std::vector<int64_t>& indices() const { return indices_; }

  private:
    std::shared_ptr<const Dataset> dataset_;
    std::vector<int64_t> indices_;
};

}  // namespace lumen::datasets
