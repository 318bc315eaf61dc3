// Classification metrics from host copies of logits and labels: one pass over the rows each.
#include "train/metrics_class.h"

#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "ops/reduce.h"
#include "train/metrics.h"

namespace lumen::train {

namespace {

struct HostScores {
    std::vector<double> scores;  // row-major (N, C)
    std::vector<int64_t> labels;
    int64_t rows = 0, classes = 0;
};

// Validates (N, C) scores and (N) labels in [0, C) and copies both to the host.
HostScores host_scores(const char* who, const Tensor& logits, const Tensor& labels) {
    LUMEN_CHECK(logits.ndim() == 2 && labels.ndim() == 1 && labels.size(0) == logits.size(0), who,
                "expects logits (N, C) and labels (N), got ", logits.shape(), " and ",
                labels.shape());
    LUMEN_CHECK(logits.is_floating_point(), who, "logits must be floating, got ", logits.dtype());
    LUMEN_CHECK(!labels.is_floating_point(), who, "labels must be integer, got ", labels.dtype());
    LUMEN_CHECK(logits.size(0) > 0 && logits.size(1) > 0, who,
                "needs at least one row and one class, got ", logits.shape());
    HostScores h{logits.detach().contiguous().cpu().to_vector<double>(),
                 labels.contiguous().cpu().to_vector<int64_t>(), logits.size(0), logits.size(1)};
    for (int64_t i = 0; i < h.rows; ++i)
        LUMEN_CHECK(h.labels[size_t(i)] >= 0 && h.labels[size_t(i)] < h.classes, who, "label ",
                    h.labels[size_t(i)], " at row ", i, " is outside [0, ", h.classes, ")");
    return h;
}

// How many classes come before the label in a descending stable order of the row's scores:
// higher scores, and equal scores at smaller indices (first maximum first).
int64_t rank_of_label(const HostScores& h, int64_t row) {
    const double* s = h.scores.data() + row * h.classes;
    const int64_t label = h.labels[size_t(row)];
    int64_t ahead = 0;
    for (int64_t c = 0; c < h.classes; ++c)
        if (s[c] > s[label] || (s[c] == s[label] && c < label) || std::isnan(s[c])) ++ahead;
    return ahead;
}

}  // namespace

double accuracy(const Tensor& logits, const Tensor& labels) {
    return top_k_accuracy(logits, labels, 1);
}

double top_k_accuracy(const Tensor& logits, const Tensor& labels, int64_t k) {
    HostScores h = host_scores(k == 1 ? "accuracy" : "top_k_accuracy", logits, labels);
    LUMEN_CHECK(k >= 1 && k <= h.classes, "top_k_accuracy", "k must be in [1, ", h.classes,
                "], got ", k);
    int64_t hits = 0;
    for (int64_t i = 0; i < h.rows; ++i) hits += rank_of_label(h, i) < k;
    return double(hits) / double(h.rows);
}

Tensor confusion_matrix(const Tensor& predictions, const Tensor& labels, int64_t num_classes) {
    LUMEN_CHECK(predictions.shape() == labels.shape(), "confusion_matrix",
                "predictions and labels differ in shape: ", predictions.shape(), " and ",
                labels.shape());
    LUMEN_CHECK(!predictions.is_floating_point() && !labels.is_floating_point(), "confusion_matrix",
                "expects integer tensors, got ", predictions.dtype(), " and ", labels.dtype());
    LUMEN_CHECK(num_classes >= 1, "confusion_matrix", "num_classes must be >= 1, got ",
                num_classes);
    std::vector<int64_t> p = predictions.contiguous().cpu().to_vector<int64_t>();
    std::vector<int64_t> t = labels.contiguous().cpu().to_vector<int64_t>();
    std::vector<int64_t> counts(size_t(num_classes * num_classes), 0);
    for (size_t i = 0; i < p.size(); ++i) {
        LUMEN_CHECK(t[i] >= 0 && t[i] < num_classes && p[i] >= 0 && p[i] < num_classes,
                    "confusion_matrix", "label ", t[i], " / prediction ", p[i], " at index ", i,
                    " is outside [0, ", num_classes, ")");
        ++counts[size_t(t[i] * num_classes + p[i])];
    }
    return from_vector(counts, {num_classes, num_classes});
}

namespace {

// Rows true, columns predicted; returns (TP, row sum, column sum) per class.
struct ClassCounts {
    std::vector<double> tp, actual, predicted;
};

ClassCounts class_counts(const char* who, const Tensor& confusion) {
    LUMEN_CHECK(confusion.ndim() == 2 && confusion.size(0) == confusion.size(1) &&
                    !confusion.is_floating_point(),
                who, "expects a square integer confusion matrix, got ", confusion.shape(), " ",
                confusion.dtype());
    const int64_t n = confusion.size(0);
    std::vector<int64_t> m = confusion.contiguous().cpu().to_vector<int64_t>();
    ClassCounts c{std::vector<double>(size_t(n)), std::vector<double>(size_t(n)),
                  std::vector<double>(size_t(n))};
    for (int64_t t = 0; t < n; ++t)
        for (int64_t p = 0; p < n; ++p) {
            double v = double(m[size_t(t * n + p)]);
            if (t == p) c.tp[size_t(t)] = v;
            c.actual[size_t(t)] += v;
            c.predicted[size_t(p)] += v;
        }
    return c;
}

}  // namespace

std::vector<double> per_class_dice(const Tensor& confusion) {
    ClassCounts c = class_counts("per_class_dice", confusion);
    std::vector<double> dice;
    for (size_t i = 0; i < c.tp.size(); ++i) {
        // 2TP + FP + FN = row sum + column sum.
        double denominator = c.actual[i] + c.predicted[i];
        dice.push_back(denominator == 0 ? std::numeric_limits<double>::quiet_NaN()
                                        : 2.0 * c.tp[i] / denominator);
    }
    return dice;
}

std::vector<double> per_class_recall(const Tensor& confusion) {
    ClassCounts c = class_counts("per_class_recall", confusion);
    std::vector<double> recall;
    for (size_t i = 0; i < c.tp.size(); ++i)
        recall.push_back(c.actual[i] == 0 ? std::numeric_limits<double>::quiet_NaN()
                                          : c.tp[i] / c.actual[i]);
    return recall;
}

double auroc_one_vs_rest(const Tensor& scores, const Tensor& labels) {
    HostScores h = host_scores("auroc", scores, labels);
    double total = 0.0;
    for (int64_t c = 0; c < h.classes; ++c) {
        std::vector<double> column;
        std::vector<int64_t> is_class;
        for (int64_t i = 0; i < h.rows; ++i) {
            column.push_back(h.scores[size_t(i * h.classes + c)]);
            is_class.push_back(h.labels[size_t(i)] == c ? 1 : 0);
        }
        try {
            total += auroc(column, is_class);
        } catch (const Error& e) {
            LUMEN_FAIL("auroc", "one-vs-rest class ", c, ": ", e.what());
        }
    }
    return total / double(h.classes);
}

ClassificationMeter::ClassificationMeter(int64_t num_classes) : num_classes_(num_classes) {
    LUMEN_CHECK(num_classes >= 1, "ClassificationMeter", "num_classes must be >= 1, got ",
                num_classes);
    counts_.assign(size_t(num_classes * num_classes), 0);
}

void ClassificationMeter::add(const Tensor& logits, const Tensor& labels, double loss_sum) {
    LUMEN_CHECK(logits.ndim() == 2 && logits.size(1) == num_classes_, "ClassificationMeter",
                "expects logits (N, ", num_classes_, "), got ", logits.shape());
    add_predictions(argmax(logits.detach(), 1), labels, loss_sum);
}

void ClassificationMeter::add_predictions(const Tensor& predicted, const Tensor& labels,
                                          double loss_sum) {
    Tensor batch = confusion_matrix(predicted, labels, num_classes_);
    std::vector<int64_t> counts = batch.to_vector<int64_t>();
    for (size_t i = 0; i < counts.size(); ++i) counts_[i] += counts[i];
    for (int64_t c = 0; c < num_classes_; ++c) correct_ += counts[size_t(c * num_classes_ + c)];
    count_ += labels.numel();
    loss_sum_ += loss_sum;
}

double ClassificationMeter::accuracy() const {
    LUMEN_CHECK(count_ > 0, "ClassificationMeter", "accuracy of no samples");
    return double(correct_) / double(count_);
}

Tensor ClassificationMeter::confusion() const {
    return from_vector(counts_, {num_classes_, num_classes_});
}

double ClassificationMeter::loss() const {
    LUMEN_CHECK(count_ > 0, "ClassificationMeter", "loss of no samples");
    return loss_sum_ / double(count_);
}

}  // namespace lumen::train
