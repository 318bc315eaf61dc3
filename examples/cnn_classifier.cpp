// A CNN classifier for Fashion-MNIST, written the way libtorch code is: a custom Module whose
// layers are nn::Holder members called as conv1(x), a DataLoader, AdamW with a stateful cosine
// LRScheduler, one epoch on a 12,000-image subset, test accuracy, and the weights saved as
// safetensors and loaded back exactly. Without the Fashion-MNIST files it trains on a
// synthetic stand-in (noisy copies of 10 random patterns), so that it runs anywhere.
// Run: build/examples/lumen_cnn_classifier [FASHION_MNIST_DIR]
#include <cstdio>
#include <filesystem>
#include <string>

#include <lumen/lumen.h>

using namespace lumen;

// Shapes: x (B, 1, 28, 28) -> (B, 16, 14, 14) -> (B, 32, 7, 7) -> logits (B, 10).
struct Net : nn::Module {
    Net() : nn::Module("Net") {
        const nn::ConvOptions same{.padding = {1}};  // 3x3 kernels keep H and W
        conv1 = register_module("conv1", nn::make<nn::Conv2d>(1, 16, 3, same));
        conv2 = register_module("conv2", nn::make<nn::Conv2d>(16, 32, 3, same));
        pool = register_module("pool", nn::make<nn::MaxPool2d>(2));
        fc = register_module("fc", nn::make<nn::Linear>(32 * 7 * 7, 10));
    }
    Tensor forward(const Tensor& x) override {
        Tensor h = pool(relu(conv1(x)));
        h = pool(relu(conv2(h)));
        return fc(h.flatten(1));
    }
    nn::Holder<nn::Conv2d> conv1, conv2;
    nn::Holder<nn::MaxPool2d> pool;
    nn::Holder<nn::Linear> fc;
};

// The first n examples of a split, {image (1, 28, 28) in [0, 1], label ()} each.
std::shared_ptr<datasets::Dataset> load(const std::string& dir, datasets::Split split, int64_t n) {
    if (datasets::fashion_mnist_available(dir)) {
        std::vector<int64_t> first_n(n);
        for (int64_t i = 0; i < n; ++i) first_n[i] = i;
        auto all = datasets::load_fashion_mnist(split, dir).dataset();
        return std::make_shared<datasets::Subset>(all, first_n);
    }
    Generator patterns(7);  // the same 10 patterns for both splits
    Tensor prototypes = rand({10, 1, 28, 28}, DType::float32, &patterns);
    Tensor labels = randint(0, 10, {n});
    Tensor images = index_select(prototypes, 0, labels) * 0.5 + rand({n, 1, 28, 28}) * 0.5;
    return std::make_shared<datasets::TensorDataset>(std::vector<Tensor>{images, labels});
}

// The fraction of the loader's examples whose largest logit is at the label.
double accuracy(Net& net, datasets::DataLoader& loader) {
    NoGradGuard no_grad;
    net.eval();
    double correct = 0, total = 0;
    for (datasets::Batch& batch : loader.epoch(0)) {
        correct += train::accuracy(net(batch[0]), batch[1]) * double(batch[1].numel());
        total += double(batch[1].numel());
    }
    net.train();
    return correct / total;
}

int main(int argc, char** argv) {
    const std::string dir = argc > 1 ? argv[1] : datasets::kFashionMnistDir;
    std::printf("data: %s\n", datasets::fashion_mnist_available(dir)
                                  ? dir.c_str()
                                  : "synthetic (no Fashion-MNIST files found)");
    manual_seed(0);
    datasets::DataLoader train_loader(load(dir, datasets::Split::train, 12000),
                                      {.batch_size = 64, .shuffle = true, .num_workers = 1});
    datasets::DataLoader test_loader(load(dir, datasets::Split::test, 2000), {.batch_size = 500});

    Net net;
    train::AdamW optimizer(net.parameters(), 3e-3);
    train::LRScheduler scheduler(
        optimizer, std::make_shared<train::WarmupCosineLR>(3e-3, train_loader.num_batches(), 20));
    int64_t step = 0;
    for (datasets::Batch& batch : train_loader.epoch(0)) {  // one epoch
        Tensor loss = train::cross_entropy(net(batch[0]), batch[1]);
        optimizer.zero_grad();
        loss.backward();
        optimizer.step();
        scheduler.step();
        if (++step % 50 == 0) {
            std::printf("step %3lld  loss %.4f  lr %.2e\n", (long long)step, loss.item<double>(),
                        scheduler.last_lr());
        }
    }
    const double test_accuracy = accuracy(net, test_loader);
    std::printf("test accuracy %.2f%% on %lld images\n", 100 * test_accuracy,
                (long long)test_loader.dataset().size());

    // Save the weights as safetensors, load them into a fresh Net: every tensor must be equal.
    const std::string path =
        (std::filesystem::temp_directory_path() / "lumen_cnn_classifier.safetensors").string();
    nn::save_state_dict(net, path);
    Net loaded;
    nn::load_state_dict(loaded, path);
    std::filesystem::remove(path);
    bool exact = true;
    for (auto& [name, value] : net.state_dict()) {
        exact = exact && max(abs(value - loaded.tensor(name))).item<double>() == 0.0;
    }
    const bool same_accuracy = accuracy(loaded, test_loader) == test_accuracy;
    std::printf("safetensors round trip: %s\n", exact && same_accuracy ? "exact" : "NOT EXACT");
    return test_accuracy > 0.75 && exact && same_accuracy ? 0 : 1;
}
