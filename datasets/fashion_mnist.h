// Fashion-MNIST (Xiao, Rasul and Vollgraf, 2017): 70,000 28x28 grey images of 10 clothing
// classes, read from the IDX files of the Debian package dataset-fashion-mnist. The reader is
// in idx.h; batching in loader.h.
#pragma once

#include <array>
#include <memory>
#include <string>

#include "datasets/dataset.h"

namespace lumen::datasets {

// Where the Debian package dataset-fashion-mnist installs the files.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// The 10 class names, indexed by label.
inline constexpr std::array<const char*, 10> kFashionMnistClasses = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};

enum class Split { train, test };

// One split in memory. Shapes: images (N, 1, 28, 28) float32 in [0, 1] (pixel / 255),
// labels (N) int64 in [0, 10); N = 60,000 (train) or 10,000 (test).
struct FashionMnist {
    Tensor images;
    Tensor labels;
    int64_t size() const { return labels.numel(); }
    // A TensorDataset over (images, labels): get(i) = {image (1, 28, 28), label ()}.
    std::shared_ptr<TensorDataset> dataset() const;
};

// The file names of a split: {images, labels}, e.g. {"train-images-idx3-ubyte.gz",
// "train-labels-idx1-ubyte.gz"}.
std::array<std::string, 2> fashion_mnist_files(Split split);

// True when both files of both splits exist under `dir`.
bool fashion_mnist_available(const std::string& dir = kFashionMnistDir);

// Reads one split from `dir` (plain or gzipped files of the names above; a file without .gz
// is also accepted). Throws [fashion_mnist] naming the directory and the Debian package when
// a file is missing, [fashion_mnist] naming the file when the images are not 28x28, the
// counts of images and labels differ or a label is >= 10, and [idx] for a corrupt file.
FashionMnist load_fashion_mnist(Split split, const std::string& dir = kFashionMnistDir);

}  // namespace lumen::datasets
