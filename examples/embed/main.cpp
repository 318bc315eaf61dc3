// Embedding check: a program built against an installed lumen through find_package(lumen) or
// pkg-config, with a core/error.h of its own. It says whether lumen's CUDA backend is linked,
// differentiates loss = sum(w * x^2) and compares d loss / dx with the exact 2 w x, then trains
// a small CNN (nn layers, AdamW, a stateful cosine schedule) through <lumen/lumen.h>.
#include <cmath>
#include <cstdio>
#include <vector>

#include <lumen/lumen.h>

#include "core/error.h"  // the program's own header of that name

int main() {
    using namespace lumen;
    std::printf("%s; CUDA backend: %s\n", app::own_header(), cuda_built() ? "linked" : "not linked");
    try {
        Tensor x = tensor({1.0, -2.0, 3.0}).requires_grad_();
        Tensor w = tensor({0.5, 1.5, -2.0});
        Tensor loss = sum(w * square(x));
        loss.backward();

        std::vector<float> grad_x = x.grad().to_vector<float>();
        const std::vector<float> expected = {1.0f, -6.0f, -12.0f};  // 2 w x
        bool ok = grad_x.size() == expected.size();
        for (size_t i = 0; ok && i < expected.size(); ++i) {
            ok = std::fabs(grad_x[i] - expected[i]) < 1e-6f;
        }
        std::printf("loss %.3f, grad_x = [%g, %g, %g]: %s\n", loss.item<double>(), grad_x[0],
                    grad_x[1], grad_x[2], ok ? "ok" : "WRONG, expected [1, -6, -12]");
        if (!ok) return 1;

        // Two classes of 8 x 8 images: a bright centre square or a bright border.
        manual_seed(0);
        Tensor images = mul(rand({64, 1, 8, 8}), 0.2);
        Tensor labels = randint(0, 2, {64});
        for (int64_t i = 0; i < 64; ++i) {
            Tensor image = images.select(0, i).select(0, 0);
            Tensor bright = labels.select(0, i).item<int64_t>() == 1
                                ? image.narrow(0, 2, 4).narrow(1, 2, 4)
                                : image.narrow(0, 0, 1);
            bright.copy_(add(bright, 1.0));
        }
        auto model = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
            std::make_shared<nn::Conv2d>(1, 8, 3, nn::ConvOptions{.padding = {1}}),
            std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
            std::make_shared<nn::AdaptiveAvgPool2d>(1), std::make_shared<nn::Flatten>(),
            std::make_shared<nn::Linear>(8, 2)});
        train::AdamW optimizer(model->parameters(), 0.05);
        train::LRScheduler scheduler(optimizer, std::make_shared<train::WarmupCosineLR>(0.05, 40));
        double first = 0, last = 0;
        for (int step = 0; step < 40; ++step) {
            Tensor batch_loss = cross_entropy(model->forward(images), labels);
            optimizer.zero_grad();
            batch_loss.backward();
            optimizer.step();
            scheduler.step();
            (step == 0 ? first : last) = batch_loss.item<double>();
        }
        const bool learned = last < 0.5 * first;
        std::printf("CNN loss %.3f -> %.3f in 40 AdamW steps: %s\n%s\n", first, last,
                    learned ? "ok" : "WRONG, expected it to halve", model->str().c_str());
        return learned ? 0 : 1;
    } catch (const Error& error) {
        std::fprintf(stderr, "error: %s\n", error.what());
        return 1;
    }
}
