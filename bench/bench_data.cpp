// bench_data: the cost of the data pipeline the Fashion-MNIST training runs on: reading the
// train split (60,000 gzipped IDX images) and one epoch of shuffled batches of 128, without and
// with a flip + rotation transform, on 0 and 2 worker threads. First checks that 0 and 2
// workers give identical batches. Needs the Debian package dataset-fashion-mnist.
// Usage: bench_data [--repeats R] [--threads N]
#include <cstdio>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "lumen/lumen.h"

using namespace lumen;
using namespace lumen::bench;
using namespace lumen::datasets;

namespace {

DataLoaderOptions loader_options(int64_t workers, TransformPtr transform) {
    return {.batch_size = 128,
            .shuffle = true,
            .seed = 7,
            .num_workers = workers,
            .transform = std::move(transform)};
}

// One epoch of batches. With `checksum`, returns the sum of pixel * (batch + 1) plus the
// labels, to compare runs; without, touches one value per batch, so that the time is the
// loader's alone.
double run_epoch(DataLoader& loader, int64_t epoch, bool checksum) {
    double total = 0;
    int64_t b = 0;
    for (Batch& batch : loader.epoch(epoch)) {
        const float* pixels = batch[0].data_ptr<float>();
        const int64_t* labels = batch[1].data_ptr<int64_t>();
        ++b;
        if (!checksum) {
            total += pixels[0] + double(labels[0]);
            continue;
        }
        double sum = 0;
        for (int64_t i = 0, n = batch[0].numel(); i < n; ++i) sum += pixels[i];
        for (int64_t i = 0, n = batch[1].numel(); i < n; ++i) sum += double(labels[i]);
        total += sum * double(b);
    }
    return total;
}

}  // namespace

int main(int argc, char** argv) {
    Options options = parse_options(argc, argv);
    if (options.threads > 0) set_num_threads(options.threads);
    if (!fashion_mnist_available()) {
        std::printf("skipped: Fashion-MNIST is not under %s\n", kFashionMnistDir);
        return 0;
    }
    FashionMnist train;
    double load = median_seconds([&] { train = load_fashion_mnist(Split::train); }, 0,
                                 std::min(options.repeats, 3));
    report("load_fashion_mnist_train", "images/s", double(train.size()) / load, load);

    std::shared_ptr<TensorDataset> dataset = train.dataset();
    TransformPtr augment = std::make_shared<Compose>(RandomHorizontalFlip(0.5), RandomRotation(15));
    for (bool transform : {false, true}) {
        TransformPtr t = transform ? augment : nullptr;
        DataLoader serial(dataset, loader_options(0, t));
        DataLoader parallel(dataset, loader_options(2, t));
        if (run_epoch(serial, 3, true) != run_epoch(parallel, 3, true)) {
            std::printf("error: 0 and 2 workers give different batches\n");
            return 1;
        }
        for (DataLoader* loader : {&serial, &parallel}) {
            int64_t epoch = 0;
            double seconds =
                median_seconds([&] { run_epoch(*loader, epoch++, false); }, 1, options.repeats);
            std::string name = std::string("epoch_b128_shuffle") +
                               (transform ? "_flip_rotate" : "") + "_workers" +
                               std::to_string(loader->options().num_workers);
            report(name, "images/s", double(dataset->size()) / seconds, seconds);
        }
    }
    return 0;
}
