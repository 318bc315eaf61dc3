// bench_scaling: the papers' scaling studies (bench/torch_scaling.py in PyTorch): (a) softmax-free
// Fig. 2, one training step of the softmax-free ViT vs resolution 224..2048 (sfree_<attn>_r<R>);
// (b) context-length Table 2, forward + backward of the ViT-Small backbone vs patch 32..4
// with attention, Hyena or MambaVision (ctx_<mixer>_p<p>). Depth and image size are reduced
// (kSfree, kContext; docs/benchmarks.md). --device cuda runs them on the GPU.
// Usage: bench_scaling [--only ctx_attn_p32,...] [--list] [--device cpu|cuda]
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "lumen/lumen.h"
#include "models/context_vit.h"
#include "models/sfree_vit.h"
#include "train/optim.h"

using namespace lumen;
using namespace lumen::bench;

namespace {

// The paper's widths (Table 1: D' 1024, 8 heads of 64, MLP 1024) at depth 1 of 8: the blocks
// are identical, so time and memory per block scale with depth and the ratios stay.
struct SfreeStudy {
    int64_t depth = 1, dim = 1024, heads = 8, dim_head = 64, mlp_dim = 1024, patch = 16;
    std::vector<std::string> attns = {"softmax", "seqnorm", "sima"};
    std::vector<int64_t> resolutions = {224, 512, 1024, 2048};
} const kSfree;

// ViT-Small widths (hidden 384, 6 heads, MLP 1536) at depth 1 of 12 on a 512 x 512 image with
// one channel: 256 .. 16384 tokens for patch 32 .. 4 (the paper's 1024^2 gives 1024 .. 65536).
struct ContextStudy {
    int64_t depth = 1, hidden = 384, heads = 6, mlp_dim = 1536, image = 512;
    std::vector<std::string> mixers = {"attn", "hyena", "mamba"};
    std::vector<int64_t> patches = {32, 16, 8, 4};
} const kContext;

// Lower bound of softmax attention's memory: the probabilities every layer keeps for backward
// plus the scores and gradient of one layer, N x N float32 per head (torch_scaling.py agrees).
double attention_maps_gb(int64_t tokens, int64_t heads, int64_t depth) {
    return double(depth + 2) * 4 * double(tokens * tokens) * double(heads) / 1e9;
}

// Times `step` (first run: memory) or reports why it was skipped.
void measure(const std::string& name, double need_gb, const std::function<void()>& step,
             const Options& options) {
    measure_workload(name, need_gb, "N x N attention maps", [&] { return step; }, options.repeats);
}

void run_sfree(const std::string& attn, int64_t resolution, const Options& options) {
    const SfreeStudy& c = kSfree;
    models::SfreeViTConfig config;
    config.attn = attn;
    config.dim = c.dim;
    config.depth = c.depth;
    config.heads = c.heads;
    config.dim_head = c.dim_head;
    config.mlp_dim = c.mlp_dim;
    config.image_size = {resolution, resolution};
    config.patch_size = {c.patch, c.patch};
    manual_seed(0);
    auto model = std::make_shared<models::SfreeViT>(config);
    model->to(options.device);
    train::AdamW optimizer(model->parameters(), 1e-4);
    Tensor image = randn({1, 3, resolution, resolution}).to(options.device);
    Tensor label = zeros({1}, DType::int64).to(options.device);
    auto step = [&] {
        optimizer.zero_grad();
        cross_entropy(model->forward(image), label).backward();
        optimizer.step();
    };
    int64_t tokens = config.num_patches() + 1;  // with the class token
    double need_gb = attn == "softmax" ? attention_maps_gb(tokens, c.heads, c.depth) : 0;
    measure("sfree_" + attn + "_r" + std::to_string(resolution), need_gb, step, options);
}

void run_context(const std::string& mixer, int64_t patch, const Options& options) {
    const ContextStudy& c = kContext;
    models::ContextViTConfig config;
    config.img_size = {c.image, c.image};
    config.patch_size = patch;
    config.hidden_size = c.hidden;
    config.mlp_dim = c.mlp_dim;
    config.num_layers = c.depth;
    config.num_heads = c.heads;
    config.mixer.mixer = mixer;
    manual_seed(0);
    auto model = std::make_shared<models::ContextViT>(config);
    model->to(options.device);
    Tensor image = randn({1, 1, c.image, c.image}).to(options.device);
    int64_t tokens = (c.image / patch) * (c.image / patch);
    Tensor grad = randn({1, tokens, c.hidden}).to(options.device);
    auto step = [&] {
        model->zero_grad();
        model->forward(image).backward(grad);
    };
    double need_gb = mixer == "attn" ? attention_maps_gb(tokens, c.heads, c.depth) : 0;
    measure("ctx_" + mixer + "_p" + std::to_string(patch), need_gb, step, options);
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (options.threads > 0) set_num_threads(options.threads);
    for (const std::string& attn : kSfree.attns)
        for (int64_t resolution : kSfree.resolutions) {
            std::string name = "sfree_" + attn + "_r" + std::to_string(resolution);
            if (!selected(options, name)) continue;
            if (options.list)
                std::printf("%s\n", name.c_str());
            else
                run_sfree(attn, resolution, options);
        }
    for (const std::string& mixer : kContext.mixers)
        for (int64_t patch : kContext.patches) {
            std::string name = "ctx_" + mixer + "_p" + std::to_string(patch);
            if (!selected(options, name)) continue;
            if (options.list)
                std::printf("%s\n", name.c_str());
            else
                run_context(mixer, patch, options);
        }
    return 0;
}
