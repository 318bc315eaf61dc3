// The progress bar and plain lines. The bar is redrawn at most ten times a second so that
// printing never costs a measurable part of a step.
#include "train/progress.h"

#include <cmath>
#include <cstdio>

#include "core/error.h"

namespace lumen::train {

ProgressMode parse_progress_mode(const std::string& text, bool is_terminal) {
    if (text == "auto") return is_terminal ? ProgressMode::bar : ProgressMode::lines;
    if (text == "bar") return ProgressMode::bar;
    if (text == "lines") return ProgressMode::lines;
    if (text == "none") return ProgressMode::none;
    LUMEN_FAIL("progress", "mode must be auto, bar, lines or none, got \"", text, "\"");
}

std::string format_duration(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    char text[32];
    long total = long(std::lround(seconds));
    if (total < 60)
        std::snprintf(text, sizeof(text), "%lds", total);
    else if (total < 3600)
        std::snprintf(text, sizeof(text), "%ldm%02lds", total / 60, total % 60);
    else
        std::snprintf(text, sizeof(text), "%ldh%02ldm", total / 3600, (total % 3600) / 60);
    return text;
}

Progress::Progress(std::ostream& out, ProgressMode mode, int64_t every)
    : out_(out), mode_(mode), every_(every < 1 ? 1 : every) {}

void Progress::start_epoch(int64_t epoch, int64_t epochs, int64_t steps, int64_t done) {
    epoch_ = epoch;
    epochs_ = epochs;
    steps_ = steps;
    done_ = done;
    timed_ = 0;
    smoothed_loss_ = 0.0;
    start_ = last_draw_ = std::chrono::steady_clock::now();
    if (mode_ == ProgressMode::bar) draw_bar();
}

void Progress::step(double loss, double lr) {
    ++done_;
    ++timed_;
    loss_ = loss;
    lr_ = lr;
    // An exponential average (about the last 50 steps) reads better than one noisy batch.
    smoothed_loss_ = timed_ == 1 ? loss : 0.98 * smoothed_loss_ + 0.02 * loss;
    if (mode_ == ProgressMode::lines && (done_ % every_ == 0 || done_ == steps_)) print_line();
    if (mode_ != ProgressMode::bar) return;
    auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_draw_).count() >= 0.1 || done_ == steps_) {
        last_draw_ = now;
        draw_bar();
    }
}

namespace {

struct Rate {
    double per_second, eta;
};

Rate rate(std::chrono::steady_clock::time_point start, int64_t timed, int64_t left) {
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double per_second = elapsed > 0 && timed > 0 ? double(timed) / elapsed : 0.0;
    return {per_second, per_second > 0 ? double(left) / per_second : NAN};
}

}  // namespace

void Progress::draw_bar() {
    constexpr int kWidth = 24;
    Rate r = rate(start_, timed_, steps_ - done_);
    int filled = steps_ > 0 ? int(kWidth * done_ / steps_) : 0;
    char line[256];
    std::snprintf(line, sizeof(line),
                  "\repoch %lld/%lld [%-*s] %lld/%lld  %.2f it/s  ETA %s  loss %.4f  lr %.2e ",
                  (long long)epoch_ + 1, (long long)epochs_, kWidth,
                  std::string(size_t(filled), '#').c_str(), (long long)done_, (long long)steps_,
                  r.per_second, format_duration(r.eta).c_str(), smoothed_loss_, lr_);
    out_ << line << std::flush;
    bar_open_ = true;
}

void Progress::print_line() {
    Rate r = rate(start_, timed_, steps_ - done_);
    char line[256];
    std::snprintf(line, sizeof(line),
                  "epoch %lld/%lld step %lld/%lld  %.2f it/s  ETA %s  loss %.4f  lr %.2e",
                  (long long)epoch_ + 1, (long long)epochs_, (long long)done_, (long long)steps_,
                  r.per_second, format_duration(r.eta).c_str(), smoothed_loss_, lr_);
    out_ << line << "\n" << std::flush;
}

void Progress::end_epoch(const std::string& summary) { message(summary); }

void Progress::message(const std::string& text) {
    if (mode_ == ProgressMode::none) return;
    if (bar_open_) out_ << "\n";
    bar_open_ = false;
    out_ << text << "\n" << std::flush;
}

}  // namespace lumen::train
