// make-demo: every demo dataset is written in its format, reads back through lumen's readers
// with the documented shapes, labels and counts, and the same seed writes the same bytes.
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "datasets/demo.h"
#include "datasets/fashion_mnist.h"
#include "datasets/image.h"
#include "datasets/nifti.h"
#include "datasets/npy.h"
#include "datasets/text.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::datasets;
namespace fs = std::filesystem;

namespace {

size_t count_files(const std::string& dir) {
    return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}));
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::set<int64_t> values(const Tensor& t) {
    std::vector<int64_t> v = t.to_vector<int64_t>();
    return std::set<int64_t>(v.begin(), v.end());
}

}  // namespace

TEST_CASE("make-demo shapes2d: PNG images and masks", "[datasets][demo]") {
    TempDir dir("demo_shapes");
    std::ostringstream out;
    make_demo("shapes2d", dir.file("a"), 7, out);
    CHECK(count_files(dir.file("a/train/images")) == 240);
    CHECK(count_files(dir.file("a/train/masks")) == 240);
    CHECK(count_files(dir.file("a/test/masks")) == 60);
    Tensor image = read_image(dir.file("a/train/images/case_0003.png"));
    Tensor mask = read_image(dir.file("a/train/masks/case_0003.png"));
    CHECK(image.shape() == Shape{64, 64, 3});
    CHECK(mask.shape() == Shape{64, 64, 1});
    std::set<int64_t> labels;
    for (int i = 0; i < 20; ++i) {
        std::set<int64_t> v =
            values(read_image(dir.file("a/train/masks/case_" + std::string(i < 10 ? "000" : "00") +
                                       std::to_string(i) + ".png")));
        labels.insert(v.begin(), v.end());
    }
    CHECK(labels == std::set<int64_t>{0, 1, 2, 3});
    make_demo("shapes2d", dir.file("b"), 7, out);
    CHECK(read_bytes(dir.file("a/test/images/case_0250.png")) ==
          read_bytes(dir.file("b/test/images/case_0250.png")));
    make_demo("shapes2d", dir.file("c"), 8, out);
    CHECK(read_bytes(dir.file("a/test/images/case_0250.png")) !=
          read_bytes(dir.file("c/test/images/case_0250.png")));
}

TEST_CASE("make-demo organs3d: NIfTI volumes, label maps and dataset.json", "[datasets][demo]") {
    TempDir dir("demo_organs");
    std::ostringstream out;
    make_demo("organs3d", dir.path.string(), 1, out);
    std::ifstream json_file(dir.file("dataset.json"));
    nlohmann::json manifest = nlohmann::json::parse(json_file);
    REQUIRE(manifest["training"].size() == 24);
    CHECK(manifest["test"].size() == 6);
    CHECK(manifest["labels"]["1"] == "liver");
    const std::string image = dir.file(manifest["training"][0]["image"].get<std::string>());
    const std::string label = dir.file(manifest["training"][0]["label"].get<std::string>());
    NiftiImage ct = read_nifti(image), seg = read_nifti(label);
    CHECK(ct.data.shape() == Shape{48, 48, 32});
    CHECK(seg.data.shape() == Shape{48, 48, 32});
    CHECK(values(seg.data) == std::set<int64_t>{0, 1, 2, 3});
    CHECK(ct.header.affine() == seg.header.affine());
    CHECK(orientation_code(ct.header.affine()) == "LPS");  // case 0 is flipped
    CHECK(orientation_code(read_nifti(dir.file("imagesTr/organs_001.nii.gz")).header.affine()) ==
          "RAS");
    std::vector<double> hu = ct.data.to(DType::float64).to_vector<double>();
    CHECK(*std::min_element(hu.begin(), hu.end()) < -900);  // air
    CHECK(fs::exists(dir.file("labelsTs/organs_029.nii.gz")));
}

TEST_CASE("make-demo bags, text and fmnist_denoise", "[datasets][demo]") {
    TempDir dir("demo_rest");
    std::ostringstream out;
    make_demo("bags", dir.file("bags"), 2, out);
    CsvTable labels = read_csv(dir.file("bags/labels.csv"));
    REQUIRE(labels.rows.size() == 160);
    NpyArray bag = read_npy(dir.file("bags/bags/" + labels.rows[0][0] + ".npy"));
    CHECK(bag.data.size(1) == 32);
    CHECK(bag.data.size(0) >= 16);
    make_demo("text", dir.file("text"), 3, out);
    CsvTable train = read_csv(dir.file("text/train.csv"));
    CHECK(train.rows.size() == 800);
    CHECK(read_csv(dir.file("text/test.csv")).rows.size() == 200);
    std::set<std::string> topics;
    for (const auto& row : train.rows) topics.insert(row[0]);
    CHECK(topics == std::set<std::string>{"food", "science", "sports", "travel"});
    if (fashion_mnist_available()) {
        make_demo("fmnist_denoise", dir.file("fm"), 4, out);
        auto test = read_npz(dir.file("fm/test.npz"));
        CHECK(test.at("image").data.shape() == Shape{500, 28, 28});
        CHECK(test.at("target").data.shape() == Shape{500, 28, 28});
    } else {
        WARN("fmnist_denoise not checked: the Fashion-MNIST files are not installed");
    }
    require_error([&] { make_demo("shapes3d", dir.file("x"), 0, out); },
                  {"[make-demo] unknown demo dataset 'shapes3d' (known: shapes2d, organs3d"});
}
