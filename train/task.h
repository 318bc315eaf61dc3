// Tasks: what a batch means to the trainer, how its loss is computed from the model's outputs,
// and how an evaluation is scored and aggregated (over the split and per case). Three kinds:
//   classification  images (2-D, 3-D), feature bags, token sequences -> (B, K) logits;
//                   cross-entropy; accuracy, top-k, balanced accuracy, AUROC, confusion matrix
//   segmentation    (B, C, *spatial) -> (B, K, *spatial) logits, 2-D or 3-D; CE, soft Dice,
//                   Dice+CE, UTNet's loss, Boundary DoU, with deep supervision; per class and
//                   case Dice, IoU, HD95
//   enhancement     (B, C, *spatial) -> an image of the target's shape (denoising); MSE, L1,
//                   Charbonnier, the Gaussian-derivative loss; PSNR, SSIM
// A batch is {input, target, ...} on the CPU (a decathlon batch adds the voxel-to-world
// affines (B, 4, 4), whose column norms give the spacing HD95 is measured in).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/module.h"
#include "train/inference.h"
#include "train/loss.h"

namespace lumen::train {

// One evaluation over a split: the mean loss per example, named metrics ("accuracy",
// "mean_dice", "dice_liver", "psnr", ...), and one row of metrics per example in the split's
// order (columns case_columns) for `lumen eval`'s per-case CSV.
struct EvalResult {
    double loss = 0.0, accuracy = 0.0;  // accuracy: classification only (else 0)
    int64_t count = 0;
    double seconds = 0.0;
    std::map<std::string, double> metrics;
    std::vector<std::string> case_columns;
    std::vector<std::vector<double>> case_rows;
    std::vector<std::vector<int64_t>> confusion;  // classification: rows true, columns predicted
};

// Adds up one evaluation, batch by batch. add() gets the model's prediction (the main output,
// on the CPU) and the batch; finish() fills the metrics and per-case rows.
class TaskMeter {
  public:
    virtual ~TaskMeter() = default;
    virtual void add(const Tensor& output, const std::vector<Tensor>& batch, double loss_sum) = 0;
    virtual void finish(EvalResult& result) const = 0;
    // Sharded evaluation (data-parallel, train/dist): state() is what the meter has added up
    // (sums and per-case rows) as numbers; merge() appends such a state after this meter's
    // cases. A fresh meter that merges every rank's state in rank order finishes as one that
    // saw the whole split, since the ranks evaluate consecutive blocks of it. Throws
    // [evaluate] for a state of another task or number of classes.
    virtual std::vector<double> state() const = 0;
    virtual void merge(const std::vector<double>& state) = 0;
};

// The state of a meter that keeps a loss sum and one row of `width` numbers per case:
// {loss_sum, width, rows...}; and its merge into such a meter (TaskMeter::state, merge).
std::vector<double> rows_state(double loss_sum, int64_t width,
                               const std::vector<std::vector<double>>& rows);
void merge_rows_state(const std::vector<double>& state, int64_t width, double& loss_sum,
                      std::vector<std::vector<double>>& rows);

// How evaluation runs the model on an input the model cannot take whole (a volume larger than
// its window, or a 3-D volume for a 2-D model).
struct InferenceOptions {
    // "whole" (the model sees the input as it is), "sliding_window" or "slices" (a 2-D model
    // on each slice of a 3-D volume along slice_axis, TransUNet's protocol).
    std::string mode = "whole";
    SlidingWindowOptions window;  // mode "sliding_window"
    int64_t slice_axis = 2;       // mode "slices": 2, 3 or 4 of (B, C, D, H, W)
    int64_t slice_batch = 16;     // slices per model call
};

class Task {
  public:
    virtual ~Task() = default;
    virtual std::string kind() const = 0;  // "classification", "segmentation", "enhancement"
    // The loss of a training batch from the model's outputs (forward_outputs: the main one and
    // any deep-supervision ones) and the target, on the outputs' device -> 0-d tensor.
    virtual Tensor loss(const std::vector<Tensor>& outputs, const Tensor& target) const = 0;
    // The loss of a batch's main output as evaluation reports it (default: loss({output})).
    virtual Tensor eval_loss(const Tensor& output, const Tensor& target) const {
        return loss({output}, target);
    }
    virtual std::unique_ptr<TaskMeter> meter() const = 0;
    // The metric that picks the best checkpoint and that the progress lines and plot show,
    // without the "test_" prefix: "accuracy", "mean_dice", "psnr".
    virtual std::string primary_metric() const = 0;
    // Whether training counts correct predictions (train_accuracy), classification only.
    virtual bool counts_correct() const { return false; }
    // Whether the loss reads every output of forward_outputs (deep supervision) rather than
    // forward's main output alone.
    virtual bool uses_all_outputs() const { return false; }
    // The model's prediction for an evaluation input (B, C, *spatial) on `device`, by
    // `inference` (whole, sliding window or slice by slice).
    Tensor predict(nn::Module& model, const Tensor& input) const;

    InferenceOptions inference;
};

// The class-index target of a batch: int64 (B) or (B, *spatial) (a (B, 1, *spatial) target
// loses its channel). Throws [task] for a floating target.
Tensor class_target(const Tensor& target);

// A weighted sum of named loss terms, e.g. "cross_entropy+soft_dice" with weights {0.5, 0.5}.
// Segmentation terms: cross_entropy (class_weights, label_smoothing), soft_dice (gdla's, squared
// denominators), dice_ce (gdla's 0.5 CE + 0.5 Dice), utnet_dice (UTNet's adaptive Dice),
// utnet (UTNet's class-weighted CE + adaptive Dice), boundary_dou. Enhancement terms: mse, l1,
// charbonnier, gaussian_deriv3d. Classification: cross_entropy.
struct LossSpec {
    std::string names;  // terms joined by '+' (empty: cross_entropy, dice_ce or mse by task)
    std::vector<double> weights;        // one per term (empty: 1 each)
    std::vector<double> class_weights;  // cross_entropy / utnet: one per class (empty: none)
    double label_smoothing = 0.0;       // cross_entropy
    // Deep supervision: the weight of each of the model's outputs in forward_outputs' order
    // (UTNet: y, out3, out2, out1 -> {1, 0.4, 0.2, 0.1}; PVT-GDLA: x4, x3, x2, x1 -> {1, 1, 1,
    // 1}); empty: the main output (the first) with weight 1. Extra outputs get weight 0.
    std::vector<double> deep_supervision;
};
// The loss terms each task kind allows.
std::vector<std::string> loss_term_names(const std::string& kind);

struct TaskOptions {
    std::string kind = "classification";
    LossSpec loss;
    int64_t num_classes = 0;               // classification and segmentation
    std::vector<std::string> class_names;  // for metric and column names (default: indices)
    // classification: k of top-k accuracy (0: none)
    int64_t top_k = 0;
    // segmentation: HD95 per class and case (surface distances; the slowest metric), and the
    // case protocol: "standard" (nnU-Net: a class absent from both prediction and reference is
    // skipped; Dice 0 when only one has it; HD95 only when both have it) or "transunet" (the
    // Synapse table: prediction empty -> (0, 0); reference empty -> (1, 0)).
    bool hd95 = true;
    std::string protocol = "standard";
    // enhancement: the data range of PSNR and SSIM (the targets' range: 1 for [0, 1] images).
    double data_range = 1.0;
    InferenceOptions inference;
};

// The task of `options`. Throws [task] for an unknown kind or loss term (naming the allowed
// ones and the closest), weights of the wrong length, num_classes < 2 for segmentation.
std::shared_ptr<Task> make_task(const TaskOptions& options);

}  // namespace lumen::train
