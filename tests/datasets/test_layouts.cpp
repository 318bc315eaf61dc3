// Dataset layouts: each layout on make-demo data and on small hand-written folders: split
// sizes, shapes, dtypes and values, class order, masks, 4-D volumes, the seeded val split,
// manifests, and the errors for broken layouts.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include "datasets/demo.h"
#include "datasets/image.h"
#include "datasets/layouts.h"
#include "datasets/nifti.h"
#include "datasets/npy.h"
#include "datasets/sample.h"
#include "support/gradcheck.h"
#include "support/layout_fixtures.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::datasets;
namespace fs = std::filesystem;

namespace {

// An (H, W, C) uint8 image with values (first + index) % 256.
Tensor ramp(int64_t H, int64_t W, int64_t C, int first = 0) {
    std::vector<uint8_t> values(size_t(H * W * C));
    for (size_t i = 0; i < values.size(); ++i) values[i] = uint8_t((first + int(i)) % 256);
    return from_vector(values, {H, W, C});
}

void png(const std::string& path, const Tensor& image) {
    fs::create_directories(fs::path(path).parent_path());
    write_png(path, image);
}

std::vector<std::string> names(const LayoutSplit& split) {
    std::vector<std::string> result;
    for (const CaseInfo& c : split.cases) result.push_back(c.name);
    return result;
}

}  // namespace

TEST_CASE("image_folder: classes from train's sorted folders, images in [0, 1]",
          "[datasets][layouts]") {
    TempDir dir("layouts_folder");
    png(dir.file("train/zebra/b.png"), ramp(4, 5, 3, 10));
    png(dir.file("train/zebra/a.png"), ramp(4, 5, 3));
    png(dir.file("train/ant/c.jpg.png"), ramp(4, 5, 3));
    png(dir.file("test/zebra/d.png"), ramp(4, 5, 1));  // grey, repeated to RGB
    write_text(dir.file("train/ant/notes.txt"), "not an image");
    LayoutData data = load_layout(layout_options("image_folder", dir.path.string()));
    CHECK(data.class_names == std::vector<std::string>{"ant", "zebra"});
    CHECK(data.num_classes == 2);
    CHECK(data.channels == 3);
    CHECK(data.spatial_dims == 2);
    const LayoutSplit& train = data.split("train");
    CHECK(names(train) == std::vector<std::string>{"c.jpg", "a", "b"});
    REQUIRE(train.dataset->size() == 3);
    Example b = train.dataset->get(2);
    CHECK(b[0].shape() == Shape{3, 4, 5});
    CHECK(b[0].dtype() == DType::float32);
    CHECK(b[1].dtype() == DType::int64);
    CHECK(b[1].ndim() == 0);
    CHECK(b[1].item<int64_t>() == 1);
    // pixel (0, 1) channel 2 is stored value 10 + 5
    CHECK(b[0].at<float>({2, 0, 1}) == Approx(15.0 / 255));
    Example d = data.split("test").dataset->get(0);
    CHECK(d[0].shape() == Shape{3, 4, 5});
    CHECK(d[0].at<float>({2, 1, 1}) == Approx(6.0 / 255));
    require_error([&] { data.split("val"); }, {"[layout]", "no val split", "val_fraction"});

    LayoutOptions grey = layout_options("image_folder", dir.path.string());
    grey.channels = 1;
    Example luma = load_layout(grey).split("train").dataset->get(1);
    CHECK(luma[0].shape() == Shape{1, 4, 5});
    CHECK(luma[0].at<float>({0, 0, 0}) == Approx((0.587 * 1 + 0.114 * 2) / 255));
}

TEST_CASE("image_folder: 16-bit images, resizing and size errors", "[datasets][layouts]") {
    TempDir dir("layouts_folder16");
    png(dir.file("train/a/x.png"), from_vector(std::vector<int32_t>{0, 65535, 1000, 3}, {2, 2}));
    png(dir.file("train/a/y.png"), ramp(3, 2, 4));  // RGBA of another size
    LayoutData data = load_layout(layout_options("image_folder", dir.path.string()));
    Example x = data.split("train").dataset->get(0);
    CHECK(x[0].shape() == Shape{1, 2, 2});
    CHECK(x[0].at<float>({0, 0, 1}) == Approx(1.0));
    CHECK(x[0].at<float>({0, 1, 0}) == Approx(1000.0 / 65535));
    require_error([&] { data.split("train").dataset->get(1); },
                  {"[layout]", "y.png is 3 x 2", "x.png is 2 x 2", "image_size"});
    LayoutOptions resized = layout_options("image_folder", dir.path.string());
    resized.image_size = {6, 4};
    Example y = load_layout(resized).split("train").dataset->get(1);
    CHECK(y[0].shape() == Shape{1, 6, 4});

    png(dir.file("test/b/z.png"), ramp(2, 2, 1));
    require_error([&] { load_layout(layout_options("image_folder", dir.path.string())); },
                  {"[layout]", "test/b", "not a class of the train split"});
    fs::remove(dir.file("test/b/z.png"));
    fs::remove(dir.file("test/b"));
    fs::create_directories(dir.file("test/a"));
    require_error([&] { load_layout(layout_options("image_folder", dir.path.string())); },
                  {"[layout]", "the test split is empty", "test/<class>/"});
    require_error([&] { load_layout(layout_options("image_folder", dir.file("none"))); },
                  {"[layout]", "missing folder", "none/train"});
}

TEST_CASE("image_mask: make-demo shapes2d, and a seeded val split", "[datasets][layouts]") {
    TempDir dir("layouts_shapes");
    std::ostringstream log;
    make_demo("shapes2d", dir.path.string(), 3, log);
    LayoutData data = load_layout(layout_options("image_mask", dir.path.string()));
    CHECK(data.split("train").dataset->size() == 240);
    CHECK(data.split("test").dataset->size() == 60);
    CHECK(data.channels == 3);
    CHECK(data.num_classes == 0);
    Example e = data.split("test").dataset->get(5);
    CHECK(e[0].shape() == Shape{3, 64, 64});
    CHECK(e[1].shape() == Shape{64, 64});
    CHECK(e[1].dtype() == DType::int64);
    std::vector<int64_t> mask = e[1].to_vector<int64_t>();
    CHECK(*std::max_element(mask.begin(), mask.end()) <= 3);
    CHECK(data.split("test").cases[5].name == "case_0245");

    LayoutOptions split = layout_options("image_mask", dir.path.string());
    split.val_fraction = 0.25;
    split.seed = 11;
    LayoutData a = load_layout(split), b = load_layout(split);
    CHECK(a.split("train").dataset->size() == 180);
    CHECK(a.split("val").dataset->size() == 60);
    CHECK(names(a.split("val")) == names(b.split("val")));
    std::set<std::string> all;
    for (const char* s : {"train", "val"})
        for (const std::string& name : names(a.split(s))) all.insert(name);
    CHECK(all.size() == 240);
    split.seed = 12;
    CHECK(names(load_layout(split).split("val")) != names(a.split("val")));
    split.val_fraction = 0.001;
    require_error([&] { load_layout(split); }, {"[layout]", "val_fraction", "leaves 0"});
}

TEST_CASE("image_mask: binary and index masks, resizing, missing masks", "[datasets][layouts]") {
    TempDir dir("layouts_masks");
    png(dir.file("train/images/a.png"), ramp(4, 4, 3));
    std::vector<uint8_t> values(16, 0);
    values[5] = 255;
    png(dir.file("train/masks/a.png"), from_vector(values, {4, 4}));
    LayoutOptions binary = layout_options("image_mask", dir.path.string());
    binary.mask_mode = "binary";
    LayoutData data = load_layout(binary);
    CHECK(data.num_classes == 2);
    Tensor mask = data.split("train").dataset->get(0)[1];
    CHECK(mask.at<int64_t>({1, 1}) == 1);
    CHECK(mask.at<int64_t>({1, 2}) == 0);
    CHECK(load_layout(layout_options("image_mask", dir.path.string()))
              .split("train")
              .dataset->get(0)[1]
              .at<int64_t>({1, 1}) == 255);
    binary.image_size = {8, 8};
    Example big = load_layout(binary).split("train").dataset->get(0);
    CHECK(big[0].shape() == Shape{3, 8, 8});
    CHECK(big[1].shape() == Shape{8, 8});
    CHECK(big[1].at<int64_t>({2, 3}) == 1);  // nearest: (2, 3) reads (1, 1)
    CHECK(big[1].at<int64_t>({4, 3}) == 0);

    png(dir.file("train/masks/a.png"), ramp(4, 4, 3));  // colour, not grey
    require_error(
        [&] {
            load_layout(layout_options("image_mask", dir.path.string()))
                .split("train")
                .dataset->get(0);
        },
        {"[layout]", "masks/a.png", "not grey"});
    png(dir.file("train/images/b.jpeg.png"), ramp(4, 4, 3));
    require_error([&] { load_layout(layout_options("image_mask", dir.path.string())); },
                  {"[layout]", "has no mask 'b.jpeg.*'"});
    png(dir.file("train/masks/b.jpeg.png"), ramp(4, 4, 1));
    png(dir.file("train/masks/c.png"), ramp(4, 4, 1));
    require_error([&] { load_layout(layout_options("image_mask", dir.path.string())); },
                  {"[layout]", "c.png has no image 'c'"});
}

TEST_CASE("image_mask: a CSV manifest with a split column", "[datasets][layouts]") {
    TempDir dir("layouts_manifest");
    png(dir.file("data/img/a.png"), ramp(3, 3, 1));
    png(dir.file("data/img/b.png"), ramp(3, 3, 1, 9));
    png(dir.file("data/lab/a_mask.png"), ramp(3, 3, 1));
    png(dir.file("data/lab/b_mask.png"), ramp(3, 3, 1, 50));
    write_text(dir.file("data/list.csv"),
               "image,mask,split\nimg/a.png,lab/a_mask.png,train\nimg/b.png,lab/b_mask.png,test\n");
    LayoutOptions o = layout_options("image_mask", "");
    o.manifest = dir.file("data/list.csv");
    LayoutData data = load_layout(o);
    CHECK(names(data.split("train")) == std::vector<std::string>{"a"});
    Example b = data.split("test").dataset->get(0);
    CHECK(b[0].at<float>({0, 0, 0}) == Approx(9.0 / 255));
    CHECK(b[1].at<int64_t>({0, 1}) == 51);
    write_text(o.manifest, "image,mask\nimg/a.png,lab/none.png\n");
    require_error([&] { load_layout(o); }, {"[layout]", "row 2", "no file", "none.png"});
}

TEST_CASE("decathlon: make-demo organs3d with test labels and case geometry",
          "[datasets][layouts]") {
    TempDir dir("layouts_organs");
    std::ostringstream log;
    make_demo("organs3d", dir.path.string(), 2, log);
    LayoutOptions o = layout_options("decathlon", dir.path.string());
    o.val_fraction = 0.25;
    LayoutData data = load_layout(o);
    CHECK(data.class_names == std::vector<std::string>{"background", "liver", "kidney", "spleen"});
    CHECK(data.num_classes == 4);
    CHECK(data.channels == 1);
    CHECK(data.spatial_dims == 3);
    CHECK(data.split("train").dataset->size() == 18);
    CHECK(data.split("val").dataset->size() == 6);
    const LayoutSplit& test = data.split("test");
    REQUIRE(test.dataset->size() == 6);
    Example e = test.dataset->get(0);
    REQUIRE(e.size() == 3);
    CHECK(e[0].shape() == Shape{1, 48, 48, 32});
    CHECK(e[0].dtype() == DType::float32);
    CHECK(e[1].shape() == Shape{48, 48, 32});
    CHECK(e[1].dtype() == DType::int64);
    NiftiImage image = read_nifti(test.cases[0].image);
    CHECK(e[0].at<float>({0, 10, 20, 5}) == float(image.fdata().at<double>({10, 20, 5})));
    CHECK(test.cases[0].name == "organs_024");
    CHECK(fs::path(test.cases[0].label).parent_path().filename() == "labelsTs");
    CHECK(read_case_header(test.cases[0]).affine() == image.header.affine());
    const Affine affine = image.header.affine();
    CHECK(e[2].dtype() == DType::float64);
    CHECK(e[2].to_vector<double>() == std::vector<double>(affine.begin(), affine.end()));
    CHECK(sample_of(e).affine == affine);
}

TEST_CASE("decathlon: 4-D images become channels; label and json errors", "[datasets][layouts]") {
    TempDir dir("layouts_msd");
    fs::create_directories(dir.file("imagesTr"));
    fs::create_directories(dir.file("labelsTr"));
    fs::create_directories(dir.file("imagesTs"));
    std::vector<float> voxels(4 * 3 * 2 * 2);
    for (size_t i = 0; i < voxels.size(); ++i) voxels[i] = float(i);
    const NiftiHeader header = nifti_header_from_affine(kIdentityAffine);
    write_nifti(dir.file("imagesTr/brain.nii.gz"), from_vector(voxels, {4, 3, 2, 2}), header);
    std::vector<uint8_t> labels(4 * 3 * 2, 0);
    labels[7] = 2;
    write_nifti(dir.file("labelsTr/brain.nii.gz"), from_vector(labels, {4, 3, 2}), header);
    write_nifti(dir.file("imagesTs/new.nii.gz"), from_vector(voxels, {4, 3, 2, 2}), header);
    const std::string json =
        R"({"labels": {"0": "background", "1": "edema", "2": "tumour"},
            "modality": {"0": "FLAIR", "1": "T1w"},
            "training": [{"image": "./imagesTr/brain.nii.gz", "label": "./labelsTr/brain.nii.gz"}],
            "test": ["./imagesTs/new.nii.gz"]})";
    write_text(dir.file("dataset.json"), json);
    LayoutData data = load_layout(layout_options("decathlon", dir.path.string()));
    CHECK(data.channels == 2);
    Example e = data.split("train").dataset->get(0);
    CHECK(e[0].shape() == Shape{2, 4, 3, 2});
    // image[m, i, j, k] = voxel (i, j, k, m) = ((i * 3 + j) * 2 + k) * 2 + m
    CHECK(e[0].at<float>({1, 2, 1, 0}) == float(((2 * 3 + 1) * 2 + 0) * 2 + 1));
    CHECK(e[1].at<int64_t>({1, 0, 1}) == 2);
    CHECK(data.split("test").dataset->get(0).size() == 2);  // no labelsTs: image, affine

    std::string narrow = json;
    narrow.replace(narrow.find(R"("2": "tumour")"), 13, R"("3": "tumour")");
    write_text(dir.file("dataset.json"), narrow);
    require_error(
        [&] {
            load_layout(layout_options("decathlon", dir.path.string()))
                .split("train")
                .dataset->get(0);
        },
        {"[layout]", "labelsTr/brain.nii.gz", "label value 2"});
    write_nifti(dir.file("labelsTr/brain.nii.gz"), from_vector(labels, {3, 4, 2}), header);
    write_text(dir.file("dataset.json"), json);
    require_error(
        [&] {
            load_layout(layout_options("decathlon", dir.path.string()))
                .split("train")
                .dataset->get(0);
        },
        {"[layout]", "has shape [3, 4, 2]", "brain.nii.gz has [4, 3, 2]"});
    write_text(dir.file("dataset.json"), R"({"labels": {"0": "background"}, "training": []})");
    require_error([&] { load_layout(layout_options("decathlon", dir.path.string())); },
                  {"[layout]", "the train split is empty", "'training' in"});
    write_text(dir.file("dataset.json"), R"({"labels": {"0": "background"}, "test": []})");
    require_error([&] { load_layout(layout_options("decathlon", dir.path.string())); },
                  {"[layout]", "dataset.json", "missing key 'training'"});
    write_text(dir.file("dataset.json"), R"({"labels": {"zero": "background"}, "training": []})");
    require_error([&] { load_layout(layout_options("decathlon", dir.path.string())); },
                  {"[layout]", "'labels' entry \"zero\""});
    write_text(dir.file("dataset.json"), "{\"training\": [");
    require_error([&] { load_layout(layout_options("decathlon", dir.path.string())); },
                  {"[layout]", "not valid JSON"});
}

TEST_CASE("npz_slices: split folders, list files and 3-D test volumes", "[datasets][layouts]") {
    TempDir dir("layouts_npz");
    std::vector<float> slice(6), label = {0, 1, 2, 0, 8, 1};
    for (size_t i = 0; i < slice.size(); ++i) slice[i] = 0.5f * float(i);
    write_npz(dir.file("case1_slice0.npz"),
              {{"image", from_vector(slice, {2, 3})}, {"label", from_vector(label, {2, 3})}});
    write_npz(dir.file("case1_slice1.npz"),
              {{"image", from_vector(slice, {2, 3})}, {"label", from_vector(label, {2, 3})}});
    fs::create_directories(dir.file("test"));
    write_npz(dir.file("test/case2.npz"),
              {{"image", from_vector(slice, {1, 2, 3})}, {"label", from_vector(label, {1, 2, 3})}});
    write_text(dir.file("lists/train.txt"), "case1_slice1\n\ncase1_slice0\r\n");
    LayoutData data = load_layout(layout_options("npz_slices", dir.path.string()));
    CHECK(data.spatial_dims == 2);
    CHECK(names(data.split("train")) == std::vector<std::string>{"case1_slice1", "case1_slice0"});
    Example e = data.split("train").dataset->get(0);
    CHECK(e[0].shape() == Shape{1, 2, 3});
    CHECK(e[0].at<float>({0, 1, 2}) == 2.5f);
    CHECK(e[1].dtype() == DType::int64);
    CHECK(e[1].at<int64_t>({1, 1}) == 8);
    Example volume = data.split("test").dataset->get(0);
    CHECK(volume[0].shape() == Shape{1, 1, 2, 3});
    CHECK(volume[1].shape() == Shape{1, 2, 3});

    write_npz(dir.file("test/case2.npz"), {{"image", from_vector(slice, {2, 3})}});
    require_error([&] { data.split("test").dataset->get(0); },
                  {"[layout]", "case2.npz", "no array 'label'"});
    write_text(dir.file("lists/train.txt"), "case9\n");
    require_error([&] { load_layout(layout_options("npz_slices", dir.path.string())); },
                  {"[layout]", "train.txt: line 1", "case9.npz"});
}

TEST_CASE("bags: make-demo bags, named labels and feature size errors", "[datasets][layouts]") {
    TempDir dir("layouts_bags");
    std::ostringstream log;
    make_demo("bags", dir.file("demo"), 5, log);
    LayoutData demo = load_layout(layout_options("bags", dir.file("demo")));
    CHECK(demo.split("train").dataset->size() == 120);
    CHECK(demo.split("test").dataset->size() == 40);
    CHECK(demo.feature_dim == 32);
    CHECK(demo.class_names == std::vector<std::string>{"0", "1"});
    Example e = demo.split("test").dataset->get(3);
    CHECK(e[0].size(1) == 32);
    CHECK(e[0].dtype() == DType::float32);
    CHECK(e[1].item<int64_t>() == demo.split("test").cases[3].class_id);

    fs::create_directories(dir.file("mil/bags"));
    write_npy(dir.file("mil/bags/s1.npy"), ones({3, 4}));
    write_npy(dir.file("mil/bags/s2.npy"), ones({5, 4}));
    write_npy(dir.file("mil/bags/s3.npy"), ones({2, 6}));
    write_text(dir.file("mil/labels.csv"), "slide,label\ns1,tumor\ns2,normal\ns3,tumor\n");
    LayoutData mil = load_layout(layout_options("bags", dir.file("mil")));
    CHECK(mil.class_names == std::vector<std::string>{"normal", "tumor"});
    CHECK(mil.split("train").dataset->get(0)[1].item<int64_t>() == 1);
    CHECK(mil.split("train").dataset->get(1)[0].shape() == Shape{5, 4});
    require_error([&] { mil.split("train").dataset->get(2); },
                  {"[layout]", "s3.npy", "6 features per instance", "s1.npy has 4"});
    require_error([&] { mil.split("test"); }, {"[layout]", "no test split", "labels.csv"});
    write_text(dir.file("mil/labels.csv"), "slide,label,split\ns1,tumor,train\ns2,other,test\n");
    require_error([&] { load_layout(layout_options("bags", dir.file("mil"))); },
                  {"[layout]", "row 3", "unknown label 'other'"});
    write_text(dir.file("mil/labels.csv"), "slide,label\ns4,tumor\n");
    require_error([&] { load_layout(layout_options("bags", dir.file("mil"))); },
                  {"[layout]", "no bag", "s4.npy or .safetensors"});
}

TEST_CASE("text_csv: make-demo text, vocabulary reuse and label errors", "[datasets][layouts]") {
    TempDir dir("layouts_text");
    std::ostringstream log;
    make_demo("text", dir.file("demo"), 1, log);
    LayoutOptions o = layout_options("text_csv", dir.file("demo"));
    o.max_length = 8;
    o.val_fraction = 0.1;
    LayoutData data = load_layout(o);
    CHECK(data.class_names == std::vector<std::string>{"food", "science", "sports", "travel"});
    CHECK(data.split("train").dataset->size() == 720);
    CHECK(data.split("val").dataset->size() == 80);
    CHECK(data.split("test").dataset->size() == 200);
    Example e = data.split("test").dataset->get(0);
    CHECK(e[0].dtype() == DType::int64);
    CHECK(e[0].ndim() == 1);
    CHECK(e[0].size(0) <= 8);
    CHECK(e[1].ndim() == 0);
    REQUIRE(data.vocabulary);
    CHECK(data.vocabulary->id("goal") > Vocabulary::kUnk);

    write_text(dir.file("small/train.tsv"), "text\tlabel\nGoal goal team\t1\nchef\t0\n");
    write_text(dir.file("small/test.tsv"), "text\tlabel\nGOAL chef beach\t1\n");
    LayoutData small = load_layout(layout_options("text_csv", dir.file("small")));
    CHECK(small.vocabulary->size() == 5);  // <pad> <unk> goal chef team
    CHECK(small.split("test").dataset->get(0)[0].to_vector<int64_t>() ==
          std::vector<int64_t>{2, 3, 1});
    CHECK(small.split("test").cases[0].name == "test.tsv:1");
    LayoutOptions reuse = layout_options("text_csv", dir.file("small"));
    reuse.vocabulary = data.vocabulary;
    Tensor tokens = load_layout(reuse).split("test").dataset->get(0)[0];
    CHECK(tokens.to_vector<int64_t>()[0] == data.vocabulary->id("goal"));

    write_text(dir.file("small/test.tsv"), "text\tlabel\nchef\t7\n");
    require_error([&] { load_layout(layout_options("text_csv", dir.file("small"))); },
                  {"[layout]", "label 7 is not below", "number of classes 2"});
    write_text(dir.file("small/test.tsv"), "text\tlabel\nchef\tfood\n");
    require_error([&] { load_layout(layout_options("text_csv", dir.file("small"))); },
                  {"[layout]", "test.tsv: row 2", "'food' is not an integer"});
    write_text(dir.file("small/train.tsv"), "text\tlabel\nchef\tfood\n");
    write_text(dir.file("small/test.tsv"), "text\tlabel\nchef\tdrink\n");
    require_error([&] { load_layout(layout_options("text_csv", dir.file("small"))); },
                  {"[layout]", "unknown label 'drink'", "[food]"});
}

TEST_CASE("load_layout: unknown layouts and options that do not apply", "[datasets][layouts]") {
    require_error([] { load_layout(layout_options("coco", "/tmp")); },
                  {"[layout]", "unknown layout 'coco'", "image_folder"});
    LayoutOptions o = layout_options("bags", "/tmp");
    o.image_size = {4, 4};
    require_error([&] { load_layout(o); }, {"[layout]", "image_size applies"});
    o = layout_options("image_mask", "/tmp");
    o.mask_mode = "rgb";
    require_error([&] { load_layout(o); }, {"[layout]", "mask_mode 'rgb'"});
    o = layout_options("image_folder", "/tmp");
    o.val_fraction = 1.0;
    require_error([&] { load_layout(o); }, {"[layout]", "val_fraction 1"});
    o = layout_options("text_csv", "/tmp/lumen_no_such_folder");
    require_error([&] { load_layout(o); }, {"[layout]", "missing folder"});
}
