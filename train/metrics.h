// Evaluation metrics computed on the host from finished predictions (no gradients): AUROC, exact
// with ties (the softmax-free paper's metric, Khader et al., Sec. 3.2; also torchmetrics' binary
// AUROC as the context-length study uses it), binary and averaged over several binary labels.
// Segmentation metrics (Dice, HD95, accuracy) are in metrics_seg.h, SSIM in metrics_image.h.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace lumen::train {

// Area under the ROC curve for binary labels (1 = positive), P positives and Q negatives:
//   AUROC = (sum over positives of rank_i - P (P + 1) / 2) / (P Q)
// with 1-based ranks of the scores, averaged over ties; equal to the probability that a
// random positive scores above a random negative, ties counting 1/2, and to the trapezoidal
// ROC area (scikit-learn's roc_auc_score). Depends only on the order of the scores.
// Throws [auroc] for different lengths, a label other than 0/1, a NaN score, or when P or Q
// is 0 (undefined).
double auroc(const std::vector<double>& scores, const std::vector<int64_t>& labels);

// The same for tensors: scores (N) of any floating dtype, labels (N) integer or bool, on any
// device (copied to the host).
double auroc(const Tensor& scores, const Tensor& labels);

// Several binary labels: scores and labels (N, L); the mean over the L columns of each
// column's AUROC (scikit-learn's average="macro"). Throws [auroc] naming a column with only
// one class.
double auroc_multilabel(const Tensor& scores, const Tensor& labels);

}  // namespace lumen::train
