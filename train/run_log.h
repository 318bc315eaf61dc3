// A run directory's text outputs: config.json (the config echo), metrics.jsonl (one JSON object
// per line: "step" records every few updates, "epoch" records with the evaluation),
// plot.svg (loss and accuracy curves, redrawn each epoch) and summary.json (the final result
// for scripts). Checkpoints live in its checkpoints/ folder (train/checkpoint.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lumen::train {

struct MetricRecord {
    std::string type;                      // "step" or "epoch"
    double epoch = 0;                      // fractional for step records (epoch + batch / batches)
    int64_t step = 0;                      // optimizer updates done
    std::map<std::string, double> values;  // loss, lr, test_accuracy, ...
};

class RunLog {
  public:
    // Creates the directory (and parents). Reads an existing metrics.jsonl (a resumed run)
    // keeping the records with step <= keep_until_step, and rewrites it without the others;
    // keep_until_step < 0 starts a new file. A last line without its newline that is not a
    // record (a kill in the middle of append) is dropped with a warning (warnings()). Throws
    // [run_log] naming a file that cannot be read or written, or another line that is not a
    // record.
    explicit RunLog(std::string directory, int64_t keep_until_step = -1);
    const std::string& directory() const { return directory_; }
    std::string path(const std::string& name) const { return directory_ + "/" + name; }

    void write_config(const std::string& json_text) const;
    // Appends a record to metrics.jsonl (written at once, so `tail -f` shows it). Throws
    // [run_log] naming the file and the system's reason when the write fails.
    void append(const MetricRecord& record);
    const std::vector<MetricRecord>& records() const { return records_; }
    // What the constructor repaired, one line each, for the caller to print.
    const std::vector<std::string>& warnings() const { return warnings_; }
    // Redraws plot.svg from the records: train loss per step record, train/test loss and the
    // task's metric (train_<metric> / test_<metric>: accuracy, mean_dice, psnr) per epoch record.
    void write_plot(const std::string& title, const std::string& metric = "accuracy") const;
    // summary.json: string fields and number fields in one object.
    void write_summary(const std::map<std::string, double>& numbers,
                       const std::map<std::string, std::string>& texts) const;

  private:
    std::string directory_;
    std::vector<MetricRecord> records_;
    std::vector<std::string> warnings_;
};

}  // namespace lumen::train
