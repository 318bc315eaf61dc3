// The Trainer on a synthetic task (the brightness level of an image is its class) with a tiny
// ViT: it learns, writes the run directory, resumes bit-identically from a mid-epoch checkpoint
// (dropout, AdamW, per-step warm-up cosine, accumulation and clipping all in play), accumulates
// like a larger batch, stops on a non-finite loss naming the step, and on CUDA follows the CPU.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "models/vit.h"
#include "ops/index.h"
#include "ops/random.h"
#include "support/gradcheck.h"
#include "train/checkpoint.h"
#include "train/schedule_basic.h"
#include "train/trainer.h"

using namespace lumen;
using namespace lumen::testing;
namespace fs = std::filesystem;

namespace {

// Images (N, 1, 8, 8): uniform noise in [0, 0.3) plus 0.25 * label, a task any model that
// averages its input solves (the trainer is under test here, not the architecture).
std::pair<Tensor, Tensor> level_task(int64_t n, uint64_t seed) {
    Generator g(seed);
    Tensor labels = randint(0, 4, {n}, DType::int64, &g);
    Tensor level = mul(labels.to(DType::float32).view({n, 1, 1, 1}), 0.25);
    Tensor images = add(mul(rand({n, 1, 8, 8}, DType::float32, &g), 0.3), level);
    return {images.contiguous(), labels};
}

// In-memory batches, shuffled by (seed, epoch) when asked.
class MemorySource : public train::BatchSource {
  public:
    MemorySource(std::pair<Tensor, Tensor> data, int64_t batch, bool shuffle)
        : images_(data.first), labels_(data.second), batch_(batch), shuffle_(shuffle) {}
    int64_t num_batches() const override { return (labels_.numel() + batch_ - 1) / batch_; }
    int64_t num_examples() const override { return labels_.numel(); }
    void start_epoch(int64_t epoch, int64_t first_batch) override {
        const int64_t n = labels_.numel();
        std::vector<std::pair<double, int64_t>> keyed;
        Generator g(1000 + uint64_t(epoch));
        std::vector<double> keys = rand({n}, DType::float64, &g).to_vector<double>();
        for (int64_t i = 0; i < n; ++i) keyed.emplace_back(shuffle_ ? keys[size_t(i)] : 0.0, i);
        std::stable_sort(keyed.begin(), keyed.end(),
                         [](auto& a, auto& b) { return a.first < b.first; });
        order_.clear();
        for (auto& [key, i] : keyed) order_.push_back(i);
        position_ = std::min(order_.size(), size_t(first_batch * batch_));
    }
    std::optional<std::vector<Tensor>> next() override {
        if (position_ >= order_.size()) return std::nullopt;
        size_t end = std::min(order_.size(), position_ + size_t(batch_));
        Tensor index = from_vector(
            std::vector<int64_t>(order_.begin() + long(position_), order_.begin() + long(end)));
        position_ = end;
        return std::vector<Tensor>{index_select(images_, 0, index),
                                   index_select(labels_, 0, index)};
    }

  private:
    Tensor images_, labels_;
    int64_t batch_;
    bool shuffle_;
    std::vector<int64_t> order_;
    size_t position_ = 0;
};

struct Setup {
    double drop = 0.1;
    int64_t batch = 16, accumulate = 1, epochs = 2, max_steps = 0;
    double grad_clip = 1.0, lr = 3e-3;
    bool shuffle = true, sgd = false;
    int64_t train_size = 96;
    DType precision = DType::float32;
    train::GradScalerOptions scaler;
};

std::unique_ptr<train::Trainer> make_trainer(const Setup& s, const std::string& run_dir,
                                             std::ostream& out, Device device = Device::cpu()) {
    manual_seed(5);
    models::ViTConfig config = models::vit_config(4, {8, 8}, 1, s.drop);
    config.embed_dim = 16;
    config.depth = 1;
    config.num_heads = 2;
    auto model = std::make_shared<models::ViT>(config);
    model->to(device);
    std::unique_ptr<train::Optimizer> optimizer;
    if (s.sgd)
        optimizer = std::make_unique<train::SGD>(model->parameters(), s.lr);
    else
        optimizer = std::make_unique<train::AdamW>(model->parameters(), s.lr);
    const int64_t k = std::max<int64_t>(1, s.accumulate);
    const int64_t steps = s.epochs * ((s.train_size / s.batch + k - 1) / k);
    auto schedule = std::make_shared<train::WarmupCosineLR>(s.lr, steps, 2, 0.0, 0.0);
    train::TrainerOptions o;
    o.run_dir = run_dir;
    o.epochs = s.epochs;
    o.max_steps = s.max_steps;
    o.accumulate = s.accumulate;
    o.grad_clip = s.grad_clip;
    o.interval = train::ScheduleInterval::step;
    o.checkpoint.best_metric = "test_accuracy";
    o.log_every = 2;
    o.config_json = "{\"test\": true}";
    o.device = device;
    o.precision = s.precision;
    o.scaler = s.scaler;
    return std::make_unique<train::Trainer>(
        o, model, std::move(optimizer), schedule,
        std::make_shared<MemorySource>(level_task(s.train_size, 1), s.batch, s.shuffle),
        std::make_shared<MemorySource>(level_task(64, 2), 32, false), out);
}

std::vector<std::vector<float>> parameters_of(train::Trainer& t) {
    std::vector<std::vector<float>> values;
    for (const Tensor& p : t.model().parameters()) values.push_back(p.cpu().to_vector<float>());
    return values;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

TEST_CASE("Trainer learns the brightness task and writes the run directory", "[train][trainer]") {
    TempDir dir("trainer");
    std::ostringstream out;
    Setup s{.drop = 0.0, .epochs = 6, .lr = 1e-2, .train_size = 256};
    auto trainer = make_trainer(s, dir.file("run"), out);
    train::TrainSummary summary = trainer->fit();
    INFO(out.str());
    CHECK(summary.test_accuracy > 0.9);
    CHECK(summary.epochs == 6);
    CHECK(summary.steps == 96);
    for (const char* name :
         {"config.json", "metrics.jsonl", "plot.svg", "summary.json", "model.safetensors",
          "checkpoints/index.json", "checkpoints/best.safetensors"}) {
        INFO(name);
        CHECK(fs::exists(dir.file("run/") + name));
    }
    nlohmann::json j = nlohmann::json::parse(read_file(dir.file("run/summary.json")));
    for (const char* key :
         {"test_accuracy", "test_loss", "epochs", "wall_seconds", "images_per_second", "device"}) {
        INFO(key);
        CHECK(j.contains(key));
    }
    CHECK(j["test_accuracy"].get<double>() == summary.test_accuracy);
    CHECK(j["epochs"].get<int64_t>() == 6);
    CHECK(read_file(dir.file("run/plot.svg")).find("<polyline") != std::string::npos);
    CHECK(read_file(dir.file("run/config.json")) == "{\"test\": true}\n");
    // 48 step records (every 2nd of 96 updates) and 6 epoch records.
    std::string metrics = read_file(dir.file("run/metrics.jsonl"));
    CHECK(std::count(metrics.begin(), metrics.end(), '\n') == 54);
    CHECK(out.str().find("| test accuracy |") != std::string::npos);
}

TEST_CASE("resuming from a mid-epoch checkpoint ends bit-identical to one run",
          "[train][trainer][resume]") {
    TempDir dir("trainer_resume");
    std::ostringstream out;
    // 96 images, batch 8, accumulate 2: 6 updates per epoch, 18 over 3 epochs.
    Setup s{.drop = 0.2, .batch = 8, .accumulate = 2, .epochs = 3};
    auto whole = make_trainer(s, dir.file("whole"), out);
    whole->fit();

    Setup first = s;
    first.max_steps = 8;  // stops inside epoch 2
    auto half = make_trainer(first, dir.file("split"), out);
    half->fit();
    CHECK(half->step() == 8);
    const std::string checkpoint = train::CheckpointManager::latest(dir.file("split/checkpoints"));
    CHECK(train::read_checkpoint_state(checkpoint).batch_in_epoch == 4);

    auto resumed = make_trainer(s, dir.file("split"), out);  // other init, then the checkpoint
    resumed->resume(checkpoint);
    resumed->fit();
    CHECK(resumed->step() == 18);
    CHECK(parameters_of(*resumed) == parameters_of(*whole));
    // The step records of both runs agree too (losses and learning rates, exactly).
    auto step_lines = [](const std::string& text) {
        std::vector<std::string> lines;
        std::istringstream in(text);
        for (std::string line; std::getline(in, line);)
            if (line.find("\"type\":\"step\"") != std::string::npos) lines.push_back(line);
        return lines;
    };
    CHECK(step_lines(read_file(dir.file("split/metrics.jsonl"))) ==
          step_lines(read_file(dir.file("whole/metrics.jsonl"))));
}

TEST_CASE("accumulating two half batches matches one full batch", "[train][trainer]") {
    TempDir dir("trainer_accumulate");
    std::ostringstream out;
    Setup full{.drop = 0.0, .batch = 16, .epochs = 1, .grad_clip = 0.0, .sgd = true};
    Setup halves = full;
    halves.batch = 8;
    halves.accumulate = 2;
    auto a = make_trainer(full, dir.file("a"), out);
    auto b = make_trainer(halves, dir.file("b"), out);
    a->fit();
    b->fit();
    CHECK(a->step() == b->step());
    auto pa = parameters_of(*a), pb = parameters_of(*b);
    for (size_t i = 0; i < pa.size(); ++i)
        for (size_t k = 0; k < pa[i].size(); ++k)
            REQUIRE(pa[i][k] == Approx(pb[i][k]).margin(1e-5));
}

TEST_CASE("the trainer stops at a non-finite loss naming the step", "[train][trainer]") {
    TempDir dir("trainer_nan");
    std::ostringstream out;
    auto trainer = make_trainer({.epochs = 3, .lr = 1e30}, dir.file("run"), out);
    require_error([&] { trainer->fit(); }, {"[nan_guard] step", "first non-finite"});
    require_error([&] { make_trainer({.accumulate = 0}, dir.file("bad"), out); },
                  {"[Trainer]", "accumulate"});
}

TEST_CASE("the trainer on CUDA follows the CPU run", "[train][trainer][cuda]") {
    if (!have_gpu()) return;
    TempDir dir("trainer_cuda");
    std::ostringstream out;
    Setup s{.drop = 0.0, .epochs = 1, .train_size = 64};  // 4 updates, no dropout
    auto cpu = make_trainer(s, dir.file("cpu"), out);
    auto gpu = make_trainer(s, dir.file("gpu"), out, Device::cuda(0));
    train::TrainSummary a = cpu->fit(), b = gpu->fit();
    CHECK(b.device == "cuda:0");
    CHECK(b.test_loss == Approx(a.test_loss).epsilon(1e-3));
    auto pa = parameters_of(*cpu), pb = parameters_of(*gpu);
    for (size_t i = 0; i < pa.size(); ++i)
        for (size_t k = 0; k < pa[i].size(); ++k)
            REQUIRE(pb[i][k] == Approx(pa[i][k]).margin(2e-3));
}

TEST_CASE("mixed precision: bf16 and fp16 training learn; fp16 skips overflowed updates",
          "[train][trainer][autocast]") {
    struct Run {
        DType precision;
        double init_scale;
        int64_t growth_interval;
    };
    // The last run starts fp16 at a loss scale of 2^30, far too large: the first updates
    // overflow and are skipped, the scale halving each time, and it grows back every 8 steps.
    for (Run run : {Run{DType::bfloat16, 65536.0, 2000}, Run{DType::float16, 65536.0, 2000},
                    Run{DType::float16, 1073741824.0, 8}}) {
        INFO(run.precision << " from loss scale " << run.init_scale);
        TempDir dir("trainer_mixed");
        std::ostringstream out;
        Setup s{.drop = 0.0,
                .epochs = 6,
                .lr = 1e-2,
                .train_size = 256,
                .precision = run.precision,
                .scaler = {.init_scale = run.init_scale, .growth_interval = run.growth_interval}};
        auto trainer = make_trainer(s, dir.file("run"), out);
        train::TrainSummary summary = trainer->fit();
        INFO(out.str());
        const std::string log = out.str();
        CHECK(log.find(run.precision == DType::bfloat16
                           ? "bfloat16 GEMMs"
                           : "float16 GEMMs with loss scaling") != std::string::npos);
        if (run.init_scale > 65536.0) {
            CHECK(summary.skipped_updates >= 3);
            CHECK(log.find("step 1: float16 gradients overflowed (inf/NaN); update skipped, "
                           "loss scale now 5.36871e+08") != std::string::npos);
            CHECK(summary.test_accuracy > 0.5);  // fewer updates, still learning
        } else {
            CHECK(summary.skipped_updates == 0);
            CHECK(log.find("overflowed") == std::string::npos);
            CHECK(summary.test_accuracy > 0.9);
        }
    }
}

TEST_CASE("mixed precision: an fp16 run resumes bit-identical, loss scale included",
          "[train][trainer][autocast][resume]") {
    TempDir dir("trainer_mixed_resume");
    std::ostringstream out;
    Setup s{.drop = 0.2,
            .batch = 8,
            .epochs = 2,
            .precision = DType::float16,
            .scaler = {.init_scale = 1048576.0, .growth_interval = 2}};
    auto whole = make_trainer(s, dir.file("whole"), out);
    whole->fit();
    Setup first = s;
    first.max_steps = 7;
    auto half = make_trainer(first, dir.file("split"), out);
    half->fit();
    const std::string checkpoint = train::CheckpointManager::latest(dir.file("split/checkpoints"));
    auto resumed = make_trainer(s, dir.file("split"), out);
    resumed->resume(checkpoint);
    resumed->fit();
    CHECK(resumed->step() == whole->step());
    CHECK(parameters_of(*resumed) == parameters_of(*whole));
}
