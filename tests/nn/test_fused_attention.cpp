// The fused attention path of every softmax variant (MHSA, the differential attention, M-DGSA,
// ViT-pytorch's softmax attention, Swin's window attention with its relative position bias and
// shift mask, PVT's spatial-reduction attention and PVT-GDLA's two softmax baselines, the context
// study's SABlock, UTNet's efficient attention) and of the linear attentions (PVT-LinearAttn,
// GDLA) against the unfused path
// of the same module (fused = false): outputs and the gradients of the input and of every
// parameter, in float64, in training mode with attention dropout (the same mask on both paths),
// with key padding and causal masks where the variant takes them.
#include <limits>
#include <memory>

#include "nn/attention/dgsa.h"
#include "nn/attention/diff_attn.h"
#include "nn/attention/gdla.h"
#include "nn/attention/linear_attention.h"
#include "nn/attention/mhsa.h"
#include "nn/attention/prenorm_softmax_attention.h"
#include "nn/attention/pvt_baselines.h"
#include "nn/attention/spatial_reduction_attention.h"
#include "nn/attention/utnet_attention.h"
#include "nn/attention/window_attention.h"
#include "nn/context/vit_blocks.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::nn::attention;

namespace {

// Output, input gradient and parameter gradients of sum(f(x) * w), the default generator seeded.
std::vector<Tensor> run(nn::Module& m, const std::function<Tensor(const Tensor&)>& f,
                        const Tensor& x_in) {
    manual_seed(123);
    Tensor x = x_in.detach();
    x.requires_grad_();
    Tensor y = f(x);
    std::vector<Tensor> leaves{x};
    for (const Tensor& p : m.parameters()) leaves.push_back(p);
    std::vector<Tensor> grads = grad({sum(mul(y, random_input(y.shape(), 77)))}, leaves);
    grads.insert(grads.begin(), y.detach());
    return grads;
}

// Runs m fused and unfused (set_fused switches) and compares everything.
void require_paths_agree(nn::Module& m, const std::function<void(bool)>& set_fused,
                         const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
    m.to(DType::float64);
    m.train();
    set_fused(true);
    std::vector<Tensor> fused = run(m, f, x);
    set_fused(false);
    std::vector<Tensor> unfused = run(m, f, x);
    set_fused(true);
    REQUIRE(fused.size() == unfused.size());
    for (size_t i = 0; i < fused.size(); ++i) {
        INFO((i == 0   ? "output"
              : i == 1 ? "input gradient"
                       : "parameter gradient ") +
             (i > 1 ? std::to_string(i - 2) : std::string()));
        REQUIRE(fused[i].defined() == unfused[i].defined());
        if (fused[i].defined()) require_close(fused[i], unfused[i], 1e-9, 1e-11);
    }
}

AttentionConfig config(const std::string& type, int64_t dim, int64_t heads, double attn_drop,
                       std::vector<std::pair<std::string, double>> options = {}) {
    AttentionConfig c;
    c.type = type;
    c.dim = dim;
    c.num_heads = heads;
    c.attn_drop = attn_drop;
    c.options = std::move(options);
    return c;
}

// (B, N) key padding: sample 1's last 30 tokens.
Tensor padding_mask(int64_t batch, int64_t n) {
    std::vector<uint8_t> values(size_t(batch * n), 0);
    for (int64_t j = n - 30; j < n; ++j) values[size_t(n + j)] = 1;
    return from_vector(values, {batch, n}).to(DType::bool_);
}

}  // namespace

TEST_CASE("fused attention: MHSA agrees with its unfused path", "[attention][fused]") {
    // 150 tokens: three query tiles and two key tiles of the fused kernel.
    Tensor x = random_input({2, 150, 16}, 1);
    auto m = std::dynamic_pointer_cast<MHSA>(make_attention(config("mhsa", 16, 2, 0.25)));
    auto set = [&](bool fused) { m->fused = fused; };
    SECTION("dropout") {
        require_paths_agree(
            *m, set, [&](const Tensor& t) { return m->forward(t); }, x);
    }
    SECTION("key padding and causal") {
        AttentionContext context{.key_padding_mask = padding_mask(2, 150), .causal = true};
        require_paths_agree(
            *m, set, [&](const Tensor& t) { return m->forward(t, context); }, x);
    }
}

TEST_CASE("fused attention: differential attention and M-DGSA agree with their unfused paths",
          "[attention][fused]") {
    Tensor x = random_input({2, 140, 16}, 2);
    AttentionContext padded{.key_padding_mask = padding_mask(2, 140)};
    SECTION("diff, dropout and RoPE") {
        auto m = std::dynamic_pointer_cast<MultiheadDiffAttn>(
            make_attention(config("diff", 16, 2, 0.2, {{"rope", 1}})));
        require_paths_agree(
            *m, [&](bool f) { m->fused = f; }, [&](const Tensor& t) { return m->forward(t); }, x);
    }
    SECTION("diff, causal with padded keys, no dropout") {
        auto m = std::dynamic_pointer_cast<MultiheadDiffAttn>(
            make_attention(config("diff", 16, 2, 0.0, {{"causal", 1}})));
        require_paths_agree(
            *m, [&](bool f) { m->fused = f; },
            [&](const Tensor& t) { return m->forward(t, padded); }, x);
    }
    SECTION("dgsa, dropout, query residual, padded keys") {
        auto m = std::dynamic_pointer_cast<MultiheadDGSA>(
            make_attention(config("dgsa", 16, 2, 0.3, {{"q_residual", 1}})));
        require_paths_agree(
            *m, [&](bool f) { m->fused = f; },
            [&](const Tensor& t) { return m->forward(t, padded); }, x);
    }
    SECTION("dgsa, causal, no dropout") {
        auto m = std::dynamic_pointer_cast<MultiheadDGSA>(
            make_attention(config("dgsa", 16, 2, 0.0, {{"causal", 1}})));
        require_paths_agree(
            *m, [&](bool f) { m->fused = f; }, [&](const Tensor& t) { return m->forward(t); }, x);
    }
}

TEST_CASE("fused attention: ViT-pytorch softmax, Swin windows, PVT SRA and SABlock agree",
          "[attention][fused]") {
    SECTION("vitpt_softmax with dropout") {
        auto m = std::dynamic_pointer_cast<PreNormSoftmaxAttention>(
            make_attention(config("vitpt_softmax", 16, 2, 0.2)));
        require_paths_agree(
            *m, [&](bool f) { m->fused = f; }, [&](const Tensor& t) { return m->forward(t); },
            random_input({2, 130, 16}, 3));
    }
    SECTION("swin_window: shifted 2-D windows, relative position bias and shift mask") {
        auto m = std::dynamic_pointer_cast<WindowAttention>(
            make_attention(config("swin_window", 16, 2, 0.0, {{"window", 4}, {"shift", 2}})));
        AttentionContext grid{.grid = {8, 12}};
        require_paths_agree(
            *m, [&](bool f) { m->fused = f; }, [&](const Tensor& t) { return m->forward(t, grid); },
            random_input({2, 96, 16}, 4));
    }
    SECTION("swin_window: 3-D windows of 4 x 4 x 4 = 64 tokens, shifted") {
        auto m = std::dynamic_pointer_cast<WindowAttention>(make_attention(
            config("swin_window", 8, 2, 0.0, {{"window", 4}, {"shift", 2}, {"spatial_dims", 3}})));
        AttentionContext grid{.grid = {4, 8, 8}};
        require_paths_agree(
            *m, [&](bool f) { m->fused = f; }, [&](const Tensor& t) { return m->forward(t, grid); },
            random_input({1, 256, 8}, 5));
    }
    SECTION("pvt_sra with dropout") {
        auto m = std::dynamic_pointer_cast<SRAttention>(
            make_attention(config("pvt_sra", 16, 2, 0.2, {{"sr_ratio", 2}})));
        AttentionContext grid{.grid = {12, 12}};
        require_paths_agree(
            *m, [&](bool f) { m->fused = f; }, [&](const Tensor& t) { return m->forward(t, grid); },
            random_input({2, 144, 16}, 6));
    }
    SECTION("PVT-GDLA's baselines: pvt_sa (RoPE) and pvt_da with padded keys") {
        Tensor x = random_input({2, 140, 16}, 8);
        AttentionContext padded{.key_padding_mask = padding_mask(2, 140)};
        auto sa = std::dynamic_pointer_cast<MultiHeadSelfAttn>(
            make_attention(config("pvt_sa", 16, 2, 0.0, {{"rope", 1}})));
        require_paths_agree(
            *sa, [&](bool f) { sa->fused = f; },
            [&](const Tensor& t) { return sa->forward(t, padded); }, x);
        auto da = std::dynamic_pointer_cast<MultiHeadDiffAttn>(
            make_attention(config("pvt_da", 16, 2, 0.0)));
        require_paths_agree(
            *da, [&](bool f) { da->fused = f; },
            [&](const Tensor& t) { return da->forward(t, padded); }, x);
    }
    SECTION("SABlock (MONAI self-attention)") {
        auto m = std::make_shared<nn::context::SABlock>(16, 4);
        require_paths_agree(
            *m, [&](bool f) { m->fused = f; }, [&](const Tensor& t) { return m->forward(t); },
            random_input({2, 150, 16}, 7));
    }
}

TEST_CASE("fused linear attention: PVT-LinearAttn and GDLA agree with their unfused paths",
          "[attention][fused][linear]") {
    SECTION("linear (MultiHeadLinearAttn)") {
        auto m = std::dynamic_pointer_cast<MultiHeadLinearAttn>(
            make_attention(config("linear", 16, 2, 0.0)));
        require_paths_agree(
            *m, [&](bool f) { m->fused = f; }, [&](const Tensor& t) { return m->forward(t); },
            random_input({2, 70, 16}, 9));
    }
    SECTION("gdla (GatedDiffLinearAttn), both branches") {
        auto m = std::dynamic_pointer_cast<GatedDiffLinearAttn>(
            make_attention(config("gdla", 16, 2, 0.0)));
        AttentionContext grid{.grid = {6, 9}};
        require_paths_agree(
            *m, [&](bool f) { m->fused = f; }, [&](const Tensor& t) { return m->forward(t, grid); },
            random_input({2, 54, 16}, 10));
    }
}

TEST_CASE("fused attention: UTNet's efficient attention agrees with its unfused path",
          "[attention][fused][utnet]") {
    for (const char* embedding : {"bias", "embedding"}) {
        INFO(embedding);
        LinearAttentionOptions o;
        o.heads = 2;
        o.dim_head = 4;
        o.reduce_size = 4;
        o.attn_drop = 0.2;
        o.rel_pos_type = embedding;
        auto encoder = std::make_shared<LinearAttention>(8, o);
        require_paths_agree(
            *encoder, [&](bool f) { encoder->fused = f; },
            [&](const Tensor& t) { return encoder->forward(t); }, random_input({2, 8, 8, 12}, 11));
        auto decoder = std::make_shared<LinearAttentionDecoder>(8, 6, o);
        Tensor low = random_input({2, 8, 4, 4}, 12);
        require_paths_agree(
            *decoder, [&](bool f) { decoder->fused = f; },
            [&](const Tensor& t) { return decoder->forward(t, low.to(DType::float64)).y; },
            random_input({2, 6, 8, 8}, 13));
    }
}
