// Upsample and ResBlk of PVT-GDLA (official modules/upsample.py, resblk.py).
#include "nn/gdla/stem.h"

#include "ops/elementwise.h"

namespace lumen::nn::gdla {

Upsample::Upsample(int64_t in_chs, int64_t out_chs, int64_t ks) : Module("Upsample") {
    // Output (H - 1) 2 - 2 (ks / 2) + ks + 1 = 2H needs ks odd.
    LUMEN_CHECK(ks > 0 && ks % 2 == 1, "Upsample",
                "ks must be odd and positive for an exact 2x output, got ", ks);
    up = register_module(
        "up",
        make<ConvTranspose2d>(
            in_chs, out_chs, std::vector<int64_t>{ks},
            ConvOptions{.stride = {2}, .padding = {ks / 2}, .bias = false, .output_padding = {1}}));
}

Tensor Upsample::forward(const Tensor& x) { return up->forward(x); }

ResBlk::ResBlk(int64_t in, int64_t out, double norm_eps)
    : Module("ResBlk"), in_chs(in), out_chs(out) {
    LUMEN_CHECK(in > 0 && out > 0, "ResBlk", "channel counts must be positive, got in_chs ", in,
                ", out_chs ", out);
    ConvOptions same{.padding = {1}, .bias = false};
    conv1 = register_module("conv1", make<Conv2d>(in, in, std::vector<int64_t>{3}, same));
    norm1 = register_module("norm1", make<BatchNorm2d>(in, norm_eps));
    conv2 = register_module("conv2", make<Conv2d>(in, out, std::vector<int64_t>{3}, same));
    norm2 = register_module("norm2", make<BatchNorm2d>(out, norm_eps));
    if (in != out) {
        conv3 = register_module(
            "conv3", make<Conv2d>(in, out, std::vector<int64_t>{1}, ConvOptions{.bias = false}));
        norm3 = register_module("norm3", make<BatchNorm2d>(out, norm_eps));
    }
}

Tensor ResBlk::forward(const Tensor& x) {
    Tensor y = norm2->forward(conv2->forward(relu(norm1->forward(conv1->forward(x)))));
    Tensor shortcut = conv3 ? norm3->forward(conv3->forward(x)) : x;
    return relu(add(y, shortcut));
}

std::string ResBlk::extra_repr() const {
    return "in_chs=" + std::to_string(in_chs) + ", out_chs=" + std::to_string(out_chs);
}

}  // namespace lumen::nn::gdla
