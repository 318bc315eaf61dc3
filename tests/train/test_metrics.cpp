// AUROC (Khader et al., Sec. 3.2): against the pairwise definition on data full of ties, simple
// known values, order invariance, multi-label averaging, errors, and the auroc vector.
#include <cmath>

#include "support/gradcheck.h"
#include "train/metrics.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// (1 / PQ) sum over positive-negative pairs of [s_i > s_j] + 1/2 [s_i = s_j].
double pairwise_auroc(const std::vector<double>& s, const std::vector<int64_t>& y) {
    double wins = 0, pairs = 0;
    for (size_t i = 0; i < s.size(); ++i)
        for (size_t j = 0; j < s.size(); ++j)
            if (y[i] == 1 && y[j] == 0) {
                wins += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
                pairs += 1;
            }
    return wins / pairs;
}

}  // namespace

TEST_CASE("auroc equals the pairwise definition with ties", "[train][metrics]") {
    for (uint64_t seed : {1, 2, 3, 4, 5}) {
        Tensor raw = random_input({60}, seed, -1.0, 1.0);
        std::vector<double> scores;
        for (double v : raw.to_vector<double>()) scores.push_back(std::round(v * 4) / 4);  // ties
        std::vector<int64_t> labels;
        for (size_t i = 0; i < scores.size(); ++i) labels.push_back((i * 7 + seed) % 3 == 0);
        INFO("seed " << seed);
        CHECK(train::auroc(scores, labels) ==
              Approx(pairwise_auroc(scores, labels)).epsilon(1e-14));
    }
}

TEST_CASE("auroc: known values, order only, tensors and several labels", "[train][metrics]") {
    CHECK(train::auroc({0.1, 0.2, 0.8, 0.9}, {0, 0, 1, 1}) == 1.0);
    CHECK(train::auroc({0.9, 0.8, 0.2, 0.1}, {0, 0, 1, 1}) == 0.0);
    CHECK(train::auroc({0.5, 0.5, 0.5}, {0, 1, 1}) == 0.5);
    // Positive 0.9 beats both negatives, positive 0.3 ties one: (1 + 1 + 0.5 + 0) / 4.
    CHECK(train::auroc({0.3, 0.7, 0.9, 0.3}, {0, 0, 1, 1}) == 0.625);
    // A monotone map of the scores (logit -> sigmoid) does not change it.
    std::vector<double> logits{-2, 0.5, 1, -0.3, 3, 0.5}, probs;
    for (double z : logits) probs.push_back(1 / (1 + std::exp(-z)));
    std::vector<int64_t> y{0, 1, 0, 1, 1, 0};
    CHECK(train::auroc(logits, y) == train::auroc(probs, y));
    Tensor scores = tensor({0.3, 0.7, 0.9, 0.3});
    Tensor labels = from_vector(std::vector<int64_t>{0, 0, 1, 1});
    CHECK(train::auroc(scores, labels) == 0.625);
    Tensor two = stack({tensor({0.1, 0.2, 0.8, 0.9}), tensor({0.3, 0.7, 0.9, 0.3})}, 1);  // (4, 2)
    Tensor two_labels = stack({labels, labels}, 1);
    CHECK(train::auroc_multilabel(two, two_labels) == Approx((1.0 + 0.625) / 2));
}

TEST_CASE("auroc rejects undefined and malformed input", "[train][metrics]") {
    require_error(
        [] {
            train::auroc({0.1, 0.2}, {1, 1});
        },
        {"[auroc]", "2 positives and 0 negatives"});
    require_error([] { train::auroc({0.1, 0.2}, {0, 2}); }, {"[auroc]", "0 or 1", "2"});
    require_error([] { train::auroc({0.1}, {0, 1}); }, {"[auroc]", "1 scores and 2 labels"});
    require_error([] { train::auroc({NAN, 0.2}, {0, 1}); }, {"[auroc]", "NaN"});
    Tensor s = tensor({0.1, 0.2, 0.3, 0.4}, {2, 2});
    Tensor y = from_vector(std::vector<int64_t>{0, 1, 1, 1}, {2, 2});
    require_error([&] { train::auroc_multilabel(s, y); }, {"[auroc]", "column 1"});
    require_error([&] { train::auroc(s, y); }, {"[auroc]", "1-D"});
}

TEST_CASE("AUROC vector", "[train][metrics][oracle]") {
    require_oracle_vectors({"auroc"}, "sfree_utnet");
}
