// AUROC by the rank-sum (Mann-Whitney U) formula: one stable sort, ties get their average
// rank, O(n log n).
#include "train/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"

namespace lumen::train {

double auroc(const std::vector<double>& scores, const std::vector<int64_t>& labels) {
    LUMEN_CHECK(scores.size() == labels.size(), "auroc", "got ", scores.size(), " scores and ",
                labels.size(), " labels");
    const size_t n = scores.size();
    int64_t positives = 0;
    for (size_t i = 0; i < n; ++i) {
        LUMEN_CHECK(labels[i] == 0 || labels[i] == 1, "auroc", "labels must be 0 or 1, got ",
                    labels[i], " at index ", i);
        LUMEN_CHECK(!std::isnan(scores[i]), "auroc", "score ", i, " is NaN");
        positives += labels[i];
    }
    const int64_t negatives = int64_t(n) - positives;
    LUMEN_CHECK(positives > 0 && negatives > 0, "auroc", "is undefined without both classes: got ",
                positives, " positives and ", negatives, " negatives");
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return scores[a] < scores[b]; });
    double positive_rank_sum = 0.0;
    for (size_t i = 0; i < n;) {
        size_t j = i;  // [i, j] is a run of equal scores: each gets the mean rank (i + j)/2 + 1
        while (j + 1 < n && scores[order[j + 1]] == scores[order[i]]) ++j;
        double rank = 0.5 * double(i + j) + 1.0;
        for (size_t k = i; k <= j; ++k)
            if (labels[order[k]] == 1) positive_rank_sum += rank;
        i = j + 1;
    }
    double p = double(positives), q = double(negatives);
    return (positive_rank_sum - p * (p + 1.0) / 2.0) / (p * q);
}

double auroc(const Tensor& scores, const Tensor& labels) {
    LUMEN_CHECK(scores.ndim() == 1 && labels.ndim() == 1, "auroc",
                "expects 1-D scores and labels, got ", scores.shape(), " and ", labels.shape());
    LUMEN_CHECK(!labels.is_floating_point(), "auroc", "labels must be integer or bool, got ",
                labels.dtype());
    return auroc(scores.to_vector<double>(), labels.to_vector<int64_t>());
}

double auroc_multilabel(const Tensor& scores, const Tensor& labels) {
    LUMEN_CHECK(scores.ndim() == 2 && labels.shape() == scores.shape() && scores.size(1) > 0,
                "auroc", "expects scores and labels of one shape (N, L) with L > 0, got ",
                scores.shape(), " and ", labels.shape());
    double total = 0.0;
    const int64_t columns = scores.size(1);
    for (int64_t c = 0; c < columns; ++c) {
        try {
            total += auroc(scores.select(1, c).contiguous(), labels.select(1, c).contiguous());
        } catch (const Error& e) {
            LUMEN_FAIL("auroc", "label column ", c, ": ", e.what());
        }
    }
    return total / double(columns);
}

}  // namespace lumen::train
