// Classification metrics on the host (no gradients; tensors are copied to the CPU): accuracy,
// top-k accuracy, the confusion matrix and what derives from it (per-class Dice/F1), AUROC one
// vs rest, and ClassificationMeter, which sums them over the batches of an evaluation. AUROC
// itself is in metrics.h; segmentation metrics in metrics_seg.h.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace lumen::train {

// Shapes used below: logits (N, C) floating (any scores whose order ranks the classes);
// labels (N) integer in [0, C); predictions (N) integer in [0, C).

// The fraction of rows whose top-1 class (first maximum, as argmax) equals the label.
// Throws [accuracy] for bad shapes, a floating label tensor, a label outside [0, C) or N = 0.
double accuracy(const Tensor& logits, const Tensor& labels);

// The fraction of rows whose label is among the k largest scores; a tie at the k-th score
// counts the label in when its score equals it and its index comes first (torch.topk's order,
// the first maximum first). Throws [top_k_accuracy] as accuracy, and for k outside [1, C].
double top_k_accuracy(const Tensor& logits, const Tensor& labels, int64_t k);

// counts[t][p] = number of samples with true class t predicted as p (scikit-learn's
// confusion_matrix layout), a (C, C) int64 CPU tensor. Throws [confusion_matrix] for different
// lengths, non-integer tensors, num_classes < 1 or a value outside [0, num_classes).
Tensor confusion_matrix(const Tensor& predictions, const Tensor& labels, int64_t num_classes);

// Per class c of a (C, C) confusion matrix: Dice = F1 = 2 TP / (2 TP + FP + FN) with TP the
// diagonal, FP the column sum minus TP, FN the row sum minus TP; NaN for a class that is never
// true nor predicted (0 / 0). Throws [per_class_dice] for a matrix that is not square integer.
std::vector<double> per_class_dice(const Tensor& confusion);
// Per class recall TP / (TP + FN) (NaN for a class that never occurs).
std::vector<double> per_class_recall(const Tensor& confusion);

// AUROC one-vs-rest (scikit-learn roc_auc_score(multi_class="ovr", average="macro")): for each
// class c, auroc(scores[:, c], labels == c), then the mean over classes. scores (N, C) any
// floating dtype (probabilities or logits). Throws [auroc] naming a class that is absent from
// the labels (or present in every row).
double auroc_one_vs_rest(const Tensor& scores, const Tensor& labels);

// Running totals over an evaluation: add() each batch's logits, labels and summed loss, then
// read the means. Everything is accumulated in int64/double, so the result does not depend on
// the batch size.
class ClassificationMeter {
  public:
    // Throws [ClassificationMeter] for num_classes < 1.
    explicit ClassificationMeter(int64_t num_classes);
    // loss_sum: the batch's summed (not averaged) loss. Throws as confusion_matrix.
    void add(const Tensor& logits, const Tensor& labels, double loss_sum);
    // The same with the predicted classes (N) int64 instead of the logits.
    void add_predictions(const Tensor& predicted, const Tensor& labels, double loss_sum);
    int64_t count() const { return count_; }
    int64_t correct() const { return correct_; }
    // accuracy() and loss() throw [ClassificationMeter] when nothing was added.
    double accuracy() const;
    double loss() const;  // the mean loss per sample
    // (C, C) int64 counts, rows true, columns predicted.
    Tensor confusion() const;

  private:
    int64_t num_classes_, count_ = 0, correct_ = 0;
    double loss_sum_ = 0.0;
    std::vector<int64_t> counts_;
};

}  // namespace lumen::train
