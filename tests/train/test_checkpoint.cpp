// Checkpoints: a save/load round trip restores weights, AdamW state and the generator bit for
// bit, so training continues exactly as without the break; errors name the file; the manager
// keeps the last k, links the best, writes index.json and skips a damaged newest file.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/random.h"
#include "core/safetensors.h"
#include "nn/activation.h"
#include "nn/container.h"
#include "nn/linear.h"
#include "nn/state_dict.h"
#include "ops/loss.h"
#include "ops/random.h"
#include "support/gradcheck.h"
#include "train/atomic_file.h"
#include "train/checkpoint.h"

using namespace lumen;
using namespace lumen::testing;
namespace fs = std::filesystem;

namespace {

// Linear -> dropout -> Linear: dropout makes the result depend on the generator's state.
std::shared_ptr<nn::Sequential> small_net() {
    return nn::make<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
        nn::make<nn::Linear>(4, 8), nn::make<nn::Dropout>(0.3), nn::make<nn::Linear>(8, 3)});
}

void train_steps(nn::Module& net, train::Optimizer& optimizer, int steps, uint64_t data_seed) {
    for (int i = 0; i < steps; ++i) {
        Generator data(data_seed + uint64_t(i));
        Tensor x = randn({5, 4}, DType::float32, &data);
        Tensor y = randint(0, 3, {5}, DType::int64, &data);
        optimizer.zero_grad();
        cross_entropy(net.forward(x), y).backward();
        optimizer.step();
    }
}

void require_identical(const nn::Module& a, const nn::Module& b) {
    auto pa = a.named_parameters(), pb = b.named_parameters();
    REQUIRE(pa.size() == pb.size());
    for (size_t i = 0; i < pa.size(); ++i) {
        INFO(pa[i].first);
        CHECK(pa[i].second.to_vector<float>() == pb[i].second.to_vector<float>());
    }
}

}  // namespace

TEST_CASE("a checkpoint restores weights, AdamW state and the generator bit for bit",
          "[train][checkpoint]") {
    TempDir dir("checkpoint");
    manual_seed(7);
    auto net = small_net();
    train::AdamW optimizer(net->parameters(), 1e-2);
    train_steps(*net, optimizer, 3, 100);
    train::CheckpointState state{.epoch = 1,
                                 .step = 3,
                                 .schedule = "constant",
                                 .config_json = "{\"a\": 1}",
                                 .extra_json = "{}"};
    const std::string path = dir.file("ckpt.safetensors");
    train::save_checkpoint(path, *net, optimizer, state);
    CHECK_FALSE(fs::exists(path + ".partial"));
    train_steps(*net, optimizer, 4, 200);  // the uninterrupted run

    manual_seed(999);  // a fresh process: other weights, other generator state
    auto resumed = small_net();
    train::AdamW resumed_optimizer(resumed->parameters(), 1e-2);
    train::CheckpointState loaded = train::load_checkpoint(path, *resumed, &resumed_optimizer);
    CHECK(loaded.epoch == 1);
    CHECK(loaded.step == 3);
    CHECK(loaded.config_json == "{\"a\": 1}");
    CHECK(loaded.schedule == "constant");
    const Tensor first = resumed->parameters()[0];
    REQUIRE(resumed_optimizer.find_state(first) != nullptr);
    CHECK(resumed_optimizer.find_state(first)->at("step").item<double>() == 3.0);
    train_steps(*resumed, resumed_optimizer, 4, 200);
    require_identical(*net, *resumed);
    CHECK(train::read_checkpoint_state(path).step == 3);
}

TEST_CASE("checkpoint errors name the file and the problem", "[train][checkpoint]") {
    TempDir dir("checkpoint_errors");
    auto net = small_net();
    train::AdamW adamw(net->parameters(), 1e-2);
    train_steps(*net, adamw, 1, 1);
    const std::string path = dir.file("ckpt.safetensors");
    train::save_checkpoint(path, *net, adamw, {});
    train::SGD sgd(net->parameters(), 0.1);
    require_error([&] { train::load_checkpoint(path, *net, &sgd); },
                  {"[checkpoint]", "ckpt.safetensors", "optimizer AdamW", "uses SGD"});
    auto other = nn::make<nn::Linear>(4, 3);
    require_error([&] { train::load_checkpoint(path, *other, nullptr); },
                  {"[checkpoint]", "ckpt.safetensors", "missing keys"});
    const std::string weights = dir.file("weights.safetensors");
    nn::save_state_dict(*net, weights);
    require_error([&] { train::load_checkpoint(weights, *net, nullptr); },
                  {"[checkpoint]", "weights.safetensors", "not a lumen checkpoint"});
    // Weights load from either kind of file.
    auto copy = small_net();
    train::load_checkpoint_weights(weights, *copy);
    require_identical(*net, *copy);
    train::load_checkpoint_weights(path, *copy);
    auto linear = nn::make<nn::Linear>(4, 3);
    train::SGD foreign(linear->parameters(), 0.1);
    require_error([&] { train::save_checkpoint(path, *net, foreign, {}); },
                  {"[checkpoint]", "not in the Sequential"});
}

TEST_CASE("CheckpointManager keeps the last k, links the best, skips a damaged newest file",
          "[train][checkpoint]") {
    TempDir dir("checkpoint_manager");
    auto net = small_net();
    train::AdamW optimizer(net->parameters(), 1e-2);
    const std::string folder = dir.file("checkpoints");
    {
        train::CheckpointManager manager(folder, {.keep_last = 2, .best_metric = "accuracy"});
        const std::vector<double> accuracy = {0.5, 0.8, 0.7, 0.6};
        for (int64_t step = 1; step <= 4; ++step) {
            train_steps(*net, optimizer, 1, uint64_t(step));
            manager.save(*net, optimizer, {.step = step}, accuracy[size_t(step - 1)]);
        }
        CHECK(manager.best_value() == 0.8);
    }
    CHECK_FALSE(fs::exists(folder + "/step-000000001.safetensors"));
    CHECK_FALSE(fs::exists(folder + "/step-000000002.safetensors"));
    CHECK(fs::exists(folder + "/step-000000003.safetensors"));
    CHECK(fs::exists(folder + "/step-000000004.safetensors"));
    // best.safetensors still holds step 2 after its step file was deleted.
    CHECK(train::read_checkpoint_state(folder + "/best.safetensors").step == 2);
    std::ifstream index(folder + "/index.json");
    std::string text((std::istreambuf_iterator<char>(index)), std::istreambuf_iterator<char>());
    CHECK(text.find("\"latest\": \"step-000000004.safetensors\"") != std::string::npos);
    CHECK(text.find("\"value\": 0.8") != std::string::npos);
    CHECK(train::CheckpointManager::latest(folder) == folder + "/step-000000004.safetensors");

    // A torn newer file (not written by save) and a leftover .partial are skipped.
    std::ofstream(folder + "/step-000000009.safetensors") << "garbage";
    std::ofstream(folder + "/step-000000010.safetensors.partial") << "garbage";
    CHECK(train::CheckpointManager::latest(folder) == folder + "/step-000000004.safetensors");
    CHECK(train::CheckpointManager::latest(dir.file("none")) == "");

    // A resumed manager continues the best recorded in the checkpoint it resumes from.
    train::CheckpointManager again(folder, {.keep_last = 2, .best_metric = "accuracy"});
    auto repairs =
        again.resume_from(train::read_checkpoint_state(folder + "/step-000000004.safetensors"));
    CHECK(repairs.empty());
    CHECK(again.best_value() == 0.8);
    require_error([&] { train::CheckpointManager bad(folder, {.keep_last = 0}); },
                  {"[checkpoint]", "keep_last", "0"});
}

TEST_CASE("write_text_atomically replaces a file and leaves no partial file",
          "[train][checkpoint]") {
    TempDir dir("atomic");
    const std::string path = dir.file("a.json");
    train::write_text_atomically(path, "one");
    train::write_text_atomically(path, "two");
    std::ifstream in(path);
    std::string text;
    in >> text;
    CHECK(text == "two");
    CHECK_FALSE(fs::exists(path + ".partial"));
    require_error([&] { train::write_text_atomically(dir.file("missing/x.json"), "x"); },
                  {"[atomic_file]", "missing/x.json.partial"});
    require_error([&] { train::fsync_path(dir.file("absent")); }, {"[atomic_file]", "absent"});
}

namespace {

// Rewrites a checkpoint with `edit` applied to its state JSON and tensors, with a valid
// checksum: what a hostile or buggy writer could produce.
void rewrite(const std::string& from, const std::string& to,
             const std::function<void(nlohmann::json&, std::map<std::string, Tensor>&)>& edit) {
    SafetensorsFile file = load_safetensors(from);
    nlohmann::json state = nlohmann::json::parse(file.metadata.at("lumen.checkpoint"));
    std::map<std::string, Tensor> tensors;
    for (auto& [name, t] : file.tensors) tensors[name] = t.clone();
    edit(state, tensors);
    file.metadata["lumen.checkpoint"] = state.dump();
    save_safetensors(to, tensors, file.metadata);
}

}  // namespace

TEST_CASE("checkpoint fields read back are checked, never trusted",
          "[train][checkpoint][hostile]") {
    TempDir dir("checkpoint_hostile");
    auto net = small_net();
    train::AdamW adamw(net->parameters(), 1e-2);
    train_steps(*net, adamw, 2, 1);
    const std::string good = dir.file("good.safetensors"), bad = dir.file("bad.safetensors");
    train::save_checkpoint(good, *net, adamw, {.epoch = 1, .step = 2});
    CHECK(train::read_checkpoint_state(good).step == 2);
    auto expect =
        [&](const std::function<void(nlohmann::json&, std::map<std::string, Tensor>&)>& edit,
            const std::vector<std::string>& fragments) {
            rewrite(good, bad, edit);
            std::vector<std::string> all = fragments;
            all.push_back("bad.safetensors");
            require_error([&] { train::load_checkpoint(bad, *net, &adamw); }, all);
        };
    using Json = nlohmann::json;
    using Tensors = std::map<std::string, Tensor>;
    // A negative epoch trained 7 extra epochs at lr 0.
    expect([](Json& s, Tensors&) { s["epoch"] = -7; },
           {"the checkpoint state's 'epoch' must be an integer in [0, 2^53], got -7"});
    expect([](Json& s, Tensors&) { s["step"] = 2.5; }, {"'step' must be an integer in [0, 2^53]"});
    expect([](Json& s, Tensors&) { s.erase("batch_in_epoch"); }, {"has no 'batch_in_epoch'"});
    expect([](Json& s, Tensors&) { s["format"] = 1; }, {"checkpoint format 1 is not the format 2"});
    expect([](Json& s, Tensors&) { s["config"] = "[1]"; }, {"'config' must hold a JSON object"});
    expect(
        [](Json& s, Tensors&) {
            s["best"] = {{"value", 0.5}, {"step", 9}};
        },
        {"the best checkpoint's step 9 comes after this checkpoint's step 2"});
    expect(
        [](Json&, Tensors& t) {
            t["optimizer.0.weight.exp_avg"] = zeros({3, 3});
        },
        {"the AdamW state of parameter '0.weight' does not fit it", "'exp_avg' has shape [3, 3]"});
    expect([](Json&, Tensors& t) { t.erase("optimizer.0.weight.exp_avg_sq"); },
           {"parameter '0.weight'", "no 'exp_avg_sq'"});
    expect([](Json&,
              Tensors& t) { t["optimizer.0.weight.step"] = scalar_tensor(-1.0, DType::float64); },
           {"'step' must be a whole number >= 0, got -1"});
    // A weight stored as int32 where the model has float32 was cast without a word.
    expect([](Json&, Tensors& t) { t["model.0.weight"] = t["model.0.weight"].to(DType::int32); },
           {"0.weight: got dtype int32, expected float32"});
    // A bit flip anywhere: the checksum.
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    bytes[bytes.size() - 5] ^= 4;
    std::ofstream(bad, std::ios::binary) << bytes;
    require_error([&] { train::read_checkpoint_state(bad); }, {"checksum mismatch"});
    // A state dict without a checksum is not a checkpoint anyone can trust.
    SafetensorsFile file = load_safetensors(good);
    std::string raw = dir.file("raw.safetensors");
    {
        std::string header = R"({"__metadata__":{"lumen.checkpoint":"{}"}})";
        header.append((8 - header.size() % 8) % 8, ' ');
        uint64_t n = header.size();
        std::ofstream f(raw, std::ios::binary);
        f.write(reinterpret_cast<const char*>(&n), 8);
        f << header;
    }
    require_error([&] { train::read_checkpoint_state(raw); }, {"the checkpoint has no checksum"});
    // Casting happens only when asked for, and is reported.
    auto copy = small_net();
    std::map<std::string, Tensor> state = net->state_dict();
    state["0.weight"] = state["0.weight"].to(DType::float64);
    nn::LoadReport report = copy->load_state_dict(state, true, true);
    REQUIRE(report.cast.size() == 1);
    CHECK(report.cast[0] == "0.weight: float64 -> float32");
}

TEST_CASE("latest() names each damaged checkpoint it passes over; resume repairs best",
          "[train][checkpoint][hostile]") {
    TempDir dir("checkpoint_repair");
    auto net = small_net();
    train::AdamW optimizer(net->parameters(), 1e-2);
    const std::string folder = dir.file("checkpoints");
    train::CheckpointPolicy policy{.keep_last = 3, .best_metric = "accuracy"};
    {
        train::CheckpointManager manager(folder, policy);
        manager.save(*net, optimizer, {.step = 1}, 0.5);
        manager.save(*net, optimizer, {.step = 2}, 0.6);
        // As a kill between the step file and the best link: step 3 (the best) is committed,
        // best.safetensors still holds step 2.
        fs::copy_file(folder + "/best.safetensors", dir.file("old_best"));
        manager.save(*net, optimizer, {.step = 3}, 0.9);
        fs::remove(folder + "/best.safetensors");
        fs::copy_file(dir.file("old_best"), folder + "/best.safetensors");
    }
    CHECK(train::read_checkpoint_state(folder + "/step-000000003.safetensors").best_step == 3);
    train::CheckpointManager resumed(folder, policy);
    auto repairs =
        resumed.resume_from(train::read_checkpoint_state(folder + "/step-000000003.safetensors"));
    REQUIRE(repairs.size() == 1);
    CHECK(repairs[0].find("relinked to step 3") != std::string::npos);
    CHECK(train::read_checkpoint_state(folder + "/best.safetensors").step == 3);

    // Flip a bit in the newest: latest() falls back and says why.
    std::string newest = folder + "/step-000000003.safetensors";
    std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
    f.close();
    std::vector<std::string> skipped;
    CHECK(train::CheckpointManager::latest(folder, &skipped) ==
          folder + "/step-000000002.safetensors");
    REQUIRE(skipped.size() == 1);
    CHECK(skipped[0].find("step-000000003.safetensors: checksum mismatch") != std::string::npos);
    // Resuming from step 2, whose record has best = step 2: best.safetensors (a link to the
    // damaged step 3) is relinked to step 2.
    train::CheckpointManager back(folder, policy);
    repairs =
        back.resume_from(train::read_checkpoint_state(folder + "/step-000000002.safetensors"));
    REQUIRE(repairs.size() == 1);
    CHECK(train::read_checkpoint_state(folder + "/best.safetensors").step == 2);
}
