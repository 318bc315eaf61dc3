// The enhancement (denoising) task: regression losses, and per case MSE, PSNR and SSIM against
// the clean target (the context-length study's denoising task).
#include <cmath>

#include "core/error.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "train/metrics_image.h"
#include "train/task_kinds.h"

namespace lumen::train {

namespace {

class EnhancementMeter : public TaskMeter {
  public:
    explicit EnhancementMeter(const TaskOptions& o) : options_(o) {}

    void add(const Tensor& output, const std::vector<Tensor>& batch, double loss_sum) override {
        Tensor target = batch.at(1);
        if (target.ndim() == output.ndim() - 1) target = target.unsqueeze(1);  // (B, *spatial)
        LUMEN_CHECK(output.shape() == target.shape(), "evaluate",
                    "an enhancement model must give an image of the target's shape ",
                    target.shape(), ", got ", output.shape());
        LUMEN_CHECK(output.ndim() == 4 || output.ndim() == 5, "evaluate",
                    "enhancement expects (B, C, H, W) or (B, C, D, H, W) images, got ",
                    output.shape());
        loss_sum_ += loss_sum;
        Tensor out = output.to(DType::float64), tgt = target.to(DType::float64);
        const double range = options_.data_range;
        for (int64_t b = 0; b < out.size(0); ++b) {
            Tensor o = out.narrow(0, b, 1), t = tgt.narrow(0, b, 1);
            const double mse = mse_loss(o, t).item<double>();
            const double psnr = mse > 0 ? 10 * std::log10(range * range / mse) : INFINITY;
            // SSIM's Gaussian window (11 taps) needs every spatial size >= 11.
            bool fits = true;
            for (int64_t d = 2; d < o.ndim(); ++d) fits = fits && o.size(d) >= 11;
            const double s =
                fits ? ssim(o, t, SSIMOptions{.data_range = range}).item<double>() : NAN;
            cases_.push_back({mse, psnr, s});
        }
    }

    void finish(EvalResult& r) const override {
        LUMEN_CHECK(!cases_.empty(), "evaluate", "the evaluation data has no batch");
        r.count = int64_t(cases_.size());
        r.loss = loss_sum_ / double(r.count);
        r.case_columns = {"mse", "psnr", "ssim"};
        for (size_t m = 0; m < 3; ++m) {
            double total = 0;
            int64_t n = 0;
            for (const std::vector<double>& row : cases_)
                if (!std::isnan(row[m])) total += row[m], ++n;
            r.metrics[r.case_columns[m]] = n ? total / double(n) : NAN;
        }
        r.case_rows = cases_;
    }

    std::vector<double> state() const override { return rows_state(loss_sum_, 3, cases_); }
    void merge(const std::vector<double>& state) override {
        merge_rows_state(state, 3, loss_sum_, cases_);
    }

  private:
    TaskOptions options_;
    double loss_sum_ = 0;
    std::vector<std::vector<double>> cases_;
};

class EnhancementTask : public Task {
  public:
    explicit EnhancementTask(const TaskOptions& o) : options_(o), loss_("enhancement", o.loss) {
        LUMEN_CHECK(o.data_range > 0 && std::isfinite(o.data_range), "task",
                    "the data range of PSNR and SSIM must be > 0, got ", o.data_range);
        inference = o.inference;
    }
    std::string kind() const override { return "enhancement"; }
    Tensor loss(const std::vector<Tensor>& outputs, const Tensor& target) const override {
        // A (B, H, W) target of a one-channel image gains its channel.
        Tensor t = target;
        if (!outputs.empty() && t.ndim() == outputs[0].ndim() - 1) t = t.unsqueeze(1);
        return loss_.outputs(outputs, t);
    }
    std::unique_ptr<TaskMeter> meter() const override {
        return std::make_unique<EnhancementMeter>(options_);
    }
    std::string primary_metric() const override { return "psnr"; }
    bool uses_all_outputs() const override { return loss_.deep_supervision(); }

  private:
    TaskOptions options_;
    LossSum loss_;
};

}  // namespace

std::shared_ptr<Task> make_enhancement_task(const TaskOptions& options) {
    return std::make_shared<EnhancementTask>(options);
}

}  // namespace lumen::train
