// Fashion-MNIST: finds the split's IDX files, reads them with idx.h, checks the shapes and
// labels, and scales the pixels to [0, 1].
#include "datasets/fashion_mnist.h"

#include <filesystem>

#include "datasets/idx.h"

namespace lumen::datasets {

namespace {

constexpr int64_t kSide = 28;
constexpr int64_t kClasses = 10;

// `dir`/`name`, or the same without ".gz" when only the uncompressed file is there; empty
// when neither exists.
std::string find_file(const std::string& dir, const std::string& name) {
    std::filesystem::path gz = std::filesystem::path(dir) / name;
    if (std::filesystem::exists(gz)) return gz.string();
    std::filesystem::path plain = gz;
    plain.replace_extension();
    return std::filesystem::exists(plain) ? plain.string() : std::string();
}

// uint8 (N, 28, 28) -> float32 (N, 1, 28, 28) in [0, 1]. A true division, as torchvision's
// ToTensor (x.float().div(255)), so the values match PyTorch's bit for bit.
Tensor to_unit_float(const Tensor& pixels) {
    Tensor out = empty({pixels.size(0), 1, kSide, kSide}, DType::float32);
    const uint8_t* src = pixels.data_ptr<uint8_t>();
    float* dst = out.data_ptr<float>();
    int64_t n = pixels.numel();  // numel() walks the shape: keep it out of the loop test
    for (int64_t i = 0; i < n; ++i) dst[i] = float(src[i]) / 255.0f;
    return out;
}

}  // namespace

std::shared_ptr<TensorDataset> FashionMnist::dataset() const {
    return std::make_shared<TensorDataset>(std::vector<Tensor>{images, labels});
}

std::array<std::string, 2> fashion_mnist_files(Split split) {
    std::string prefix = split == Split::train ? "train" : "t10k";
    return {prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz"};
}

bool fashion_mnist_available(const std::string& dir) {
    for (Split split : {Split::train, Split::test}) {
        for (const std::string& name : fashion_mnist_files(split)) {
            if (find_file(dir, name).empty()) return false;
        }
    }
    return true;
}

FashionMnist load_fashion_mnist(Split split, const std::string& dir) {
    std::array<std::string, 2> names = fashion_mnist_files(split);
    std::array<std::string, 2> paths;
    for (int k = 0; k < 2; ++k) {
        paths[k] = find_file(dir, names[k]);
        LUMEN_CHECK(!paths[k].empty(), "fashion_mnist", "missing ", names[k], " in ", dir,
                    ": install the Debian package dataset-fashion-mnist (bash scripts/setup.sh "
                    "or apt-get install dataset-fashion-mnist), or pass the directory that "
                    "holds the files");
    }
    Tensor pixels = read_idx_images(paths[0]);
    LUMEN_CHECK(pixels.size(1) == kSide && pixels.size(2) == kSide, "fashion_mnist", paths[0],
                ": images must be 28x28 (got shape ", pixels.shape(), ", expected [N, 28, 28])");
    Tensor labels = read_idx_labels(paths[1]);
    LUMEN_CHECK(labels.size(0) == pixels.size(0), "fashion_mnist", paths[1], ": holds ",
                labels.size(0), " labels but ", paths[0], " holds ", pixels.size(0),
                " images (expected equal counts)");
    const int64_t* values = labels.data_ptr<int64_t>();
    for (int64_t i = 0, n = labels.numel(); i < n; ++i) {
        LUMEN_CHECK(values[i] >= 0 && values[i] < kClasses, "fashion_mnist", paths[1], ": label ",
                    i, " is out of range (got ", values[i], ", expected 0..", kClasses - 1, ")");
    }
    return FashionMnist{to_unit_float(pixels), labels};
}

}  // namespace lumen::datasets
