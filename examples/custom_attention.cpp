// A new attention variant in one file: cosine attention (Swin V2's scaled cosine attention:
// logits = cos(q_i, k_j) * exp(logit_scale) with a learned per-head temperature, in place of
// q . k / sqrt(d)). It is defined as a module, registered under a name, gradient-checked
// against finite differences, dropped into the ViT by config and trained for a few steps.
#include <cmath>
#include <cstdio>

#include "lumen/lumen.h"
#include "models/vit.h"
#include "train/optim.h"

using namespace lumen;

// Shapes: x (B, N, C) -> (B, N, C); nh heads of width Hd = C / nh.
class CosineAttention : public nn::attention::Attention {
  public:
    CosineAttention(int64_t dim, int64_t num_heads)
        : nn::attention::Attention("CosineAttention"), heads_(num_heads) {
        qkv = register_module("qkv", nn::make<nn::Linear>(dim, 3 * dim));
        proj = register_module("proj", nn::make<nn::Linear>(dim, dim));
        logit_scale = register_parameter("logit_scale", full({num_heads, 1, 1}, std::log(10.0)));
    }
    using nn::attention::Attention::forward;  // keep forward(x) visible beside the override below
    Tensor forward(const Tensor& x, const nn::attention::AttentionContext&) override {
        int64_t B = x.size(0), N = x.size(1), C = x.size(2), Hd = C / heads_;
        // (B, N, 3C) -> (3, B, nh, N, Hd)
        Tensor qkv_heads = qkv->forward(x).view({B, N, 3, heads_, Hd}).permute({2, 0, 3, 1, 4});
        Tensor q = normalize(qkv_heads.select(0, 0), 2.0, -1);
        Tensor k = normalize(qkv_heads.select(0, 1), 2.0, -1);
        Tensor logits = mul(matmul(q, k.transpose(-2, -1)), exp(logit_scale));
        Tensor out = matmul(softmax(logits, -1), qkv_heads.select(0, 2));  // (B, nh, N, Hd)
        return proj->forward(out.transpose(1, 2).reshape({B, N, C}));
    }
    std::shared_ptr<nn::Linear> qkv, proj;
    Tensor logit_scale;

  private:
    int64_t heads_;
};

// The name models use in their config to pick it.
const nn::attention::AttentionRegistration kCosine(
    "cosine", [](const nn::attention::AttentionConfig& config) {
        return std::make_shared<CosineAttention>(config.dim, config.num_heads);
    });

int main() {
    manual_seed(0);
    // 1. Gradient check in float64 on a tiny instance: input and every parameter.
    CosineAttention tiny(8, 2);
    tiny.to(DType::float64);
    Tensor x = randn({2, 5, 8}, DType::float64);
    GradientCheckResult check = check_gradients(
        [&](const std::vector<Tensor>& in) { return tiny.forward(in[0]); }, {x}, tiny.parameters());
    std::printf("gradient check: %s (max error %.2e) %s\n", check.passed ? "passed" : "FAILED",
                check.max_abs_error, check.failure.c_str());

    // 2. The ViT with every block's attention swapped by name.
    models::ViTConfig config = models::vit_config(/*num_classes=*/4, {16, 16}, 1, /*drop=*/0.0);
    config.embed_dim = 32, config.depth = 2, config.num_heads = 4;
    config.block.attn_type = "cosine";
    models::ViT vit(config);
    std::printf("ViT with %s: %lld parameters\n",
                vit.blocks->operator[](0).attn->type_name().c_str(),
                (long long)vit.num_parameters());

    // 3. A few SGD steps on a toy task: tell four noisy textures apart (horizontal stripes,
    // vertical stripes, diagonal stripes, flat grey).
    Tensor row = arange(16, DType::float32).view({16, 1}),
           col = arange(16, DType::float32).view({1, 16});
    // 1 where t mod 4 is 0 or 1: stripes two pixels wide.
    auto stripes = [](const Tensor& t) {
        return gt(sin(add(mul(t, M_PI / 2), M_PI / 4)), 0.0).to(DType::float32);
    };
    Tensor textures = stack({stripes(row).expand({16, 16}), stripes(col).expand({16, 16}),
                             stripes(add(row, col)), full({16, 16}, 0.5)});
    train::SGD optimizer(vit.parameters(), 0.05, {.momentum = 0.9});
    for (int step = 0; step <= 40; ++step) {
        Tensor labels = randint(0, 4, {32});
        Tensor images = add(index_select(textures, 0, labels), mul(rand({32, 16, 16}), 0.5));
        Tensor loss = cross_entropy(vit.forward(images.unsqueeze(1)), labels);
        optimizer.zero_grad();
        loss.backward();
        optimizer.step();
        if (step % 10 == 0) std::printf("step %2d  loss %.4f\n", step, loss.item<double>());
    }
    return check.passed ? 0 : 1;
}
