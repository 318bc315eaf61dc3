// Inside the tasks (train/task*.cpp): the weighted loss sum they share and the factories of
// the segmentation and enhancement tasks. Users include train/task.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "train/task.h"

namespace lumen::train {

// The terms of a LossSpec, checked against the task kind's allowed terms, and their sum.
class LossSum {
  public:
    // Throws [task] for an unknown term (closest suggested) or weights of the wrong length.
    LossSum(const std::string& kind, const LossSpec& spec);
    // sum_i weights[i] term_i(output, target).
    Tensor operator()(const Tensor& output, const Tensor& target) const;
    // With deep supervision: sum_j deep_supervision[j] (*this)(outputs[j], target); without,
    // (*this)(outputs[0], target).
    Tensor outputs(const std::vector<Tensor>& outputs, const Tensor& target) const;
    bool deep_supervision() const { return !spec_.deep_supervision.empty(); }

  private:
    Tensor term(const std::string& name, const Tensor& output, const Tensor& target) const;
    LossSpec spec_;
    std::vector<std::string> terms_;
    std::vector<double> weights_;
};

std::shared_ptr<Task> make_segmentation_task(const TaskOptions& options);
std::shared_ptr<Task> make_enhancement_task(const TaskOptions& options);

}  // namespace lumen::train
