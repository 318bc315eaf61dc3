// Tasks (train/task.h): each kind's metrics against cases worked out by hand (classification
// accuracy, balanced accuracy, top-k, AUROC, confusion; segmentation Dice, IoU and HD95 per
// class and case under both protocols, with spacing; enhancement MSE, PSNR, SSIM), the loss
// sums and deep supervision against the losses they combine, and the errors.
#include <cmath>

#include "ops/elementwise.h"
#include "ops/index.h"
#include "ops/loss.h"
#include "ops/random.h"
#include "support/gradcheck.h"
#include "train/loss.h"
#include "train/loss_seg.h"
#include "train/task.h"

using namespace lumen;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;

namespace {

// Logits whose softmax is `p` (rows of probabilities): log p.
Tensor logits_of(const std::vector<double>& p, int64_t k) {
    return log(from_vector(p, {int64_t(p.size()) / k, k}));
}

train::EvalResult run_meter(const train::Task& task, const Tensor& output,
                            const std::vector<Tensor>& batch, double loss_sum = 0.0) {
    std::unique_ptr<train::TaskMeter> meter = task.meter();
    meter->add(output, batch, loss_sum);
    train::EvalResult r;
    meter->finish(r);
    return r;
}

// (1, K, *spatial) logits whose argmax is `map` (int64 (*spatial)).
Tensor logits_for(const Tensor& map, int64_t k) {
    std::vector<int64_t> order{map.ndim()};
    for (int64_t d = 0; d < map.ndim(); ++d) order.push_back(d);
    return mul(one_hot(map, k).permute(order).unsqueeze(0).to(DType::float64), 10.0);
}

}  // namespace

TEST_CASE("classification metrics: accuracy, balanced accuracy, top-k, confusion", "[task]") {
    train::TaskOptions o;
    o.num_classes = 3;
    o.top_k = 2;
    o.class_names = {"a", "b", "c"};
    auto task = train::make_task(o);
    // Labels 0 0 0 1; predictions 0 0 0 0 (class 1's probability is second in the last row).
    Tensor logits = logits_of({0.7, 0.2, 0.1, 0.6, 0.1, 0.3, 0.5, 0.3, 0.2, 0.5, 0.4, 0.1}, 3);
    Tensor labels = from_vector(std::vector<int64_t>{0, 0, 0, 1}, {4});
    train::EvalResult r = run_meter(*task, logits, {Tensor(), labels}, 2.0);
    CHECK(r.count == 4);
    CHECK_THAT(r.loss, WithinAbs(0.5, 1e-12));
    CHECK_THAT(r.metrics.at("accuracy"), WithinAbs(0.75, 1e-12));
    // Recall of class 0 is 1, of class 1 is 0; class 2 never occurs and is left out.
    CHECK_THAT(r.metrics.at("balanced_accuracy"), WithinAbs(0.5, 1e-12));
    // Top-2: rows 1-3 have their label first; row 4's label (p 0.4) is second.
    CHECK_THAT(r.metrics.at("top2_accuracy"), WithinAbs(1.0, 1e-12));
    // One-vs-rest over the classes present and absent: class 0 (positives .7 .6 .5 vs .5:
    // 1 + 1 + 0.5 over 3 pairs), class 1 (positive .4 vs .2 .1 .3: 3 of 3); class 2 never
    // occurs and is skipped.
    CHECK_THAT(r.metrics.at("auroc"), WithinAbs((2.5 / 3 + 1.0) / 2, 1e-12));
    REQUIRE(r.confusion.size() == 3);
    CHECK(r.confusion[0] == std::vector<int64_t>{3, 0, 0});
    CHECK(r.confusion[1] == std::vector<int64_t>{1, 0, 0});
    CHECK(r.case_columns == std::vector<std::string>{"label", "predicted", "p_a", "p_b", "p_c"});
    REQUIRE(r.case_rows.size() == 4);
    CHECK(r.case_rows[3][0] == 1.0);
    CHECK(r.case_rows[3][1] == 0.0);
    CHECK_THAT(r.case_rows[3][3], WithinAbs(0.4, 1e-12));
}

TEST_CASE("classification AUROC of a binary task is the positive class's", "[task]") {
    auto task = train::make_task({});
    // p(class 1) = .1 .4 .35 .8 for labels 0 0 1 1: positives beat negatives in 3 of 4 pairs.
    Tensor logits = logits_of({0.9, 0.1, 0.6, 0.4, 0.65, 0.35, 0.2, 0.8}, 2);
    Tensor labels = from_vector(std::vector<int64_t>{0, 0, 1, 1}, {4});
    train::EvalResult r = run_meter(*task, logits, {Tensor(), labels});
    CHECK_THAT(r.metrics.at("auroc"), WithinAbs(0.75, 1e-12));
    // Predictions 0 0 0 1 (p .35 < .5 in the third row).
    CHECK_THAT(r.metrics.at("accuracy"), WithinAbs(0.75, 1e-12));
}

TEST_CASE("segmentation metrics per class and case", "[task]") {
    train::TaskOptions o;
    o.kind = "segmentation";
    o.num_classes = 4;
    // 4 x 4 maps. Class 1: prediction rows 0-1 x cols 0-1 (4 px), reference rows 0-1 x cols
    // 0-2 (6 px): overlap 4 -> Dice 8 / 10, IoU 4 / 6. Class 2: predicted at (3, 3) only,
    // absent from the reference. Class 3: absent from both.
    Tensor pred =
        from_vector(std::vector<int64_t>{1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2}, {4, 4});
    Tensor ref =
        from_vector(std::vector<int64_t>{1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {4, 4});
    Tensor logits = logits_for(pred, 4);
    SECTION("standard protocol (nnU-Net)") {
        train::EvalResult r = run_meter(*train::make_task(o), logits, {Tensor(), ref.unsqueeze(0)});
        REQUIRE(r.case_rows.size() == 1);
        const std::vector<double>& row = r.case_rows[0];
        REQUIRE(row.size() == 9);
        CHECK_THAT(row[0], WithinAbs(0.8, 1e-12));  // dice_1
        CHECK(row[1] == 0.0);                       // dice_2: only predicted
        CHECK(std::isnan(row[2]));                  // dice_3: absent from both
        CHECK_THAT(row[3], WithinAbs(4.0 / 6.0, 1e-12));
        // HD95 of class 1: the reference's border column 2 is 1 from the prediction; the
        // prediction's border lies on the reference. Distances: prediction border (4 px) all
        // 0; reference border (6 px): 4 at 0 and the two of column 2 at 1 -> the 95th
        // percentile of {0 x 8, 1, 1} is 1.
        CHECK_THAT(row[6], WithinAbs(1.0, 1e-12));
        CHECK(std::isnan(row[7]));  // only one side has class 2
        CHECK_THAT(r.metrics.at("dice_1"), WithinAbs(0.8, 1e-12));
        CHECK_THAT(r.metrics.at("mean_dice"), WithinAbs(0.4, 1e-12));  // (0.8 + 0) / 2
        CHECK(r.case_columns[0] == "dice_1");
        CHECK(r.case_columns[8] == "hd95_3");
    }
    SECTION("TransUNet protocol") {
        o.protocol = "transunet";
        train::EvalResult r = run_meter(*train::make_task(o), logits, {Tensor(), ref.unsqueeze(0)});
        const std::vector<double>& row = r.case_rows[0];
        CHECK_THAT(row[0], WithinAbs(0.8, 1e-12));
        CHECK(row[1] == 1.0);  // predicted, reference empty: (1, 0)
        CHECK(row[7] == 0.0);
        CHECK(row[2] == 0.0);  // prediction empty: (0, 0)
        CHECK(row[8] == 0.0);
        CHECK_THAT(r.metrics.at("mean_dice"), WithinAbs((0.8 + 1.0 + 0.0) / 3, 1e-12));
    }
    SECTION("HD95 in millimetres from the batch's affine") {
        o.num_classes = 2;
        // One pixel each, one column apart; column spacing 3 mm (affine column 1).
        Tensor p = from_vector(std::vector<int64_t>{1, 0, 0, 0}, {2, 2});
        Tensor t = from_vector(std::vector<int64_t>{0, 1, 0, 0}, {2, 2});
        Tensor affine = from_vector(
            std::vector<double>{2, 0, 0, 0, 0, 3, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, {1, 4, 4});
        train::EvalResult r =
            run_meter(*train::make_task(o), logits_for(p, 2), {Tensor(), t.unsqueeze(0), affine});
        CHECK_THAT(r.case_rows[0][2], WithinAbs(3.0, 1e-12));
        CHECK(r.case_rows[0][0] == 0.0);
    }
    SECTION("a label outside the classes is an error") {
        Tensor bad = ref.clone();
        bad.data_ptr<int64_t>()[0] = 7;
        CHECK_THROWS_WITH(run_meter(*train::make_task(o), logits, {Tensor(), bad.unsqueeze(0)}),
                          Contains("label 7 outside [0, 3]"));
    }
}

TEST_CASE("enhancement metrics: MSE, PSNR, SSIM per case", "[task]") {
    train::TaskOptions o;
    o.kind = "enhancement";
    auto task = train::make_task(o);
    Tensor target = testing::random_input({2, 1, 16, 16}, 3, 0.0, 1.0);
    // Case 0 off by 0.1 everywhere (MSE 0.01, PSNR 20 dB); case 1 exact (SSIM 1).
    Tensor shift = from_vector(std::vector<double>{0.1, 0.0}, {2, 1, 1, 1}).to(target.dtype());
    Tensor output = add(target, shift);
    train::EvalResult r = run_meter(*task, output, {Tensor(), target});
    REQUIRE(r.case_rows.size() == 2);
    CHECK_THAT(r.case_rows[0][0], WithinAbs(0.01, 1e-9));
    CHECK_THAT(r.case_rows[0][1], WithinAbs(20.0, 1e-6));
    CHECK(std::isinf(r.case_rows[1][1]));
    CHECK_THAT(r.case_rows[1][2], WithinAbs(1.0, 1e-9));
    CHECK(r.case_columns == std::vector<std::string>{"mse", "psnr", "ssim"});
    // A (B, H, W) target of a one-channel model gains its channel.
    CHECK_NOTHROW(task->loss({output}, target.squeeze(1)));
}

TEST_CASE("loss sums and deep supervision equal the losses they combine", "[task]") {
    Tensor a = testing::random_input({2, 3, 5, 4}, 1), b = testing::random_input({2, 3, 5, 4}, 2);
    Tensor t = randint(0, 3, {2, 5, 4}, DType::int64);
    train::TaskOptions o;
    o.kind = "segmentation";
    o.num_classes = 3;
    o.loss.names = "cross_entropy+soft_dice";
    o.loss.weights = {0.5, 0.5};
    auto task = train::make_task(o);
    CHECK_THAT(task->loss({a}, t).item<double>(),
               WithinAbs(train::soft_dice_ce_loss(a, t).item<double>(), 1e-12));
    o.loss.names = "utnet";
    o.loss.weights = {};
    o.loss.class_weights = {0.5, 1, 1};
    o.loss.deep_supervision = {1, 0.4};
    task = train::make_task(o);
    CHECK(task->uses_all_outputs());
    const double expected = train::utnet_loss(a, t, {0.5, 1, 1}).item<double>() +
                            0.4 * train::utnet_loss(b, t, {0.5, 1, 1}).item<double>();
    CHECK_THAT(task->loss({a, b}, t).item<double>(), WithinAbs(expected, 1e-12));
    // Evaluation scores the main output alone; a UTNet-style (B, 1, H, W) target works too.
    CHECK_THAT(task->eval_loss(a, t.unsqueeze(1)).item<double>(),
               WithinAbs(train::utnet_loss(a, t, {0.5, 1, 1}).item<double>(), 1e-12));
    // Gradients reach both outputs.
    Tensor x = a.clone().requires_grad_(true), y = b.clone().requires_grad_(true);
    task->loss({x, y}, t).backward();
    CHECK(x.grad().defined());
    CHECK(y.grad().defined());
}

TEST_CASE("task errors name the keys and values", "[task]") {
    train::TaskOptions o;
    o.kind = "segmentation";
    o.num_classes = 3;
    o.loss.names = "soft_dise";
    CHECK_THROWS_WITH(train::make_task(o), Contains("did you mean 'soft_dice'"));
    o.loss.names = "mse";
    CHECK_THROWS_WITH(train::make_task(o), Contains("unknown segmentation loss 'mse'"));
    o.loss.names = "cross_entropy+soft_dice";
    o.loss.weights = {1};
    CHECK_THROWS_WITH(train::make_task(o), Contains("has 2 terms but 1 weights"));
    o.loss.weights = {};
    o.num_classes = 1;
    CHECK_THROWS_WITH(train::make_task(o), Contains("at least 2 classes"));
    o.kind = "regression";
    CHECK_THROWS_WITH(train::make_task(o), Contains("unknown task 'regression'"));
    train::TaskOptions d;
    d.kind = "segmentation";
    d.num_classes = 2;
    d.loss.deep_supervision = {1, 1, 1};
    auto task = train::make_task(d);
    Tensor a = testing::random_input({1, 2, 4, 4}, 1);
    CHECK_THROWS_WITH(task->loss({a}, zeros({1, 4, 4}, DType::int64)),
                      Contains("deep supervision has 3 weights but the model gives 1"));
    CHECK_THROWS_WITH(train::class_target(a), Contains("expects class indices"));
}
