// Train-step throughput (images/s) of the DGSA paper's Table 3 models on Fashion-MNIST-sized input:
// ViT and DGViT, D 256, 8 layers, 8 heads, patch 4 on 28x28x1 (50 tokens), batch 128, dropout 0.05,
// cross-entropy, AdamW. bench/torch_train.py times the same models in PyTorch (the reference
// modules, ref_diff.py). One step = zero_grad, forward, loss, backward, optimizer step. --device
// cuda trains on the GPU. Usage: bench_train [--threads N] [--repeats R] [--only
// vit_train_step,...] [--list]
//                    [--device cpu|cuda]
#include <cstdio>
#include <cstdlib>

#include "bench/bench_util.h"
#include "core/parallel.h"
#include "core/random.h"
#include "models/vit.h"
#include "ops/loss.h"
#include "ops/random.h"
#include "train/optim.h"

using namespace lumen;

namespace {

// Reads an integer setting from the environment (BATCH), or returns `fallback`.
int64_t env_int(const char* name, int64_t fallback) {
    const char* value = std::getenv(name);
    return value ? std::atoll(value) : fallback;
}

void time_model(const std::string& name, models::ViTConfig config, int64_t batch, int repeats,
                Device device) {
    manual_seed(0);
    models::ViT model(config);
    model.train();
    model.to(device);
    train::AdamW optimizer(model.parameters(), 3e-4, {}, 0.01);
    Tensor images = randn({batch, 1, 28, 28}).to(device);
    Tensor labels = randint(0, 10, {batch}).to(device);
    auto step = [&] {
        optimizer.zero_grad();
        Tensor loss = cross_entropy(model.forward(images), labels);
        loss.backward();
        optimizer.step();
    };
    double seconds = bench::median_seconds(step, 2, repeats);
    std::printf("# %s: %lld parameters, batch %lld\n", name.c_str(),
                (long long)model.num_parameters(), (long long)batch);
    bench::report(name, "images/s", double(batch) / seconds, seconds);
}

}  // namespace

int main(int argc, char** argv) {
    bench::Options options = bench::parse_options(argc, argv);
    if (options.list) {
        std::printf("vit_train_step\ndgvit_train_step\n");
        return 0;
    }
    if (options.threads > 0) set_num_threads(options.threads);
    const int64_t batch = env_int("BATCH", 128);
    const int repeats = std::min(options.repeats, 5);
    std::printf("# lumen train step, %d threads, median of %d repeats\n", get_num_threads(),
                repeats);
    if (bench::selected(options, "vit_train_step"))
        time_model("vit_train_step", models::vit_config(10, {28, 28}, 1, 0.05), batch, repeats,
                   options.device);
    if (bench::selected(options, "dgvit_train_step"))
        time_model("dgvit_train_step", models::dgvit_config(10, {28, 28}, 1, 4.0, 0.05, 2), batch,
                   repeats, options.device);
    return 0;
}
