// `lumen data` (train/cli/data_command.h).
#include "train/cli/data_command.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "core/error.h"
#include "datasets/image.h"
#include "datasets/nifti.h"
#include "datasets/random_stream.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"
#include "train/cli/experiment.h"

namespace lumen::train::cli {

namespace {

struct DataArguments {
    std::string config, split = "train", out;
    std::vector<std::string> sets;
    int64_t count = 3;
};

DataArguments parse(const std::vector<std::string>& args) {
    DataArguments a;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (arg.empty() || arg[0] != '-') {
            LUMEN_CHECK(a.config.empty(), "lumen", "data takes one CONFIG.json, got '", a.config,
                        "' and '", arg, "'");
            a.config = arg;
            continue;
        }
        LUMEN_CHECK(arg == "--set" || arg == "--split" || arg == "--count" || arg == "--out",
                    "lumen", "unknown option '", arg, "' for 'data'");
        LUMEN_CHECK(i + 1 < args.size(), "lumen", arg, " needs a value");
        const std::string& value = args[++i];
        if (arg == "--set") a.sets.push_back(value);
        if (arg == "--split") a.split = value;
        if (arg == "--out") a.out = value;
        if (arg == "--count") {
            size_t used = 0;
            try {
                a.count = std::stoll(value, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            LUMEN_CHECK(used == value.size() && a.count >= 0 && a.count <= 10000, "lumen",
                        "--count expects an integer in [0, 10000], got '", value, "'");
        }
    }
    LUMEN_CHECK(!a.config.empty(), "lumen", "data needs CONFIG.json (see 'lumen data --help')");
    return a;
}

std::string describe(const Tensor& t) {
    std::ostringstream s;
    s << dtype_name(t.dtype()) << " " << t.shape();
    if (t.numel() > 0 && !is_integral(t.dtype())) {
        Tensor f = t.to(DType::float64);
        s << " in [" << min(f).item<double>() << ", " << max(f).item<double>() << "]";
    } else if (t.numel() > 0) {
        Tensor f = t.to(DType::int64);
        s << " in [" << min(f).item<int64_t>() << ", " << max(f).item<int64_t>() << "]";
    }
    return s.str();
}

// Image (C, H, W) as an 8-bit PNG (H, W, C'), C' = 1 or 3 (the first channel otherwise), each
// image min-max scaled to 0..255.
void write_image_png(const std::string& path, const Tensor& image) {
    Tensor shown = image.size(0) == 3 ? image : image.narrow(0, 0, 1);
    Tensor f = shown.to(DType::float64);
    double low = min(f).item<double>(), high = max(f).item<double>();
    Tensor scaled = div(sub(f, low), std::max(high - low, 1e-12));
    // + 0.5 then truncation: rounds to the nearest level.
    Tensor bytes = add(mul(scaled, 255.0), 0.5).to(DType::uint8).permute({1, 2, 0}).contiguous();
    datasets::write_png(path, bytes);
}

void write_example(const std::string& dir, const std::string& name, const datasets::Sample& s) {
    namespace fs = std::filesystem;
    fs::create_directories(dir);
    const std::string base = (fs::path(dir) / name).string();
    if (s.spatial_dims() == 2) {
        write_image_png(base + "_image.png", s.image);
        if (s.label.defined()) datasets::write_png(base + "_label.png", s.label.to(DType::int32));
        return;
    }
    datasets::NiftiHeader header = datasets::nifti_header_from_affine(s.affine);
    Tensor image = s.image.size(0) == 1 ? s.image.squeeze(0) : s.image.permute({1, 2, 3, 0});
    datasets::write_nifti(base + "_image.nii.gz", image.contiguous(), header);
    if (s.label.defined())
        datasets::write_nifti(base + "_label.nii.gz", s.label.to(DType::int32), header);
}

}  // namespace

int run_data_command(const std::vector<std::string>& args, std::ostream& out) {
    if (std::find(args.begin(), args.end(), "--help") != args.end() ||
        std::find(args.begin(), args.end(), "-h") != args.end()) {
        out << "usage: lumen data CONFIG.json [--set key=value ...] [--split train|val|test]\n"
               "                  [--count N] [--out DIR]\n"
               "Reads the config's data section (a layout: data.dataset, data.dir) and prints\n"
               "its splits, classes and N examples after the transforms; --out writes them as\n"
               "PNG (2-D) or NIfTI (3-D) files.\n";
        return 0;
    }
    DataArguments a = parse(args);
    train::RawConfig raw = train::RawConfig::read(a.config);
    for (const std::string& set : a.sets) raw.set(set);
    nn::Options config = resolve_training_config(raw);
    const std::string dataset = config.get_string("data.dataset");
    LUMEN_CHECK(is_layout(dataset), "lumen", "data shows the layouts (data.dataset ",
                datasets::layout_names(), "), got '", dataset, "'");
    ensure_demo_data(config, out);
    datasets::LayoutData layout = load_config_layout(config);
    out << "layout " << layout.layout << " at " << layout.root << "\n";
    for (const auto& [name, split] : layout.splits)
        out << "  " << name << ": " << split.dataset->size() << " examples\n";
    if (!layout.class_names.empty()) {
        out << "  classes (" << layout.class_names.size() << "):";
        for (const std::string& name : layout.class_names) out << " " << name;
        out << "\n";
    }
    if (layout.channels > 0)
        out << "  channels " << layout.channels << ", " << layout.spatial_dims << "-D\n";
    if (layout.feature_dim > 0) out << "  instance features " << layout.feature_dim << "\n";
    if (layout.vocabulary) out << "  vocabulary " << layout.vocabulary->size() << " tokens\n";

    const datasets::LayoutSplit& split = layout.split(a.split);
    const bool training = a.split == "train";
    datasets::SampleTransformPtr pipeline =
        layout.spatial_dims > 0 ? build_sample_pipeline(config, layout.spatial_dims, training)
                                : nullptr;
    const uint64_t epoch_seed = datasets::derive_seed(uint64_t(config.get_int("seed")), 0);
    const int64_t count = std::min(a.count, split.dataset->size());
    for (int64_t i = 0; i < count; ++i) {
        datasets::Example example = split.dataset->get(i);
        const datasets::CaseInfo& info = split.cases[size_t(i)];
        // Each line is printed whole, after the transforms: an error starts a line of its own.
        const std::string head = a.split + "[" + std::to_string(i) + "] " + info.name + ":";
        if (layout.spatial_dims == 0) {  // bags and token sequences
            out << head;
            for (const Tensor& t : example) out << " " << describe(t) << ";";
            out << "\n";
            continue;
        }
        datasets::Sample sample = datasets::sample_of(example);  // with the case's affine
        if (pipeline) {
            Generator generator(datasets::derive_seed(epoch_seed, uint64_t(i)));
            sample = (*pipeline)(sample, generator);
        }
        out << head;
        out << " image " << describe(sample.image);
        if (sample.label.defined()) out << ", label " << describe(sample.label);
        if (example.size() > 1 && !sample.label.defined()) out << ", " << describe(example[1]);
        out << "\n";
        if (!a.out.empty()) write_example(a.out, a.split + "_" + info.name, sample);
    }
    if (!a.out.empty() && layout.spatial_dims > 0)
        out << "wrote " << count << " examples to " << a.out << "\n";
    return 0;
}

}  // namespace lumen::train::cli
