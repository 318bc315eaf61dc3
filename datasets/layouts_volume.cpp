// The volume layouts: decathlon (the Medical Segmentation Decathlon's ROOT/dataset.json, which
// nnU-Net's raw data format follows: imagesTr, labelsTr, imagesTs), volume_folder (class-labelled
// volumes for 3-D classification: ImageFolder's arrangement or a CSV of image and label, as
// MedMNIST-3D and ADNI-style studies ship) and npz_slices (TransUNet's Synapse .npz files: one
// "image" and "label" per 2-D slice, or per 3-D test volume).
#include <algorithm>

#include "core/error.h"
#include "core/file_io.h"
#include "core/json_strict.h"
#include "datasets/layouts_common.h"
#include "datasets/npy.h"
#include "datasets/sample.h"

namespace lumen::datasets::layout_detail {

namespace {

using Json = nlohmann::json;

constexpr uint64_t kMaxJsonBytes = uint64_t(64) << 20;
constexpr int kMaxJsonDepth = 16;

// dataset.json[key] of an object; throws [layout] naming the file and the key.
const Json& member(const Json& object, const std::string& key, const std::string& path) {
    LUMEN_CHECK(object.is_object() && object.contains(key), "layout", path, ": missing key '", key,
                "' in ", json_excerpt(object));
    return object[key];
}

// A case file named by dataset.json: relative to ROOT ("./imagesTr/x.nii.gz"); it must exist.
std::string case_path(const Json& value, const std::string& root, const std::string& what) {
    LUMEN_CHECK(value.is_string(), "layout", what, " is ", json_excerpt(value),
                ", expected a path string");
    fs::path path = value.get<std::string>();
    if (path.is_relative()) path = fs::path(root) / path;
    path = path.lexically_normal();
    LUMEN_CHECK(fs::is_regular_file(path), "layout", what, ": no file ", path.string());
    return path.string();
}

// "labels": {"0": "background", "1": "liver", ...}: the names by id (allowed ids non-empty).
std::vector<std::string> label_names(const Json& labels, const std::string& path) {
    LUMEN_CHECK(labels.is_object() && !labels.empty(), "layout", path, ": 'labels' is ",
                json_excerpt(labels), ", expected {\"0\": \"background\", ...}");
    std::vector<std::string> names;
    for (const auto& [key, name] : labels.items()) {
        const bool digits =
            !key.empty() && key.size() <= 6 &&
            std::all_of(key.begin(), key.end(), [](char c) { return c >= '0' && c <= '9'; });
        LUMEN_CHECK(digits && name.is_string(), "layout", path, ": 'labels' entry \"", key,
                    "\": ", json_excerpt(name), " (expected \"<id>\": \"<name>\")");
        const size_t id = size_t(std::stoul(key));
        if (names.size() <= id) names.resize(id + 1);
        names[id] = name.get<std::string>();
        LUMEN_CHECK(!names[id].empty(), "layout", path, ": label ", id, " has an empty name");
    }
    return names;
}

// Test cases: plain paths (MSD), whose labels lumen's make-demo puts in labelsTs/ beside
// imagesTs/; or {"image", "label"} objects. Labels for all cases or none.
std::vector<CaseInfo> test_cases(const Json& test, const std::string& root,
                                 const std::string& path) {
    LUMEN_CHECK(test.is_array(), "layout", path, ": 'test' is not an array");
    std::vector<CaseInfo> cases;
    for (size_t n = 0; n < test.size(); ++n) {
        const std::string what = path + ": test[" + std::to_string(n) + "]";
        const bool object = test[n].is_object();
        const std::string image =
            case_path(object ? member(test[n], "image", path) : test[n], root, what);
        std::string label;
        if (object && test[n].contains("label")) {
            label = case_path(test[n]["label"], root, what + ".label");
        } else {
            const fs::path beside = fs::path(image).parent_path().parent_path() / "labelsTs" /
                                    fs::path(image).filename();
            if (fs::is_regular_file(beside)) label = beside.string();
        }
        cases.push_back({stem_of(image), image, label, -1});
    }
    for (const CaseInfo& c : cases)
        LUMEN_CHECK(c.label.empty() == cases.front().label.empty(), "layout", path, ": test case ",
                    (c.label.empty() ? c : cases.front()).image,
                    " has no label but others have (expected labels for all test cases or none)");
    return cases;
}

// Shapes: (i, j, k) -> (1, i, j, k); (i, j, k, m) -> (m, i, j, k) (MSD's multi-modal MRI).
Tensor volume_channels(const NiftiImage& nifti, const std::string& path) {
    Tensor values = nifti.fdata().to(DType::float32);
    const size_t rank = nifti.header.shape.size();
    LUMEN_CHECK(rank == 3 || rank == 4, "layout", path, ": image of shape ", nifti.header.shape,
                ", expected (i, j, k) or (i, j, k, modalities)");
    return rank == 3 ? values.unsqueeze(0) : values.permute({3, 0, 1, 2}).contiguous();
}

// The label map (i, j, k) int64; every value must be an id listed in "labels".
Tensor label_volume(const std::string& path, const std::vector<std::string>& names) {
    NiftiImage nifti = read_nifti(path);
    Shape shape = nifti.header.shape;
    if (shape.size() == 4 && shape[3] == 1) shape.pop_back();
    LUMEN_CHECK(shape.size() == 3, "layout", path, ": label of shape ", nifti.header.shape,
                ", expected (i, j, k)");
    Tensor label = integer_labels(nifti.fdata(), path).reshape(shape);
    const int64_t* values = label.data_ptr<int64_t>();
    for (int64_t n = 0; n < label.numel(); ++n) {
        const int64_t v = values[n];
        LUMEN_CHECK(v >= 0 && v < int64_t(names.size()) && !names[size_t(v)].empty(), "layout",
                    path, ": label value ", v, " is not one of dataset.json's labels");
    }
    return label;
}

}  // namespace

LayoutData load_decathlon(const LayoutOptions& options) {
    LayoutData data{options.layout, options.root};
    require_dir(options.root, options, "the dataset folder with dataset.json");
    const std::string path = (fs::path(options.root) / "dataset.json").string();
    const Json json = parse_json_strict(read_file(path, "layout", kMaxJsonBytes, "a dataset.json"),
                                        "layout", path, kMaxJsonDepth);
    const std::vector<std::string> names = label_names(member(json, "labels", path), path);
    std::map<std::string, std::vector<CaseInfo>> splits;
    const Json& training = member(json, "training", path);
    LUMEN_CHECK(training.is_array(), "layout", path, ": 'training' is not an array");
    splits["train"];  // an empty list is an error below
    for (size_t n = 0; n < training.size(); ++n) {
        const std::string what = path + ": training[" + std::to_string(n) + "]";
        const std::string image = case_path(member(training[n], "image", path), options.root, what);
        const std::string label =
            case_path(member(training[n], "label", path), options.root, what + ".label");
        splits["train"].push_back({stem_of(image), image, label, -1});
    }
    // nnU-Net's dataset.json has no "test"; MSD's may be empty.
    if (json.contains("test") && !json["test"].empty())
        splits["test"] = test_cases(json["test"], options.root, path);
    data.looked_for = {{"train", "'training' in " + path},
                       {"val", "val_fraction (dataset.json has no val split)"},
                       {"test", "'test' in " + path}};
    split_off_val(splits, options);

    // MSD lists one modality per channel; without "modality", the first image tells.
    int64_t channels = 0;
    if (json.contains("modality")) channels = int64_t(json["modality"].size());
    if (channels == 0 && !splits["train"].empty()) {
        const Shape& shape = read_nifti(splits["train"].front().image).header.shape;
        channels = shape.size() == 4 ? shape[3] : 1;
    }
    data.class_names = names;
    data.num_classes = int64_t(names.size());
    data.channels = channels;
    data.spatial_dims = 3;
    for (auto& [name, cases] : splits)
        add_split(data, name, std::move(cases), [names, channels](const CaseInfo& c) {
            NiftiImage nifti = read_nifti(c.image);
            Tensor image = volume_channels(nifti, c.image);
            LUMEN_CHECK(image.size(0) == channels, "layout", c.image, ": ", image.size(0),
                        " channels but dataset.json lists ", channels, " modalities");
            // The voxel-to-world map travels with the example (datasets/sample.h), so that
            // reorientation and resampling can use it and predictions keep their place.
            const Affine matrix = nifti.header.affine();
            Tensor affine = from_vector(std::vector<double>(matrix.begin(), matrix.end()), {4, 4});
            if (c.label.empty()) return Example{image, affine};
            Tensor label = label_volume(c.label, names);
            const Shape spatial(image.shape().begin() + 1, image.shape().end());
            LUMEN_CHECK(label.shape() == spatial, "layout", "label ", c.label, " has shape ",
                        label.shape(), " but image ", c.image, " has ", spatial);
            return Example{image, label, affine};
        });
    return data;
}

Example volume_input(const std::string& path) {
    NiftiImage nifti = read_nifti(path);
    const Affine matrix = nifti.header.affine();
    return {volume_channels(nifti, path),
            from_vector(std::vector<double>(matrix.begin(), matrix.end()), {4, 4})};
}

Example volume_file_input(const std::string& path) {
    if (extension_of(path) != ".npy") return volume_input(path);
    Tensor values = read_npy(path).data;
    LUMEN_CHECK(values.ndim() == 3 || values.ndim() == 4, "layout", path, ": array of shape ",
                values.shape(), ", expected (i, j, k) or (channels, i, j, k)");
    if (values.ndim() == 3) values = values.unsqueeze(0);
    return {
        values.to(DType::float32).contiguous(),
        from_vector(std::vector<double>(kIdentityAffine.begin(), kIdentityAffine.end()), {4, 4})};
}

LayoutData load_volume_folder(const LayoutOptions& options) {
    LayoutData data{options.layout, options.root.empty() ? options.manifest : options.root};
    std::map<std::string, std::vector<CaseInfo>> splits;
    if (options.manifest.empty()) {
        splits = class_folder_cases(options, data, kVolumeExtensions);
        split_off_val(splits, options);
    } else {
        // Paths relative to the CSV's folder.
        const fs::path base = fs::path(options.manifest).parent_path();
        splits = labelled_csv_cases(
            options.manifest, "image", options, data,
            [&](const std::string& value, const std::string& at) {
                const fs::path path = base / value;
                const std::string ext = extension_of(path);
                LUMEN_CHECK(fs::is_regular_file(path), "layout", at, ": no regular file ",
                            path.string());
                LUMEN_CHECK(ext == ".nii" || ext == ".nii.gz" || ext == ".npy", "layout", at, ": ",
                            path.string(), " is not a .nii, .nii.gz or .npy volume");
                return CaseInfo{stem_of(path), path.string(), "", -1};
            });
    }
    LUMEN_CHECK(!splits["train"].empty(), "layout", where(options),
                ": the train split is empty (looked for ", data.looked_for["train"], ")");
    const std::string reference = splits["train"].front().image;
    const int64_t channels = volume_file_input(reference)[0].size(0);
    data.channels = channels;
    data.spatial_dims = 3;
    for (auto& [name, cases] : splits)
        add_split(data, name, std::move(cases), [channels, reference](const CaseInfo& c) {
            Example volume = volume_file_input(c.image);
            LUMEN_CHECK(volume[0].size(0) == channels, "layout", c.image, ": ", volume[0].size(0),
                        " channels but ", reference, " has ", channels);
            // {image, class, affine}: the class passes through the joint transforms.
            return Example{volume[0], class_label(c.class_id), volume[1]};
        });
    return data;
}

namespace {

// TransUNet's lists: one case name per line ("case0005_slice000"), the file ROOT/<name>.npz.
std::vector<CaseInfo> listed_cases(const fs::path& list, const LayoutOptions& options) {
    const std::string text = read_file(list.string(), "layout", kMaxJsonBytes, "a case list");
    std::vector<CaseInfo> cases;
    size_t start = 0, line = 0;
    while (start < text.size()) {
        size_t end = std::min(text.find('\n', start), text.size());
        std::string name = text.substr(start, end - start);
        start = end + 1;
        ++line;
        name.erase(name.find_last_not_of(" \t\r") + 1);
        name.erase(0, name.find_first_not_of(" \t"));
        if (name.empty()) continue;
        fs::path file = fs::path(options.root) / name;
        if (file.extension() != ".npz") file += ".npz";
        LUMEN_CHECK(fs::is_regular_file(file), "layout", list.string(), ": line ", line,
                    ": no file ", file.string());
        cases.push_back({stem_of(file), file.string(), "", -1});
    }
    return cases;
}

// {image (1, *spatial) float32, label (*spatial) int64} from an .npz's "image" and "label".
Example npz_example(const std::string& path) {
    std::map<std::string, NpyArray> arrays = read_npz(path);
    for (const char* key : {"image", "label"})
        LUMEN_CHECK(
            arrays.count(key), "layout", path, ": no array '", key, "' (it holds ",
            [&] {
                std::vector<std::string> keys;
                for (const auto& entry : arrays) keys.push_back(entry.first);
                return keys;
            }(),
            ")");
    const Tensor& image = arrays["image"].data;
    LUMEN_CHECK(image.ndim() == 2 || image.ndim() == 3, "layout", path, ": 'image' of shape ",
                image.shape(), ", expected (H, W) or (D, H, W)");
    LUMEN_CHECK(arrays["label"].data.shape() == image.shape(), "layout", path,
                ": 'label' of shape ", arrays["label"].data.shape(), " but 'image' of shape ",
                image.shape());
    return {image.to(DType::float32).unsqueeze(0), integer_labels(arrays["label"].data, path)};
}

}  // namespace

LayoutData load_npz_slices(const LayoutOptions& options) {
    LayoutData data{options.layout, options.root};
    require_dir(options.root, options, "the folder of .npz files");
    const fs::path root = options.root;
    std::map<std::string, std::vector<CaseInfo>> splits;
    for (const char* split : {"train", "val", "test"}) {
        const fs::path dir = root / split, list = root / (std::string(split) + ".txt"),
                       lists = root / "lists" / (std::string(split) + ".txt");
        data.looked_for[split] =
            "folder " + dir.string() + "/ or list " + list.string() + " or " + lists.string();
        if (fs::is_directory(dir)) {
            std::vector<CaseInfo>& cases = splits[split];  // an empty folder is an error
            for (const fs::path& path : list_files(dir, {".npz"}))
                cases.push_back({stem_of(path), path.string(), "", -1});
        } else if (fs::is_regular_file(list) || fs::is_regular_file(lists)) {
            splits[split] = listed_cases(fs::is_regular_file(list) ? list : lists, options);
        }
    }
    split_off_val(splits, options);
    // The rank of the first case tells 2-D slices from 3-D volumes.
    for (const char* split : {"train", "val", "test"})
        if (splits.count(split) && !splits[split].empty() && data.spatial_dims == 0)
            data.spatial_dims = npz_example(splits[split].front().image)[0].ndim() - 1;
    data.channels = 1;
    for (auto& [name, cases] : splits)
        add_split(data, name, std::move(cases),
                  [](const CaseInfo& c) { return npz_example(c.image); });
    return data;
}

Example npz_input(const std::string& path) {
    std::map<std::string, NpyArray> arrays = read_npz(path);
    LUMEN_CHECK(arrays.count("image"), "layout", path, ": no array 'image'");
    const Tensor& image = arrays["image"].data;
    LUMEN_CHECK(image.ndim() == 2 || image.ndim() == 3, "layout", path, ": 'image' of shape ",
                image.shape(), ", expected (H, W) or (D, H, W)");
    return {image.to(DType::float32).unsqueeze(0)};
}

// ROOT/<split>.npz with "image" (inputs) and "target" (what the model should give) of N
// examples each, (N, H, W) (one channel) or (N, C, H, W): read once, kept in memory.
LayoutData load_npz_pairs(const LayoutOptions& options) {
    LayoutData data{options.layout, options.root};
    require_dir(options.root, options, "the folder of <split>.npz files");
    LUMEN_CHECK(options.val_fraction == 0.0, "layout", where(options),
                ": val_fraction does not apply (the val split is val.npz)");
    std::map<std::string, std::vector<CaseInfo>> splits;
    std::map<std::string, std::pair<Tensor, Tensor>> arrays;
    for (const char* split : {"train", "val", "test"}) {
        const fs::path file = fs::path(options.root) / (std::string(split) + ".npz");
        data.looked_for[split] = "file " + file.string();
        if (!fs::is_regular_file(file)) continue;
        std::map<std::string, NpyArray> npz = read_npz(file.string());
        for (const char* key : {"image", "target"})
            LUMEN_CHECK(npz.count(key), "layout", file.string(), ": no array '", key,
                        "' (npz_pairs needs 'image' and 'target')");
        Tensor image = npz["image"].data, target = npz["target"].data;
        LUMEN_CHECK((image.ndim() == 3 || image.ndim() == 4) && image.size(0) > 0 &&
                        target.shape() == image.shape(),
                    "layout", file.string(), ": 'image' ", image.shape(), " and 'target' ",
                    target.shape(), " must have one shape, (N, H, W) or (N, C, H, W) with N > 0");
        if (image.ndim() == 3) image = image.unsqueeze(1), target = target.unsqueeze(1);
        arrays[split] = {image.to(DType::float32).contiguous(),
                         target.to(DType::float32).contiguous()};
        std::vector<CaseInfo>& cases = splits[split];
        for (int64_t n = 0; n < image.size(0); ++n)
            cases.push_back(
                {std::string(split) + ".npz:" + std::to_string(n), file.string(), "", -1});
        if (data.channels == 0) data.channels = image.size(1);
        LUMEN_CHECK(image.size(1) == data.channels, "layout", file.string(), ": ", image.size(1),
                    " channels, but the other splits have ", data.channels);
    }
    LUMEN_CHECK(!splits.empty(), "layout", where(options), ": no train.npz, val.npz or test.npz");
    data.spatial_dims = 2;
    for (auto& [name, cases] : splits) {
        auto [image, target] = arrays[name];
        const int64_t n = image.size(0);
        auto dataset = std::make_shared<FunctionDataset>(n, [image, target](int64_t i) {
            return Example{image.select(0, i).clone(), target.select(0, i).clone()};
        });
        data.splits[name] = {dataset, std::move(cases)};
    }
    return data;
}

}  // namespace lumen::datasets::layout_detail
