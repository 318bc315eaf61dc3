// Swin's layers (the context-length study's MONAI copy): PatchEmbed padding, PatchMergingV2's
// sub-grid order against index loops, the block (shift, padding, clipped windows, mixer rules), the
// stage and the backbone's shapes and names, float64 gradchecks, and the oracle vectors.
#include "nn/swin/swin_transformer.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::nn::swin;

namespace {

bool has_key(const nn::Module& m, const std::string& key) { return m.state_dict().count(key) > 0; }

// The 2^k sub-grids concatenated in the spec's order, by index loops over the zero-padded map.
Tensor naive_merge(const Tensor& x) {
    int64_t k = x.ndim() - 2, c = x.size(-1);
    Shape in(x.shape().begin() + 1, x.shape().end() - 1), out = in;
    for (int64_t& s : out) s = (s + 1) / 2;
    int64_t cells = 1;
    for (int64_t s : out) cells *= s;
    int64_t parts = int64_t(1) << k;
    std::vector<double> values = x.to_vector<double>();
    std::vector<double> merged(static_cast<size_t>(x.size(0) * cells * parts * c));
    for (int64_t b = 0; b < x.size(0); ++b)
        for (int64_t cell = 0; cell < cells; ++cell)
            for (int64_t part = 0; part < parts; ++part) {
                // 2-D order (h, w): (0,0), (1,0), (0,1), (1,1); 3-D: (d, h, w) lexicographic.
                Shape at = unravel(cell, out), source = {b};
                bool inside = true;
                for (int64_t d = 0; d < k; ++d) {
                    int64_t offset = k == 2 ? (part >> d) & 1 : (part >> (k - 1 - d)) & 1;
                    int64_t i = 2 * at[size_t(d)] + offset;
                    inside = inside && i < in[size_t(d)];
                    source.push_back(i);
                }
                source.push_back(0);
                for (int64_t ch = 0; ch < c; ++ch) {
                    source.back() = ch;
                    merged[size_t(((b * cells + cell) * parts + part) * c + ch)] =
                        inside ? values[size_t(ravel(source, x.shape()))] : 0.0;
                }
            }
    Shape shape = {x.size(0)};
    shape.insert(shape.end(), out.begin(), out.end());
    shape.push_back(parts * c);
    return from_vector(merged, shape);
}

}  // namespace

TEST_CASE("PatchEmbed pads every spatial dim to a multiple of the patch", "[nn][swin]") {
    PatchEmbed embed({2}, 3, 6, 2);
    embed.to(DType::float64);
    CHECK(embed.proj->weight.shape() == Shape{6, 3, 2, 2});
    Tensor x = random_input({2, 3, 7, 10}, 1);
    Tensor want = conv2d(pad(x, {0, 0, 0, 1}), embed.proj->weight, embed.proj->bias, {2});
    require_close(embed.forward(x), want, 1e-12, 1e-12);
    PatchEmbed embed3({2, 2, 2}, 2, 4, 3);
    CHECK(embed3.forward(ones({1, 2, 5, 6, 7})).shape() == Shape{1, 4, 3, 3, 4});
    require_error(
        [&] {
            embed.forward(ones({2, 4, 8, 8}, DType::float64));
        },
        {"[PatchEmbed]", "[2, 4, 8, 8]"});
    module_gradcheck(embed3, random_input({1, 2, 3, 2, 3}, 2));
}

TEST_CASE("PatchMergingV2 concatenates the sub-grids in the spec's order", "[nn][swin]") {
    for (int64_t nd : {2, 3}) {
        PatchMergingV2 merging(5, nd);
        merging.to(DType::float64);
        CHECK(merging.reduction->weight.shape() == Shape{10, (int64_t(1) << nd) * 5});
        CHECK(!merging.reduction->bias.defined());
        Tensor x = nd == 2 ? random_input({2, 7, 9, 5}, 3) : random_input({1, 3, 5, 4, 5}, 4);
        Tensor want = merging.reduction->forward(merging.norm->forward(naive_merge(x)));
        require_close(merging.forward(x), want, 1e-12, 1e-12);
        module_gradcheck(
            merging, nd == 2 ? random_input({1, 3, 2, 5}, 5) : random_input({1, 3, 2, 1, 5}, 6));
    }
    require_error([] { PatchMergingV2 bad(4, 1); }, {"[PatchMergingV2]", "spatial_dims"});
}

TEST_CASE("SwinTransformerBlock: names, shifted and padded windows, mixer rules", "[nn][swin]") {
    SwinTransformerBlock block(6, 2, {4, 4}, {2, 2});
    for (const char* key : {"norm1.weight", "attn.relative_position_bias_table",
                            "attn.relative_position_index", "attn.qkv.bias", "attn.proj.weight",
                            "norm2.bias", "mlp.linear1.weight", "mlp.linear2.bias"})
        CHECK(has_key(block, key));
    CHECK(block.mlp->linear1->weight.shape() == Shape{24, 6});
    Tensor x = random_input({1, 5, 6, 6}, 7).to(DType::float32);
    CHECK(block.forward(x).shape() == x.shape());
    // Without a mask a shifted block refuses: the mask comes from its stage.
    require_error([&] { block.forward(x, Tensor()); }, {"[SwinTransformerBlock]", "mask"});
    require_error(
        [] {
            SwinTransformerBlock bad(6, 2, {4, 4}, {2, 2}, 4.0, true, {"hyena", {}});
        },
        {"[SwinTransformerBlock]", "never shifts"});
    require_error(
        [] {
            SwinTransformerBlock bad(6, 2, {4, 4}, {4, 0});
        },
        {"[SwinTransformerBlock]", "shift_size"});
}

TEST_CASE("SwinTransformerBlock gradients match finite differences", "[nn][swin]") {
    SwinTransformerBlock block2(4, 2, {3, 3}, {1, 1}, 2.0);
    module_gradcheck(block2, random_input({1, 4, 5, 4}, 8));  // padded to 6 x 6, shifted
    // 3-D with the depth clipped to 2 (window 2 x 3 x 3, shift 0 in depth).
    SwinTransformerBlock block3(4, 1, {3, 3, 3}, {1, 1, 1}, 1.0);
    module_gradcheck(block3, random_input({1, 2, 4, 3, 4}, 9));
}

TEST_CASE("Swin with Hyena / MambaVision windows: names, no shift, gradients", "[nn][swin]") {
    SwinMixer hyena{"hyena", {{"l_max", 16}, {"filter_order", 4}}}, mamba{"mamba", {}};
    SwinTransformerBlock hb(4, 2, {3, 3}, {0, 0}, 2.0, true, hyena);
    for (const char* key : {"attn.hyena.in_proj.weight", "attn.hyena.short_filter.weight",
                            "attn.hyena.filter_fn.pos_emb.z", "attn.hyena.out_proj.bias"})
        CHECK(has_key(hb, key));
    CHECK_FALSE(has_key(hb, "attn.relative_position_bias_table"));
    SwinTransformerBlock mb(4, 2, {3, 3}, {0, 0}, 2.0, true, mamba);
    for (const char* key : {"attn.mamba.in_proj.weight", "attn.mamba.A_log", "attn.mamba.D",
                            "attn.mamba.x_proj.weight", "attn.mamba.dt_proj.bias"})
        CHECK(has_key(mb, key));
    // A stage of Hyena/Mamba windows never shifts (Hooper & Xue, Sec. 3 footnote) and builds no
    // mask.
    BasicLayer layer(4, 3, 2, {3, 3}, 2.0, true, mamba);
    CHECK(layer.shift_size == std::vector<int64_t>{0, 0});
    for (size_t i = 0; i < 3; ++i)
        CHECK((*layer.blocks)[i].shift_size == std::vector<int64_t>{0, 0});
    CHECK(layer.forward(random_input({1, 4, 7, 5}, 12).to(DType::float32)).shape() ==
          Shape{1, 8, 4, 3});
    // A mixer window is mixed as its own sequence: a token outside it changes nothing inside.
    Tensor x = random_input({1, 6, 6, 4}, 13).to(DType::float32);
    Tensor changed = x.clone();
    changed.narrow(1, 5, 1).narrow(2, 5, 1).fill_(3.0);
    Tensor a = hb.forward(x), b = hb.forward(changed);
    require_close(a.narrow(1, 0, 3).narrow(2, 0, 3), b.narrow(1, 0, 3).narrow(2, 0, 3), 0, 0);
    // float64 gradients through the padded (5 x 4 -> 6 x 6) windows.
    module_gradcheck(hb, random_input({1, 5, 4, 4}, 14));
    module_gradcheck(mb, random_input({1, 5, 4, 4}, 15));
}

TEST_CASE("BasicLayer shifts its odd blocks and merges patches at the end", "[nn][swin]") {
    BasicLayer layer(4, 3, 2, {4, 4});
    CHECK(layer.shift_size == std::vector<int64_t>{2, 2});
    CHECK(layer.blocks->size() == 3);
    CHECK((*layer.blocks)[0].shift_size == std::vector<int64_t>{0, 0});
    CHECK((*layer.blocks)[1].shift_size == std::vector<int64_t>{2, 2});
    CHECK(has_key(layer, "downsample.reduction.weight"));
    Tensor x = random_input({2, 4, 9, 7}, 10).to(DType::float32);
    CHECK(layer.forward(x).shape() == Shape{2, 8, 5, 4});
    require_error([&] { layer.forward(ones({2, 5, 9, 7})); }, {"[BasicLayer]", "[2, 5, 9, 7]"});
    BasicLayer small(2, 2, 1, {2, 2});
    module_gradcheck(
        small, [&](const std::vector<Tensor>& in) { return small.forward(in[0]); },
        {random_input({1, 2, 3, 4}, 11)}, 1e-5, 1e-6, 2);
}

TEST_CASE("SwinTransformer: five channel-normalized levels at ceil-halved sizes", "[nn][swin]") {
    SwinOptions o;
    o.in_chans = 2;
    o.embed_dim = 3;
    o.window_size = {4};
    o.depths = {2, 2, 1, 1};
    o.num_heads = {1, 2, 2, 4};
    SwinTransformer swin(o);
    CHECK(has_key(swin, "patch_embed.proj.weight"));
    CHECK(has_key(swin, "layers1.0.blocks.1.attn.relative_position_index"));
    CHECK(has_key(swin, "layers4.0.downsample.reduction.weight"));
    std::vector<Tensor> levels = swin.forward_features(ones({1, 2, 38, 54}));
    std::vector<Shape> want = {
        {1, 3, 19, 27}, {1, 6, 10, 14}, {1, 12, 5, 7}, {1, 24, 3, 4}, {1, 48, 2, 2}};
    REQUIRE(levels.size() == 5);
    for (size_t i = 0; i < 5; ++i) CHECK(levels[i].shape() == want[i]);
    // Channel LayerNorm without affine: every position has mean 0 over channels.
    Tensor means = mean(levels[2], {1});
    require_close(means, zeros_like(means), 0, 1e-5);
    o.depths = {2, 2, 2};
    require_error([&] { SwinTransformer bad(o); }, {"[SwinTransformer]", "4 depths"});
}

TEST_CASE("Swin layer vectors pass", "[nn][swin][vectors]") {
    require_oracle_vectors(
        {"swin_patch_embed_2d_pad", "swin_patch_embed_3d_pad", "swin_patch_merging_2d_odd",
         "swin_patch_merging_3d_odd", "swin_block_2d_shift_pad", "swin_block_2d_noshift",
         "swin_block_3d_shift_pad", "swin_block_3d_clipD", "swin_block_3d_clipH",
         "swin_basic_layer_2d", "swin_basic_layer_3d", "swin_backbone_2d_attn",
         "swin_backbone_3d_attn", "swin_block_2d_hyena", "swin_block_2d_mamba",
         "swin_backbone_2d_hyena", "swin_backbone_2d_mamba"},
        "context");
}
