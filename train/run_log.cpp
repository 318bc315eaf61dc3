// metrics.jsonl reading/writing with nlohmann::json, the plot's series, atomic text files.
#include "train/run_log.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fault.h"
#include "core/file_io.h"
#include "core/json_strict.h"
#include "train/atomic_file.h"
#include "train/plot_svg.h"

namespace lumen::train {

using Json = nlohmann::json;

namespace {

constexpr const char* kMetrics = "metrics.jsonl";
constexpr uint64_t kMaxMetricsBytes = 1ull << 30;
constexpr int kMaxRecordDepth = 4;

Json record_json(const MetricRecord& r) {
    Json j{{"type", r.type}, {"epoch", r.epoch}, {"step", r.step}};
    for (const auto& [key, value] : r.values) {
        if (std::isfinite(value))
            j[key] = value;
        else
            j[key] = nullptr;  // JSON has no NaN; null reads back as NaN
    }
    return j;
}

MetricRecord parse_record(const std::string& line, const std::string& path, size_t number) {
    Json j = parse_json_strict(line, "run_log", path + ": line " + std::to_string(number),
                               kMaxRecordDepth);
    try {
        MetricRecord r{j.at("type").get<std::string>(),
                       j.at("epoch").get<double>(),
                       j.at("step").get<int64_t>(),
                       {}};
        for (auto it = j.begin(); it != j.end(); ++it)
            if (it.key() != "type" && it.key() != "epoch" && it.key() != "step")
                r.values[it.key()] = it->is_number() ? it->get<double>() : NAN;
        return r;
    } catch (const Json::exception& e) {
        LUMEN_FAIL("run_log", path, ": line ", number, " is not a metric record: ", e.what());
    }
}

}  // namespace

RunLog::RunLog(std::string directory, int64_t keep_until_step) : directory_(std::move(directory)) {
    make_directories(directory_);
    const std::string file = path(kMetrics);
    if (keep_until_step >= 0 && std::filesystem::exists(file)) {
        const std::string text = read_file(file, "run_log", kMaxMetricsBytes, "a metrics log");
        size_t start = 0;
        for (size_t number = 1; start < text.size(); ++number) {
            size_t end = text.find('\n', start);
            const bool torn = end == std::string::npos;  // the last line, without its newline
            std::string line = text.substr(start, torn ? std::string::npos : end - start);
            start = torn ? text.size() : end + 1;
            if (line.empty()) continue;
            MetricRecord r;
            try {
                r = parse_record(line, file, number);
            } catch (const Error& e) {
                if (!torn) throw;
                // A kill in the middle of append(): the record was never complete.
                warnings_.push_back(file + ": dropped line " + std::to_string(number) +
                                    ", a record cut short (the previous run was killed while "
                                    "writing it)");
                continue;
            }
            if (r.step <= keep_until_step) records_.push_back(r);
        }
    }
    std::string text;
    for (const MetricRecord& r : records_) text += record_json(r).dump() + "\n";
    write_text_atomically(file, text);
}

void RunLog::write_config(const std::string& json_text) const {
    write_text_atomically(path("config.json"), json_text + "\n");
}

void RunLog::append(const MetricRecord& record) {
    const std::string line = record_json(record).dump() + "\n";
    FileWriter out(path(kMetrics), "run_log", FileWriter::Mode::append);
    // Two writes around the fault point, so a test can kill the process mid-record.
    const size_t half = line.size() / 2;
    out.write(line.data(), half);
    fault::at("run_log.mid_record");
    out.write(line.data() + half, line.size() - half);
    out.close();
    records_.push_back(record);
}

namespace {

void add_point(PlotSeries& s, double x, const std::map<std::string, double>& values,
               const char* key) {
    auto it = values.find(key);
    if (it == values.end()) return;
    s.x.push_back(x);
    s.y.push_back(it->second);
}

}  // namespace

void RunLog::write_plot(const std::string& title, const std::string& metric) const {
    PlotSeries step_loss{"train (steps)", {}, {}}, train_loss{"train", {}, {}},
        test_loss{"test", {}, {}}, train_metric{"train", {}, {}}, test_metric{"test", {}, {}};
    const std::string train_key = "train_" + metric, test_key = "test_" + metric;
    for (const MetricRecord& r : records_) {
        if (r.type == "step") add_point(step_loss, r.epoch, r.values, "loss");
        if (r.type != "epoch") continue;
        add_point(train_loss, r.epoch, r.values, "train_loss");
        add_point(test_loss, r.epoch, r.values, "test_loss");
        add_point(train_metric, r.epoch, r.values, train_key.c_str());
        add_point(test_metric, r.epoch, r.values, test_key.c_str());
    }
    std::vector<PlotPanel> panels{{"loss", {step_loss, train_loss, test_loss}},
                                  {metric, {train_metric, test_metric}}};
    write_text_atomically(path("plot.svg"), render_svg_plot(panels, title));
}

void RunLog::write_summary(const std::map<std::string, double>& numbers,
                           const std::map<std::string, std::string>& texts) const {
    Json j = Json::object();
    for (const auto& [key, value] : numbers) {
        // Counts print as integers ("epochs": 3, not 3.0); rates stay numbers even when whole.
        static const char* const kCounts[] = {"epochs",     "steps",        "threads",
                                              "parameters", "train_images", "test_images"};
        bool count = std::find(std::begin(kCounts), std::end(kCounts), key) != std::end(kCounts);
        if (count && std::isfinite(value))
            j[key] = int64_t(value);
        else if (std::isfinite(value))
            j[key] = value;
        else
            j[key] = nullptr;
    }
    for (const auto& [key, value] : texts) j[key] = value;
    write_text_atomically(path("summary.json"), j.dump(2) + "\n");
}

}  // namespace lumen::train
