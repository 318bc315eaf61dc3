// Training progress for people: on a terminal one line redrawn in place (epoch, a bar,
// step/total, it/s, ETA, loss, lr); otherwise (a log file, CI) a plain line every `every` steps
// and at the end of each epoch. The trainer calls step() after each optimizer update.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace lumen::train {

enum class ProgressMode { bar, lines, none };

// "auto" -> bar when `is_terminal`, else lines; "bar", "lines", "none". Throws [progress] for
// anything else.
ProgressMode parse_progress_mode(const std::string& text, bool is_terminal);

// Seconds as "42s", "3m07s", "1h02m".
std::string format_duration(double seconds);

class Progress {
  public:
    Progress(std::ostream& out, ProgressMode mode, int64_t every = 50);
    // Starts epoch `epoch` (0-based) of `epochs`, with `steps` optimizer updates in it, of which
    // `done` are already done (a resumed epoch).
    void start_epoch(int64_t epoch, int64_t epochs, int64_t steps, int64_t done = 0);
    // One more update done, with its loss and lr.
    void step(double loss, double lr);
    // Ends the epoch's line (the bar) and prints `summary` on its own line.
    void end_epoch(const std::string& summary);
    // Prints a message on its own line (clearing the bar first).
    void message(const std::string& text);

  private:
    void draw_bar();
    void print_line();
    std::ostream& out_;
    ProgressMode mode_;
    int64_t every_;
    int64_t epoch_ = 0, epochs_ = 0, steps_ = 0, done_ = 0, timed_ = 0;
    double loss_ = 0.0, lr_ = 0.0, smoothed_loss_ = 0.0;
    bool bar_open_ = false;
    std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace lumen::train
