// The volume_folder layout (datasets/layouts.h): class-labelled volumes for 3-D classification,
// from ImageFolder's arrangement (the lesions3d demo) or a CSV manifest, NIfTI and .npy; and
// read_text_inputs, the text_csv layout's per-file inputs for `lumen predict`.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "datasets/demo.h"
#include "datasets/image.h"
#include "datasets/layouts.h"
#include "datasets/nifti.h"
#include "datasets/npy.h"
#include "datasets/sample.h"
#include "datasets/spatial.h"
#include "support/gradcheck.h"
#include "support/layout_fixtures.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::datasets;
namespace fs = std::filesystem;

namespace {

Tensor ramp_volume(const Shape& shape) {
    return arange(0, double(shape_numel(shape)), 1, DType::float32).reshape(shape);
}

}  // namespace

TEST_CASE("volume_folder: make-demo lesions3d, classes by folder, geometry kept",
          "[datasets][layouts]") {
    TempDir dir("layouts_lesions");
    std::ostringstream log;
    make_demo("lesions3d", dir.path.string(), 3, log);
    CHECK_THAT(log.str(), Catch::Matchers::Contains("300 training and 60 test"));
    LayoutOptions o = layout_options("volume_folder", dir.path.string());
    o.val_fraction = 0.1;
    LayoutData data = load_layout(o);
    CHECK(data.class_names == std::vector<std::string>{"calcified", "cyst", "solid"});
    CHECK(data.num_classes == 3);
    CHECK(data.channels == 1);
    CHECK(data.spatial_dims == 3);
    CHECK(data.split("train").dataset->size() == 270);
    CHECK(data.split("val").dataset->size() == 30);
    const LayoutSplit& test = data.split("test");
    REQUIRE(test.dataset->size() == 60);
    int64_t counts[3] = {0, 0, 0};
    for (const CaseInfo& c : test.cases) ++counts[c.class_id];
    CHECK((counts[0] == 20 && counts[1] == 20 && counts[2] == 20));
    const CaseInfo& first = test.cases[0];
    CHECK(fs::path(first.image).parent_path().filename() ==
          data.class_names[size_t(first.class_id)]);
    Example e = test.dataset->get(0);
    REQUIRE(e.size() == 3);
    NiftiImage nifti = read_nifti(first.image);
    CHECK(e[0].shape() ==
          Shape{1, nifti.header.shape[0], nifti.header.shape[1], nifti.header.shape[2]});
    CHECK(e[0].at<float>({0, 10, 12, 8}) == float(nifti.fdata().at<double>({10, 12, 8})));
    CHECK(e[1].ndim() == 0);
    CHECK(e[1].item<int64_t>() == first.class_id);
    const Affine affine = nifti.header.affine();
    CHECK(e[2].to_vector<double>() == std::vector<double>(affine.begin(), affine.end()));
    // The class label passes through the joint transforms; a resize gives the model's size.
    Sample sample = sample_of(e);
    CHECK(!sample.label.defined());
    CHECK(sample.affine == affine);
    Generator generator(0);
    Example resized = example_of(Resize({24, 24, 24})(sample, generator), e);
    CHECK(resized[0].shape() == Shape{1, 24, 24, 24});
    CHECK(resized[1].item<int64_t>() == first.class_id);
    // Prediction inputs read the same way.
    Example input = read_layout_input(o, first.image);
    CHECK(input[0].shape() == e[0].shape());
    CHECK(input[1].to_vector<double>() == e[2].to_vector<double>());
}

TEST_CASE("volume_folder: a CSV manifest of .npy volumes, channels and errors",
          "[datasets][layouts]") {
    TempDir dir("layouts_volumes");
    fs::create_directories(dir.file("vols"));
    write_npy(dir.file("vols/a.npy"), ramp_volume({4, 5, 6}));
    write_npy(dir.file("vols/b.npy"), ramp_volume({2, 4, 5, 6}));
    write_npy(dir.file("vols/c.npy"), ramp_volume({3, 3, 3}));
    write_text(dir.file("list.csv"),
               "image,label,split\nvols/a.npy,tumour,train\nvols/c.npy,normal,train\n"
               "vols/b.npy,tumour,test\n");
    LayoutOptions o = layout_options("volume_folder", "");
    o.manifest = dir.file("list.csv");
    LayoutData data = load_layout(o);
    CHECK(data.class_names == std::vector<std::string>{"normal", "tumour"});
    CHECK(data.channels == 1);
    Example a = data.split("train").dataset->get(0);
    CHECK(a[0].shape() == Shape{1, 4, 5, 6});
    CHECK(a[0].at<float>({0, 1, 2, 3}) == float(1 * 30 + 2 * 6 + 3));
    CHECK(a[1].item<int64_t>() == 1);
    CHECK(sample_of(a).affine == kIdentityAffine);
    CHECK(data.split("train").cases[1].name == "c");
    // b has 2 channels where the first train volume has 1.
    require_error([&] { data.split("test").dataset->get(0); },
                  {"[layout]", "b.npy", "2 channels", "a.npy has 1"});
    CHECK(read_layout_input(o, dir.file("vols/b.npy"))[0].shape() == Shape{2, 4, 5, 6});

    write_npy(dir.file("vols/flat.npy"), ramp_volume({4, 5}));
    require_error([&] { read_layout_input(o, dir.file("vols/flat.npy")); },
                  {"[layout]", "flat.npy", "expected (i, j, k) or (channels, i, j, k)"});
    write_text(dir.file("list.csv"), "image,label\nvols/a.npy,1\nvols/missing.npy,0\n");
    require_error([&] { load_layout(o); }, {"[layout]", "list.csv: row 3", "no regular file"});
    write_text(dir.file("vols/x.png"), "");
    write_text(dir.file("list.csv"), "image,label\nvols/x.png,1\n");
    require_error([&] { load_layout(o); }, {"[layout]", "row 2", "not a .nii, .nii.gz or .npy"});
    write_text(dir.file("list.csv"), "file,label\nvols/a.npy,1\n");
    require_error([&] { load_layout(o); }, {"[csv]", "image"});

    // Folders: a test class that train does not have.
    fs::create_directories(dir.file("tree/train/a"));
    fs::create_directories(dir.file("tree/test/b"));
    write_npy(dir.file("tree/train/a/v1.npy"), ramp_volume({2, 2, 2}));
    write_npy(dir.file("tree/test/b/v2.npy"), ramp_volume({2, 2, 2}));
    write_text(dir.file("tree/train/a/notes.txt"), "not a volume");
    require_error([&] { load_layout(layout_options("volume_folder", dir.file("tree"))); },
                  {"[layout]", "class folder", "is not a class of the train split"});
    fs::remove_all(dir.file("tree/test"));
    LayoutData tree = load_layout(layout_options("volume_folder", dir.file("tree")));
    CHECK(tree.split("train").dataset->size() == 1);  // notes.txt is not listed
    require_error([&] { load_layout(layout_options("volume_folder", dir.file("none"))); },
                  {"[layout]", "missing folder", "train"});
}

TEST_CASE("read_text_inputs: CSV rows, a whole text file, an empty text", "[datasets][layouts]") {
    TempDir dir("layouts_text_inputs");
    write_text(dir.file("train.csv"), "label,text\nsports,goal team\nfood,chef soup\n");
    write_text(dir.file("test.csv"), "label,text\nsports,goal\n");
    LayoutOptions o = layout_options("text_csv", dir.path.string());
    require_error([&] { read_text_inputs(o, dir.file("test.csv")); },
                  {"[layout]", "test.csv", "vocabulary"});
    LayoutData data = load_layout(o);
    o.vocabulary = data.vocabulary;
    o.max_length = 2;
    write_text(dir.file("new.csv"), "id,text\n7,Goal CHEF pizza team\n8,\n");
    auto rows = read_text_inputs(o, dir.file("new.csv"));
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].first == dir.file("new.csv") + ":1");
    CHECK(rows[0].second.to_vector<int64_t>() ==
          std::vector<int64_t>{data.vocabulary->id("goal"), data.vocabulary->id("chef")});
    CHECK(rows[1].second.to_vector<int64_t>() == std::vector<int64_t>{Vocabulary::kUnk});
    write_text(dir.file("note.txt"), "soup\nand more soup");
    auto whole = read_text_inputs(o, dir.file("note.txt"));
    REQUIRE(whole.size() == 1);
    CHECK(whole[0].first == dir.file("note.txt"));
    CHECK(whole[0].second.to_vector<int64_t>() ==
          std::vector<int64_t>{data.vocabulary->id("soup"), Vocabulary::kUnk});
    write_text(dir.file("bad.csv"), "id,words\n1,goal\n");
    require_error([&] { read_text_inputs(o, dir.file("bad.csv")); }, {"[csv]", "text"});
}
