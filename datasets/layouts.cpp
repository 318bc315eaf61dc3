// load_layout: checks the options and dispatches to a layout; the helpers every layout shares
// (listing, the seeded val split, class names, image decoding). The layouts are in
// layouts_image.cpp, layouts_volume.cpp and layouts_table.cpp.
#include "datasets/layouts.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/error.h"
#include "core/random.h"
#include "datasets/image.h"
#include "datasets/layouts_common.h"
#include "datasets/loader.h"
#include "datasets/npy.h"

namespace lumen::datasets {

namespace layout_detail {

Example FunctionDataset::get(int64_t index) const {
    LUMEN_CHECK(index >= 0 && index < size_, "layout", "index ", index, " is outside [0, ", size_,
                ")");
    return get_(index);
}

std::string where(const LayoutOptions& options) {
    return options.layout + " at " + (options.root.empty() ? options.manifest : options.root);
}

void require_dir(const fs::path& dir, const LayoutOptions& options, const std::string& why) {
    LUMEN_CHECK(fs::is_directory(dir), "layout", where(options), ": missing folder ", dir.string(),
                " (", why, ")");
}

std::string lower(std::string text) {
    for (char& c : text) c = char(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

std::vector<fs::path> list_files(const fs::path& dir, const std::vector<std::string>& extensions) {
    std::vector<fs::path> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name[0] == '.' || !entry.is_regular_file()) continue;
        const std::string extension = extension_of(entry.path());
        if (extensions.empty() ||
            std::find(extensions.begin(), extensions.end(), extension) != extensions.end())
            files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    return files;
}

std::vector<std::string> list_dirs(const fs::path& dir) {
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (!name.empty() && name[0] != '.' && entry.is_directory()) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

std::string stem_of(const fs::path& path) {
    std::string name = path.filename().string();
    if (name.size() > 7 && lower(name.substr(name.size() - 7)) == ".nii.gz")
        return name.substr(0, name.size() - 7);
    return path.stem().string();
}

std::string extension_of(const fs::path& path) {
    const std::string name = path.filename().string();
    if (name.size() > 7 && lower(name.substr(name.size() - 7)) == ".nii.gz") return ".nii.gz";
    return lower(path.extension().string());
}

std::map<std::string, std::vector<CaseInfo>> class_folder_cases(
    const LayoutOptions& options, LayoutData& data, const std::vector<std::string>& extensions) {
    const fs::path root = options.root;
    require_dir(root / "train", options, "ROOT/train/<class>/ holds the training examples");
    const std::vector<std::string> classes = list_dirs(root / "train");
    LUMEN_CHECK(!classes.empty(), "layout", where(options), ": no class folders in ",
                (root / "train").string());
    std::map<std::string, std::vector<CaseInfo>> splits;
    for (const char* split : {"train", "val", "test"}) {
        const fs::path dir = root / split;
        data.looked_for[split] = "folder " + dir.string() + "/<class>/";
        if (!fs::is_directory(dir)) continue;
        std::vector<CaseInfo>& cases = splits[split];
        for (const std::string& name : list_dirs(dir)) {
            // torchvision takes the classes from each folder; one list for all splits keeps
            // the ids of val and test equal to train's.
            auto found = std::find(classes.begin(), classes.end(), name);
            LUMEN_CHECK(found != classes.end(), "layout", where(options), ": class folder ",
                        (dir / name).string(), " is not a class of the train split ", classes);
            for (const fs::path& path : list_files(dir / name, extensions))
                cases.push_back({stem_of(path), path.string(), "", found - classes.begin()});
        }
    }
    data.class_names = classes;
    data.num_classes = int64_t(classes.size());
    return splits;
}

std::pair<std::vector<int64_t>, std::vector<int64_t>> split_indices(int64_t n,
                                                                    const LayoutOptions& options) {
    const int64_t count = std::llround(options.val_fraction * double(n));
    LUMEN_CHECK(count >= 1 && count < n, "layout", where(options), ": val_fraction ",
                options.val_fraction, " of ", n, " train cases leaves ", count, " for val and ",
                n - count, " for train (expected at least 1 each)");
    Generator generator(options.seed);
    std::vector<int64_t> order = random_permutation(n, generator);
    std::vector<int64_t> moved(order.begin(), order.begin() + count);
    std::vector<int64_t> kept(order.begin() + count, order.end());
    std::sort(moved.begin(), moved.end());
    std::sort(kept.begin(), kept.end());
    return {kept, moved};
}

// A non-negative integer written in decimal (at most 18 digits), or -1.
int64_t parse_index(const std::string& text) {
    if (text.empty() || text.size() > 18) return -1;
    for (char c : text)
        if (c < '0' || c > '9') return -1;
    return std::stoll(text);
}

LabelMap::LabelMap(const std::vector<std::string>& train_labels, const std::string& source) {
    LUMEN_CHECK(!train_labels.empty(), "layout", source, ": no train labels");
    for (const std::string& label : train_labels) integers_ = integers_ && parse_index(label) >= 0;
    if (integers_) {
        int64_t largest = 0;
        for (const std::string& label : train_labels)
            largest = std::max(largest, parse_index(label));
        for (int64_t id = 0; id <= largest; ++id) names_.push_back(std::to_string(id));
        return;
    }
    names_ = train_labels;
    std::sort(names_.begin(), names_.end());
    names_.erase(std::unique(names_.begin(), names_.end()), names_.end());
    for (size_t id = 0; id < names_.size(); ++id) ids_[names_[id]] = int64_t(id);
}

int64_t LabelMap::id(const std::string& label, const std::string& where) const {
    if (integers_) {
        const int64_t id = parse_index(label);
        LUMEN_CHECK(id >= 0, "layout", where, ": label '", label,
                    "' is not an integer >= 0, as the train split's labels are");
        LUMEN_CHECK(id < int64_t(names_.size()), "layout", where, ": label ", id,
                    " is not below the train split's number of classes ", names_.size());
        return id;
    }
    auto found = ids_.find(label);
    LUMEN_CHECK(found != ids_.end(), "layout", where, ": unknown label '", label,
                "' (the train split's classes are ", names_, ")");
    return found->second;
}

void add_split(LayoutData& data, const std::string& name, std::vector<CaseInfo> cases,
               std::function<Example(const CaseInfo&)> load) {
    LUMEN_CHECK(!cases.empty(), "layout", data.layout, " at ", data.root, ": the ", name,
                " split is empty (", data.looked_for[name], ")");
    auto shared = std::make_shared<const std::vector<CaseInfo>>(cases);
    auto get = [shared, load = std::move(load)](int64_t i) { return load((*shared)[size_t(i)]); };
    data.splits[name] = {std::make_shared<FunctionDataset>(int64_t(cases.size()), get),
                         std::move(cases)};
}

Tensor read_image_chw(const std::string& path, int64_t channels) {
    int bits = 8;
    Tensor stored = read_image(path, &bits).to(DType::float32).contiguous();
    const int64_t H = stored.size(0), W = stored.size(1), C = stored.size(2);
    const int64_t colour = (C == 2 || C == 4) ? C - 1 : C;  // alpha dropped
    if (channels == 0) channels = colour;
    const float scale = bits == 16 ? 1.0f / 65535.0f : 1.0f / 255.0f;
    Tensor image = empty({channels, H, W}, DType::float32);
    const float* in = stored.data_ptr<float>();
    float* out = image.data_ptr<float>();
    for (int64_t p = 0; p < H * W; ++p) {
        const float* pixel = in + p * C;
        for (int64_t c = 0; c < channels; ++c) {
            float value = pixel[colour == 1 ? 0 : c];
            // ITU-R BT.601 luma, as PIL's convert("L")
            if (channels == 1 && colour == 3)
                value = 0.299f * pixel[0] + 0.587f * pixel[1] + 0.114f * pixel[2];
            out[c * H * W + p] = value * scale;
        }
    }
    return image;
}

Tensor class_label(int64_t id) { return scalar_tensor(double(id), DType::int64); }

Tensor integer_labels(const Tensor& values, const std::string& path) {
    Tensor source = values.to(DType::float64).contiguous();
    Tensor labels = empty(source.shape(), DType::int64);
    const double* in = source.data_ptr<double>();
    int64_t* out = labels.data_ptr<int64_t>();
    for (int64_t i = 0; i < source.numel(); ++i) {
        LUMEN_CHECK(std::isfinite(in[i]) && in[i] == std::round(in[i]) && std::abs(in[i]) < 1e15,
                    "layout", path, ": label value ", in[i], " at element ", i,
                    " is not an integer");
        out[i] = int64_t(in[i]);
    }
    return labels;
}

}  // namespace layout_detail

using namespace layout_detail;

const LayoutSplit& LayoutData::split(const std::string& name) const {
    LUMEN_CHECK(name == "train" || name == "val" || name == "test", "layout", "unknown split '",
                name, "' (expected train, val or test)");
    auto found = splits.find(name);
    if (found == splits.end()) {
        auto looked = looked_for.find(name);
        LUMEN_FAIL("layout", layout, " at ", root, ": no ", name, " split (looked for ",
                   looked == looked_for.end() ? std::string("nothing") : looked->second,
                   name == "val" ? "; or set val_fraction" : "", ")");
    }
    return found->second;
}

std::vector<std::string> layout_names() {
    return {"image_folder", "image_mask", "decathlon", "volume_folder",
            "npz_slices",   "npz_pairs",  "bags",      "text_csv"};
}

namespace {

void check_options(const LayoutOptions& o) {
    const std::string& name = o.layout;
    const bool images = name == "image_folder" || name == "image_mask";
    LUMEN_CHECK(!o.root.empty() ||
                    ((name == "image_mask" || name == "volume_folder") && !o.manifest.empty()),
                "layout", name, ": no root folder given");
    LUMEN_CHECK(o.val_fraction >= 0.0 && o.val_fraction < 1.0, "layout", where(o),
                ": val_fraction ", o.val_fraction, " is outside [0, 1)");
    LUMEN_CHECK(o.image_size.empty() || images, "layout", where(o),
                ": image_size applies to image_folder and image_mask only");
    LUMEN_CHECK(o.image_size.empty() ||
                    (o.image_size.size() == 2 && o.image_size[0] > 0 && o.image_size[1] > 0),
                "layout", where(o), ": image_size ", o.image_size, " is not (H, W) > 0");
    // The image reader's bound: at most 2^28 pixels.
    LUMEN_CHECK(o.image_size.empty() ||
                    double(o.image_size[0]) * double(o.image_size[1]) <= double(int64_t(1) << 28),
                "layout", where(o), ": image_size ", o.image_size, " has more than 2^28 pixels");
    LUMEN_CHECK(o.channels == 0 || (images && (o.channels == 1 || o.channels == 3)), "layout",
                where(o), ": channels ", o.channels,
                " (expected 0, 1 or 3, for image_folder and image_mask only)");
    LUMEN_CHECK(o.mask_mode == "index" || o.mask_mode == "binary", "layout", where(o),
                ": mask_mode '", o.mask_mode, "' (expected index or binary)");
    LUMEN_CHECK(
        o.manifest.empty() || name == "image_mask" || name == "volume_folder" || name == "bags",
        "layout", where(o), ": a manifest applies to image_mask, volume_folder and bags only");
    LUMEN_CHECK(o.max_length >= 0 && o.max_vocab >= 0 && o.min_count >= 1, "layout", where(o),
                ": max_length ", o.max_length, ", max_vocab ", o.max_vocab, ", min_count ",
                o.min_count, " (expected >= 0, >= 0, >= 1)");
}

}  // namespace

LayoutData load_layout(const LayoutOptions& options) {
    const std::vector<std::string> names = layout_names();
    LUMEN_CHECK(std::find(names.begin(), names.end(), options.layout) != names.end(), "layout",
                "unknown layout '", options.layout, "' (known: ", names, ")");
    check_options(options);
    const std::string& name = options.layout;
    if (name == "image_folder") return load_image_folder(options);
    if (name == "image_mask") return load_image_mask(options);
    if (name == "decathlon") return load_decathlon(options);
    if (name == "volume_folder") return load_volume_folder(options);
    if (name == "npz_slices") return load_npz_slices(options);
    if (name == "npz_pairs") return load_npz_pairs(options);
    if (name == "bags") return load_bags(options);
    return load_text_csv(options);
}

Example read_layout_input(const LayoutOptions& options, const std::string& path) {
    const std::string& name = options.layout;
    if (name == "image_folder" || name == "image_mask") return image_input(options, path);
    if (name == "decathlon") return volume_input(path);
    if (name == "volume_folder") return volume_file_input(path);
    if (name == "npz_slices") return npz_input(path);
    if (name == "bags") return {read_feature_bag(path)};
    LUMEN_FAIL("layout", name, " has no per-file input to predict from (", path,
               "); predictions read image_folder, image_mask, decathlon, volume_folder, "
               "npz_slices, bags and text_csv inputs");
}

NiftiHeader read_case_header(const CaseInfo& info) {
    LUMEN_CHECK(!info.image.empty(), "layout", "case '", info.name, "' has no image file");
    return read_nifti(info.image).header;
}

}  // namespace lumen::datasets
