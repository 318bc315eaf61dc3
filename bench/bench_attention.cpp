// bench_attention: the attention zoo (issues 5, 6 and 8), the workloads of
// bench/torch_attention.py in lumen: forward + backward of every variant at C = 256 with 8
// heads (head width 32), batch 1, N = 196, 1024, 4096 and 16384 tokens (attn_<variant>_n<N>,
// ms), built through the attention registry exactly as models build them, and the peak memory
// of its first forward + backward (attn_<variant>_n<N>_mem: process RSS growth, CPU allocator
// peak beside it). Run one workload per process (--only) for the memory figures: run.sh does.
// The softmax variants run fused (no N x N map), so every variant runs at every N.
// UTNet's attention runs on square token
// grids (14x14 with reduce size 7, 64x64 and 128x128 with 8), as does PVTv2's spatial-reduction
// attention (keys reduced to 7x7 or 8x8; "pvt_sra_li" pools them to 7x7). Hyena (8 heads,
// the paper's l_max 66000, filter order 64) and the MambaVision mixer (d_state 8) are the
// context-length study's. GDLA (PVT-GDLA's mixer) also takes the square grid, for its local mixer.
// Swin's window attention runs on the same grids as UTNet's with windows 7 and 8,
// partition and reverse included.
// --device cuda runs it all on the GPU (memory: the caching allocator's peak).
// Usage: bench_attention [--threads N] [--repeats R] [--only attn_mhsa_n196,...] [--list]
//                        [--device cpu|cuda]
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;

namespace {

constexpr int64_t kDim = 256, kHeads = 8;

struct Variant {
    std::string name;  // registry name, and the name of the workload
    bool linear;       // must not materialize N x N: memory checked at 16384 (the softmax
                       // variants too: their fused attention keeps no map, ops/attention.h)
};

const std::vector<Variant> kVariants = {
    {"mhsa", true},    {"diff", true},       {"dgsa", true},        {"vitpt_softmax", true},
    {"seqnorm", true}, {"vitpt_sima", true}, {"sima", true},        {"utnet", true},
    {"pvt_sra", true}, {"pvt_sra_li", true}, {"hyena", true},       {"mamba", true},
    {"linear", true},  {"gdla", true},       {"swin_window", true},
};

// PVTv2 spatial reduction on a square grid: sr_ratio reduces the keys to a 7 x 7 or 8 x 8 grid,
// as PVTv2's stages do (56 / 8 = 7 at 224 px), so the key count stays fixed as N grows;
// "pvt_sra_li" is the linear variant (7 x 7 adaptive pooling).
int64_t pvt_sr_ratio(int64_t side) { return side % 7 == 0 ? side / 7 : side / 8; }

nn::attention::AttentionConfig config_for(const std::string& type, int64_t tokens) {
    nn::attention::AttentionConfig config;
    config.type = type;
    config.dim = kDim;
    config.num_heads = kHeads;
    config.head_dim = kDim / kHeads;
    if (type == "utnet") {
        int64_t side = int64_t(std::lround(std::sqrt(double(tokens))));
        config.options = {{"reduce_size", side % 8 == 0 ? 8.0 : 7.0}};
    }
    if (type == "sima") config.qkv_bias = false;  // the official SimA default
    if (type == "pvt_sra" || type == "pvt_sra_li") {
        int64_t side = int64_t(std::lround(std::sqrt(double(tokens))));
        config.type = "pvt_sra";
        config.options = {{"sr_ratio", double(pvt_sr_ratio(side))},
                          {"linear", type == "pvt_sra_li" ? 1.0 : 0.0}};
    }
    if (type == "swin_window") {
        // Swin's 7 x 7 windows on the 14 x 14 grid, 8 x 8 on 64 x 64 (and 128 x 128).
        int64_t side = int64_t(std::lround(std::sqrt(double(tokens))));
        config.options = {{"window", side % 8 == 0 ? 8.0 : 7.0}};
    }
    return config;
}

nn::attention::AttentionContext context_for(const std::string& type, int64_t tokens) {
    nn::attention::AttentionContext context;
    if (type == "utnet" || type == "pvt_sra" || type == "pvt_sra_li" || type == "gdla" ||
        type == "swin_window") {
        int64_t side = int64_t(std::lround(std::sqrt(double(tokens))));
        context.grid = {side, side};
    }
    return context;
}

// One forward + backward with a fixed upstream gradient; parameter gradients are cleared
// first, as a training step would.
struct Workload {
    std::shared_ptr<nn::attention::Attention> attention;
    nn::attention::AttentionContext context;
    Tensor x, grad;
    void run() const {
        attention->zero_grad();
        x.set_grad(Tensor());
        attention->forward(x, context).backward(grad);
    }
};

Workload make_workload(const std::string& type, int64_t tokens, Device device) {
    Generator generator(1);
    Workload w{nn::attention::make_attention(config_for(type, tokens)), context_for(type, tokens),
               randn({1, tokens, kDim}, DType::float32, &generator).to(device).requires_grad_(),
               randn({1, tokens, kDim}, DType::float32, &generator).to(device)};
    w.attention->to(device);
    return w;
}

const std::vector<int64_t> kTokens = {196, 1024, 4096, 16384};

// A lower bound of a quadratic variant's memory: the scores, the probabilities (kept for
// backward) and their gradient, N x N float32 per head (torch_attention.py uses the same).
double attention_maps_gb(int64_t tokens) {
    return 3.0 * 4 * double(tokens * tokens) * kHeads / 1e9;
}

std::string workload_name(const Variant& variant, int64_t tokens) {
    return "attn_" + variant.name + "_n" + std::to_string(tokens);
}

void run_workload(const Variant& variant, int64_t tokens, const Options& options) {
    double need_gb = variant.linear ? 0 : attention_maps_gb(tokens);
    measure_workload(
        workload_name(variant, tokens), need_gb, "3 N x N maps per head",
        [&]() -> std::function<void()> {
            auto w = std::make_shared<Workload>(make_workload(variant.name, tokens, options.device));
            return [w] { w->run(); };
        },
        options.repeats);
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (options.threads > 0) set_num_threads(options.threads);
    for (const Variant& variant : kVariants)
        for (int64_t tokens : kTokens) {
            std::string name = workload_name(variant, tokens);
            if (!selected(options, name)) continue;
            if (options.list)
                std::printf("%s\n", name.c_str());
            else
                run_workload(variant, tokens, options);
        }
    return 0;
}
