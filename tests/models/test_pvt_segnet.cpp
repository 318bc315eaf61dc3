// PVT-GDLA and its baselines (Zheng et al. 2026, Sec. 3): the paper's parameter counts (Table 1),
// output shapes and key names for every decoder, the 1 -> 3 channel repeat checked against a
// 3-channel model, deep supervision not changing x1, config and input errors, float64 gradients of
// tiny networks, a deep-supervised BDoU step, and the network vectors (on CUDA too, with a GPU).
#include "conformance/check_vectors.h"
#include "models/pvt_segnet.h"
#include "ops/interpolate.h"
#include "support/gradcheck.h"
#include "train/loss.h"
#include "train/loss_seg.h"

using namespace lumen;
using namespace lumen::testing;
using lumen::models::PVTSegNet;
using lumen::models::PVTSegNetConfig;

namespace {

// The vectors' tiny network: encoder depths 1,1,1,1, widths 8,8,12,16, heads 1,1,2,2, mlp 4.
PVTSegNetConfig tiny_config(const std::string& decoder, int64_t in_chs = 1, bool ds = true) {
    PVTSegNetConfig c;
    c.decoder = decoder;
    c.in_chs = in_chs;
    c.n_classes = 3;
    c.encoder.depths = {1, 1, 1, 1};
    c.encoder.embed_dims = {8, 8, 12, 16};
    c.encoder.num_heads = {1, 1, 2, 2};
    c.encoder.mlp_ratios = {4, 4, 4, 4};
    c.n_heads = {2, 2, 3, 2};
    c.deepsupervision = ds;
    c.use_rope = decoder == "sa" || decoder == "da";
    return c;
}

// Smaller still for float64 gradient checks: widths 4,4,8,8 on a 32 x 32 image.
PVTSegNetConfig micro_config(const std::string& decoder) {
    PVTSegNetConfig c = tiny_config(decoder);
    c.n_classes = 2;
    c.encoder.embed_dims = {4, 4, 8, 8};
    c.encoder.num_heads = {1, 1, 2, 2};
    c.encoder.mlp_ratios = {1, 1, 1, 1};
    c.n_heads = {1, 1, 2, 2};  // head widths 4, 4, 4: DA's RoPE needs even half-heads
    c.hidden_ratio = 1.0;
    return c;
}

bool has_key(const nn::Module& m, const std::string& key) { return m.state_dict().count(key) > 0; }

}  // namespace

TEST_CASE("PVTSegNet: the paper's parameter counts (Table 1, Synapse head)",
          "[models][gdla][pvt_segnet]") {
    // Built whole: 32,134,607 (PVT-GDLA), 28,258,159 (SelfAttn, LinearAttn), 28,751,695 (DiffAttn).
    PVTSegNet gdla(models::pvt_segnet_config("gdla"));
    CHECK(gdla.num_parameters() == 32134607);
    // Spec 5's breakdown: encoder 24.85 M, de1 4.45 M, de2 0.72 M, de3 0.19 M, up-convs 1.92 M.
    CHECK(gdla.backbone->num_parameters() == 24849856);
    CHECK(std::llround(gdla.de1->num_parameters() / 1e4) == 445);
    CHECK(std::llround(gdla.de2->num_parameters() / 1e4) == 72);
    CHECK(std::llround(gdla.de3->num_parameters() / 1e4) == 19);
    int64_t ups =
        gdla.up1->num_parameters() + gdla.up2->num_parameters() + gdla.up3->num_parameters();
    CHECK(std::llround(ups / 1e4) == 192);
    // The baselines differ in the decoder only: count them with an encoder of depth 0 (stem,
    // downsamples and norms) plus the b2 blocks' share, to keep the test quick.
    int64_t b2_blocks = gdla.backbone->num_parameters();
    PVTSegNetConfig shallow = models::pvt_segnet_config("gdla");
    shallow.encoder.depths = {0, 0, 0, 0};
    b2_blocks -= PVTSegNet(shallow).backbone->num_parameters();
    for (auto [decoder, want] : std::vector<std::pair<std::string, int64_t>>{
             {"sa", 28258159}, {"la", 28258159}, {"da", 28751695}}) {
        PVTSegNetConfig c = models::pvt_segnet_config(decoder);
        c.encoder.depths = {0, 0, 0, 0};
        INFO(decoder);
        CHECK(PVTSegNet(c).num_parameters() + b2_blocks == want);
    }
    CHECK(models::pvt_segnet_config("sa").use_rope);
    CHECK_FALSE(models::pvt_segnet_config("la").use_rope);
    CHECK(models::pvt_segnet_config("da").deepsupervision);
}

TEST_CASE("PVTSegNet: outputs at input resolution and the official key names",
          "[models][gdla][pvt_segnet]") {
    for (const std::string decoder : {"gdla", "sa", "la", "da"}) {
        INFO(decoder);
        PVTSegNet net(tiny_config(decoder));
        std::vector<Tensor> out = net.forward_outputs(randn({2, 1, 32, 64}));
        REQUIRE(out.size() == 4);
        for (const Tensor& o : out) CHECK(o.shape() == Shape{2, 3, 32, 64});
        CHECK(net.forward(randn({1, 1, 64, 32})).shape() == Shape{1, 3, 64, 32});
        for (const char* key : {"backbone.stages.3.norm.weight", "up1.up.weight", "up3.up.weight",
                                "de1.norm1.weight", "de3.norm2.bias", "resblk.conv3.weight",
                                "resblk.norm1.running_var", "head1.bias", "head4.weight"})
            CHECK(has_key(net, key));
    }
    CHECK(has_key(*PVTSegNet(tiny_config("gdla")).de1, "attn.qkvg.weight"));
    CHECK(has_key(*PVTSegNet(tiny_config("da")).de2, "attn.lambda_q1"));
    CHECK(has_key(*PVTSegNet(tiny_config("da")).de2, "mlp.fc1.weight"));
    // Without deep supervision: one output and no head2..head4.
    PVTSegNet plain(tiny_config("la", 3, false));
    CHECK(plain.forward_outputs(randn({1, 3, 32, 32})).size() == 1);
    CHECK_FALSE(has_key(plain, "head2.weight"));
    CHECK(plain.head4 == nullptr);
}

TEST_CASE("PVTSegNet: a 1-channel image reaches the encoder repeated to 3 channels",
          "[models][gdla][pvt_segnet]") {
    // x4 = up32(head4(f4)) depends on the encoder alone: a 3-channel net with the same encoder
    // and head4, fed the image repeated by hand, must give the same x4.
    PVTSegNet gray(tiny_config("gdla", 1)), rgb(tiny_config("gdla", 3));
    rgb.backbone->load_state_dict(gray.backbone->state_dict());
    rgb.head4->load_state_dict(gray.head4->state_dict());
    Tensor x = randn({2, 1, 32, 32});
    Tensor repeated = cat({x, x, x}, 1);
    require_close(rgb.forward_outputs(repeated)[0], gray.forward_outputs(x)[0], 1e-5, 1e-6);
    // x4 is the bilinear x32 of a 1 x 1 map per class here: constant over the image.
    Tensor x4 = gray.forward_outputs(x)[0];
    require_close(x4, x4.narrow(2, 0, 1).narrow(3, 0, 1).expand(x4.shape()), 1e-6, 1e-7);
}

TEST_CASE("PVTSegNet: deep supervision adds outputs without changing x1",
          "[models][gdla][pvt_segnet]") {
    PVTSegNet with(tiny_config("sa")), without(tiny_config("sa", 1, false));
    without.load_state_dict(with.state_dict(), /*strict=*/false);
    with.eval();
    without.eval();
    Tensor x = randn({1, 1, 32, 32});
    require_close(without.forward(x), with.forward(x), 1e-6, 1e-7);
}

TEST_CASE("PVTSegNet: config and input errors", "[models][gdla][pvt_segnet]") {
    auto fails = [](PVTSegNetConfig c, const std::vector<std::string>& fragments) {
        require_error([&] { PVTSegNet net(c); }, fragments);
    };
    PVTSegNetConfig c = tiny_config("gdla");
    c.decoder = "swin";
    fails(c, {"[PVTSegNet]", "unknown decoder 'swin'"});
    c = tiny_config("gdla", 2);
    fails(c, {"[PVTSegNet]", "in_chs must be 1 or 3", "got 2"});
    c = tiny_config("gdla");
    c.n_classes = 0;
    fails(c, {"[PVTSegNet]", "n_classes"});
    c = tiny_config("gdla");
    c.us_ks = 4;
    fails(c, {"[PVTSegNet]", "us_ks", "got 4"});
    c = tiny_config("gdla");
    c.n_heads = {2, 2, 5, 2};
    fails(c, {"[PVTSegNet]", "decoder width 12", "n_heads[2] = 5"});
    c.n_heads = {2, 2, 3};
    fails(c, {"[PVTSegNet]", "n_heads needs 4 entries"});
    c = tiny_config("gdla");
    c.encoder.num_classes = 10;
    fails(c, {"[PVTSegNet]", "no classifier head"});
    c = tiny_config("gdla");
    c.encoder.depths = {1, 1};
    fails(c, {"[PyramidVisionTransformerV2]", "4 entries"});
    c = tiny_config("gdla");
    c.n_heads = {8, 2, 3, 2};  // 8 / 8 = 1 channel per head: GDLA needs an even head dim
    fails(c, {"[GatedDiffLinearAttn]", "even head dim"});
    require_error([] { models::pvt_segnet_config("mamba"); },
                  {"[pvt_segnet_config]", "unknown decoder 'mamba'"});
    PVTSegNet net(tiny_config("la"));
    require_error(
        [&] {
            net.forward(randn({1, 1, 32, 48}));
        },
        {"[PVTSegNet]", "multiples of 32", "[1, 1, 32, 48]"});
    require_error([&] { net.forward(randn({1, 3, 32, 32})); }, {"[PVTSegNet]", "(B, 1, H, W)"});
    require_error([&] { net.forward(randn({1, 32, 32})); }, {"[PVTSegNet]"});
}

TEST_CASE("PVTSegNet: float64 gradients of tiny networks, every decoder",
          "[models][gdla][pvt_segnet][gradcheck]") {
    for (const std::string decoder : {"gdla", "sa", "la", "da"}) {
        INFO(decoder);
        PVTSegNet net(micro_config(decoder));
        net.eval();  // the vectors' mode; ResBlk's batch statistics are checked in test_gdla_blocks
        INFO(net.num_parameters() << " parameters");
        module_gradcheck(
            net,
            [&](const std::vector<Tensor>& in) {
                // An 8 x 8 image blown up to 32 x 32 (nearest) keeps the input's finite
                // differences few while its gradient still runs through every path.
                Tensor x = interpolate(in[0], {32, 32});
                std::vector<Tensor> out = net.forward_outputs(x);
                // x1 whole and the DS outputs through a strided sample (they are smooth
                // up-samplings of small maps).
                return cat({out[3].flatten(), out[0].flatten().slice(0, 0, 2048, 97),
                            out[1].flatten().slice(0, 0, 2048, 89),
                            out[2].flatten().slice(0, 0, 2048, 83)},
                           0);
            },
            {random_input({1, 1, 8, 8}, 7)}, 1e-5, 1e-6, 61);
    }
}

TEST_CASE("PVTSegNet: a deep-supervised BDoU step reaches every parameter",
          "[models][gdla][pvt_segnet]") {
    PVTSegNet net(tiny_config("gdla"));
    Tensor x = randn({2, 1, 32, 32});
    Tensor target = random_index({2, 32, 32}, 3, 11);
    Tensor loss = train::deep_supervision_loss(net.forward_outputs(x), target, {1, 1, 1, 1},
                                               train::BoundaryDoULoss());
    loss.backward();
    CHECK(std::isfinite(loss.item<float>()));
    for (const auto& [name, p] : net.named_parameters()) {
        INFO(name);
        REQUIRE(p.grad().defined());
        CHECK(std::isfinite(sum(abs(p.grad())).item<float>()));
    }
}

TEST_CASE("PVTSegNet vectors of PVT-GDLA pass", "[models][gdla][pvt_segnet][vectors]") {
    require_oracle_vectors({"pvt_gdla_tiny_in1_K3_ds_32x64", "pvt_gdla_tiny_in3_K2_64x64",
                            "pvt_sa_tiny_in1_K3_ds_32x64", "pvt_la_tiny_in1_K3_ds_32x64",
                            "pvt_da_tiny_in1_K3_ds_32x64"},
                           "gdla");
}

TEST_CASE("PVTSegNet on CUDA: the network vectors pass and the GPU matches the CPU",
          "[models][gdla][pvt_segnet][cuda]") {
    if (!have_gpu()) return;
    for (const char* name : {"pvt_gdla_tiny_in1_K3_ds_32x64", "pvt_gdla_tiny_in3_K2_64x64",
                             "pvt_sa_tiny_in1_K3_ds_32x64", "pvt_la_tiny_in1_K3_ds_32x64",
                             "pvt_da_tiny_in1_K3_ds_32x64"}) {
        std::string path = std::string(LUMEN_TEST_DATA) + "/oracle/gdla/" + name + ".safetensors";
        conformance::VectorResult result =
            conformance::check_vector_file(path, name, Device::cuda());
        INFO(conformance::format_result(result));
        CHECK(result.passed);
    }
    for (const std::string decoder : {"gdla", "sa", "la", "da"}) {
        INFO(decoder);
        PVTSegNet net(tiny_config(decoder));
        Tensor x = random_input({2, 1, 32, 64}, 43).to(DType::float32);
        std::vector<Tensor> cpu = net.forward_outputs(x);
        net.to(Device::cuda());
        std::vector<Tensor> gpu = net.forward_outputs(x.to(Device::cuda()));
        for (size_t i = 0; i < cpu.size(); ++i) require_close(gpu[i].cpu(), cpu[i], 1e-4, 1e-4);
    }
}
