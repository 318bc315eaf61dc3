// A small 2-D U-Net (Ronneberger et al., 2015) as a custom Module with nn::Holder members:
// two levels of conv blocks with max pooling down, transposed convolutions up and skip
// connections concatenated on the way up. It learns a synthetic task, telling a disc from a
// square of the same brightness on noise (so shape, not intensity, decides), with cross
// entropy + Dice loss, and reports the foreground Dice on held-out images.
// Run: build/examples/lumen_unet
#include <cmath>
#include <cstdio>
#include <random>
#include <utility>

#include <lumen/lumen.h>

using namespace lumen;

// Two 3x3 convolutions, each followed by group norm (4 groups) and ReLU. Shapes: (B, in, H, W) ->
// (B, out, H, W).
struct ConvBlock : nn::Module {
    ConvBlock(int64_t in, int64_t out) : nn::Module("ConvBlock") {
        const nn::ConvOptions same{.padding = {1}};  // 3x3 kernels keep H and W
        conv1 = register_module("conv1", nn::make<nn::Conv2d>(in, out, 3, same));
        norm1 = register_module("norm1", nn::make<nn::GroupNorm>(4, out));
        conv2 = register_module("conv2", nn::make<nn::Conv2d>(out, out, 3, same));
        norm2 = register_module("norm2", nn::make<nn::GroupNorm>(4, out));
    }
    Tensor forward(const Tensor& x) override { return relu(norm2(conv2(relu(norm1(conv1(x)))))); }
    nn::Holder<nn::Conv2d> conv1, conv2;
    nn::Holder<nn::GroupNorm> norm1, norm2;
};

// Shapes: x (B, 1, H, W), H and W divisible by 4 -> logits (B, classes, H, W); w = width.
struct UNet : nn::Module {
    UNet(int64_t classes, int64_t w) : nn::Module("UNet") {
        down1 = register_module("down1", nn::make<ConvBlock>(1, w));
        down2 = register_module("down2", nn::make<ConvBlock>(w, 2 * w));
        bottom = register_module("bottom", nn::make<ConvBlock>(2 * w, 4 * w));
        pool = register_module("pool", nn::make<nn::MaxPool2d>(2));
        const nn::ConvOptions twice{.stride = {2}};  // 2x2 kernels, stride 2: H, W doubled
        up2 = register_module("up2", nn::make<nn::ConvTranspose2d>(4 * w, 2 * w, 2, twice));
        dec2 = register_module("dec2", nn::make<ConvBlock>(4 * w, 2 * w));
        up1 = register_module("up1", nn::make<nn::ConvTranspose2d>(2 * w, w, 2, twice));
        dec1 = register_module("dec1", nn::make<ConvBlock>(2 * w, w));
        head = register_module("head", nn::make<nn::Conv2d>(w, classes, 1));
    }
    Tensor forward(const Tensor& x) override {
        Tensor skip1 = down1(x);            // (B, w, H, W)
        Tensor skip2 = down2(pool(skip1));  // (B, 2w, H/2, W/2)
        Tensor h = bottom(pool(skip2));     // (B, 4w, H/4, W/4)
        h = dec2(cat({up2(h), skip2}, 1));  // up to H/2, concat the skip: 4w channels
        h = dec1(cat({up1(h), skip1}, 1));  // up to H, concat: 2w channels
        return head(h);
    }
    nn::Holder<ConvBlock> down1, down2, bottom, dec2, dec1;
    nn::Holder<nn::MaxPool2d> pool;
    nn::Holder<nn::ConvTranspose2d> up2, up1;
    nn::Holder<nn::Conv2d> head;
};

// n images (n, 1, 32, 32) with one disc (label 1) and one square (label 2), both of intensity
// 1 on Gaussian noise of std 0.3, apart, and their label maps (n, 32, 32) int64 (0 background).
std::pair<Tensor, Tensor> make_shapes(int64_t n, std::mt19937& rng) {
    const int64_t size = 32;
    Tensor row = arange(size, DType::float32).view({size, 1});
    Tensor col = arange(size, DType::float32).view({1, size});
    std::uniform_real_distribution<double> centre(6.0, size - 6.0), radius(3.0, 6.0);
    std::vector<Tensor> maps;
    for (int64_t i = 0; i < n; ++i) {
        double y = centre(rng), x = centre(rng), r = radius(rng), y2, x2, r2 = radius(rng);
        do y2 = centre(rng), x2 = centre(rng);  // apart: the shapes never touch
        while (std::hypot(y2 - y, x2 - x) < r + 1.5 * r2 + 1);
        Tensor disc = le(square(row - y) + square(col - x), r * r);
        Tensor box = logical_and(le(abs(row - y2), r2), le(abs(col - x2), r2));
        maps.push_back(where(box, full({size, size}, 2.0), where(disc, ones({size, size}), 0.0)));
    }
    Tensor labels = stack(maps).to(DType::int64);
    Tensor images = gt(labels, 0).to(DType::float32).unsqueeze(1) + randn({n, 1, size, size}) * 0.3;
    return {images, labels};
}

int main() {
    manual_seed(0);
    std::mt19937 rng(0);
    auto [train_images, train_labels] = make_shapes(256, rng);
    auto [test_images, test_labels] = make_shapes(64, rng);

    UNet net(/*classes=*/3, /*w=*/8);
    std::printf("U-Net, %lld parameters\n", (long long)net.num_parameters());
    datasets::DataLoader loader(
        std::make_shared<datasets::TensorDataset>(std::vector<Tensor>{train_images, train_labels}),
        {.batch_size = 16, .shuffle = true});
    const int64_t epochs = 12;
    train::AdamW optimizer(net.parameters(), 1e-2);
    train::LRScheduler scheduler(
        optimizer, std::make_shared<train::WarmupCosineLR>(1e-2, epochs * loader.num_batches()));
    for (int64_t epoch = 0; epoch < epochs; ++epoch) {
        double total = 0;
        for (datasets::Batch& batch : loader.epoch(epoch)) {
            Tensor logits = net(batch[0]);
            Tensor loss =
                train::cross_entropy(logits, batch[1]) + train::dice_loss(logits, batch[1]);
            optimizer.zero_grad();
            loss.backward();
            optimizer.step();
            scheduler.step();
            total += loss.item<double>();
        }
        std::printf("epoch %lld  loss %.4f\n", (long long)epoch, total / loader.num_batches());
    }

    NoGradGuard no_grad;
    net.eval();
    Tensor predictions = argmax(net(test_images), 1);  // (64, 32, 32)
    std::vector<double> dice = train::foreground_dice(predictions, test_labels, 3);
    std::printf("held-out Dice: disc %.3f, square %.3f\n", dice[0], dice[1]);
    return dice[0] > 0.8 && dice[1] > 0.8 ? 0 : 1;
}
