// Constant, step, exponential and linear warm-up + decay schedules: closed forms of t.
#include "train/schedule_basic.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace lumen::train {

ScheduleInterval parse_schedule_interval(const std::string& text) {
    if (text == "step") return ScheduleInterval::step;
    if (text == "epoch") return ScheduleInterval::epoch;
    LUMEN_FAIL("schedule", "interval must be \"step\" or \"epoch\", got \"", text, "\"");
}

const char* schedule_interval_name(ScheduleInterval interval) {
    return interval == ScheduleInterval::step ? "step" : "epoch";
}

namespace {

void check_index(const char* who, int64_t t) {
    LUMEN_CHECK(t >= 0, who, "index must be >= 0, got ", t);
}

}  // namespace

ConstantLR::ConstantLR(double lr0) : base_lr(lr0) {
    LUMEN_CHECK(base_lr >= 0, "ConstantLR", "base_lr must be >= 0, got ", base_lr);
}

double ConstantLR::lr(int64_t t) const {
    check_index("ConstantLR", t);
    return base_lr;
}

StepLR::StepLR(double lr0, int64_t size, double factor)
    : base_lr(lr0), step_size(size), gamma(factor) {
    LUMEN_CHECK(base_lr >= 0 && step_size >= 1 && gamma > 0, "StepLR",
                "needs base_lr >= 0, step_size >= 1 and gamma > 0, got base_lr ", base_lr,
                ", step_size ", step_size, ", gamma ", gamma);
}

double StepLR::lr(int64_t t) const {
    check_index("StepLR", t);
    return base_lr * std::pow(gamma, double(t / step_size));
}

ExponentialLR::ExponentialLR(double lr0, double factor) : base_lr(lr0), gamma(factor) {
    LUMEN_CHECK(base_lr >= 0 && gamma > 0, "ExponentialLR",
                "needs base_lr >= 0 and gamma > 0, got base_lr ", base_lr, ", gamma ", gamma);
}

double ExponentialLR::lr(int64_t t) const {
    check_index("ExponentialLR", t);
    return base_lr * std::pow(gamma, double(t));
}

LinearWarmupDecayLR::LinearWarmupDecayLR(double peak, int64_t warmup, int64_t total)
    : peak_lr(peak), warmup_steps(warmup), total_steps(total) {
    LUMEN_CHECK(peak_lr >= 0 && warmup_steps >= 0 && total_steps > warmup_steps,
                "LinearWarmupDecayLR",
                "needs peak_lr >= 0 and 0 <= warmup_steps < total_steps, got peak_lr ", peak_lr,
                ", warmup_steps ", warmup_steps, ", total_steps ", total_steps);
}

double LinearWarmupDecayLR::lr(int64_t t) const {
    check_index("LinearWarmupDecayLR", t);
    if (t < warmup_steps) return peak_lr * double(t) / double(warmup_steps);
    const double left = double(total_steps - t) / double(total_steps - warmup_steps);
    return peak_lr * std::max(0.0, left);
}

}  // namespace lumen::train
