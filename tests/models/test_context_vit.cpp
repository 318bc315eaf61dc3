// The ViT models of the context-length study (Hooper & Xue, Sec. 3): the backbone's hidden list,
// the UNETR layout table, the whole encoder-decoder model in 2-D and 3-D with both heads, the
// paper's parameter counts (Table 6, reproduced by the reference code), errors, and the oracle
// vectors.
#include "models/context_vit.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::models;

namespace {

ContextViTModelConfig tiny(const std::string& decoder, const std::string& mixer, int64_t time,
                           int64_t patch) {
    ContextViTModelConfig c;
    c.decoder = decoder;
    c.in_channels = 1;
    c.out_channels = 2;
    c.time = time;
    c.height = 2 * patch;
    c.width = 3 * patch;
    if (time > 1) c.time = patch;
    c.patch_size = patch;
    c.hidden_size = 6;
    c.mlp_dim = 8;
    c.num_layers = decoder == "unetr" ? 10 : 2;
    c.num_heads = 2;
    c.feature_size = 1;
    c.mixer.mixer = mixer;
    c.mixer.l_max = 16;
    c.mixer.filter_order = 4;
    return c;
}

// The paper's configurations: ViT-Small, feature size 32, 1024^2 2-D or 2 x 32 x 128^2 3-D.
ContextViTModelConfig paper(int64_t in, int64_t out, int64_t time, int64_t side, int64_t patch,
                            const std::string& decoder, const std::string& mixer) {
    ContextViTModelConfig c;
    c.decoder = decoder;
    c.in_channels = in;
    c.out_channels = out;
    c.time = time;
    c.height = c.width = side;
    c.patch_size = patch;
    c.mixer.mixer = mixer;
    return c;
}

}  // namespace

TEST_CASE("context ViT: hidden states, cls token and the zero table of the other mixers",
          "[models][context]") {
    ContextViTConfig c;
    c.in_channels = 2;
    c.img_size = {8, 12};
    c.patch_size = 4;
    c.hidden_size = 6;
    c.mlp_dim = 8;
    c.num_layers = 3;
    c.num_heads = 2;
    c.classification = true;
    ContextViT vit(c);
    REQUIRE(vit.cls_token.defined());
    std::vector<Tensor> hidden = vit.forward_hidden(ones({2, 2, 8, 12}));
    REQUIRE(hidden.size() == 5);
    CHECK(hidden[1].shape() == Shape{2, 7, 6});  // 6 patches + cls
    require_close(hidden[4], layer_norm(hidden[3], {6}, vit.norm->weight, vit.norm->bias), 1e-5,
                  1e-6);
    c.mixer.mixer = "mamba";
    ContextViT mamba(c);
    CHECK(!mamba.cls_token.defined());  // no cls token for Hyena / Mamba, as in the study
    CHECK(max(abs(mamba.patch_embedding->position_embeddings)).item<float>() == 0.0f);
    CHECK(mamba.state_dict().count("blocks.2.attn.mamba.A_log"));
}

TEST_CASE("context ViT: the UNETR table of the paper", "[models][context]") {
    UnetrLayout p2 = unetr_layout(2), p32 = unetr_layout(32);
    CHECK((p2.n2 == 0 && p2.n3 == 0 && p2.n4 == 0 && p2.u1 == 1 && p2.u4 == 2));
    CHECK((p32.n2 == 2 && p32.n3 == 1 && p32.n4 == 0 && p32.u1 == 4 && p32.u2 == 2));
    require_error([] { unetr_layout(12); }, {"[ViTUNETR]", "12"});
}

TEST_CASE("context ViT models: shapes in 2-D and 3-D with both heads", "[models][context]") {
    for (int64_t patch : {2, 4, 8}) {
        ContextViTModel model(tiny("unetr", "attn", 1, patch));
        CHECK(model.forward(ones({1, 1, 1, 2 * patch, 3 * patch})).shape() ==
              Shape{1, 2, 1, 2 * patch, 3 * patch});
    }
    ContextViTModel volume(tiny("unetr", "hyena", 4, 4));
    CHECK(volume.state_dict().count("decoder.encoder2.blocks.0.1.conv1.conv.weight"));
    CHECK(volume.forward(ones({1, 1, 4, 8, 12})).shape() == Shape{1, 2, 4, 8, 12});
    ContextViTModel cls(tiny("linear", "attn", 4, 4));
    CHECK(cls.state_dict().count("encoder.cls_token"));
    CHECK(cls.state_dict().count("decoder.classification_head.0.weight"));
    Tensor y = cls.forward(random_input({3, 1, 4, 8, 12}, 1).to(DType::float32));
    CHECK(y.shape() == Shape{3, 2});
    CHECK(max(abs(y)).item<float>() < 1.0f);  // Tanh head
    ContextViTModel pooled(tiny("linear", "mamba", 1, 4));
    CHECK(!pooled.state_dict().count("encoder.cls_token"));
    module_gradcheck(pooled, random_input({2, 1, 1, 8, 12}, 2));
    require_error(
        [&] {
            pooled.forward(ones({2, 1, 9, 12}));
        },
        {"[ContextViTModel]", "[2, 1, 9, 12]"});
    // A 2-D model also takes (B, C, H, W) and answers without the T axis.
    CHECK(pooled.forward(random_input({2, 1, 8, 12}, 3)).shape() == Shape{2, 2});
    require_error([] { ContextViTModel(tiny("upernet", "attn", 1, 4)); },
                  {"[ContextViTModel]", "upernet"});
}

TEST_CASE("context ViT models: the paper's parameter counts (Table 6)", "[models][context]") {
    struct Case {
        ContextViTModelConfig config;
        int64_t encoder, decoder;
    };
    std::vector<Case> cases = {
        // microscopy denoising, 1024^2, p16 attention
        {paper(1, 1, 1, 1024, 16, "unetr", "attn"), 22952064, 4327777},
        // CMR denoising, 2 x 32 x 128^2, p32 attention (3-D patches)
        {paper(2, 1, 32, 128, 32, "unetr", "attn"), 46452864, 11398945},
        // microscopy, p8 MambaVision mixer
        {paper(1, 1, 1, 1024, 8, "unetr", "mamba"), 24237696, 4321633},
        // pneumothorax classification, p32 attention with the cls token, linear head
        {paper(1, 2, 1, 1024, 32, "linear", "attn"), 22067712, 770},
        // microscopy, p8 Hyena (l_max 66000: 6 x 198000 positional parameters)
        {paper(1, 1, 1, 1024, 8, "unetr", "hyena"), 30223296, 4321633},
    };
    for (const Case& c : cases) {
        ContextViTModel model(c.config);
        INFO(c.config.mixer.mixer << " p" << c.config.patch_size << " " << c.config.decoder);
        CHECK(model.encoder->num_parameters() == c.encoder);
        CHECK(model.submodule("decoder").num_parameters() == c.decoder);
    }
}

TEST_CASE("context ViT backbones and models match the oracle vectors",
          "[models][context][oracle]") {
    require_oracle_vectors(
        {"vit_backbone_2d_attn", "vit_backbone_3d_attn_cls", "vit_backbone_2d_hyena",
         "vit_backbone_2d_mamba", "model_vit_unetr_2d_p4_attn", "model_vit_unetr_2d_p8_attn",
         "model_vit_unetr_2d_p16_attn", "model_vit_unetr_2d_p32_attn", "model_vit_unetr_3d_p4_attn",
         "model_vit_unetr_3d_p8_hyena", "model_vit_unetr_2d_p8_mamba",
         "model_vit_linear_2d_p8_hyena", "model_vit_linear_3d_p4_attn"},
        "context");
}
