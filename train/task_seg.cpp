// The segmentation task (2-D and 3-D): loss terms with deep supervision, and per class and
// case Dice, IoU and HD95 (nnU-Net's rules, or the TransUNet protocol of the Synapse table).
#include <cmath>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "train/metrics_seg.h"
#include "train/task_kinds.h"

namespace lumen::train {

namespace {

// The voxel spacing of an affine (4, 4): the norms of its first `dims` columns.
std::vector<double> spacing_of(const double* affine, int64_t dims) {
    std::vector<double> spacing;
    for (int64_t j = 0; j < dims; ++j) {
        double s = 0;
        for (int64_t i = 0; i < 3; ++i) s += affine[i * 4 + j] * affine[i * 4 + j];
        spacing.push_back(std::sqrt(s));
    }
    return spacing;
}

double mean_of_finite(const std::vector<double>& values) {
    double total = 0;
    int64_t n = 0;
    for (double v : values)
        if (std::isfinite(v)) total += v, ++n;
    return n ? total / double(n) : NAN;
}

class SegmentationMeter : public TaskMeter {
  public:
    explicit SegmentationMeter(const TaskOptions& o) : options_(o) {}

    void add(const Tensor& output, const std::vector<Tensor>& batch, double loss_sum) override {
        Tensor target = class_target(batch.at(1));
        LUMEN_CHECK(output.ndim() == target.ndim() + 1 && output.size(0) == target.size(0) &&
                        output.size(1) == options_.num_classes,
                    "evaluate", "a segmentation model must give (B, ", options_.num_classes,
                    ", *spatial) logits for (B, *spatial) labels, got ", output.shape(), " for ",
                    target.shape());
        for (int64_t d = 2; d < output.ndim(); ++d)
            LUMEN_CHECK(output.size(d) == target.size(d - 1), "evaluate", "the prediction ",
                        output.shape(), " does not cover the label ", target.shape());
        Tensor predicted = argmax(output, 1).contiguous();
        target = target.contiguous();
        // A decathlon batch carries affines (B, 4, 4): HD95 in millimetres.
        Tensor affines;
        if (batch.size() > 2 && batch[2].ndim() == 3 && batch[2].size(1) == 4 &&
            batch[2].size(2) == 4)
            affines = batch[2].to(DType::float64).contiguous();
        loss_sum_ += loss_sum;
        for (int64_t b = 0; b < target.size(0); ++b) {
            std::vector<double> spacing;
            if (affines.defined() && options_.protocol == "standard")
                spacing = spacing_of(affines.data_ptr<double>() + b * 16, target.ndim() - 1);
            cases_.push_back(score_case(predicted.select(0, b), target.select(0, b), spacing));
        }
    }

    void finish(EvalResult& r) const override {
        LUMEN_CHECK(!cases_.empty(), "evaluate", "the evaluation data has no batch");
        const int64_t k = options_.num_classes - 1;
        r.count = int64_t(cases_.size());
        r.loss = loss_sum_ / double(r.count);
        const char* names[] = {"dice", "iou", "hd95"};
        for (int64_t m = 0; m < (options_.hd95 ? 3 : 2); ++m) {
            std::vector<double> class_means;
            for (int64_t c = 0; c < k; ++c) {
                std::vector<double> column;
                for (const std::vector<double>& row : cases_) column.push_back(row[m * k + c]);
                class_means.push_back(mean_of_finite(column));
                r.metrics[std::string(names[m]) + "_" + class_name(c + 1)] = class_means.back();
            }
            r.metrics[std::string("mean_") + names[m]] = mean_of_finite(class_means);
        }
        for (int64_t m = 0; m < 3; ++m)
            for (int64_t c = 0; c < k; ++c)
                r.case_columns.push_back(std::string(names[m]) + "_" + class_name(c + 1));
        r.case_rows = cases_;
    }

    // Rows of dice, IoU and HD95 per foreground class (score_case).
    std::vector<double> state() const override {
        return rows_state(loss_sum_, 3 * (options_.num_classes - 1), cases_);
    }
    void merge(const std::vector<double>& state) override {
        merge_rows_state(state, 3 * (options_.num_classes - 1), loss_sum_, cases_);
    }

  private:
    std::string class_name(int64_t c) const {
        return c < int64_t(options_.class_names.size()) ? options_.class_names[size_t(c)]
                                                        : std::to_string(c);
    }

    // Dice, IoU and HD95 of classes 1..K-1 of one case, in that order (NaN where undefined).
    std::vector<double> score_case(const Tensor& predicted, const Tensor& target,
                                   const std::vector<double>& spacing) const {
        const int64_t k = options_.num_classes - 1, n = target.numel();
        const int64_t* p = predicted.contiguous().data_ptr<int64_t>();
        const int64_t* t = target.contiguous().data_ptr<int64_t>();
        std::vector<int64_t> both(size_t(k + 1)), in_p(size_t(k + 1)), in_t(size_t(k + 1));
        for (int64_t i = 0; i < n; ++i) {
            LUMEN_CHECK(t[i] >= 0 && t[i] <= k, "evaluate", "label ", t[i], " outside [0, ", k,
                        "] (the model has ", k + 1, " classes)");
            ++in_p[size_t(p[i])];
            ++in_t[size_t(t[i])];
            if (p[i] == t[i]) ++both[size_t(t[i])];
        }
        std::vector<double> row(size_t(3 * k), NAN);
        const bool transunet = options_.protocol == "transunet";
        for (int64_t c = 1; c <= k; ++c) {
            const double tp = double(both[size_t(c)]), np = double(in_p[size_t(c)]),
                         nt = double(in_t[size_t(c)]);
            double& dice = row[size_t(c - 1)];
            double& iou = row[size_t(k + c - 1)];
            double& hd = row[size_t(2 * k + c - 1)];
            if (transunet && np == 0) {
                dice = iou = hd = 0;
            } else if (transunet && nt == 0) {
                dice = iou = 1;
                hd = 0;
            } else if (np + nt > 0) {
                dice = 2 * tp / (np + nt);
                iou = tp / (np + nt - tp);
            }
            if (options_.hd95 && np > 0 && nt > 0)
                hd = hd95(eq(predicted, c), eq(target, c), spacing);
            if (!options_.hd95) hd = NAN;
        }
        return row;
    }

    TaskOptions options_;
    double loss_sum_ = 0;
    std::vector<std::vector<double>> cases_;
};

class SegmentationTask : public Task {
  public:
    explicit SegmentationTask(const TaskOptions& o) : options_(o), loss_("segmentation", o.loss) {
        LUMEN_CHECK(o.num_classes >= 2, "task",
                    "segmentation needs at least 2 classes (background and one), got ",
                    o.num_classes);
        LUMEN_CHECK(o.protocol == "standard" || o.protocol == "transunet", "task",
                    "the segmentation protocol must be standard or transunet, got '", o.protocol,
                    "'");
        inference = o.inference;
    }
    std::string kind() const override { return "segmentation"; }
    Tensor loss(const std::vector<Tensor>& outputs, const Tensor& target) const override {
        return loss_.outputs(outputs, target);
    }
    Tensor eval_loss(const Tensor& output, const Tensor& target) const override {
        // Deep-supervision weights apply to training; evaluation scores the main output.
        return loss_(output, target);
    }
    std::unique_ptr<TaskMeter> meter() const override {
        return std::make_unique<SegmentationMeter>(options_);
    }
    std::string primary_metric() const override { return "mean_dice"; }
    bool uses_all_outputs() const override { return loss_.deep_supervision(); }

  private:
    TaskOptions options_;
    LossSum loss_;
};

}  // namespace

std::shared_ptr<Task> make_segmentation_task(const TaskOptions& options) {
    return std::make_shared<SegmentationTask>(options);
}

}  // namespace lumen::train
