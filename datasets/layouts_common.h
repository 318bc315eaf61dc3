// Internal: the pieces the dataset layouts (layouts.h) share: sorted file listing, the seeded
// val split, class names to ids, image decoding to (C, H, W) and a Dataset that calls a
// function. The layouts themselves are in layouts_image.cpp, layouts_volume.cpp and
// layouts_table.cpp.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "datasets/layouts.h"

namespace lumen::datasets::layout_detail {

namespace fs = std::filesystem;

// get(i) = get_(i): thread-safe as long as the function only reads what it captured.
class FunctionDataset : public Dataset {
  public:
    FunctionDataset(int64_t size, std::function<Example(int64_t)> get)
        : size_(size), get_(std::move(get)) {}
    int64_t size() const override { return size_; }
    Example get(int64_t index) const override;

  private:
    int64_t size_;
    std::function<Example(int64_t)> get_;
};

// "<layout> at <root>", the start of every message about a layout.
std::string where(const LayoutOptions& options);
// Throws [layout] unless `dir` is a folder ("missing folder <dir>" with `why`).
void require_dir(const fs::path& dir, const LayoutOptions& options, const std::string& why);

// The regular, non-hidden files in `dir` whose lower-cased extension is in `extensions`
// (every file when empty), sorted by name.
std::vector<fs::path> list_files(const fs::path& dir, const std::vector<std::string>& extensions);
// The sorted, non-hidden sub-folders of `dir`.
std::vector<std::string> list_dirs(const fs::path& dir);
inline const std::vector<std::string> kImageExtensions = {".png", ".jpg", ".jpeg", ".bmp", ".tga"};
inline const std::vector<std::string> kVolumeExtensions = {".nii", ".nii.gz", ".npy"};
// The file name without its extension; ".nii.gz" counts as one extension.
std::string stem_of(const fs::path& path);
// The lower-cased extension of `path`, ".nii.gz" as one.
std::string extension_of(const fs::path& path);

// torchvision's ImageFolder arrangement, ROOT/<split>/<class>/<file> with an extension of
// `extensions`: the cases of each split present (class ids from the sorted class folders of
// train/, which val/ and test/ must use too), with data.looked_for and data.class_names set.
// Throws [layout] for a missing ROOT/train, no class folders, or a class folder in val/ or test/
// that train/ does not have.
std::map<std::string, std::vector<CaseInfo>> class_folder_cases(
    const LayoutOptions& options, LayoutData& data, const std::vector<std::string>& extensions);

// The indices [0, n) split into (kept, moved to val): round(fraction * n) of them, the first
// of random_permutation(n, Generator(seed)); both lists sorted. Throws [layout] when that
// leaves no val case or no train case.
std::pair<std::vector<int64_t>, std::vector<int64_t>> split_indices(int64_t n,
                                                                    const LayoutOptions& options);

// Moves options.val_fraction of splits["train"] into splits["val"] unless a val split exists.
template <typename T>
void split_off_val(std::map<std::string, std::vector<T>>& splits, const LayoutOptions& options) {
    if (options.val_fraction == 0.0 || splits.count("val") || !splits.count("train")) return;
    std::vector<T>& train = splits["train"];
    auto [kept, moved] = split_indices(int64_t(train.size()), options);
    std::vector<T> new_train, val;
    for (int64_t i : kept) new_train.push_back(train[size_t(i)]);
    for (int64_t i : moved) val.push_back(train[size_t(i)]);
    train = std::move(new_train);
    splits["val"] = std::move(val);
}

// Class labels as written in a CSV: integers >= 0 used as they are, when every train label is
// one; otherwise names, numbered in sorted order.
class LabelMap {
  public:
    LabelMap(const std::vector<std::string>& train_labels, const std::string& source);
    // The id of `label`; throws [layout] naming `where` for an unknown name or, in integer
    // mode, a label that is not an integer >= 0 or is past the train split's largest.
    int64_t id(const std::string& label, const std::string& where) const;
    const std::vector<std::string>& names() const { return names_; }

  private:
    bool integers_ = true;
    std::vector<std::string> names_;
    std::map<std::string, int64_t> ids_;
};

// The cases of a labelled CSV (columns `key`, label and optionally split: train, val or test;
// every row in train without it): case(value of `key`, "<csv>: row <n>") makes each case;
// labels are numbered by LabelMap over the train rows, then val_fraction moves train cases to
// val. Sets data.looked_for, class_names and num_classes.
std::map<std::string, std::vector<CaseInfo>> labelled_csv_cases(
    const std::string& csv, const std::string& key, const LayoutOptions& options, LayoutData& data,
    const std::function<CaseInfo(const std::string&, const std::string&)>& make);

// Adds the split `name` to `data`: one example per case, made by load(case).
void add_split(LayoutData& data, const std::string& name, std::vector<CaseInfo> cases,
               std::function<Example(const CaseInfo&)> load);

// The image at `path` as (C, H, W) float32 in [0, 1] (8-bit / 255, 16-bit / 65535), with
// `channels` channels (0: the file's, alpha dropped; 1 or 3 converted as LayoutOptions says).
Tensor read_image_chw(const std::string& path, int64_t channels);
// A class-id scalar () int64.
Tensor class_label(int64_t id);
// Throws [layout] unless every value of the float64 tensor is an integer; returns it as int64.
Tensor integer_labels(const Tensor& values, const std::string& path);

LayoutData load_image_folder(const LayoutOptions& options);
LayoutData load_image_mask(const LayoutOptions& options);
LayoutData load_decathlon(const LayoutOptions& options);
LayoutData load_npz_slices(const LayoutOptions& options);
LayoutData load_npz_pairs(const LayoutOptions& options);
LayoutData load_volume_folder(const LayoutOptions& options);
// One input of an image layout, a decathlon volume, an npz slice (read_layout_input).
Example image_input(const LayoutOptions& options, const std::string& path);
Example volume_input(const std::string& path);
// A volume_folder input: a NIfTI volume as volume_input, or an .npy (i, j, k) or (C, i, j, k)
// with the identity affine.
Example volume_file_input(const std::string& path);
Example npz_input(const std::string& path);
LayoutData load_bags(const LayoutOptions& options);
LayoutData load_text_csv(const LayoutOptions& options);

}  // namespace lumen::datasets::layout_detail
