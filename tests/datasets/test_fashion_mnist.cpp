// Fashion-MNIST: the installed Debian package's counts and shapes (skipped when it is absent),
// and the checks on a directory of small fake files.
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::datasets;

namespace {

// Writes a split of `count` images into dir under the package's file names.
void write_fake_split(const TempDir& dir, Split split, int64_t count, int64_t side = 28,
                      uint8_t last_label = 9) {
    std::vector<uint8_t> pixels(size_t(count * side * side));
    for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = uint8_t(i % 256);
    std::vector<uint8_t> labels(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) labels[size_t(i)] = uint8_t(i % 10);
    labels.back() = last_label;
    std::array<std::string, 2> names = fashion_mnist_files(split);
    write_idx(dir.file(names[0]), from_vector(pixels, {count, side, side}), true);
    write_idx(dir.file(names[1]), from_vector(labels), true);
}

}  // namespace

TEST_CASE("fashion_mnist: the installed package has 60000 + 10000 balanced images",
          "[datasets][fashion_mnist]") {
    if (!fashion_mnist_available()) {
        WARN("skipped: Fashion-MNIST is not under " << kFashionMnistDir
                                                    << " (apt-get install dataset-fashion-mnist)");
        return;
    }
    for (Split split : {Split::train, Split::test}) {
        FashionMnist data = load_fashion_mnist(split);
        int64_t n = split == Split::train ? 60000 : 10000;
        CHECK(data.images.shape() == Shape{n, 1, 28, 28});
        CHECK(data.images.dtype() == DType::float32);
        CHECK(data.labels.shape() == Shape{n});
        CHECK(data.labels.dtype() == DType::int64);
        CHECK(min(data.images).item<double>() == 0.0);
        CHECK(max(data.images).item<double>() == 1.0);
        std::vector<int64_t> counts(10, 0);
        for (int64_t label : data.labels.to_vector<int64_t>()) ++counts[size_t(label)];
        CHECK(counts == std::vector<int64_t>(10, n / 10));
        std::shared_ptr<TensorDataset> dataset = data.dataset();
        CHECK(dataset->size() == n);
        CHECK(dataset->get(n - 1)[0].shape() == Shape{1, 28, 28});
    }
    CHECK(std::string(kFashionMnistClasses[9]) == "Ankle boot");
}

TEST_CASE("fashion_mnist: a directory of fake files loads, pixels scaled to [0, 1]",
          "[datasets][fashion_mnist]") {
    TempDir dir("fmnist_fake");
    write_fake_split(dir, Split::train, 12);
    CHECK_FALSE(fashion_mnist_available(dir.path.string()));  // no test split yet
    write_fake_split(dir, Split::test, 5);
    CHECK(fashion_mnist_available(dir.path.string()));
    FashionMnist data = load_fashion_mnist(Split::test, dir.path.string());
    CHECK(data.size() == 5);
    CHECK(data.images.shape() == Shape{5, 1, 28, 28});
    // Pixel i of image 0 holds i % 256: 255 = 9 * 28 + 3, 51 = 1 * 28 + 23.
    CHECK(data.images.at<float>({0, 0, 9, 3}) == 1.0f);
    CHECK(data.images.at<float>({0, 0, 1, 23}) == 51.0f / 255.0f);
    CHECK(data.labels.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 9});
}

TEST_CASE("fashion_mnist: missing or inconsistent files are errors naming them",
          "[datasets][fashion_mnist]") {
    TempDir dir("fmnist_bad");
    std::string root = dir.path.string();
    require_error([&] { load_fashion_mnist(Split::train, root); },
                  {"[fashion_mnist]", "train-images-idx3-ubyte.gz", root, "dataset-fashion-mnist"});
    write_fake_split(dir, Split::train, 4, 27);
    require_error([&] { load_fashion_mnist(Split::train, root); },
                  {"[fashion_mnist]", "train-images-idx3-ubyte.gz", "must be 28x28"});
    write_fake_split(dir, Split::train, 4, 28, 10);
    require_error([&] { load_fashion_mnist(Split::train, root); },
                  {"[fashion_mnist]", "train-labels-idx1-ubyte.gz", "label 3 is out of range"});
    write_idx(dir.file("train-labels-idx1-ubyte.gz"), from_vector<uint8_t>({1, 2, 3}), true);
    require_error([&] { load_fashion_mnist(Split::train, root); },
                  {"[fashion_mnist]", "holds 3 labels but", "holds 4 images"});
}
