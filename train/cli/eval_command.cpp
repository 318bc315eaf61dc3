// `lumen eval` and `lumen predict`: the run's config and weights from a checkpoint, the model
// and task built as `lumen train` built them, then metrics on a split or predictions on files.
#include "train/cli/eval_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/autograd.h"
#include "core/error.h"
#include "datasets/image.h"
#include "datasets/layouts.h"
#include "datasets/nifti.h"
#include "datasets/npy.h"
#include "datasets/spatial.h"
#include "ops/elementwise.h"
#include "ops/interpolate.h"
#include "ops/reduce.h"
#include "ops/softmax.h"
#include "train/atomic_file.h"
#include "train/checkpoint.h"
#include "train/cli/experiment.h"
#include "train/cli/train_command.h"
#include "train/config.h"
#include "train/dist/data_parallel.h"

namespace lumen::train::cli {

namespace fs = std::filesystem;

namespace {

// A run's checkpoint, its stored config (with the command's flags on top) and the device.
struct LoadedRun {
    std::string checkpoint, run_dir;
    train::CheckpointState state;
    nn::Options config;
    Device device = Device::cpu();
};

// RUN_DIR (its best checkpoint when `prefer_best` and there is one, else its latest) or a
// checkpoint file (the run directory is then the folder above its checkpoints/ folder). With
// a group of several ranks, rank 0 makes the demo data while the others wait.
LoadedRun load_run(const Arguments& a, const std::string& target, bool prefer_best,
                   std::ostream& out, dist::ProcessGroup* group = nullptr) {
    LUMEN_CHECK(fs::exists(target), "lumen", target, " does not exist");
    LoadedRun run;
    if (fs::is_directory(target)) {
        run.run_dir = target;
        const fs::path best = fs::path(target) / "checkpoints" / "best.safetensors";
        run.checkpoint = prefer_best && fs::is_regular_file(best) ? best.string()
                                                                  : latest_checkpoint(target, out);
    } else {
        run.checkpoint = target;
        fs::path folder = fs::path(target).parent_path();
        run.run_dir = (folder.filename() == "checkpoints" ? folder.parent_path() : folder).string();
        if (run.run_dir.empty()) run.run_dir = ".";
    }
    run.state = train::read_checkpoint_state(run.checkpoint);
    train::RawConfig raw = train::RawConfig::parse(run.state.config_json, run.checkpoint);
    apply_flags(a, raw);
    run.config = resolve_training_config(raw);
    run.device = rank_device(setup_runtime(run.config));
    if (!group || group->rank() == 0) ensure_demo_data(run.config, out);
    if (group) group->barrier();
    return run;
}

std::string csv_field(const std::string& text) {
    if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
    std::string quoted = "\"";
    for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

std::string number_text(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    char text[32];
    std::snprintf(text, sizeof(text), "%.6g", value);
    return text;
}

// "loss 0.1234, mean_dice 0.8123, dice_1 ..." with the primary metric first.
std::string metrics_line(const train::EvalResult& r, const std::string& primary) {
    auto fixed = [](double value) {
        char text[32];
        std::snprintf(text, sizeof(text), "%.4f", value);
        return std::string(text);
    };
    std::ostringstream line;
    line << "loss " << fixed(r.loss);
    if (auto it = r.metrics.find(primary); it != r.metrics.end())
        line << ", " << primary << " " << fixed(it->second);
    for (const auto& [name, value] : r.metrics)
        if (name != primary) line << ", " << name << " " << fixed(value);
    return line.str();
}

void write_eval_files(const std::string& run_dir, const std::string& split,
                      const train::EvalResult& r, const std::vector<datasets::CaseInfo>& cases,
                      const std::string& checkpoint, std::ostream& out) {
    nlohmann::json j{{"checkpoint", checkpoint}, {"split", split}, {"count", r.count}};
    j["loss"] = std::isfinite(r.loss) ? nlohmann::json(r.loss) : nlohmann::json(nullptr);
    for (const auto& [name, value] : r.metrics)
        j["metrics"][name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
    if (!r.confusion.empty()) j["confusion_matrix"] = r.confusion;
    const std::string json_path = run_dir + "/eval_" + split + ".json";
    train::write_text_atomically(json_path, j.dump(2) + "\n");
    std::ostringstream csv;
    csv << "case";
    for (const std::string& column : r.case_columns) csv << "," << csv_field(column);
    csv << "\n";
    for (size_t i = 0; i < r.case_rows.size(); ++i) {
        // The layout names each case (file stem, slide id, "<file>:<row>"); else its index.
        csv << csv_field(cases.size() == r.case_rows.size() ? cases[i].name : std::to_string(i));
        for (double value : r.case_rows[i]) csv << "," << number_text(value);
        csv << "\n";
    }
    const std::string csv_path = run_dir + "/eval_" + split + ".csv";
    train::write_text_atomically(csv_path, csv.str());
    out << "wrote " << json_path << " and " << csv_path << " (" << r.case_rows.size()
        << " cases)\n";
}

}  // namespace

int run_eval_command(const std::vector<std::string>& args, std::ostream& rank0_out) {
    // Under mpirun each rank evaluates its block of the split, the metrics are gathered, and
    // rank 0 prints and writes, as lumen train's evaluation (docs/distributed.md).
    std::shared_ptr<dist::ProcessGroup> group = dist::ProcessGroup::from_environment();
    std::ostream silent(nullptr);
    std::ostream& out = group->rank() == 0 ? rank0_out : silent;
    Arguments a = parse_arguments(args, "eval", {"--split", "--device", "--threads", "--set"});
    if (a.help) {
        out << "usage: lumen eval RUN_DIR|CHECKPOINT [--split test|train] [--device cpu|cuda] "
               "[--threads N] [--set key=value ...]\n"
               "Evaluates the run's latest checkpoint on a split; writes eval_<split>.json and "
               "eval_<split>.csv (per case) in the run directory.\n";
        return 0;
    }
    LUMEN_CHECK(a.positional.size() == 1, "lumen", "eval takes one RUN_DIR or CHECKPOINT, got ",
                a.positional.size());
    LoadedRun run = load_run(a, a.positional[0], false, out, group.get());
    dist::check_same_config(*group, train::config_to_json(run.config));
    group = dist::ProcessGroup::from_environment(run.device);  // NCCL for CUDA
    const std::string split = a.split.value_or("test");
    DataShape shape;
    std::vector<datasets::CaseInfo> cases;
    auto data = build_eval_data(run.config, split, &shape, &cases, run.run_dir,
                                {.rank = group->rank(), .world_size = group->world_size()});
    std::shared_ptr<nn::Module> model = build_model(run.config, shape, false);
    train::load_checkpoint_weights(run.checkpoint, *model);
    model->to(run.device);
    std::shared_ptr<train::Task> task = build_task(run.config, shape);
    train::EvalResult r = train::evaluate(*model, *data, *task, run.device, group.get());
    out << "checkpoint " << run.checkpoint << " (epoch " << run.state.epoch << ", step "
        << run.state.step << ")\n"
        << split << " split: " << r.count << " examples, "
        << metrics_line(r, task->primary_metric()) << " (" << number_text(r.seconds) << " s)\n";
    if (group->rank() == 0) write_eval_files(run.run_dir, split, r, cases, run.checkpoint, out);
    return 0;
}

namespace {

std::string stem_of(const std::string& path) {
    std::string name = fs::path(path).filename().string();
    for (const char* ext : {".nii.gz", ".nii", ".png", ".jpg", ".jpeg", ".bmp", ".tga", ".npz",
                            ".npy", ".safetensors"})
        if (name.size() > std::string(ext).size() &&
            name.compare(name.size() - std::string(ext).size(), std::string::npos, ext) == 0)
            return name.substr(0, name.size() - std::string(ext).size());
    return fs::path(path).stem().string();
}

bool is_nifti(const std::string& path) {
    return path.size() > 4 && (path.rfind(".nii") == path.size() - 4 ||
                               (path.size() > 7 && path.rfind(".nii.gz") == path.size() - 7));
}

// The affine of a (4, 4) float64 tensor.
std::array<double, 16> affine_of(const Tensor& t) {
    Tensor c = t.to(DType::float64).contiguous();
    std::array<double, 16> affine{};
    std::copy(c.data_ptr<double>(), c.data_ptr<double>() + 16, affine.begin());
    return affine;
}

// The model's output (1, K, *grid) on the preprocessed grid, brought back onto the input's
// grid as (K, *input grid) float32, as nnU-Net exports predictions: through the two affines
// (linear, border) when data.orientation / spacing / resize moved a NIfTI volume's grid, else
// resized (linear) when only the size differs. Segmentation takes the argmax after this, so
// class probabilities are what is interpolated, never labels.
Tensor on_input_grid(const Tensor& output, const datasets::Example& original,
                     const datasets::Example& prepared, bool nifti, bool geometry_changed) {
    Tensor values = output.select(0, 0).to(DType::float32).contiguous();
    const Shape size(original[0].shape().begin() + 1, original[0].shape().end());
    const Shape grid(values.shape().begin() + 1, values.shape().end());
    if (nifti && geometry_changed && prepared.size() >= 2 && original.size() >= 2) {
        datasets::Sample sample;
        sample.image = values;
        sample.affine = affine_of(prepared.back());
        const datasets::Affine input = affine_of(original.back());
        return datasets::warp_affine_nd(sample, datasets::voxel_map_between(sample.affine, input),
                                        size, datasets::PaddingMode::border)
            .image;
    }
    if (grid == size) return values;
    return interpolate(values.unsqueeze(0), size, {}, size.size() == 3 ? "trilinear" : "bilinear",
                       false)
        .squeeze(0);
}

// Writes one prediction (the model's output (1, K, *spatial) on the CPU) for `input`, on the
// input's grid: a NIfTI with the input's header, a PNG of the input's size, else an .npy.
void write_prediction(const std::string& input, const datasets::Example& original,
                      const datasets::Example& prepared, const Tensor& output,
                      const std::string& task, const std::string& dir, bool geometry_changed,
                      std::ostream& out) {
    const std::string stem = dir + "/" + stem_of(input);
    const bool segmentation = task == "segmentation", nifti = is_nifti(input);
    Tensor values = on_input_grid(output, original, prepared, nifti, geometry_changed);
    // Segmentation: the class map (*spatial) int64; enhancement: the image (C, *spatial).
    Tensor map = segmentation ? argmax(values, 0) : values;
    const std::string suffix = segmentation ? "_seg" : "_pred";
    std::string path;
    if (nifti) {
        Tensor data = segmentation       ? map.to(DType::int32)
                      : map.size(0) == 1 ? map.select(0, 0)
                                         : map;
        if (!segmentation && map.size(0) > 1)  // channels last: (i, j, k, c)
            data = data.permute({1, 2, 3, 0}).contiguous();
        path = stem + suffix + ".nii.gz";
        datasets::write_nifti(path, data, datasets::read_nifti(input).header);
    } else if (map.ndim() == (segmentation ? 2 : 3) && input.find(".npz") == std::string::npos) {
        Tensor image;
        if (segmentation) {
            const int64_t top = max(map).item<int64_t>();
            image = map.to(top < 256 ? DType::uint8 : DType::int32);
        } else {
            // [0, 1] to 0..255, rounded to nearest (the cast truncates).
            image = clamp(add(mul(map, 255.0), 0.5), 0.0, 255.0)
                        .permute({1, 2, 0})
                        .contiguous()
                        .to(DType::uint8);
        }
        path = stem + suffix + ".png";
        datasets::write_png(path, image);
    } else {
        path = stem + "_pred.npy";
        datasets::write_npy(path, segmentation ? map.to(DType::int32) : map);
    }
    out << "wrote " << path << "\n";
}

}  // namespace

int run_predict_command(const std::vector<std::string>& args, std::ostream& out) {
    Arguments a = parse_arguments(args, "predict", {"--out", "--device", "--threads"});
    if (a.help) {
        out << "usage: lumen predict RUN_DIR|CHECKPOINT INPUT... --out DIR [--device cpu|cuda] "
               "[--threads N]\n"
               "Predicts each input file (read as the run's data layout reads its cases) with "
               "the run's best checkpoint (else its latest): segmentation and enhancement write "
               "<stem>_seg / <stem>_pred .png or .nii.gz (on the input's grid, with its "
               "header) in DIR, classification DIR/predictions.csv (one row per input; a text "
               "run reads a .csv/.tsv's text column, a row each, or a whole other file).\n";
        return 0;
    }
    LUMEN_CHECK(dist::launcher_world_size() == 1, "lumen",
                "predict runs as one process, but "
                "mpirun started ",
                dist::launcher_world_size(),
                " ranks, which would all write "
                "the same files; run it without mpirun");
    LUMEN_CHECK(a.positional.size() >= 2, "lumen",
                "predict needs RUN_DIR|CHECKPOINT and at least one INPUT (see 'lumen predict "
                "--help')");
    LUMEN_CHECK(a.out.has_value() && !a.out->empty(), "lumen", "predict needs --out DIR");
    LoadedRun run = load_run(a, a.positional[0], true, out);
    const nn::Options& config = run.config;
    LUMEN_CHECK(is_layout(config.get_string("data.dataset")), "lumen",
                "predict reads inputs as the run's data layout does, but the run trained on ",
                config.get_string("data.dataset"), " (no files to read new inputs like)");
    datasets::LayoutData layout = load_config_layout(config, run.run_dir);
    DataShape shape = layout_shape(config, layout, eval_split(layout));
    std::shared_ptr<nn::Module> model = build_model(config, shape, false);
    train::load_checkpoint_weights(run.checkpoint, *model);
    model->to(run.device);
    model->eval();
    const std::string task_name = task_kind(config, shape);
    fs::create_directories(*a.out);
    out << "checkpoint " << run.checkpoint << " (epoch " << run.state.epoch << ", step "
        << run.state.step << ")\n";
    if (shape.kind == "tokens" && !fs::exists(fs::path(run.run_dir) / kVocabularyFile))
        out << "warning: " << run.run_dir << " has no " << kVocabularyFile
            << "; the vocabulary was rebuilt from the training split\n";
    const bool geometry = !config.get_string("data.orientation").empty() ||
                          !config.get_doubles("data.spacing").empty() ||
                          !config.get_ints("data.resize").empty();
    std::ostringstream table;
    int64_t rows = 0;
    if (task_name == "classification") {
        table << "input,predicted";
        for (int64_t k = 0; k < int64_t(shape.class_names.size()); ++k)
            table << ",p_" << csv_field(shape.class_names[size_t(k)]);
        table << "\n";
    }
    // One row of predictions.csv: the class probabilities of a classifier's logits (1, K).
    auto add_row = [&](const std::string& name, const Tensor& output) {
        Tensor p = softmax(output.to(DType::float64), 1).contiguous();
        const int64_t k = p.size(1), best = argmax(p, 1).item<int64_t>();
        table << csv_field(name) << ","
              << csv_field(best < int64_t(shape.class_names.size())
                               ? shape.class_names[size_t(best)]
                               : std::to_string(best));
        for (int64_t c = 0; c < k; ++c) table << "," << number_text(p.data_ptr<double>()[c]);
        table << "\n";
        ++rows;
    };
    NoGradGuard no_grad;
    const datasets::LayoutOptions options = layout_options(config, run.run_dir);
    for (size_t i = 1; i < a.positional.size(); ++i) {
        const std::string& input = a.positional[i];
        if (shape.kind == "tokens") {
            datasets::LayoutOptions text = options;
            text.vocabulary = layout.vocabulary;
            for (const auto& [name, tokens] : datasets::read_text_inputs(text, input))
                add_row(name, model->forward(tokens.unsqueeze(0).to(run.device)).cpu());
            continue;
        }
        datasets::Example original = datasets::read_layout_input(options, input);
        datasets::Example prepared = original;
        const int64_t dims = original[0].ndim() - 1;
        if (shape.kind == "image")
            if (datasets::SampleTransformPtr pipeline =
                    build_sample_pipeline(config, dims, false)) {
                Generator generator(uint64_t(config.get_int("seed")));
                prepared = datasets::example_of(
                    (*pipeline)(datasets::sample_of(original), generator), original);
            }
        // The evaluation examples' size decides how the model sees this input.
        DataShape input_shape = shape;
        if (shape.kind == "image")
            input_shape.eval_size.assign(prepared[0].shape().begin() + 1,
                                         prepared[0].shape().end());
        std::shared_ptr<train::Task> task = build_task(config, input_shape);
        Tensor output = task->predict(*model, prepared[0].unsqueeze(0).to(run.device)).cpu();
        if (task_name == "classification")
            add_row(input, output);
        else
            write_prediction(input, original, prepared, output, task_name, *a.out, geometry, out);
    }
    if (task_name == "classification") {
        const std::string path = *a.out + "/predictions.csv";
        train::write_text_atomically(path, table.str());
        out << "wrote " << path << " (" << rows << " predictions)\n";
    }
    return 0;
}

}  // namespace lumen::train::cli
