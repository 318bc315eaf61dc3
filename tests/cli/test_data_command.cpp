// Dataset layouts from a config: `lumen train` on an image_folder end to end (train, eval),
// `lumen data` on the demo volumes and images (splits, classes, transformed examples written
// where a viewer overlays them on the originals), and the errors for layouts the trainer
// cannot train yet and for malformed augmentation keys.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "datasets/demo.h"
#include "datasets/image.h"
#include "datasets/nifti.h"
#include "support/gradcheck.h"
#include "train/cli/data_command.h"
#include "train/cli/eval_command.h"
#include "train/cli/train_command.h"

using namespace lumen;
using namespace lumen::testing;
namespace fs = std::filesystem;

namespace {

// ROOT/<split>/<dark|light>/<n>.png: 14 x 14 grey images, dark ones in [0, 100), light ones in
// [150, 250).
void write_image_folder(const std::string& root, int64_t per_class) {
    Generator generator(4);
    for (const char* split : {"train", "test"}) {
        for (int light = 0; light < 2; ++light) {
            const fs::path dir = fs::path(root) / split / (light ? "light" : "dark");
            fs::create_directories(dir);
            for (int64_t n = 0; n < per_class; ++n) {
                Tensor image =
                    randint(light ? 150 : 0, light ? 250 : 100, {14, 14}, DType::uint8, &generator);
                datasets::write_png((dir / (std::to_string(n) + ".png")).string(), image);
            }
        }
    }
}

std::string write_json(const TempDir& dir, const std::string& name, const nlohmann::json& j) {
    const std::string path = dir.file(name);
    std::ofstream(path) << j.dump(2);
    return path;
}

}  // namespace

TEST_CASE("lumen train classifies an image_folder and lumen eval reads it back",
          "[cli][train][layouts]") {
    TempDir dir("cli_image_folder");
    write_image_folder(dir.file("folder"), 24);
    nlohmann::json config = {{"name", "folder"},
                             {"data",
                              {{"dataset", "image_folder"},
                               {"dir", dir.file("folder")},
                               {"batch_size", 8},
                               {"num_workers", 1},
                               {"flip_axes", {1}}}},
                             {"model",
                              {{"name", "dgvit"},
                               {"embed_dim", 16},
                               {"depth", 1},
                               {"num_heads", 2},
                               {"patch_size", 7},
                               {"img_size", {14, 14}},
                               {"num_classes", 2}}},
                             {"optim", {{"lr", 0.003}}},
                             {"train", {{"epochs", 3}, {"threads", 1}}},
                             {"output", {{"progress", "none"}, {"runs_dir", dir.file("runs")}}}};
    const std::string path = write_json(dir, "folder.json", config);
    std::ostringstream out;
    REQUIRE(train::cli::run_train_command({path}, out) == 0);
    std::ifstream summary_file(dir.file("runs/folder/summary.json"));
    nlohmann::json summary = nlohmann::json::parse(summary_file);
    CHECK(summary["epochs"] == 3);
    CHECK(summary["test_accuracy"].get<double>() >= 0.9);  // brightness separates the classes
    std::ostringstream eval;
    CHECK(train::cli::run_eval_command({dir.file("runs/folder")}, eval) == 0);
    CHECK(eval.str().find("accuracy") != std::string::npos);

    // The model must fit the folder's images: a mismatch names both sides.
    config["model"]["num_classes"] = 3;
    const std::string wrong = write_json(dir, "wrong.json", config);
    require_error([&] { train::cli::run_train_command({wrong}, out); },
                  {"[config]", "image_folder", "classes 2", "model.num_classes"});
}

TEST_CASE("lumen data shows a decathlon layout and writes patches that overlay the volumes",
          "[cli][layouts]") {
    TempDir dir("cli_data_3d");
    std::ostringstream made;
    datasets::make_demo("organs3d", dir.file("organs"), 1, made);
    nlohmann::json config = {{"data",
                              {{"dataset", "decathlon"},
                               {"dir", dir.file("organs")},
                               {"window", {-200, 300}},
                               {"patch_size", {24, 20, 16}},
                               {"pos_neg", {1, 0}},
                               {"flip_axes", {0}},
                               {"flip_p", 0.0}}}};
    const std::string path = write_json(dir, "organs.json", config);
    std::ostringstream out;
    REQUIRE(train::cli::run_data_command({path, "--count", "2", "--out", dir.file("preview")},
                                         out) == 0);
    const std::string text = out.str();
    for (const char* part :
         {"layout decathlon", "train: 24 examples", "test: 6 examples",
          "classes (4): background liver kidney spleen", "channels 1, 3-D",
          "image float32 [1, 24, 20, 16]", "label int64 [24, 20, 16]", "wrote 2 examples"}) {
        INFO(text);
        CHECK(text.find(part) != std::string::npos);
    }
    // The patch is a crop: its affine is the case's, moved by a whole number of voxels, and
    // its values are the windowed originals there; pos_neg [1, 0] puts foreground in it.
    datasets::NiftiImage original =
        datasets::read_nifti(dir.file("organs/imagesTr/organs_000.nii.gz"));
    datasets::NiftiImage patch =
        datasets::read_nifti(dir.file("preview/train_organs_000_image.nii.gz"));
    datasets::NiftiImage label =
        datasets::read_nifti(dir.file("preview/train_organs_000_label.nii.gz"));
    const std::array<double, 16> a = original.header.affine(), b = patch.header.affine();
    std::array<int64_t, 3> offset{};
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) CHECK(b[size_t(r * 4 + c)] == Approx(a[size_t(r * 4 + c)]));
    // Voxel spacing is diagonal in the demo: the offset per axis from the translation.
    for (int axis = 0; axis < 3; ++axis) {
        double voxels = (b[size_t(axis * 4 + 3)] - a[size_t(axis * 4 + 3)]) / a[size_t(axis * 5)];
        offset[size_t(axis)] = int64_t(std::llround(voxels));
        CHECK(voxels == Approx(double(offset[size_t(axis)])).margin(1e-6));
    }
    Tensor want = original.fdata()
                      .narrow(0, offset[0], 24)
                      .narrow(1, offset[1], 20)
                      .narrow(2, offset[2], 16)
                      .contiguous();
    std::vector<double> got = patch.fdata().to_vector<double>(), raw = want.to_vector<double>();
    REQUIRE(got.size() == raw.size());
    for (size_t i = 0; i < got.size(); ++i)
        REQUIRE(got[i] == Approx(std::clamp((raw[i] + 200.0) / 500.0, 0.0, 1.0)).margin(1e-6));
    CHECK(label.fdata().to_vector<double>() !=
          std::vector<double>(size_t(label.data.numel()), 0.0));

    // The test split gets no random patch: whole volumes.
    std::ostringstream test_out;
    train::cli::run_data_command({path, "--split", "test", "--count", "1"}, test_out);
    CHECK(test_out.str().find("image float32 [1, 48, 48, 32]") != std::string::npos);
}

TEST_CASE("lumen data reorients and resamples volumes from their affines", "[cli][layouts]") {
    TempDir dir("cli_data_geometry");
    std::ostringstream made;
    datasets::make_demo("organs3d", dir.file("organs"), 1, made);
    nlohmann::json config = {{"data",
                              {{"dataset", "decathlon"},
                               {"dir", dir.file("organs")},
                               {"orientation", "RAS"},
                               {"spacing", {1.6, 1.6, 2.5}}}}};
    const std::string path = write_json(dir, "geometry.json", config);
    std::ostringstream out;
    REQUIRE(train::cli::run_data_command(
                {path, "--split", "test", "--count", "2", "--out", dir.file("preview")}, out) == 0);
    for (const char* name : {"organs_024", "organs_025"}) {
        INFO(name);
        datasets::NiftiImage original =
            datasets::read_nifti(dir.file(std::string("organs/imagesTs/") + name + ".nii.gz"));
        datasets::NiftiImage image =
            datasets::read_nifti(dir.file(std::string("preview/test_") + name + "_image.nii.gz"));
        datasets::NiftiImage label =
            datasets::read_nifti(dir.file(std::string("preview/test_") + name + "_label.nii.gz"));
        CHECK(datasets::orientation_code(image.header.affine()) == "RAS");
        const std::array<double, 3> spacing = image.header.spacing();
        CHECK(spacing[0] == Approx(1.6));
        CHECK(spacing[1] == Approx(1.6));
        CHECK(spacing[2] == Approx(2.5));
        // The same extent: each axis's length in mm is kept (to a voxel), whatever the
        // permutation the reorientation made.
        std::vector<double> extent_in, extent_out;
        const std::array<double, 3> old_spacing = original.header.spacing();
        for (int d = 0; d < 3; ++d) {
            extent_in.push_back(double(original.header.shape[size_t(d)]) * old_spacing[size_t(d)]);
            extent_out.push_back(double(image.header.shape[size_t(d)]) * spacing[size_t(d)]);
        }
        std::sort(extent_in.begin(), extent_in.end());
        std::sort(extent_out.begin(), extent_out.end());
        for (size_t d = 0; d < 3; ++d) CHECK(std::abs(extent_in[d] - extent_out[d]) <= 2.5);
        CHECK(label.header.shape == image.header.shape);
        CHECK(label.header.affine() == image.header.affine());
    }
    require_error(
        [&] {
            train::cli::run_data_command({path, "--set", "data.orientation=XYZ"}, out);
        },
        {"[config]", "data.orientation", "[Reorient]", "XYZ"});
    require_error(
        [&] {
            train::cli::run_data_command({path, "--set", "data.spacing=[1, 1]"}, out);
        },
        {"[config]", "data.spacing", "one spacing per spatial dim (3)"});
}

TEST_CASE("lumen data on 2-D images with masks, bags and text", "[cli][layouts]") {
    TempDir dir("cli_data_2d");
    std::ostringstream made;
    for (const char* name : {"shapes2d", "bags", "text"})
        datasets::make_demo(name, dir.file(name), 1, made);
    nlohmann::json shapes = {{"data",
                              {{"dataset", "image_mask"},
                               {"dir", dir.file("shapes2d")},
                               {"val_fraction", 0.25},
                               {"patch_size", {40, 32}},
                               {"rot90_p", 1.0}}}};
    std::ostringstream out;
    REQUIRE(train::cli::run_data_command(
                {write_json(dir, "s.json", shapes), "--count", "1", "--out", dir.file("png")},
                out) == 0);
    CHECK(out.str().find("train: 180 examples") != std::string::npos);
    CHECK(out.str().find("val: 60 examples") != std::string::npos);
    Tensor image = datasets::read_image(dir.file("png/train_case_0000_image.png"));
    Tensor mask = datasets::read_image(dir.file("png/train_case_0000_label.png"));
    // A quarter turn of a 40 x 32 patch (odd k) makes it 32 x 40; the mask turns with it.
    CHECK((image.shape() == Shape{40, 32, 3} || image.shape() == Shape{32, 40, 3}));
    CHECK(mask.shape() == Shape{image.size(0), image.size(1), 1});

    nlohmann::json bags = {{"data", {{"dataset", "bags"}, {"dir", dir.file("bags")}}}};
    std::ostringstream bag_out;
    train::cli::run_data_command({write_json(dir, "b.json", bags), "--count", "1"}, bag_out);
    CHECK(bag_out.str().find("instance features 32") != std::string::npos);
    CHECK(bag_out.str().find("float32 [") != std::string::npos);

    nlohmann::json text = {{"data", {{"dataset", "text_csv"}, {"dir", dir.file("text")}}}};
    std::ostringstream text_out;
    train::cli::run_data_command({write_json(dir, "t.json", text), "--count", "1"}, text_out);
    CHECK(text_out.str().find("classes (4): food science sports travel") != std::string::npos);
    CHECK(text_out.str().find("vocabulary") != std::string::npos);
}

TEST_CASE("layout configs refuse what cannot work, naming the keys", "[cli][layouts]") {
    TempDir dir("cli_data_errors");
    std::ostringstream made, out;
    datasets::make_demo("organs3d", dir.file("organs"), 1, made);
    nlohmann::json config = {{"data", {{"dataset", "decathlon"}, {"dir", dir.file("organs")}}},
                             {"output", {{"runs_dir", dir.file("runs")}}}};
    const std::string path = write_json(dir, "c.json", config);
    require_error([&] { train::cli::run_train_command({path}, out); },
                  {"[config]", "segmentation task (decathlon)", "dense output map",
                   "model (dgvit) gives class logits"});
    require_error(
        [&] {
            train::cli::run_data_command({path, "--set", "data.window=[1]"}, out);
        },
        {"[config]", "data.window must be [low, high]", "[1"});
    require_error(
        [&] {
            train::cli::run_data_command({path, "--set", "data.window=[5, 1]"}, out);
        },
        {"[config]", "data.window", "[ClipWindow]"});
    require_error(
        [&] {
            train::cli::run_data_command({path, "--set", "data.patch_size=[8, 8]"}, out);
        },
        {"[config]", "data.patch_size", "one size per spatial dim (3)"});
    require_error(
        [&] {
            train::cli::run_data_command({path, "--split", "val"}, out);
        },
        {"[layout]", "no val split"});
    require_error(
        [&] {
            train::cli::run_data_command({path, "--count", "x"}, out);
        },
        {"[lumen]", "--count"});
    require_error(
        [&] {
            train::cli::run_data_command({path, "--set", "data.dir=" + dir.file("none")}, out);
        },
        {"[config]", "data.*", "none"});
    require_error(
        [&] {
            train::cli::run_data_command({path, "--set", "data.dataset=synthetic"}, out);
        },
        {"[lumen]", "layouts", "synthetic"});
}
