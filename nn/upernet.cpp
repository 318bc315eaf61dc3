// UPerNet head (Hooper & Xue's seg_heads.py): pyramid pooling, the FPN with its one shared
// smoothing conv, fusion and the full-size head, built from conv / batch norm / interpolate ops.
#include "nn/upernet.h"

#include "nn/activation.h"
#include "nn/norm.h"
#include "ops/elementwise.h"
#include "ops/interpolate.h"
#include "ops/shape.h"

namespace lumen::nn {

namespace {

std::shared_ptr<Conv> conv(int64_t nd, int64_t in, int64_t out, int64_t kernel, int64_t padding,
                           bool bias) {
    return make<Conv>(nd == 2 ? "Conv2d" : "Conv3d", int(nd), false, in, out,
                      std::vector<int64_t>{kernel},
                      ConvOptions{.padding = {padding}, .bias = bias});
}

std::shared_ptr<Module> batch_norm(int64_t nd, int64_t channels) {
    if (nd == 2) return make<BatchNorm2d>(channels);
    return make<BatchNorm3d>(channels);
}

std::vector<int64_t> spatial_of(const Tensor& x) {
    return std::vector<int64_t>(x.shape().begin() + 2, x.shape().end());
}

// (Bi/tri)linear resize of the spatial dims to `size`.
Tensor resize(const Tensor& x, const std::vector<int64_t>& size, bool align_corners) {
    if (align_corners && spatial_of(x) == size) return x;  // the identity map, exactly
    return interpolate(x, size, {}, x.ndim() == 4 ? "bilinear" : "trilinear", align_corners);
}

}  // namespace

PSPModule::PSPModule(int64_t nd, int64_t in_channels, std::vector<int64_t> bin_sizes,
                     double dropout_p)
    : Module("PSPModule") {
    int64_t branch = in_channels / int64_t(bin_sizes.size());
    stages = register_module("stages", make<ModuleList<Sequential>>());
    for (int64_t bins : bin_sizes) {
        auto stage = make<Sequential>();
        stage->push_back(make<AdaptivePool>(int(nd), true, bins));
        stage->push_back(conv(nd, in_channels, branch, 1, 0, false));
        stage->push_back(batch_norm(nd, branch));
        stage->push_back(make<ReLU>());
        stages->push_back(stage);
    }
    bottleneck = register_module("bottleneck", make<Sequential>());
    int64_t concatenated = in_channels + branch * int64_t(bin_sizes.size());
    bottleneck->push_back(conv(nd, concatenated, in_channels, 1, 1, false));  // padding 1 [quirk]
    bottleneck->push_back(batch_norm(nd, in_channels));
    bottleneck->push_back(make<ReLU>());
    bottleneck->push_back(make<ChannelDropout>(int(nd), dropout_p));
}

Tensor PSPModule::forward(const Tensor& x) {
    std::vector<int64_t> size = spatial_of(x);
    std::vector<Tensor> pyramid = {x};
    for (const auto& stage : *stages) pyramid.push_back(resize(stage->forward(x), size, true));
    return bottleneck->forward(cat(pyramid, 1));
}

FPNFuse::FPNFuse(int64_t nd, const std::vector<int64_t>& feature_channels, int64_t fpn_out)
    : Module("FPNFuse"), spatial_dims(nd) {
    conv1x1 = register_module("conv1x1", make<ModuleList<Conv>>());
    for (size_t k = 1; k < feature_channels.size(); ++k)
        conv1x1->push_back(conv(nd, feature_channels[k], fpn_out, 1, 0, true));
    smooth_conv = register_module("smooth_conv", make<ModuleList<Conv>>());
    smooth_conv->push_back(conv(nd, fpn_out, fpn_out, 3, 1, true));
    conv_fusion = register_module("conv_fusion", make<Sequential>());
    conv_fusion->push_back(
        conv(nd, int64_t(feature_channels.size()) * fpn_out, fpn_out, 3, 1, false));
    conv_fusion->push_back(batch_norm(nd, fpn_out));
    conv_fusion->push_back(make<ReLU>());
}

Tensor FPNFuse::forward(const std::vector<Tensor>& features) {
    size_t levels = features.size();
    std::vector<Tensor> lateral = {features[0]};
    for (size_t k = 1; k < levels; ++k) lateral.push_back((*conv1x1)[k - 1].forward(features[k]));
    // p_k adds the upsampled lateral l_{k+1} (not p_{k+1}), smoothed by the one shared conv.
    Conv& smooth = (*smooth_conv)[0];
    std::vector<Tensor> fused(levels);
    for (size_t k = levels - 1; k-- > 0;) {
        Tensor up = resize(lateral[k + 1], spatial_of(lateral[k]), true);
        fused[k] = smooth.forward(add(up, lateral[k]));
    }
    fused[levels - 1] = lateral[levels - 1];
    std::vector<int64_t> size = spatial_of(fused[0]);
    for (size_t k = 1; k < levels; ++k) fused[k] = resize(fused[k], size, true);
    return conv_fusion->forward(cat(fused, 1));
}

UperNet::UperNet(int64_t nd, std::vector<int64_t> feature_channels_, int64_t out_channels,
                 std::vector<int64_t> out_size_, std::vector<int64_t> bin_sizes)
    : Module("UperNet"),
      spatial_dims(nd),
      feature_channels(std::move(feature_channels_)),
      out_size(std::move(out_size_)) {
    const char* who = "UperNet";
    LUMEN_CHECK(nd == 2 || nd == 3, who, "spatial_dims must be 2 or 3, got ", nd);
    LUMEN_CHECK(feature_channels.size() == 4, who, "needs 4 feature channel counts, got ",
                feature_channels);
    for (int64_t c : feature_channels)
        LUMEN_CHECK(c > 0, who, "feature channels must be positive, got ", feature_channels);
    LUMEN_CHECK(!bin_sizes.empty() && feature_channels[3] % int64_t(bin_sizes.size()) == 0, who,
                "the coarsest map's ", feature_channels[3], " channels must split over the ",
                bin_sizes.size(), " pyramid bins");
    LUMEN_CHECK(int64_t(out_size.size()) == nd, who, "out_size ", out_size, " must have ", nd,
                " entries");
    LUMEN_CHECK(out_channels > 0, who, "out_channels must be positive, got ", out_channels);
    ppn = register_module("PPN", make<PSPModule>(nd, feature_channels[3], bin_sizes));
    fpn = register_module("FPN", make<FPNFuse>(nd, feature_channels, feature_channels[0]));
    head = register_module("head", conv(nd, feature_channels[0], out_channels, 3, 1, true));
}

Tensor UperNet::forward(const std::vector<Tensor>& features) {
    const char* who = "UperNet";
    LUMEN_CHECK(features.size() == 4, who, "expects 4 feature maps, got ", features.size());
    for (size_t k = 0; k < 4; ++k)
        LUMEN_CHECK(
            features[k].ndim() == spatial_dims + 2 && features[k].size(1) == feature_channels[k],
            who, "map ", k + 1, " must be (B, ", feature_channels[k], ", *S) with ", spatial_dims,
            " spatial dims, got shape ", features[k].shape());
    std::vector<Tensor> maps = features;
    maps[3] = ppn->forward(maps[3]);
    return head->forward(resize(fpn->forward(maps), out_size, false));
}

std::map<std::string, Tensor> drop_shared_smooth_conv_copies(std::map<std::string, Tensor> state) {
    for (const char* copy : {"FPN.smooth_conv.1.", "FPN.smooth_conv.2."}) {
        for (auto it = state.begin(); it != state.end();) {
            size_t at = it->first.find(copy);
            if (at == std::string::npos) {
                ++it;
                continue;
            }
            std::string original = it->first;
            original.replace(at, std::string(copy).size(), "FPN.smooth_conv.0.");
            auto first = state.find(original);
            LUMEN_CHECK(first != state.end() && first->second.shape() == it->second.shape() &&
                            first->second.to_vector<double>() == it->second.to_vector<double>(),
                        "UperNet", "'", it->first, "' is not a copy of '", original,
                        "': the smoothing conv is shared");
            it = state.erase(it);
        }
    }
    return state;
}

}  // namespace lumen::nn
