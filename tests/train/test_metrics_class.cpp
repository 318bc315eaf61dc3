// Classification metrics: accuracy and top-k with ties, the confusion matrix and per-class
// Dice/recall against counts by hand, AUROC one-vs-rest against per-class binary AUROC, and the
// meter's totals over batches; errors.
#include <cmath>

#include "support/gradcheck.h"
#include "train/metrics.h"
#include "train/metrics_class.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// 4 samples, 3 classes.
Tensor sample_logits() {
    return tensor({0.1, 0.7, 0.2,     // predicts 1
                   0.5, 0.5, 0.0,     // tie 0/1: predicts 0 (first maximum)
                   0.2, 0.3, 0.5,     // predicts 2
                   0.9, 0.05, 0.05},  // predicts 0
                  {4, 3});
}

Tensor sample_labels() { return from_vector(std::vector<int64_t>{1, 1, 0, 0}, {4}); }

}  // namespace

TEST_CASE("accuracy and top-k accuracy, ties resolved like argmax and topk", "[train][metrics]") {
    CHECK(train::accuracy(sample_logits(), sample_labels()) == 0.5);
    // Top-2: row 1's label 1 ties with class 0, which comes first, so it is second (a hit);
    // row 2's label 0 has the smallest score (a miss).
    CHECK(train::top_k_accuracy(sample_logits(), sample_labels(), 2) == 0.75);
    CHECK(train::top_k_accuracy(sample_logits(), sample_labels(), 3) == 1.0);
    require_error([] { train::top_k_accuracy(sample_logits(), sample_labels(), 4); },
                  {"[top_k_accuracy]", "k must be in [1, 3]", "4"});
    require_error(
        [] {
            train::accuracy(sample_logits(), from_vector(std::vector<int64_t>{1, 3, 0, 0}, {4}));
        },
        {"[accuracy]", "label 3 at row 1"});
    require_error([] { train::accuracy(sample_logits(), zeros({4})); },
                  {"[accuracy]", "integer", "float32"});
    require_error([] { train::accuracy(sample_logits(), zeros({3}, DType::int64)); },
                  {"[accuracy]", "(N, C)", "[4, 3]", "[3]"});
}

TEST_CASE("confusion matrix, per-class Dice and recall", "[train][metrics]") {
    Tensor predictions = from_vector(std::vector<int64_t>{1, 0, 2, 0, 1}, {5});
    Tensor labels = from_vector(std::vector<int64_t>{1, 1, 0, 0, 1}, {5});
    Tensor counts = train::confusion_matrix(predictions, labels, 4);
    // rows true, columns predicted
    CHECK(counts.to_vector<int64_t>() ==
          std::vector<int64_t>{1, 0, 1, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    std::vector<double> dice = train::per_class_dice(counts);
    CHECK(dice[0] == Approx(2.0 / (2 + 2)));  // TP 1, true 2, predicted 2
    CHECK(dice[1] == Approx(4.0 / (3 + 2)));  // TP 2, true 3, predicted 2
    CHECK(dice[2] == 0.0);                    // predicted once, never true
    CHECK(std::isnan(dice[3]));               // never true nor predicted
    std::vector<double> recall = train::per_class_recall(counts);
    CHECK(recall[0] == 0.5);
    CHECK(recall[1] == Approx(2.0 / 3.0));
    CHECK(std::isnan(recall[2]));
    require_error([&] { train::confusion_matrix(predictions, labels, 2); },
                  {"[confusion_matrix]", "prediction 2 at index 2", "[0, 2)"});
    require_error(
        [&] {
            train::confusion_matrix(predictions, labels.view({5, 1}), 3);
        },
        {"[confusion_matrix]", "[5]", "[5, 1]"});
    require_error(
        [] {
            train::per_class_dice(zeros({2, 3}, DType::int64));
        },
        {"[per_class_dice]", "square", "[2, 3]"});
}

TEST_CASE("AUROC one-vs-rest is the mean of the per-class binary AUROCs", "[train][metrics]") {
    Tensor scores =
        tensor({0.1, 0.7, 0.2, 0.5, 0.4, 0.1, 0.2, 0.3, 0.5, 0.6, 0.3, 0.1, 0.3, 0.3, 0.4}, {5, 3});
    Tensor labels = from_vector(std::vector<int64_t>{1, 0, 2, 0, 2}, {5});
    double want = 0.0;
    for (int64_t c = 0; c < 3; ++c) {
        std::vector<int64_t> is_class;
        for (int64_t label : labels.to_vector<int64_t>()) is_class.push_back(label == c);
        want += train::auroc(scores.select(1, c).contiguous().to_vector<double>(), is_class);
    }
    CHECK(train::auroc_one_vs_rest(scores, labels) == Approx(want / 3.0).epsilon(1e-15));
    require_error(
        [&] {
            train::auroc_one_vs_rest(scores, from_vector(std::vector<int64_t>{1, 0, 1, 0, 1}, {5}));
        },
        {"[auroc]", "class 2", "0 positives"});
}

TEST_CASE("ClassificationMeter sums correct counts, losses and confusions over batches",
          "[train][metrics]") {
    train::ClassificationMeter meter(3);
    meter.add(sample_logits(), sample_labels(), 2.0);
    meter.add(sample_logits().narrow(0, 0, 1), sample_labels().narrow(0, 0, 1), 0.5);
    CHECK(meter.count() == 5);
    CHECK(meter.correct() == 3);
    CHECK(meter.accuracy() == 0.6);
    CHECK(meter.loss() == 0.5);
    CHECK(meter.confusion().to_vector<int64_t>() ==
          std::vector<int64_t>{1, 0, 1, 1, 2, 0, 0, 0, 0});
    train::ClassificationMeter empty(3);
    require_error([&] { empty.accuracy(); }, {"[ClassificationMeter]", "no samples"});
    require_error(
        [&] {
            meter.add(zeros({2, 4}), zeros({2}, DType::int64), 0.0);
        },
        {"[ClassificationMeter]", "(N, 3)", "[2, 4]"});
}
