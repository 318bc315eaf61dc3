// Segmentation metrics on the host (no gradients; tensors are copied to the CPU): the exact
// Euclidean distance transform (Felzenszwalb & Huttenlocher 2012), medpy's surface distances, Dice
// and HD95 with the TransUNet per-case protocol (as PVT-GDLA reports them, Zheng et al. 2026, Sec.
// 4), MONAI's validation Dice, pixel accuracy, and torchmetrics' per-sample F1 "Dice" (as the
// context-length study computes it).
#pragma once

#include <vector>

#include "core/tensor.h"

namespace lumen::train {

// scipy.ndimage.distance_transform_edt: for every non-zero element of `mask` (any integer,
// bool or floating dtype, any rank >= 1), the Euclidean distance to the nearest zero element,
// with the grid step along dim d equal to spacing[d] (empty: all 1); 0 at zero elements,
// +inf everywhere when there is no zero element. Exact (separable lower envelopes of
// parabolas, O(numel) per dim). -> float64 tensor of mask's shape on the CPU.
// Throws [distance_transform_edt] for a spacing of the wrong length or a step <= 0.
Tensor distance_transform_edt(const Tensor& mask, const std::vector<double>& spacing = {});

// The border of a binary mask, mask AND NOT erode(mask), eroded with the face-connected cross
// (4-neighbourhood in 2-D, 6 in 3-D) and everything outside the array counting as background
// (scipy's binary_erosion default): mask elements with a face neighbour outside the mask or the
// array. -> bool tensor of mask's shape on the CPU.
Tensor mask_border(const Tensor& mask);

// medpy's __surface_distances: the distance from every border element of `a` to the nearest
// border element of `b`, in border(a)'s row-major order. Both masks non-zero = true, of one
// shape. Throws [surface_distances] for different shapes, or when either mask is empty.
std::vector<double> surface_distances(const Tensor& a, const Tensor& b,
                                      const std::vector<double>& spacing = {});

// medpy.metric.binary.hd95: the 95th percentile (NumPy's linear interpolation) of
// surface_distances(pred, ref) joined with surface_distances(ref, pred). Throws
// [surface_distances] when either mask is empty.
double hd95(const Tensor& pred, const Tensor& ref, const std::vector<double>& spacing = {});

// Dice coefficient 2 |P and G| / (|P| + |G|) of two masks (non-zero = true) of one shape;
// 1 when both are empty. Throws [binary_dice] for different shapes.
double binary_dice(const Tensor& pred, const Tensor& ref);

// One class of one case in the TransUNet protocol (Synapse table): with P = pred == c and
// G = target == c over the whole case (a 2-D slice or a 3-D volume):
//   P and G non-empty -> (binary_dice, hd95);  P non-empty, G empty -> (1, 0);
//   P empty -> (0, 0).
struct CaseMetric {
    double dice = 0.0;
    double hd95 = 0.0;
};
// The metric of classes 1..num_classes-1 (background skipped) of integer maps pred and target
// of one shape. Throws [transunet_case_metrics] for different shapes, non-integer maps or
// num_classes < 2.
std::vector<CaseMetric> transunet_case_metrics(const Tensor& pred, const Tensor& target,
                                               int64_t num_classes,
                                               const std::vector<double>& spacing = {});

// MONAI DiceMetric(include_background=False, reduction="mean_batch", ignore_empty=True), the
// gdla validation score: for each sample b of integer maps (B, *spatial) and foreground class
// c, 2 |P and G| / (|P| + |G|) when G is non-empty (otherwise ignored); per class the mean over
// the samples where it is defined (NaN when none). -> num_classes - 1 values (classes 1..K-1).
// Throws [foreground_dice] for different shapes, non-integer maps or num_classes < 2.
std::vector<double> foreground_dice(const Tensor& pred, const Tensor& target, int64_t num_classes);

// Pixel accuracy of integer maps (B, *spatial): the fraction of equal labels per sample,
// averaged over the samples. Throws [pixel_accuracy] for different shapes or non-integer maps.
double pixel_accuracy(const Tensor& pred, const Tensor& target);

// torchmetrics 1.4.1 F1Score(average="macro", multidim_average="samplewise"), then the batch
// mean, on integer maps (B, ...) (predictions already argmax'ed):
//   num_classes <= 2: per sample 2TP / (2TP + FP + FN) of class 1, 0 when the denominator is 0;
//   otherwise per sample the mean of each class's F1 over the classes that occur in the sample's
//   prediction or target (background included), 0 when none.
// Throws [samplewise_dice] for different shapes, non-integer maps, no batch dim, num_classes < 2
// or a label outside [0, num_classes).
double samplewise_dice(const Tensor& preds, const Tensor& target, int64_t num_classes);

}  // namespace lumen::train
