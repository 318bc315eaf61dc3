// The 2-D image layouts: image_folder (torchvision's ImageFolder: ROOT/<split>/<class>/*.png)
// and image_mask (ROOT/<split>/images and ROOT/<split>/masks with the same stems, as most 2-D
// segmentation sets ship, or a CSV manifest of image and mask paths).
#include <algorithm>

#include "core/error.h"
#include "datasets/image.h"
#include "datasets/layouts_common.h"
#include "datasets/text.h"
#include "ops/interpolate.h"

namespace lumen::datasets::layout_detail {

namespace {

// Every image must have the first train image's size, or is resized to options.image_size.
struct SizeRule {
    std::string reference;  // the first train image
    int64_t height = 0, width = 0;
    std::vector<int64_t> image_size;
};

// The first train image, probed for its channels and size. Throws when train is empty.
SizeRule probe(std::map<std::string, std::vector<CaseInfo>>& splits, LayoutData& data,
               const LayoutOptions& options) {
    LUMEN_CHECK(!splits["train"].empty(), "layout", where(options),
                ": the train split is empty (looked for ", data.looked_for["train"], ")");
    const std::string& path = splits["train"].front().image;
    Tensor image = read_image_chw(path, options.channels);
    data.channels = image.size(0);
    data.spatial_dims = 2;
    return {path, image.size(1), image.size(2), options.image_size};
}

// Shapes: image (C, H, W) float32, mask (H, W) int64 or undefined; resized when the rule has
// an image_size (image bilinear, mask nearest, as torch's interpolate), else checked.
void fit(Tensor& image, Tensor& mask, const std::string& path, const SizeRule& rule) {
    const int64_t H = image.size(1), W = image.size(2);
    if (rule.image_size.empty()) {
        LUMEN_CHECK(H == rule.height && W == rule.width, "layout", path, " is ", H, " x ", W,
                    " but ", rule.reference, " is ", rule.height, " x ", rule.width,
                    " (set image_size to resize every image)");
        return;
    }
    if (H == rule.image_size[0] && W == rule.image_size[1]) return;
    image = interpolate(image.unsqueeze(0), rule.image_size, {}, "bilinear", false).squeeze(0);
    if (mask.defined()) {
        // Class ids up to 2^24 are exact in float32 (masks hold at most 16 bits).
        Tensor resized = interpolate(mask.to(DType::float32).unsqueeze(0).unsqueeze(0),
                                     rule.image_size, {}, "nearest");
        mask = resized.squeeze(0).squeeze(0).to(DType::int64);
    }
}

// A mask image (H, W[, C]) as (H, W) int64: the stored values ("index"; colour masks must be
// grey) or nonzero -> 1 ("binary"). Alpha is ignored.
Tensor read_mask(const std::string& path, bool binary) {
    Tensor stored = read_image(path).to(DType::int64).contiguous();
    const int64_t H = stored.size(0), W = stored.size(1), C = stored.size(2);
    const int64_t colour = (C == 2 || C == 4) ? C - 1 : C;
    Tensor mask = empty({H, W}, DType::int64);
    const int64_t* in = stored.data_ptr<int64_t>();
    int64_t* out = mask.data_ptr<int64_t>();
    for (int64_t p = 0; p < H * W; ++p) {
        const int64_t* px = in + p * C;
        if (binary) {
            out[p] = (px[0] != 0 || (colour == 3 && (px[1] != 0 || px[2] != 0))) ? 1 : 0;
            continue;
        }
        LUMEN_CHECK(colour == 1 || (px[0] == px[1] && px[1] == px[2]), "layout", path,
                    ": colour mask pixel (", p / W, ", ", p % W, ") is (", px[0], ", ", px[1], ", ",
                    px[2],
                    "), not grey; index masks store class ids (mask_mode binary "
                    "reads nonzero as 1)");
        out[p] = px[0];
    }
    return mask;
}

// Stem -> file for the files of `dir`; throws for two files with one stem.
std::map<std::string, fs::path> by_stem(const fs::path& dir, const std::vector<std::string>& ext,
                                        const LayoutOptions& options) {
    std::map<std::string, fs::path> files;
    for (const fs::path& path : list_files(dir, ext)) {
        auto [at, added] = files.emplace(stem_of(path), path);
        LUMEN_CHECK(added, "layout", where(options), ": ", at->second.string(), " and ",
                    path.string(), " share the stem '", at->first, "'");
    }
    return files;
}

// ROOT/<split>/images/* and ROOT/<split>/masks/*, paired by stem.
void mask_folders(const LayoutOptions& options, LayoutData& data,
                  std::map<std::string, std::vector<CaseInfo>>& splits) {
    for (const char* split : {"train", "val", "test"}) {
        const fs::path dir = fs::path(options.root) / split;
        data.looked_for[split] = "folders " + (dir / "images").string() + " and masks";
        if (!fs::is_directory(dir)) continue;
        require_dir(dir / "images", options, "the images of the split");
        require_dir(dir / "masks", options, "the masks of the split, with the images' stems");
        const auto images = by_stem(dir / "images", kImageExtensions, options);
        const auto masks = by_stem(dir / "masks", {}, options);
        for (const auto& [stem, path] : masks)
            LUMEN_CHECK(images.count(stem), "layout", where(options), ": mask ", path.string(),
                        " has no image '", stem, "' in ", (dir / "images").string());
        std::vector<CaseInfo>& cases = splits[split];
        for (const auto& [stem, path] : images) {
            auto mask = masks.find(stem);
            LUMEN_CHECK(mask != masks.end(), "layout", where(options), ": image ", path.string(),
                        " has no mask '", stem, ".*' in ", (dir / "masks").string());
            cases.push_back({stem, path.string(), mask->second.string(), -1});
        }
    }
}

// A CSV with columns image, mask and optionally split; paths relative to the CSV's folder.
void mask_manifest(const LayoutOptions& options, LayoutData& data,
                   std::map<std::string, std::vector<CaseInfo>>& splits) {
    const CsvTable table = read_csv(options.manifest);
    const size_t image = table.column("image", options.manifest);
    const size_t mask = table.column("mask", options.manifest);
    auto has_split = std::find(table.header.begin(), table.header.end(), "split");
    for (const char* split : {"train", "val", "test"})
        data.looked_for[split] =
            "rows of split '" + std::string(split) + "' in " + options.manifest;
    const fs::path base = fs::path(options.manifest).parent_path();
    for (size_t r = 0; r < table.rows.size(); ++r) {
        const std::vector<std::string>& row = table.rows[r];
        const std::string at = options.manifest + ": row " + std::to_string(r + 2);
        const std::string split = has_split == table.header.end()
                                      ? "train"
                                      : row[size_t(has_split - table.header.begin())];
        LUMEN_CHECK(split == "train" || split == "val" || split == "test", "layout", at,
                    ": split '", split, "' (expected train, val or test)");
        LUMEN_CHECK(!row[image].empty() && !row[mask].empty(), "layout", at, ": image '",
                    row[image], "' without mask, or mask '", row[mask], "' without image");
        const fs::path image_path = base / row[image], mask_path = base / row[mask];
        for (const fs::path& path : {image_path, mask_path})
            LUMEN_CHECK(fs::is_regular_file(path), "layout", at, ": no file ", path.string());
        splits[split].push_back({stem_of(image_path), image_path.string(), mask_path.string(), -1});
    }
}

}  // namespace

LayoutData load_image_folder(const LayoutOptions& options) {
    LayoutData data{options.layout, options.root};
    std::map<std::string, std::vector<CaseInfo>> splits =
        class_folder_cases(options, data, kImageExtensions);
    split_off_val(splits, options);
    const SizeRule rule = probe(splits, data, options);
    const int64_t channels = data.channels;
    for (auto& [name, cases] : splits)
        add_split(data, name, std::move(cases), [rule, channels](const CaseInfo& c) {
            Tensor image = read_image_chw(c.image, channels), none;
            fit(image, none, c.image, rule);
            return Example{image, class_label(c.class_id)};
        });
    return data;
}

LayoutData load_image_mask(const LayoutOptions& options) {
    LayoutData data{options.layout, options.root.empty() ? options.manifest : options.root};
    std::map<std::string, std::vector<CaseInfo>> splits;
    if (options.manifest.empty())
        mask_folders(options, data, splits);
    else
        mask_manifest(options, data, splits);
    split_off_val(splits, options);
    const SizeRule rule = probe(splits, data, options);
    const bool binary = options.mask_mode == "binary";
    if (binary) {
        data.class_names = {"background", "foreground"};
        data.num_classes = 2;
    }
    const int64_t channels = data.channels;
    for (auto& [name, cases] : splits)
        add_split(data, name, std::move(cases), [rule, channels, binary](const CaseInfo& c) {
            Tensor image = read_image_chw(c.image, channels);
            Tensor mask = read_mask(c.label, binary);
            LUMEN_CHECK(mask.size(0) == image.size(1) && mask.size(1) == image.size(2), "layout",
                        "mask ", c.label, " is ", mask.size(0), " x ", mask.size(1),
                        " but its image ", c.image, " is ", image.size(1), " x ", image.size(2));
            fit(image, mask, c.image, rule);
            return Example{image, mask};
        });
    return data;
}

Example image_input(const LayoutOptions& options, const std::string& path) {
    Tensor image = read_image_chw(path, options.channels), mask;
    SizeRule rule{path, image.size(1), image.size(2), options.image_size};
    fit(image, mask, path, rule);
    return {image};
}

}  // namespace lumen::datasets::layout_detail
