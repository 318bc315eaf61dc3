// Dataset layouts: the folder and file arrangements the medical-imaging and text communities
// share data in (torchvision's ImageFolder, image/mask folders, the Medical Segmentation
// Decathlon's dataset.json, class-labelled volumes, TransUNet's .npz slices, MIL feature bags,
// labelled CSV text),
// each read into train / val / test datasets. Decoding is left to the readers (image.h,
// nifti.h, npy.h, text.h); batching to loader.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "datasets/dataset.h"
#include "datasets/nifti.h"
#include "datasets/text.h"

namespace lumen::datasets {

// What to read, and how. Paths are used as given (relative ones from the working directory).
struct LayoutOptions {
    // image_folder, image_mask, decathlon, volume_folder, npz_slices, npz_pairs, bags or
    // text_csv (layout_names()).
    std::string layout;
    std::string root;
    // image_mask: a CSV with columns image, mask and optionally split (paths relative to the
    // CSV's folder), instead of ROOT/<split>/images and masks. volume_folder: a CSV with columns
    // image, label and optionally split (paths relative to the CSV's folder), instead of
    // ROOT/<split>/<class>/. bags: the labels CSV (default ROOT/labels.csv).
    std::string manifest;
    // image_folder, image_mask: (H, W) to resize every image to (bilinear, masks nearest);
    // empty: all images must have one size.
    std::vector<int64_t> image_size;
    // image_folder, image_mask: 1 or 3 output channels (grey repeated to RGB, RGB to grey by
    // ITU-R 601 luma 0.299 R + 0.587 G + 0.114 B; alpha dropped); 0: the first image's.
    int64_t channels = 0;
    // image_mask: "index" (stored values are class ids) or "binary" (nonzero -> 1).
    std::string mask_mode = "index";
    // Without an explicit val split, this fraction of the train cases, chosen by a permutation
    // seeded with `seed`, becomes the val split. In [0, 1).
    double val_fraction = 0.0;
    uint64_t seed = 0;
    // text_csv: the columns, the vocabulary built on the train split (Vocabulary::build) and
    // the sequence length (the DGSA paper's 100). A given `vocabulary` is used as it is
    // (evaluation must tokenize as training did).
    std::string label_column = "label", text_column = "text";
    int64_t max_length = 100, max_vocab = 0, min_count = 1;
    bool lowercase = true;
    std::shared_ptr<const Vocabulary> vocabulary;
};

// One example's origin, to name predictions after their case.
struct CaseInfo {
    std::string name;       // file stem, slide id, or "<file>:<n>" for the n-th text row (from 1)
    std::string image;      // the input file (image, volume, .npz, bag); empty for text
    std::string label;      // the label file (mask, label volume); empty when none
    int64_t class_id = -1;  // classification layouts: the example's class; else -1
};

struct LayoutSplit {
    std::shared_ptr<const Dataset> dataset;  // thread-safe, decodes files in get()
    std::vector<CaseInfo> cases;             // cases[i] describes dataset->get(i)
};

struct LayoutData {
    std::string layout, root;
    std::map<std::string, LayoutSplit> splits;  // those of "train", "val", "test" present
    // Class names by id (image_folder, bags, text_csv: the train split's sorted names, or the
    // integers; decathlon: its "labels"; image_mask binary: background, foreground).
    std::vector<std::string> class_names;
    int64_t num_classes = 0;   // 0 when the layout cannot know it (index masks, npz slices)
    int64_t channels = 0;      // image channels C (0 for bags and text)
    int64_t spatial_dims = 0;  // 2 (H, W) or 3 (i, j, k) of the train images; 0 for bags, text
    int64_t feature_dim = 0;   // bags: the instances' feature size D
    std::shared_ptr<const Vocabulary> vocabulary;  // text_csv
    // For each absent split, where it was looked for (for split()'s message).
    std::map<std::string, std::string> looked_for;

    bool has_split(const std::string& name) const { return splits.count(name) > 0; }
    // Throws [layout] naming the layout, the root and what was looked for when `name` is
    // absent, and for a name other than train, val and test.
    const LayoutSplit& split(const std::string& name) const;
};

// Reads the layout's file lists, manifests and labels (never the images or volumes, except the
// first one for its channels and rank) into datasets of examples:
//   image_folder  ROOT/<split>/<class>/*.png|jpg|jpeg|bmp|tga (torchvision ImageFolder;
//                 classes: the sorted folders of train/) -> {image (C, H, W) float32 in [0, 1]
//                 (8-bit / 255, 16-bit / 65535), label () int64}
//   image_mask    ROOT/<split>/images/* with ROOT/<split>/masks/* of the same stems, or a
//                 manifest -> {image (C, H, W) float32 in [0, 1], mask (H, W) int64}
//   decathlon     ROOT/dataset.json (MSD) -> {image (C, i, j, k) float32 (get_fdata values;
//                 a 4-D (i, j, k, m) image has C = m), label (i, j, k) int64, when known,
//                 affine (4, 4) float64 (the image's img.affine; see sample.h)};
//                 test labels from labelsTs/ beside imagesTs/ when every test case has one
//   volume_folder ROOT/<split>/<class>/*.nii|nii.gz|npy (ImageFolder's arrangement), or a
//                 manifest -> {image (C, i, j, k) float32 (NIfTI as decathlon; .npy (i, j, k)
//                 or (C, i, j, k)), label () int64, affine (4, 4) float64 (identity for .npy)};
//                 sizes may differ (a config resizes them: data.resize)
//   npz_slices    ROOT/<split>/*.npz, or ROOT/*.npz listed by ROOT/<split>.txt or
//                 ROOT/lists/<split>.txt (TransUNet), "image" (H, W) or (D, H, W) and "label"
//                 -> {image (1, H, W) or (1, D, H, W) float32, label (H, W) or (D, H, W) int64}
//   npz_pairs     ROOT/{train,val,test}.npz with "image" (inputs) and "target" (what the model
//                 should give: a clean image for denoising), (N, H, W) or (N, C, H, W) each
//                 -> {image (C, H, W) float32, target (C, H, W) float32}; read into memory
//   bags          labels CSV (slide, label[, split]), ROOT/bags/<slide>.npy or .safetensors
//                 -> {bag (N, D) float32, label () int64}
//   text_csv      ROOT/{train,val,test}.{csv,tsv} -> {tokens (L <= max_length) int64,
//                 label () int64}
// Splits come from folders or files as above, from a `split` column (train, val, test), or
// from val_fraction. Class labels may be integers (>= 0) or names (ids in the sorted order of
// the train split's names; an unknown name elsewhere is an error). Files are listed in sorted
// order. Throws [layout] naming the path and the problem (a missing folder or file, an empty
// split, an image without mask, a bad dataset.json key, an unknown class, options that do not
// apply), and the readers' errors; get() throws [layout] for data that breaks the layout's
// rules (sizes or feature dims that differ, label values outside dataset.json's "labels").
LayoutData load_layout(const LayoutOptions& options);

// The layout names load_layout knows.
std::vector<std::string> layout_names();

// One input file read as `options.layout` reads its cases' inputs, for predictions on new files:
//   image_folder, image_mask  an image -> {(C, H, W) float32 in [0, 1]} with options.channels,
//                             resized to options.image_size when given (bilinear)
//   decathlon                 a NIfTI volume -> {(C, i, j, k) float32, affine (4, 4) float64}
//   volume_folder             a NIfTI or .npy volume -> the same
//   npz_slices                an .npz's "image" -> {(1, *spatial) float32}
//   bags                      a .npy or .safetensors bag -> {(N, D) float32}
// Throws [layout] for another layout (npz_pairs and text_csv have no per-file input) and the
// readers' errors.
Example read_layout_input(const LayoutOptions& options, const std::string& path);

// The texts of one input file of the text_csv layout, tokenized and encoded as its cases are
// (options.vocabulary, which must be set: the run's; lowercase; max_length): a .csv or .tsv
// gives one text per row of options.text_column (named "<file>:<row>", rows from 1; other
// columns ignored), any other file one text, its whole content (named by the path). Returns
// (name, tokens (L) int64) pairs; a text of no tokens gives one <unk>, as the model needs one.
// Throws [layout] without a vocabulary, and read_csv's errors.
std::vector<std::pair<std::string, Tensor>> read_text_inputs(const LayoutOptions& options,
                                                             const std::string& path);

// The NIfTI header of a decathlon case's image, to write a prediction with its geometry
// (write_nifti(path, prediction, header)); header.affine() is its voxel-to-world map. Reads the
// whole file (lumen has no header-only NIfTI reader). Throws [layout] for a case without an
// image file, and read_nifti's errors.
NiftiHeader read_case_header(const CaseInfo& info);

}  // namespace lumen::datasets
