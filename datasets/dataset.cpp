// TensorDataset and Subset: argument checks and index lookups.
#include "datasets/dataset.h"

namespace lumen::datasets {

TensorDataset::TensorDataset(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
    LUMEN_CHECK(!tensors_.empty(), "TensorDataset", "needs at least one tensor, got none");
    for (size_t k = 0; k < tensors_.size(); ++k) {
        const Tensor& t = tensors_[k];
        LUMEN_CHECK(t.defined(), "TensorDataset", "tensor ", k, " is undefined");
        LUMEN_CHECK(t.ndim() >= 1, "TensorDataset", "tensor ", k,
                    " needs a first (example) dim, got a 0-dimensional tensor");
        LUMEN_CHECK(t.is_cpu(), "TensorDataset", "tensor ", k, " must be on the CPU, got ",
                    t.device());
        LUMEN_CHECK(t.size(0) == tensors_[0].size(0), "TensorDataset", "tensor ", k, " has shape ",
                    t.shape(), " but tensor 0 has shape ", tensors_[0].shape(),
                    ": expected the same first dim");
    }
    size_ = tensors_[0].size(0);
}

Example TensorDataset::get(int64_t index) const {
    LUMEN_CHECK(index >= 0 && index < size_, "TensorDataset", "index ", index,
                " is out of range for ", size_, " examples");
    Example example;
    example.reserve(tensors_.size());
    for (const Tensor& t : tensors_) example.push_back(t.select(0, index));
    return example;
}

Subset::Subset(std::shared_ptr<const Dataset> dataset, std::vector<int64_t> indices)
    : dataset_(std::move(dataset)), indices_(std::move(indices)) {
    LUMEN_CHECK(dataset_ != nullptr, "Subset", "needs a dataset, got null");
    int64_t n = dataset_->size();
    for (size_t k = 0; k < indices_.size(); ++k) {
        LUMEN_CHECK(indices_[k] >= 0 && indices_[k] < n, "Subset", "index ", k, " is ", indices_[k],
                    ", out of range for a dataset of ", n, " examples");
    }
}

Example Subset::get(int64_t index) const {
    LUMEN_CHECK(index >= 0 && index < size(), "Subset", "index ", index, " is out of range for ",
                size(), " examples");
    return dataset_->get(indices_[size_t(index)]);
}

}  // namespace lumen::datasets
