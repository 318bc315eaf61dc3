// Forward + backward of the spec-diff attentions (MHSA, MultiheadDiffAttn, MultiheadDGSA) at the
// issue-5 sizes: C = 256, 8 heads, N = 196 (B = 8) and N = 4096 (B = 1), float32 on the CPU.
// bench/torch_diff_attention.py times the PyTorch reference modules (oracle/ref_diff.py) the
// same way (SUITES=diff_attention bash bench/run.sh runs both). Usage: bench_diff_attention
// [--threads N] [--repeats R] [--long 0|1] (--long 0 skips N = 4096).
#include <cstring>
#include <string>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;

namespace {

void run(const std::string& type, int64_t batch, int64_t n, int repeats) {
    manual_seed(0);
    auto attn = nn::make_attention({.type = type, .dim = 256, .num_heads = 8});
    Tensor x = randn({batch, n, 256}).requires_grad_(true);
    Tensor w = randn({batch, n, 256});
    double forward = bench::median_seconds(
        [&] {
            NoGradGuard no_grad;
            attn->forward(x);
        },
        1, repeats);
    double both = bench::median_seconds(
        [&] {
            attn->zero_grad();
            sum(mul(attn->forward(x), w)).backward();
        },
        1, repeats);
    std::string name = type + "_B" + std::to_string(batch) + "_N" + std::to_string(n);
    bench::report(name + "_fwd", "tokens/s", double(batch * n) / forward, forward);
    bench::report(name + "_fwd_bwd", "tokens/s", double(batch * n) / both, both);
}

}  // namespace

int main(int argc, char** argv) {
    bench::Options options = bench::parse_options(argc, argv);
    if (options.threads > 0) set_num_threads(options.threads);
    bool long_sequences = true;
    for (int i = 1; i + 1 < argc; ++i)
        if (std::strcmp(argv[i], "--long") == 0) long_sequences = std::atoi(argv[i + 1]) != 0;
    for (const char* type : {"mhsa", "diff", "dgsa"}) {
        run(type, 8, 196, options.repeats);
        if (long_sequences) run(type, 1, 4096, std::max(1, options.repeats / 3));
    }
}
