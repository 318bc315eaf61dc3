// bench_attention: issue 5's goals for the attention zoo, the workloads of
// bench/torch_attention.py in lumen: forward + backward of every variant at C = 256 with 8
// heads (head width 32), batch 1, N = 196 and 4096 tokens, built through the attention
// registry exactly as models build them; then the peak memory of one forward + backward
// (the CPU allocator's high-water mark, lumen only) at N = 4096 and 16384 for the variants
// that must stay linear in N (16384 / 4096 <= 8x). UTNet's attention runs on square token
// grids (14x14 with reduce size 7, 64x64 and 128x128 with 8), as does PVTv2's spatial-reduction
// attention (keys reduced to 7x7 or 8x8; "pvt_sra_li" pools them to 7x7). Hyena (8 heads,
// the paper's l_max 66000, filter order 64) and the MambaVision mixer (d_state 8) are spec
// context's. GDLA (spec gdla's mixer) also takes the square grid, for its local mixer.
// Swin's window attention runs on the same grids as UTNet's with windows 7 and 8,
// partition and reverse included.
// Usage: bench_attention [--threads N] [--repeats R] [--only name1,name2]
#include <cmath>
#include <cstring>
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
    bool linear;       // must not materialize N x N: memory checked at 16384
};

const std::vector<Variant> kVariants = {
    {"mhsa", false},   {"diff", false},      {"dgsa", false}, {"vitpt_softmax", false},
    {"seqnorm", true}, {"vitpt_sima", true}, {"sima", true},  {"utnet", true},
    {"pvt_sra", true}, {"pvt_sra_li", true}, {"hyena", true}, {"mamba", true},
    {"linear", true},  {"gdla", true},      {"swin_window", true},
};

// PVTv2 spatial reduction on a square grid: sr_ratio reduces the keys to a 7 x 7 or 8 x 8 grid,
// as PVTv2's stages do (56 / 8 = 7 at 224 px), so the key count stays fixed as N grows;
// "pvt_sra_li" is the linear variant (7 x 7 adaptive pooling).
int64_t pvt_sr_ratio(int64_t side) { return side % 7 == 0 ? side / 7 : side / 8; }

nn::AttentionConfig config_for(const std::string& type, int64_t tokens) {
    nn::AttentionConfig config;
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

nn::AttentionContext context_for(const std::string& type, int64_t tokens) {
    nn::AttentionContext context;
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
    std::shared_ptr<nn::Attention> attention;
    nn::AttentionContext context;
    Tensor x, grad;
    void run() const {
        attention->zero_grad();
        x.set_grad(Tensor());
        attention->forward(x, context).backward(grad);
    }
};

Workload make_workload(const std::string& type, int64_t tokens) {
    Generator generator(1);
    Workload w{nn::make_attention(config_for(type, tokens)), context_for(type, tokens),
               randn({1, tokens, kDim}, DType::float32, &generator).requires_grad_(),
               randn({1, tokens, kDim}, DType::float32, &generator)};
    return w;
}

bool selected(const std::string& name, const std::vector<std::string>& only) {
    if (only.empty()) return true;
    for (const std::string& o : only)
        if (o == name) return true;
    return false;
}

double peak_mb(const Workload& w) {
    w.run();  // warm: the cache then holds what a step needs
    cpu_reset_peak_memory_stats();
    size_t before = cpu_memory_stats().allocated;
    w.run();
    return double(cpu_memory_stats().peak_allocated - before) / (1 << 20);
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (options.threads > 0) set_num_threads(options.threads);
    std::vector<std::string> only;
    for (int i = 1; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--only") != 0) continue;
        std::string list = argv[i + 1];
        for (size_t start = 0; start <= list.size();) {
            size_t comma = list.find(',', start);
            if (comma == std::string::npos) comma = list.size();
            only.push_back(list.substr(start, comma - start));
            start = comma + 1;
        }
    }
    for (const Variant& variant : kVariants) {
        if (!selected(variant.name, only)) continue;
        for (int64_t tokens : {196, 4096}) {
            Workload w = make_workload(variant.name, tokens);
            double s =
                median_seconds([&] { w.run(); }, 1,
                               tokens > 1000 ? std::min(options.repeats, 5) : options.repeats);
            report("attn " + variant.name + " N=" + std::to_string(tokens) + " fwd+bwd", "it/s",
                   1.0 / s, s);
        }
    }
    for (const Variant& variant : kVariants) {
        if (!variant.linear || !selected(variant.name, only)) continue;
        double small = peak_mb(make_workload(variant.name, 4096));
        double large = peak_mb(make_workload(variant.name, 16384));
        std::printf(
            "{\"name\": \"attn %s peak memory N=16384 / N=4096\", \"unit\": \"x (<= 8)\", "
            "\"value\": %.3f, \"ms\": 0, \"mb_4096\": %.1f, \"mb_16384\": %.1f}\n",
            variant.name.c_str(), large / small, small, large);
        std::fflush(stdout);
    }
    return 0;
}
