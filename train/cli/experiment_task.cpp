// The task half of a config: task.*, loss.* and eval.* keys, the task built from them for a
// model on some data, and the best-checkpoint metric.
#include <algorithm>

#include "core/error.h"
#include "models/registry.h"
#include "train/cli/experiment.h"

namespace lumen::train::cli {

namespace {

using Spec = nn::OptionSpec;
using nn::Range;
using Strings = std::vector<std::string>;
using Doubles = std::vector<double>;
using Ints = std::vector<int64_t>;

}  // namespace

std::vector<nn::OptionSpec> task_option_specs() {
    return {
        {"task.name", std::string("auto"),
         "auto (from data.dataset), classification, segmentation or enhancement",
         Strings{"auto", "classification", "segmentation", "enhancement"}},
        {"loss.name", std::string("auto"),
         "loss terms joined by '+' (auto: cross_entropy; segmentation dice_ce; enhancement "
         "mse): cross_entropy, dice, soft_dice, dice_ce, utnet_dice, utnet, boundary_dou; mse, l1, "
         "charbonnier, gaussian_deriv3d"},
        {"loss.weights",
         Doubles{},
         "one weight per loss term (empty: 1 each)",
         {},
         Range::at_least(0)},
        {"loss.class_weights",
         Doubles{},
         "cross_entropy / utnet class weights, one per class (UTNet: [0.5, 1, 1, 1])",
         {},
         Range::at_least(0)},
        {"loss.deep_supervision",
         Doubles{},
         "weights of the model's outputs (empty: the model's paper weights when its "
         "deep-supervision heads are on; [1]: the main output only)",
         {},
         Range::at_least(0)},
        {"eval.inference", std::string("auto"),
         "whole, sliding_window, slices (a 2-D model on each slice of a volume) or auto",
         Strings{"auto", "whole", "sliding_window", "slices"}},
        {"eval.roi_size",
         Ints{},
         "sliding window size (empty: the model's or data.patch_size)",
         {},
         Range::between(1, 1 << 16)},
        {"eval.overlap", 0.25, "sliding window overlap", {}, Range::between(0, 1, true)},
        {"eval.blend", std::string("gaussian"), "sliding window blending",
         Strings{"constant", "gaussian"}},
        {"eval.sw_batch_size",
         int64_t(4),
         "windows (or slices) per model call",
         {},
         Range::between(1, 4096)},
        {"eval.slice_axis",
         int64_t(2),
         "slices: the axis of (B, C, D, H, W) to cut along",
         {},
         Range::between(2, 4)},
        {"eval.hd95", true, "segmentation: HD95 per class and case"},
        {"eval.protocol", std::string("standard"),
         "segmentation case rules: standard (nnU-Net) or transunet (the Synapse table)",
         Strings{"standard", "transunet"}},
        {"eval.top_k",
         int64_t(0),
         "classification: also top-k accuracy (0: off)",
         {},
         Range::between(0, 1000)},
        {"eval.data_range",
         1.0,
         "enhancement: the data range of PSNR and SSIM",
         {},
         Range::above(0)},
    };
}

std::string task_kind(const nn::Options& config, const DataShape& data) {
    const std::string asked = config.get_string("task.name");
    if (asked == "auto") return data.task;
    LUMEN_CHECK(asked == data.task, "config", "task.name is ", asked, " but data.dataset ",
                data.dataset, " gives ", data.task, " examples (leave task.name auto)");
    return asked;
}

namespace {

// eval.inference "auto": slices for a 2-D model on volumes; a window of the model's size (or
// the training patch) when the model takes a fixed size or was trained on patches; else whole.
train::InferenceOptions inference_of(const nn::Options& config, const DataShape& data,
                                     const models::ModelInput& model) {
    train::InferenceOptions o;
    std::string mode = config.get_string("eval.inference");
    const bool volumes = data.eval_size.size() == 3 && model.spatial_dims == 2;
    const Ints patch = config.get_ints("data.patch_size");
    if (mode == "auto") {
        if (model.kind != "image" || model.output != "dense")
            mode = "whole";
        else if (volumes)
            mode = "slices";
        else if (!model.img_size.empty() || !patch.empty())
            mode = data.eval_size == (model.img_size.empty() ? patch : model.img_size)
                       ? "whole"
                       : "sliding_window";
        else
            mode = "whole";
    }
    LUMEN_CHECK(mode != "slices" || volumes, "config",
                "eval.inference slices needs a 2-D model on 3-D volumes, but the model is ",
                model.spatial_dims, "-D and the evaluation examples have ", data.eval_size.size(),
                " spatial dims");
    o.mode = mode;
    o.slice_axis = config.get_int("eval.slice_axis");
    o.slice_batch = config.get_int("eval.sw_batch_size");
    o.window.overlap = config.get_double("eval.overlap");
    o.window.mode = config.get_string("eval.blend");
    o.window.sw_batch_size = config.get_int("eval.sw_batch_size");
    Ints roi = config.get_ints("eval.roi_size");
    if (roi.empty()) roi = model.img_size.empty() ? patch : model.img_size;
    if (mode != "sliding_window") return o;
    LUMEN_CHECK(!roi.empty(), "config",
                "eval.inference sliding_window needs eval.roi_size (the model takes any size and "
                "data.patch_size is not set)");
    LUMEN_CHECK(data.eval_size.empty() || roi.size() == data.eval_size.size(), "config",
                "eval.roi_size ", nn::format_option(roi),
                " needs one size per spatial "
                "dim of the evaluation examples (",
                data.eval_size.size(), ")");
    o.window.roi_size = roi;
    return o;
}

}  // namespace

std::shared_ptr<train::Task> build_task(const nn::Options& config, const DataShape& data) {
    const nn::Options options = model_options(config, data);
    const std::string name = config.get_string("model.name");
    const models::ModelInput model = models::find_model(name).input(options);
    train::TaskOptions o;
    o.kind = task_kind(config, data);
    std::string loss = config.get_string("loss.name");
    o.loss.names = loss == "auto" ? "" : loss;  // "": the task's default
    o.loss.weights = config.get_doubles("loss.weights");
    o.loss.class_weights = config.get_doubles("loss.class_weights");
    o.loss.label_smoothing = config.get_double("train.label_smoothing");
    o.loss.deep_supervision = config.get_doubles("loss.deep_supervision");
    if (o.loss.deep_supervision.empty()) o.loss.deep_supervision = model.deep_supervision;
    LUMEN_CHECK(
        o.loss.deep_supervision.size() <= std::max<size_t>(1, model.deep_supervision.size()),
        "config", "loss.deep_supervision has ", o.loss.deep_supervision.size(),
        " weights but the model (", name, ") gives ",
        std::max<size_t>(1, model.deep_supervision.size()), " output(s)",
        model.deep_supervision.empty() ? "" : " (its deep-supervision heads are on)");
    o.num_classes = model.num_classes;
    o.class_names = data.class_names;
    o.top_k = config.get_int("eval.top_k");
    o.hd95 = config.get_bool("eval.hd95");
    o.protocol = config.get_string("eval.protocol");
    o.data_range = config.get_double("eval.data_range");
    o.inference = inference_of(config, data, model);
    return with_config_keys("task.*, loss.* and eval.*", [&] { return train::make_task(o); });
}

std::string best_metric(const nn::Options& config, const train::Task& task) {
    const std::string best = config.get_string("checkpoint.best_metric");
    if (best == "none") return "";
    if (best == "auto") return "test_" + task.primary_metric();
    return best;
}

}  // namespace lumen::train::cli
