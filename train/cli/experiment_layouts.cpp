// The dataset layouts of datasets/layouts.h from a config: the data.* keys that choose and
// read them, the joint transform pipeline built from the augmentation keys, and the splits as
// BatchSources for `lumen train` (image_folder) and `lumen data`.
#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "datasets/cache.h"
#include "datasets/demo.h"
#include "datasets/intensity.h"
#include "datasets/loader.h"
#include "datasets/spatial.h"
#include "train/cli/experiment.h"

namespace lumen::train::cli {

namespace {

using Spec = nn::OptionSpec;
using nn::Range;
using Ints = std::vector<int64_t>;
using Doubles = std::vector<double>;

const Range kFraction = Range::between(0, 1);

}  // namespace

std::vector<nn::OptionSpec> layout_option_specs() {
    return {
        {"data.make_demo", std::string(""),
         "when data.dir does not exist, write this demo dataset there first (lumen make-demo: "
         "shapes2d, organs3d, lesions3d, fmnist_denoise, bags, text)",
         [] {
             std::vector<std::string> names = datasets::demo_names();
             names.insert(names.begin(), "");
             return names;
         }()},
        {"data.manifest", std::string(""),
         "image_mask: a CSV of image, mask[, split]; volume_folder: a CSV of image, label[, "
         "split]; bags: the labels CSV (default <dir>/labels.csv)"},
        {"data.image_size",
         Ints{},
         "image_folder, image_mask: resize every image to (H, W)",
         {},
         Range::between(1, 1 << 16)},
        {"data.channels",
         int64_t(0),
         "image_folder, image_mask: 1 or 3 channels (0: the files')",
         {},
         Range::between(0, 3)},
        {"data.mask_mode", std::string("index"),
         "image_mask: mask values are class ids (index) or nonzero is foreground (binary)",
         std::vector<std::string>{"index", "binary"}},
        {"data.val_fraction",
         0.0,
         "without a val split: this fraction of train, seeded",
         {},
         Range::between(0, 1, true)},
        {"data.cache_mb",
         int64_t(0),
         "keep decoded examples in memory up to this many MiB",
         {},
         Range::between(0, 1 << 24)},
        {"data.label_column", std::string("label"), "text_csv: the label column"},
        {"data.text_column", std::string("text"), "text_csv: the text column"},
        {"data.max_length",
         int64_t(100),
         "text_csv: tokens kept per text",
         {},
         Range::between(1, 1 << 20)},
        {"data.max_vocab",
         int64_t(0),
         "text_csv: vocabulary size cap (0: none)",
         {},
         Range::between(0, 1 << 24)},
        {"data.min_count",
         int64_t(1),
         "text_csv: minimum count of a vocabulary token",
         {},
         Range::between(1, 1 << 30)},
        {"data.lowercase", true, "text_csv: lower-case ASCII letters before tokenizing"},
        // Geometry (every split; needs the affine: the decathlon layout).
        {"data.orientation", std::string(""),
         "reorient volumes so their axes point this way, e.g. RAS (empty: as stored)"},
        {"data.spacing",
         Doubles{},
         "resample to this voxel spacing in mm (empty: as stored)",
         {},
         Range::above(0)},
        // Intensity preprocessing (every split), in this order.
        {"data.window", Doubles{}, "[low, high]: clip (e.g. CT HU [-125, 275]), rescale to [0, 1]"},
        {"data.percentile_clip",
         Doubles{},
         "[lower, upper] percentiles to clip each channel to",
         {},
         Range::between(0, 100)},
        {"data.zscore", false, "subtract the mean, divide by the std (per channel)"},
        {"data.zscore_nonzero", false, "z-score statistics over nonzero voxels only (MRI)"},
        {"data.scale_to_unit", false, "min-max scale each channel to [0, 1]"},
        {"data.resize",
         Ints{},
         "after the above, resize every example to (H, W) or (i, j, k) (every split, layouts "
         "and Fashion-MNIST; linear, labels nearest): a classifier's fixed input size",
         {},
         Range::between(1, 1 << 16)},
        // Random augmentation (training split), in this order.
        {"data.patch_size",
         Ints{},
         "random patch (H, W) or (i, j, k); by label when masks exist",
         {},
         Range::between(1, 1 << 16)},
        {"data.pos_neg",
         Doubles{1.0, 1.0},
         "patch centres: foreground vs background ratio (MONAI RandCropByPosNegLabel)",
         {},
         Range::at_least(0)},
        {"data.rotate_degrees",
         0.0,
         "random rotation in [-deg, deg] about each axis",
         {},
         Range::between(0, 180)},
        {"data.scale_range", Doubles{}, "[low, high] random isotropic scale", {}, Range::above(0)},
        {"data.affine_p", 0.2, "probability of the rotation/scale warp", {}, kFraction},
        {"data.flip_axes", Ints{}, "spatial axes flipped at random", {}, Range::between(0, 2)},
        {"data.flip_p", 0.5, "probability of each flip", {}, kFraction},
        {"data.rot90_p",
         0.0,
         "probability of 1-3 quarter turns in the first two axes",
         {},
         kFraction},
        {"data.noise_p",
         0.0,
         "probability of Gaussian noise of sigma data.gaussian_noise",
         {},
         kFraction},
        {"data.brightness",
         Doubles{},
         "[low, high] multiplicative brightness",
         {},
         Range::above(0)},
        {"data.contrast", Doubles{}, "[low, high] contrast factor", {}, Range::above(0)},
        {"data.brightness_contrast_p", 0.15, "probability of brightness/contrast", {}, kFraction},
        {"data.gamma", Doubles{}, "[low, high] random gamma", {}, Range::above(0)},
        {"data.gamma_p", 0.1, "probability of the gamma change", {}, kFraction},
    };
}

bool is_layout(const std::string& dataset) {
    const std::vector<std::string> names = datasets::layout_names();
    return std::find(names.begin(), names.end(), dataset) != names.end();
}

void ensure_demo_data(const nn::Options& config, std::ostream& out) {
    const std::string& name = config.get_string("data.make_demo");
    const std::string& dir = config.get_string("data.dir");
    if (name.empty() || std::filesystem::exists(dir)) return;
    out << "data.dir " << dir << " does not exist: writing the " << name
        << " demo dataset there (data.make_demo)\n";
    with_config_keys("data.make_demo, data.dir", [&] {
        datasets::make_demo(name, dir, uint64_t(config.get_int("seed")), out);
        return 0;
    });
}

datasets::LayoutOptions layout_options(const nn::Options& config, const std::string& run_dir) {
    datasets::LayoutOptions o;
    o.layout = config.get_string("data.dataset");
    o.root = config.get_string("data.dir");
    o.manifest = config.get_string("data.manifest");
    o.image_size = config.get_ints("data.image_size");
    o.channels = config.get_int("data.channels");
    o.mask_mode = config.get_string("data.mask_mode");
    o.val_fraction = config.get_double("data.val_fraction");
    o.seed = uint64_t(config.get_int("seed"));
    o.label_column = config.get_string("data.label_column");
    o.text_column = config.get_string("data.text_column");
    o.max_length = config.get_int("data.max_length");
    o.max_vocab = config.get_int("data.max_vocab");
    o.min_count = config.get_int("data.min_count");
    o.lowercase = config.get_bool("data.lowercase");
    const std::filesystem::path vocabulary = std::filesystem::path(run_dir) / kVocabularyFile;
    if (o.layout == "text_csv" && !run_dir.empty() && std::filesystem::exists(vocabulary))
        o.vocabulary = std::make_shared<const datasets::Vocabulary>(
            datasets::Vocabulary::load(vocabulary.string()));
    return o;
}

datasets::LayoutData load_config_layout(const nn::Options& config, const std::string& run_dir) {
    datasets::LayoutOptions o = layout_options(config, run_dir);
    return with_config_keys("data.*", [&] { return datasets::load_layout(o); });
}

namespace {

// A [low, high] pair from a list key; throws [config] naming the key for another length.
std::array<double, 2> pair_of(const nn::Options& config, const char* key) {
    Doubles values = config.get_doubles(key);
    LUMEN_CHECK(values.size() == 2, "config", key, " must be [low, high], got ",
                nn::format_option(values));
    return {values[0], values[1]};
}

}  // namespace

datasets::SampleTransformPtr build_sample_pipeline(const nn::Options& config, int64_t spatial_dims,
                                                   bool training) {
    using namespace datasets;
    std::vector<SampleTransformPtr> list;
    auto add = [&](const char* keys, auto make) { list.push_back(with_config_keys(keys, make)); };
    if (const std::string& code = config.get_string("data.orientation"); !code.empty())
        add("data.orientation", [&] { return std::make_shared<Reorient>(code); });
    if (Doubles spacing = config.get_doubles("data.spacing"); !spacing.empty()) {
        LUMEN_CHECK(int64_t(spacing.size()) == spatial_dims, "config", "data.spacing ",
                    nn::format_option(spacing), " needs one spacing per spatial dim (",
                    spatial_dims, ")");
        add("data.spacing", [&] { return std::make_shared<ResampleToSpacing>(spacing); });
    }
    if (!config.get_doubles("data.window").empty()) {
        auto [low, high] = pair_of(config, "data.window");
        add("data.window", [&] { return std::make_shared<ClipWindow>(low, high, true); });
    }
    if (!config.get_doubles("data.percentile_clip").empty()) {
        auto [low, high] = pair_of(config, "data.percentile_clip");
        add("data.percentile_clip", [&] {
            return std::make_shared<PercentileClip>(low, high,
                                                    config.get_bool("data.zscore_nonzero"));
        });
    }
    if (config.get_bool("data.zscore"))
        add("data.zscore",
            [&] { return std::make_shared<ZScore>(config.get_bool("data.zscore_nonzero"), true); });
    if (config.get_bool("data.scale_to_unit"))
        add("data.scale_to_unit", [] { return std::make_shared<ScaleToUnit>(); });
    if (Ints size = config.get_ints("data.resize"); !size.empty()) {
        LUMEN_CHECK(int64_t(size.size()) == spatial_dims, "config", "data.resize ",
                    nn::format_option(size), " needs one size per spatial dim (", spatial_dims,
                    ")");
        add("data.resize", [&] { return std::make_shared<Resize>(Shape(size)); });
    }
    if (training) {
        if (Ints patch = config.get_ints("data.patch_size"); !patch.empty()) {
            LUMEN_CHECK(int64_t(patch.size()) == spatial_dims, "config", "data.patch_size ",
                        nn::format_option(patch), " needs one size per spatial dim (", spatial_dims,
                        ")");
            auto [pos, neg] = pair_of(config, "data.pos_neg");
            add("data.patch_size, data.pos_neg",
                [&] { return std::make_shared<RandomPosNegCrop>(Shape(patch), pos, neg); });
        }
        const double degrees = config.get_double("data.rotate_degrees");
        const bool scales = !config.get_doubles("data.scale_range").empty();
        if (degrees > 0 || scales) {
            SampleAffineOptions o;
            o.degrees = Doubles(spatial_dims == 3 ? 3 : 1, degrees);
            if (scales) o.scale = pair_of(config, "data.scale_range");
            o.p = config.get_double("data.affine_p");
            add("data.rotate_degrees, data.scale_range",
                [&] { return std::make_shared<SampleRandomAffine>(o); });
        }
        if (Ints axes = config.get_ints("data.flip_axes"); !axes.empty())
            add("data.flip_axes", [&] {
                return std::make_shared<RandomFlip>(axes, config.get_double("data.flip_p"));
            });
        if (double p = config.get_double("data.rot90_p"); p > 0)
            add("data.rot90_p", [&] { return std::make_shared<RandomRot90>(p); });
        if (double p = config.get_double("data.noise_p"); p > 0)
            add("data.noise_p, data.gaussian_noise", [&] {
                return std::make_shared<RandomGaussianNoise>(
                    config.get_double("data.gaussian_noise"), p);
            });
        const bool brightness = !config.get_doubles("data.brightness").empty(),
                   contrast = !config.get_doubles("data.contrast").empty();
        if (brightness || contrast) {
            std::array<double, 2> b =
                brightness ? pair_of(config, "data.brightness") : std::array<double, 2>{1, 1};
            std::array<double, 2> c =
                contrast ? pair_of(config, "data.contrast") : std::array<double, 2>{1, 1};
            add("data.brightness, data.contrast", [&] {
                return std::make_shared<RandomBrightnessContrast>(
                    b, c, config.get_double("data.brightness_contrast_p"));
            });
        }
        if (!config.get_doubles("data.gamma").empty()) {
            std::array<double, 2> gamma = pair_of(config, "data.gamma");
            add("data.gamma", [&] {
                return std::make_shared<RandomGamma>(gamma, config.get_double("data.gamma_p"));
            });
        }
    }
    if (list.empty()) return nullptr;
    return std::make_shared<SampleCompose>(list);
}

std::shared_ptr<const datasets::Dataset> cached(const nn::Options& config,
                                                std::shared_ptr<const datasets::Dataset> data) {
    const int64_t mib = config.get_int("data.cache_mb");
    if (mib == 0) return data;
    return std::make_shared<datasets::CachedDataset>(std::move(data), mib << 20);
}

}  // namespace lumen::train::cli
