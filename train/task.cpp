// The task-independent parts: inference by mode, loss terms and their weighted sum, the
// factory; and the classification task with its meter.
#include "train/task.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "nn/options.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "train/loss_enhance.h"
#include "train/loss_seg.h"
#include "train/metrics.h"
#include "train/metrics_class.h"
#include "train/task_kinds.h"

namespace lumen::train {

Tensor Task::predict(nn::Module& model, const Tensor& input) const {
    auto forward = [&](const Tensor& x) { return model.forward(x); };
    if (inference.mode == "sliding_window")
        return sliding_window_inference(input, forward, inference.window);
    if (inference.mode == "slices")
        return slice_by_slice_inference(input, forward, inference.slice_axis,
                                        inference.slice_batch);
    return model.forward(input);
}

Tensor class_target(const Tensor& target) {
    LUMEN_CHECK(!is_floating(target.dtype()), "task", "expects class indices as the target, got ",
                dtype_name(target.dtype()), " of shape ", target.shape());
    Tensor t = target.dtype() == DType::int64 ? target : target.to(DType::int64);
    // UTNet's (B, 1, *spatial) layout.
    if (t.ndim() >= 3 && t.size(1) == 1) t = t.squeeze(1);
    return t;
}

std::vector<std::string> loss_term_names(const std::string& kind) {
    if (kind == "segmentation")
        return {"cross_entropy", "dice",  "soft_dice",   "dice_ce",
                "utnet_dice",    "utnet", "boundary_dou"};
    if (kind == "enhancement") return {"mse", "l1", "charbonnier", "gaussian_deriv3d"};
    return {"cross_entropy"};
}

namespace {

std::string joined(const std::vector<std::string>& names) {
    std::ostringstream out;
    for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << names[i];
    return out.str();
}

std::vector<std::string> split_terms(const std::string& names) {
    std::vector<std::string> terms;
    std::stringstream in(names);
    for (std::string term; std::getline(in, term, '+');) terms.push_back(term);
    return terms;
}

}  // namespace

LossSum::LossSum(const std::string& kind, const LossSpec& spec) : spec_(spec) {
    terms_ = split_terms(!spec.names.empty()      ? spec.names
                         : kind == "segmentation" ? "dice_ce"
                         : kind == "enhancement"  ? "mse"
                                                  : "cross_entropy");
    const std::vector<std::string> allowed = loss_term_names(kind);
    LUMEN_CHECK(!terms_.empty(), "task", "the loss names no term (allowed for ", kind, ": ",
                joined(allowed), ")");
    for (const std::string& term : terms_) {
        if (std::find(allowed.begin(), allowed.end(), term) != allowed.end()) continue;
        std::string guess = nn::closest_match(term, allowed);
        LUMEN_FAIL("task", "unknown ", kind, " loss '", term, "'",
                   guess.empty() ? "" : "; did you mean '" + guess + "'?",
                   " (allowed: ", joined(allowed), ", joined by '+')");
    }
    weights_ = spec.weights.empty() ? std::vector<double>(terms_.size(), 1.0) : spec.weights;
    LUMEN_CHECK(weights_.size() == terms_.size(), "task", "the loss '", spec.names, "' has ",
                terms_.size(), " terms but ", weights_.size(), " weights");
    for (double w : spec.deep_supervision)
        LUMEN_CHECK(std::isfinite(w) && w >= 0, "task",
                    "deep-supervision weights must be finite and >= 0, got ", w);
}

Tensor LossSum::term(const std::string& name, const Tensor& output, const Tensor& target) const {
    if (name == "mse") return mse_loss(output, target);
    if (name == "l1") return l1_loss(output, target);
    if (name == "charbonnier") return charbonnier_loss(output, target);
    if (name == "gaussian_deriv3d") {
        // (B, C, H, W) images are one-frame videos, for which the loss is exactly 0.
        const bool image = output.ndim() == 4;
        return gaussian_deriv3d_loss(image ? output.unsqueeze(2) : output,
                                     image ? target.unsqueeze(2) : target);
    }
    Tensor t = class_target(target);
    Tensor weight;
    if (!spec_.class_weights.empty()) {
        LUMEN_CHECK(int64_t(spec_.class_weights.size()) == output.size(1), "task", "the loss has ",
                    spec_.class_weights.size(), " class weights but the model ", output.size(1),
                    " classes");
        weight = from_vector(spec_.class_weights, {int64_t(spec_.class_weights.size())})
                     .to(output.dtype())
                     .to(output.device());
    }
    if (name == "cross_entropy")
        return cross_entropy(output, t, weight, -100, "mean", spec_.label_smoothing);
    if (name == "dice") return dice_loss(output, t);
    if (name == "soft_dice") return soft_dice_loss(output, t);
    if (name == "dice_ce") return soft_dice_ce_loss(output, t);
    if (name == "utnet_dice") return adaptive_tversky_loss(output, t);
    if (name == "utnet") return utnet_loss(output, t, spec_.class_weights);
    return boundary_dou_loss(output, t);
}

Tensor LossSum::operator()(const Tensor& output, const Tensor& target) const {
    Tensor total;
    for (size_t i = 0; i < terms_.size(); ++i) {
        if (weights_[i] == 0) continue;
        Tensor value = term(terms_[i], output, target);
        if (weights_[i] != 1) value = mul(value, weights_[i]);
        total = total.defined() ? add(total, value) : value;
    }
    return total.defined() ? total : mul(sum(output), 0.0);
}

Tensor LossSum::outputs(const std::vector<Tensor>& outputs, const Tensor& target) const {
    LUMEN_CHECK(!outputs.empty(), "task", "the model gave no output");
    const std::vector<double>& ds = spec_.deep_supervision;
    if (ds.empty()) return (*this)(outputs[0], target);
    LUMEN_CHECK(ds.size() <= outputs.size(), "task", "deep supervision has ", ds.size(),
                " weights but the model gives ", outputs.size(),
                " outputs (does the model have its deep-supervision heads on?)");
    Tensor total;
    for (size_t i = 0; i < ds.size(); ++i) {
        if (ds[i] == 0) continue;
        Tensor value = mul((*this)(outputs[i], target), ds[i]);
        total = total.defined() ? add(total, value) : value;
    }
    return total.defined() ? total : mul(sum(outputs[0]), 0.0);
}

std::vector<double> rows_state(double loss_sum, int64_t width,
                               const std::vector<std::vector<double>>& rows) {
    std::vector<double> out{loss_sum, double(width)};
    for (const std::vector<double>& row : rows) out.insert(out.end(), row.begin(), row.end());
    return out;
}

void merge_rows_state(const std::vector<double>& state, int64_t width, double& loss_sum,
                      std::vector<std::vector<double>>& rows) {
    LUMEN_CHECK(
        state.size() >= 2 && int64_t(state[1]) == width && (state.size() - 2) % size_t(width) == 0,
        "evaluate", "cannot merge a state of ", state.size(), " numbers (rows of ",
        state.size() >= 2 ? state[1] : 0.0, ") into a meter with rows of ", width);
    loss_sum += state[0];
    for (size_t at = 2; at < state.size(); at += size_t(width))
        rows.emplace_back(state.begin() + int64_t(at), state.begin() + int64_t(at) + width);
}

// ---- classification ----

namespace {

class ClassificationTaskMeter : public TaskMeter {
  public:
    explicit ClassificationTaskMeter(const TaskOptions& o) : options_(o) {}

    void add(const Tensor& output, const std::vector<Tensor>& batch, double loss_sum) override {
        Tensor labels = class_target(batch.at(1)).contiguous();
        LUMEN_CHECK(output.ndim() == 2 && labels.ndim() == 1 && output.size(0) == labels.size(0),
                    "evaluate", "a classifier must give (B, K) logits for (B) labels, got ",
                    output.shape(), " for ", labels.shape());
        if (!meter_) {
            classes_ = output.size(1);
            meter_ = std::make_unique<ClassificationMeter>(classes_);
        }
        meter_->add(output, labels, loss_sum);
        loss_sum_ += loss_sum;
        std::vector<int64_t> predicted = argmax(output, 1).to_vector<int64_t>();
        predicted_.insert(predicted_.end(), predicted.begin(), predicted.end());
        Tensor p = softmax(output.to(DType::float64), 1).contiguous();
        const double* pp = p.data_ptr<double>();
        const int64_t* lp = labels.data_ptr<int64_t>();
        for (int64_t i = 0; i < labels.size(0); ++i) {
            labels_.push_back(lp[i]);
            probabilities_.insert(probabilities_.end(), pp + i * classes_, pp + (i + 1) * classes_);
        }
        if (options_.top_k > 0 && options_.top_k <= classes_)
            top_k_correct_ +=
                top_k_accuracy(output, labels, options_.top_k) * double(labels.size(0));
    }

    // {classes, loss_sum, top_k_correct, then per case: label, predicted, K probabilities}.
    std::vector<double> state() const override {
        std::vector<double> out{double(classes_), loss_sum_, top_k_correct_};
        for (size_t i = 0; i < labels_.size(); ++i) {
            out.push_back(double(labels_[i]));
            out.push_back(double(predicted_[i]));
            const double* p = probabilities_.data() + i * size_t(classes_);
            out.insert(out.end(), p, p + classes_);
        }
        return out;
    }

    void merge(const std::vector<double>& state) override {
        if (state.empty() || state[0] == 0) return;  // a rank that evaluated nothing
        const int64_t classes = int64_t(state[0]), width = classes + 2;
        LUMEN_CHECK(classes > 0 && (!meter_ || classes == classes_) &&
                        (state.size() - 3) % size_t(width) == 0,
                    "evaluate", "cannot merge a classification state of ", classes, " classes and ",
                    state.size(), " numbers into one of ", classes_, " classes");
        if (!meter_) {
            classes_ = classes;
            meter_ = std::make_unique<ClassificationMeter>(classes_);
        }
        std::vector<int64_t> labels, predicted;
        for (size_t at = 3; at < state.size(); at += size_t(width)) {
            labels.push_back(int64_t(state[at]));
            predicted.push_back(int64_t(state[at + 1]));
            probabilities_.insert(probabilities_.end(), state.begin() + int64_t(at) + 2,
                                  state.begin() + int64_t(at) + width);
        }
        const int64_t n = int64_t(labels.size());
        meter_->add_predictions(from_vector(predicted, {n}), from_vector(labels, {n}), state[1]);
        labels_.insert(labels_.end(), labels.begin(), labels.end());
        predicted_.insert(predicted_.end(), predicted.begin(), predicted.end());
        loss_sum_ += state[1];
        top_k_correct_ += state[2];
    }

    void finish(EvalResult& r) const override {
        LUMEN_CHECK(meter_ != nullptr, "evaluate", "the evaluation data has no batch");
        r.loss = meter_->loss();
        r.accuracy = meter_->accuracy();
        r.count = meter_->count();
        r.metrics["accuracy"] = r.accuracy;
        std::vector<double> recall = per_class_recall(meter_->confusion());
        double recall_sum = 0;
        int64_t present = 0;
        for (double x : recall)
            if (!std::isnan(x)) recall_sum += x, ++present;
        r.metrics["balanced_accuracy"] = present ? recall_sum / double(present) : NAN;
        if (options_.top_k > 0 && options_.top_k <= classes_)
            r.metrics["top" + std::to_string(options_.top_k) + "_accuracy"] =
                top_k_correct_ / double(r.count);
        r.metrics["auroc"] = auroc_of_split();
        Tensor confusion = meter_->confusion().contiguous();
        const int64_t* c = confusion.data_ptr<int64_t>();
        r.confusion.assign(size_t(classes_), std::vector<int64_t>(size_t(classes_)));
        for (int64_t t = 0; t < classes_; ++t)
            for (int64_t p = 0; p < classes_; ++p) r.confusion[t][p] = c[t * classes_ + p];
        r.case_columns = {"label", "predicted"};
        for (int64_t k = 0; k < classes_; ++k) r.case_columns.push_back("p_" + class_name(k));
        for (size_t i = 0; i < labels_.size(); ++i) {
            const double* p = probabilities_.data() + i * size_t(classes_);
            std::vector<double> row{double(labels_[i]),
                                    double(std::max_element(p, p + classes_) - p)};
            row.insert(row.end(), p, p + classes_);
            r.case_rows.push_back(std::move(row));
        }
    }

  private:
    std::string class_name(int64_t k) const {
        return k < int64_t(options_.class_names.size()) ? options_.class_names[size_t(k)]
                                                        : std::to_string(k);
    }

    // Binary: AUROC of the positive class's probability. K > 2: the mean one-vs-rest AUROC
    // over the classes both present and absent in the labels (scikit-learn would refuse a
    // split missing a class). NaN when no class qualifies.
    double auroc_of_split() const {
        const size_t n = labels_.size();
        double total = 0;
        int64_t counted = 0;
        for (int64_t c = classes_ == 2 ? 1 : 0; c < classes_; ++c) {
            std::vector<double> scores(n);
            std::vector<int64_t> positive(n);
            int64_t positives = 0;
            for (size_t i = 0; i < n; ++i) {
                scores[i] = probabilities_[i * size_t(classes_) + size_t(c)];
                positive[i] = labels_[i] == c;
                positives += positive[i];
            }
            if (positives == 0 || positives == int64_t(n)) continue;
            total += auroc(scores, positive);
            ++counted;
        }
        return counted ? total / double(counted) : NAN;
    }

    TaskOptions options_;
    int64_t classes_ = 0;
    std::unique_ptr<ClassificationMeter> meter_;
    std::vector<int64_t> labels_, predicted_;
    std::vector<double> probabilities_;
    double top_k_correct_ = 0, loss_sum_ = 0;
};

class ClassificationTask : public Task {
  public:
    explicit ClassificationTask(const TaskOptions& o)
        : options_(o), loss_("classification", o.loss) {
        inference = o.inference;
    }
    std::string kind() const override { return "classification"; }
    Tensor loss(const std::vector<Tensor>& outputs, const Tensor& target) const override {
        return loss_.outputs(outputs, target);
    }
    std::unique_ptr<TaskMeter> meter() const override {
        return std::make_unique<ClassificationTaskMeter>(options_);
    }
    std::string primary_metric() const override { return "accuracy"; }
    bool counts_correct() const override { return true; }

  private:
    TaskOptions options_;
    LossSum loss_;
};

}  // namespace

std::shared_ptr<Task> make_task(const TaskOptions& options) {
    if (options.kind == "classification") return std::make_shared<ClassificationTask>(options);
    if (options.kind == "segmentation") return make_segmentation_task(options);
    if (options.kind == "enhancement") return make_enhancement_task(options);
    LUMEN_FAIL("task", "unknown task '", options.kind,
               "' (known: classification, segmentation, enhancement)");
}

}  // namespace lumen::train
