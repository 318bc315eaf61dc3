// The softmax-free paper's ViT: patchify, embedding, vit-pytorch Transformer, head.
#include "models/sfree_vit.h"

#include "nn/activation.h"
#include "nn/checkpoint.h"
#include "nn/embed.h"
#include "nn/init.h"
#include "ops/elementwise.h"
#include "ops/reduce.h"

namespace lumen::models {

namespace {

const char* kName = "SfreeViT";

// The parameter-free first step of to_patch_embedding (vit-pytorch's Rearrange).
class Patchify : public nn::Module {
  public:
    explicit Patchify(std::vector<int64_t> sizes) : Module("Patchify"), sizes_(std::move(sizes)) {}
    Tensor forward(const Tensor& x) override {
        if (sizes_.size() == 2) return patchify2d(x, sizes_[0], sizes_[1]);
        return patchify3d(x, sizes_[0], sizes_[1], sizes_[2]);
    }

  private:
    std::vector<int64_t> sizes_;  // {p1, p2} or {pf, p1, p2}
};

// One transformer layer: children "0" (attention) and "1" (FeedForward), as the reference's
// inner nn.ModuleList.
class TransformerLayer : public nn::Module {
  public:
    TransformerLayer(std::shared_ptr<nn::attention::Attention> attention,
                     std::shared_ptr<FeedForward> ff)
        : Module("ModuleList") {
        register_module("0", std::move(attention));
        register_module("1", std::move(ff));
    }
};

}  // namespace

FeedForward::FeedForward(int64_t dim, int64_t hidden_dim, double dropout) : Module("FeedForward") {
    net = register_module("net", nn::make<nn::Sequential>());
    net->push_back(nn::make<nn::LayerNorm>(Shape{dim}, 1e-5));
    net->push_back(nn::make<nn::Linear>(dim, hidden_dim));
    net->push_back(nn::make<nn::GELU>());
    net->push_back(nn::make<nn::Dropout>(dropout));
    net->push_back(nn::make<nn::Linear>(hidden_dim, dim));
    net->push_back(nn::make<nn::Dropout>(dropout));
}

Tensor FeedForward::forward(const Tensor& x) { return net->forward(x); }

std::string attention_name(const std::string& attn) {
    if (attn == "softmax") return "vitpt_softmax";
    if (attn == "seqnorm") return "seqnorm";
    if (attn == "sima") return "vitpt_sima";
    LUMEN_FAIL(kName, "attn must be softmax, seqnorm or sima, got '", attn, "'");
}

SfreeTransformer::SfreeTransformer(const SfreeViTConfig& c)
    : Module("Transformer"), grad_checkpointing(c.grad_checkpointing) {
    norm = register_module("norm", nn::make<nn::LayerNorm>(Shape{c.dim}, 1e-5));
    auto list = nn::make<nn::ModuleList<nn::Module>>();
    layers = register_module("layers", list);
    nn::attention::AttentionConfig ac;
    ac.type = attention_name(c.attn);
    ac.dim = c.dim;
    ac.num_heads = c.heads;
    ac.head_dim = c.dim_head;
    ac.qkv_bias = false;
    // vit-pytorch's one `dropout` acts on the softmax weights and after to_out; the
    // softmax-free mixes have no weights to drop.
    ac.attn_drop = c.attn == "softmax" ? c.dropout : 0.0;
    ac.proj_drop = c.dropout;
    if (c.attn == "seqnorm") ac.options = {{"eps", c.seqnorm_eps}};
    for (int64_t l = 0; l < c.depth; ++l) {
        ac.layer_index = l;
        attentions.push_back(nn::attention::make_attention(ac));
        feed_forwards.push_back(nn::make<FeedForward>(c.dim, c.mlp_dim, c.dropout));
        list->push_back(nn::make<TransformerLayer>(attentions.back(), feed_forwards.back()));
    }
}

Tensor SfreeTransformer::forward(const Tensor& x_in) {
    Tensor x = x_in;
    for (size_t l = 0; l < attentions.size(); ++l) {
        auto layer = [attention = attentions[l],
                      ff = feed_forwards[l]](const std::vector<Tensor>& in) {
            Tensor h = add(attention->forward(in[0]), in[0]);
            return add(ff->forward(h), h);
        };
        std::vector<Tensor> params = attentions[l]->parameters();
        for (const Tensor& p : feed_forwards[l]->parameters()) params.push_back(p);
        x = nn::checkpoint_every(grad_checkpointing, int64_t(l), layer, {x}, params);
    }
    return norm->forward(x);
}

SfreeViT::SfreeViT(const SfreeViTConfig& config) : Module("SfreeViT"), config_(config) {
    config_.validate();
    const SfreeViTConfig& c = config_;
    to_patch_embedding = register_module("to_patch_embedding", nn::make<nn::Sequential>());
    if (c.tokenizer == "bag") {
        to_patch_embedding->push_back(nn::make<nn::Identity>());
    } else if (c.tokenizer == "patch2d") {
        to_patch_embedding->push_back(nn::make<Patchify>(c.patch_size));
    } else {
        to_patch_embedding->push_back(nn::make<Patchify>(
            std::vector<int64_t>{c.frame_patch_size, c.patch_size[0], c.patch_size[1]}));
    }
    to_patch_embedding->push_back(nn::make<nn::LayerNorm>(Shape{c.patch_dim()}, 1e-5));
    to_patch_embedding->push_back(nn::make<nn::Linear>(c.patch_dim(), c.dim));
    to_patch_embedding->push_back(nn::make<nn::LayerNorm>(Shape{c.dim}, 1e-5));
    if (c.tokenizer != "bag") {
        pos_embedding = register_parameter("pos_embedding", empty({1, c.num_patches() + 1, c.dim}));
        nn::init::normal_(pos_embedding);
    }
    cls_token = register_parameter("cls_token", empty({1, 1, c.dim}));
    nn::init::normal_(cls_token);
    dropout = register_module("dropout", nn::make<nn::Dropout>(c.emb_dropout));
    transformer = register_module("transformer", nn::make<SfreeTransformer>(c));
    mlp_head = register_module("mlp_head", nn::make<nn::Linear>(c.dim, c.num_classes));
}

void SfreeViT::check_input(const Tensor& x) const {
    const SfreeViTConfig& c = config_;
    if (c.tokenizer == "bag") {
        LUMEN_CHECK(x.ndim() == 3 && x.size(1) >= 1 && x.size(2) == c.feat_dim, kName,
                    "expects a bag x (B, N, ", c.feat_dim, ") with N >= 1, got shape ", x.shape());
    } else if (c.tokenizer == "patch2d") {
        Shape want{x.ndim() ? x.size(0) : 0, c.channels, c.image_size[0], c.image_size[1]};
        LUMEN_CHECK(x.shape() == want, kName, "expects images (B, ", c.channels, ", ",
                    c.image_size[0], ", ", c.image_size[1], "), got shape ", x.shape());
    } else {
        Shape want{x.ndim() ? x.size(0) : 0, c.channels, c.frames, c.image_size[0],
                   c.image_size[1]};
        LUMEN_CHECK(x.shape() == want, kName, "expects volumes (B, ", c.channels, ", ", c.frames,
                    ", ", c.image_size[0], ", ", c.image_size[1], "), got shape ", x.shape());
    }
}

Tensor SfreeViT::forward(const Tensor& x) {
    check_input(x);
    Tensor z = nn::prepend_token(to_patch_embedding->forward(x), cls_token);
    if (pos_embedding.defined()) z = add(z, pos_embedding);
    z = transformer->forward(dropout->forward(z));
    Tensor pooled = config_.pool == "mean" ? mean(z, {1}) : z.select(1, 0);
    return mlp_head->forward(pooled);
}

}  // namespace lumen::models
