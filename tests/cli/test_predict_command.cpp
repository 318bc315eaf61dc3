// `lumen predict` and `lumen eval` beyond 2-D images: class-labelled volumes (volume_folder with
// data.resize), text runs that keep their vocabulary, and segmentations of reoriented and
// resampled volumes written back on each input's own grid.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/random.h"
#include "datasets/demo.h"
#include "datasets/nifti.h"
#include "datasets/npy.h"
#include "datasets/text.h"
#include "ops/creation.h"
#include "ops/elementwise.h"
#include "ops/random.h"
#include "ops/reduce.h"
#include "support/gradcheck.h"
#include "train/cli/eval_command.h"
#include "train/cli/train_command.h"

using namespace lumen;
using namespace lumen::testing;
namespace fs = std::filesystem;

namespace {

std::string write_json(const TempDir& dir, const std::string& name, const nlohmann::json& j) {
    const std::string path = dir.file(name);
    std::ofstream(path) << j.dump(2);
    return path;
}

std::string read_all(const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Lines of a text file, without the trailing empty one.
std::vector<std::string> lines_of(const std::string& path) {
    std::vector<std::string> lines;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

nlohmann::json run_options(const TempDir& dir) {
    return {{"progress", "none"}, {"runs_dir", dir.file("runs")}};
}

}  // namespace

TEST_CASE("volume_folder: lumen train, eval and predict classify volumes of any size",
          "[cli][layouts]") {
    TempDir dir("cli_volume_folder");
    // Volumes of differing sizes whose values ramp along axis 0 (class "i") or axis 1 ("j"),
    // with noise; data.resize gives the model 8 x 8 x 8. (A ramp's direction survives the ViT's
    // per-patch LayerNorm, which removes a patch's mean and scale.)
    Generator generator(3);
    for (const char* split : {"train", "test"})
        for (int axis = 0; axis < 2; ++axis)
            for (int n = 0; n < 12; ++n) {
                const int64_t size = 9 + n % 4;
                const Shape shape = {size, size, size - 2};
                Tensor ramp = arange(0, double(size), 1, DType::float32)
                                  .reshape(axis == 0 ? Shape{size, 1, 1} : Shape{1, size, 1});
                Tensor volume =
                    add(ramp.expand(shape), mul(rand(shape, DType::float32, &generator), 2.0));
                const std::string folder =
                    dir.file("vols/" + std::string(split) + (axis ? "/j" : "/i"));
                fs::create_directories(folder);
                datasets::write_npy(folder + "/v" + std::to_string(n) + ".npy",
                                    volume.contiguous());
            }
    nlohmann::json config = {{"name", "vols"},
                             {"data",
                              {{"dataset", "volume_folder"},
                               {"dir", dir.file("vols")},
                               {"resize", {8, 8, 8}},
                               {"batch_size", 6},
                               {"num_workers", 0}}},
                             {"model",
                              {{"name", "sfree_vit"},
                               {"tokenizer", "patch3d"},
                               {"attn", "seqnorm"},
                               {"num_classes", 2},
                               {"channels", 1},
                               {"image_size", {8, 8}},
                               {"patch_size", {4, 4}},
                               {"frames", 8},
                               {"frame_patch_size", 4},
                               {"dim", 16},
                               {"depth", 1},
                               {"heads", 2},
                               {"dim_head", 8},
                               {"mlp_dim", 16}}},
                             {"optim", {{"name", "adamw"}, {"lr", 0.01}}},
                             {"train", {{"epochs", 6}, {"threads", 1}}},
                             {"output", run_options(dir)}};
    std::ostringstream out;
    REQUIRE(train::cli::run_train_command({write_json(dir, "vols.json", config)}, out) == 0);
    nlohmann::json summary = nlohmann::json::parse(read_all(dir.file("runs/vols/summary.json")));
    CHECK(summary["test_accuracy"].get<double>() >= 0.9);
    std::ostringstream eval;
    REQUIRE(train::cli::run_eval_command({dir.file("runs/vols")}, eval) == 0);
    std::vector<std::string> rows = lines_of(dir.file("runs/vols/eval_test.csv"));
    REQUIRE(rows.size() == 25);
    CHECK(rows[0] == "case,label,predicted,p_i,p_j");
    std::ostringstream predict;
    REQUIRE(
        train::cli::run_predict_command({dir.file("runs/vols"), dir.file("vols/test/i/v1.npy"),
                                         dir.file("vols/test/j/v2.npy"), "--out", dir.file("pred")},
                                        predict) == 0);
    rows = lines_of(dir.file("pred/predictions.csv"));
    REQUIRE(rows.size() == 3);
    CHECK(rows[1].find("v1.npy,i,") != std::string::npos);
    CHECK(rows[2].find("v2.npy,j,") != std::string::npos);

    // data.resize needs one size per spatial dim.
    config["data"]["resize"] = {8, 8};
    require_error(
        [&] { train::cli::run_train_command({write_json(dir, "bad.json", config)}, out); },
        {"[config]", "data.resize [8, 8]", "one size per spatial dim (3)"});
}

TEST_CASE("a text run keeps its vocabulary for eval, resume and predict", "[cli][layouts]") {
    TempDir dir("cli_text_vocab");
    std::ostringstream out;
    datasets::make_demo("text", dir.file("text"), 0, out);
    nlohmann::json config = {
        {"name", "words"},
        {"data", {{"dataset", "text_csv"}, {"dir", dir.file("text")}, {"batch_size", 32}}},
        {"model",
         {{"name", "transformer"},
          {"num_classes", 4},
          {"embed_dim", 16},
          {"depth", 1},
          {"num_heads", 2},
          {"max_len", 100}}},
        {"optim", {{"name", "adamw"}, {"lr", 0.003}}},
        {"train", {{"epochs", 2}, {"threads", 1}}},
        {"output", run_options(dir)}};
    REQUIRE(train::cli::run_train_command({write_json(dir, "words.json", config)}, out) == 0);
    const std::string vocab_path = dir.file("runs/words/vocab.txt");
    REQUIRE(fs::exists(vocab_path));
    const datasets::Vocabulary vocab = datasets::Vocabulary::load(vocab_path);
    CHECK(vocab.token(datasets::Vocabulary::kPad) == "<pad>");

    // New words in the training file would change a rebuilt vocabulary (and the model's
    // embedding no longer fits); the run's own vocabulary keeps eval and predict working.
    std::ofstream(dir.file("text/train.csv"), std::ios::app)
        << "sports,zebra quokka narwhal axolotl okapi\n";
    std::ostringstream eval;
    REQUIRE(train::cli::run_eval_command({dir.file("runs/words")}, eval) == 0);
    CHECK(eval.str().find("200 examples") != std::string::npos);
    std::ofstream(dir.file("note.txt")) << "The keeper saved a penalty in the cup final.";
    std::ofstream(dir.file("batch.csv")) << "text\nA new recipe for bread\n\"Rain, then sun\"\n";
    std::ostringstream predict;
    REQUIRE(train::cli::run_predict_command({dir.file("runs/words"), dir.file("note.txt"),
                                             dir.file("batch.csv"), "--out", dir.file("pred")},
                                            predict) == 0);
    std::vector<std::string> rows = lines_of(dir.file("pred/predictions.csv"));
    REQUIRE(rows.size() == 4);
    CHECK(rows[0] == "input,predicted,p_food,p_science,p_sports,p_travel");
    CHECK(rows[1].rfind(dir.file("note.txt") + ",", 0) == 0);
    CHECK(rows[2].rfind(dir.file("batch.csv") + ":1,", 0) == 0);
    CHECK(rows[3].rfind(dir.file("batch.csv") + ":2,", 0) == 0);
    // Resuming reads the saved vocabulary too (the run continues, its file unchanged).
    config["train"]["epochs"] = 3;
    REQUIRE(train::cli::run_train_command(
                {write_json(dir, "words3.json", config), "--resume", dir.file("runs/words")},
                out) == 0);
    CHECK(datasets::Vocabulary::load(vocab_path).size() == vocab.size());
}

TEST_CASE("predictions of reoriented and resampled volumes return to the input's grid",
          "[cli][layouts]") {
    TempDir dir("cli_predict_grid");
    nlohmann::json config = {{"name", "grid"},
                             {"data",
                              {{"dataset", "decathlon"},
                               {"dir", dir.file("organs")},
                               {"make_demo", "organs3d"},
                               {"orientation", "RAS"},
                               {"spacing", {1.6, 1.6, 2.5}},
                               {"window", {-200, 300}},
                               {"patch_size", {16, 16, 16}},
                               {"batch_size", 2}}},
                             {"model",
                              {{"name", "context_vit"},
                               {"decoder", "unetr"},
                               {"in_channels", 1},
                               {"out_channels", 4},
                               {"img_size", {16, 16, 16}},
                               {"patch_size", 8},
                               {"hidden_size", 16},
                               {"mlp_dim", 16},
                               {"num_layers", 10},
                               {"num_heads", 2},
                               {"feature_size", 4}}},
                             {"eval", {{"inference", "sliding_window"}}},
                             {"train", {{"max_steps", 2}, {"threads", 1}}},
                             {"output", run_options(dir)}};
    std::ostringstream out;
    REQUIRE(train::cli::run_train_command({write_json(dir, "grid.json", config)}, out) == 0);
    // organs_024 is stored flipped (LPS-like) with spacing 0.8 x 0.8 x 2.5 mm.
    const std::string input = dir.file("organs/imagesTs/organs_024.nii.gz");
    std::ostringstream predict;
    REQUIRE(train::cli::run_predict_command(
                {dir.file("runs/grid"), input, "--out", dir.file("pred")}, predict) == 0);
    datasets::NiftiImage image = datasets::read_nifti(input);
    datasets::NiftiImage pred = datasets::read_nifti(dir.file("pred/organs_024_seg.nii.gz"));
    CHECK(pred.header.shape == image.header.shape);
    const datasets::Affine a = pred.header.affine(), b = image.header.affine();
    for (size_t i = 0; i < 16; ++i) CHECK(a[i] == Approx(b[i]).margin(1e-5));
    const double top = max(pred.fdata()).item<double>();
    CHECK((top >= 0 && top < 4));
}
