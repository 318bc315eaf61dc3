// CPU/CUDA parity of the losses: cross_entropy (class indices with weights, ignore_index hits
// and label smoothing; N-D segmentation; unbatched; class probabilities), nll_loss and the
// pointwise losses, for every reduction, float32 and float64, contiguous and transposed
// inputs: outputs and gradients (input, and target where it gets one). Also the bad-target
// and mixed-device errors on CUDA. Skips with a message without a GPU.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "support/parity.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

const char* const kReductions[] = {"none", "mean", "sum"};
const std::vector<DType> kFloatTypes = {DType::float32, DType::float64};

// Totals over up to ~1e5 float terms: a few units in the 6th digit.
double tolerance(DType dtype) { return dtype == DType::float32 ? 1e-4 : 1e-10; }

using LossFn = std::function<Tensor(const Tensor& input, const Tensor& target)>;

Shape without_class_dim(const Shape& shape) {
    Shape out = shape;
    out.erase(out.begin() + (shape.size() == 1 ? 0 : 1));
    return out;
}

int64_t class_dim(const Shape& shape) { return shape.size() == 1 ? 0 : 1; }

// The loss and its gradients on both devices from the same inputs and upstream gradient; a
// floating target gets a gradient too. `transpose_last`: both devices see the input through a
// transposed view.
void check_loss(const LossFn& f, const Tensor& input, const Tensor& target,
                bool transpose_last = false) {
    double tol = tolerance(input.dtype());
    require_cuda_parity([&](const std::vector<Tensor>& in) { return f(in[0], in[1]); },
                        {input, target}, tol, tol, transpose_last);
}

}  // namespace

TEST_CASE("cross_entropy with class indices matches the CPU on the GPU", "[cuda][ops][loss]") {
    if (!have_gpu()) return;
    // rows (S == 1) of 10 and 1000 classes, segmentation layouts (S = 30, 70), unbatched
    const std::vector<Shape> shapes = {{37, 10}, {5, 1000}, {3, 4, 5, 6}, {2, 3, 70}, {6}};
    for (DType dtype : kFloatTypes) {
        for (const Shape& shape : shapes) {
            int64_t classes = shape[size_t(class_dim(shape))];
            Tensor x = mul(random_input(shape, 3), 4.0).to(dtype);
            Tensor weight = random_input({classes}, 5, 0.2, 2.0).to(dtype);
            for (int64_t ignore : {int64_t(-100), int64_t(2)}) {
                Tensor target = class_targets(without_class_dim(shape), classes, ignore, 4);
                for (bool weighted : {false, true}) {
                    for (double ls : {0.0, 0.1}) {
                        for (const char* mode : kReductions) {
                            INFO("cross_entropy " << text(shape) << " " << dtype_name(dtype)
                                                  << " ignore " << ignore << " weighted "
                                                  << weighted << " ls " << ls << " " << mode);
                            Tensor w = weighted ? weight : Tensor();
                            check_loss(
                                [&](const Tensor& in, const Tensor& t) {
                                    return cross_entropy(in, t,
                                                         in.is_cuda() && w.defined() ? w.cuda() : w,
                                                         ignore, mode, ls);
                                },
                                x, target);
                        }
                    }
                }
            }
        }
    }
}

TEST_CASE("class losses on the GPU: more samples than one pass of the fixed grid",
          "[cuda][ops][loss]") {
    if (!have_gpu()) return;
    // 10000 rows: more than the 8192 warps of 1024 blocks; (1, 2, 300000): more positions than
    // their 262144 threads.
    for (Shape shape : {Shape{10000, 3}, Shape{1, 2, 300000}}) {
        INFO("cross_entropy " << text(shape));
        Tensor x = mul(random_input(shape, 61), 3.0).to(DType::float32);
        Tensor target = class_targets(without_class_dim(shape), shape[1], -100, 62);
        check_loss(
            [](const Tensor& in, const Tensor& t) {
                return cross_entropy(in, t, Tensor(), -100, "mean", 0.1);
            },
            x, target);
    }
}

TEST_CASE("nll_loss and class-probability cross_entropy match the CPU on the GPU",
          "[cuda][ops][loss]") {
    if (!have_gpu()) return;
    for (DType dtype : kFloatTypes) {
        for (Shape shape : {Shape{8, 5}, Shape{2, 5, 3, 4}, Shape{5}, Shape{64, 1000}}) {
            int64_t classes = shape[size_t(class_dim(shape))];
            Tensor weight = random_input({classes}, 16, 0.5, 1.5).to(dtype);
            Tensor lp = log_softmax(random_input(shape, 14), class_dim(shape)).to(dtype);
            Tensor target = class_targets(without_class_dim(shape), classes, 2, 15);
            Tensor logits = mul(random_input(shape, 11), 3.0).to(dtype);
            Tensor p = softmax(mul(random_input(shape, 12), 2.0), class_dim(shape)).to(dtype);
            for (bool weighted : {false, true}) {
                Tensor w = weighted ? weight : Tensor();
                auto on = [&](const Tensor& in) {
                    return in.is_cuda() && w.defined() ? w.cuda() : w;
                };
                for (const char* mode : kReductions) {
                    {
                        INFO("nll_loss " << text(shape) << " " << dtype_name(dtype) << " weighted "
                                         << weighted << " " << mode);
                        check_loss(
                            [&](const Tensor& in, const Tensor& t) {
                                return nll_loss(in, t, on(in), 2, mode);
                            },
                            lp, target);
                    }
                    for (double ls : {0.0, 0.2}) {
                        INFO("cross_entropy with probabilities "
                             << text(shape) << " " << dtype_name(dtype) << " weighted " << weighted
                             << " ls " << ls << " " << mode);
                        check_loss(
                            [&](const Tensor& in, const Tensor& t) {
                                return cross_entropy(in, t, on(in), -100, mode, ls);
                            },
                            logits, p);
                    }
                }
            }
        }
    }
}

TEST_CASE("cross_entropy and mse_loss of transposed inputs match the CPU on the GPU",
          "[cuda][ops][loss]") {
    if (!have_gpu()) return;
    for (DType dtype : kFloatTypes) {
        INFO(dtype_name(dtype));
        Tensor x = mul(random_input({33, 9}, 21), 3.0).to(dtype);
        Tensor target = class_targets({33}, 9, -100, 22);
        check_loss(
            [](const Tensor& in, const Tensor& t) {
                return cross_entropy(in, t, Tensor(), -100, "mean", 0.1);
            },
            x, target, true);
        Tensor y = random_input({33, 9}, 23).to(dtype);
        check_loss([](const Tensor& in, const Tensor& t) { return mse_loss(in, t, "sum"); }, x, y,
                   true);
    }
}

TEST_CASE("pointwise losses match the CPU on the GPU for every reduction", "[cuda][ops][loss]") {
    if (!have_gpu()) return;
    using Pointwise = std::function<Tensor(const Tensor&, const Tensor&, const char*)>;
    const std::vector<std::pair<std::string, Pointwise>> losses = {
        {"mse", [](const Tensor& x, const Tensor& y, const char* m) { return mse_loss(x, y, m); }},
        {"l1", [](const Tensor& x, const Tensor& y, const char* m) { return l1_loss(x, y, m); }},
        {"smooth_l1", [](const Tensor& x, const Tensor& y,
                         const char* m) { return smooth_l1_loss(x, y, m, 0.5); }},
        {"smooth_l1 beta 0", [](const Tensor& x, const Tensor& y,
                                const char* m) { return smooth_l1_loss(x, y, m, 0.0); }},
        {"huber",
         [](const Tensor& x, const Tensor& y, const char* m) { return huber_loss(x, y, m, 0.7); }},
        {"charbonnier", [](const Tensor& x, const Tensor& y,
                           const char* m) { return charbonnier_loss(x, y, 1e-2, m); }},
        {"bce_with_logits",
         [](const Tensor& x, const Tensor& y, const char* m) {
             return binary_cross_entropy_with_logits(x, y, Tensor(), m);
         }},
    };
    for (DType dtype : kFloatTypes) {
        // (300, 1000): more elements than one pass of the fixed grid
        for (Shape shape : {Shape{13, 17}, Shape{300, 1000}}) {
            Tensor x = mul(random_input(shape, 31), 2.0).to(dtype);
            Tensor y = mul(random_input(shape, 32), 2.0).to(dtype);
            for (const auto& [name, f] : losses) {
                for (const char* mode : kReductions) {
                    INFO(name << " " << text(shape) << " " << dtype_name(dtype) << " " << mode);
                    check_loss([&](const Tensor& in, const Tensor& t) { return f(in, t, mode); }, x,
                               y);
                }
            }
        }
    }
}

TEST_CASE("binary cross entropy with weights and pos_weight matches the CPU on the GPU",
          "[cuda][ops][loss]") {
    if (!have_gpu()) return;
    for (DType dtype : kFloatTypes) {
        Tensor probs = random_input({13, 17}, 41, 0.02, 0.98).to(dtype);
        Tensor logits = mul(random_input({13, 17}, 42), 5.0).to(dtype);
        Tensor y = random_input({13, 17}, 43, 0.0, 1.0).to(dtype);
        Tensor weight = random_input({17}, 44, 0.5, 1.5).to(dtype);         // broadcast rows
        Tensor row_weight = random_input({13, 1}, 45, 0.5, 1.5).to(dtype);  // broadcast columns
        Tensor pos_weight = random_input({17}, 46, 0.5, 3.0).to(dtype);
        auto on = [](const Tensor& like, const Tensor& t) { return like.is_cuda() ? t.cuda() : t; };
        for (const char* mode : kReductions) {
            INFO(dtype_name(dtype) << " " << mode);
            {
                INFO("binary_cross_entropy with weight (17)");
                check_loss(
                    [&](const Tensor& in, const Tensor& t) {
                        return binary_cross_entropy(in, t, on(in, weight), mode);
                    },
                    probs, y);
            }
            INFO("binary_cross_entropy_with_logits with weight (13, 1) and pos_weight (17)");
            check_loss(
                [&](const Tensor& in, const Tensor& t) {
                    return binary_cross_entropy_with_logits(in, t, on(in, row_weight), mode,
                                                            on(in, pos_weight));
                },
                logits, y);
        }
        INFO("binary_cross_entropy at 0 and 1 (logs clamped at -100)");
        Tensor edges = tensor({0.0, 1.0, 0.5, 1.0}, {4}, dtype);
        Tensor labels = tensor({1.0, 0.0, 0.3, 1.0}, {4}, dtype);
        require_close(binary_cross_entropy(edges.cuda(), labels.cuda(), Tensor(), "none").cpu(),
                      binary_cross_entropy(edges, labels, Tensor(), "none"), 1e-6, 1e-6);
    }
}

TEST_CASE("losses on the GPU: broadcast targets, extreme logits, all ignored",
          "[cuda][ops][loss]") {
    if (!have_gpu()) return;
    // Broadcasting operands: forward only (their backward sums over the broadcast dims).
    Tensor a = random_input({4, 1, 5}, 51).to(DType::float32);
    Tensor b = random_input({4, 3, 5}, 52).to(DType::float32);
    for (const char* mode : kReductions) {
        INFO("mse_loss broadcast " << mode);
        require_close(mse_loss(a.cuda(), b.cuda(), mode).cpu(), mse_loss(a, b, mode), 1e-5, 1e-6);
    }
    Tensor x = tensor({1e4, -1e4, 0, 3e4, 3e4, -3e4}, {2, 3}, DType::float32);
    Tensor target = from_vector(std::vector<int64_t>{1, 0}, {2});
    require_close(cross_entropy(x.cuda(), target.cuda(), Tensor(), -100, "none").cpu(),
                  {2e4, std::log(2.0)}, 1e-6);
    Tensor logits = random_input({3, 4}, 53).to(DType::float32).cuda().requires_grad_();
    Tensor ignored = full({3}, -100.0, DType::int64).cuda();
    Tensor loss = cross_entropy(logits, ignored, Tensor(), -100, "mean", 0.1);
    CHECK(std::isnan(loss.item<double>()));
    CHECK(loss.is_cuda());
    loss.backward();
    require_close(logits.grad().cpu(), zeros({3, 4}, DType::float32), 0, 0);
}

TEST_CASE("losses on the GPU: bad targets and inputs name the first bad value",
          "[cuda][ops][loss]") {
    if (!have_gpu()) return;
    Tensor x = zeros({5, 4}, DType::float32).cuda();
    Tensor rows = from_vector(std::vector<int64_t>{0, -100, 7, 9, 1}, {5}).cuda();
    require_error([&] { cross_entropy(x, rows); },
                  {"[cross_entropy]", "target 7", "out of bounds", "4 classes", "flat index 2"});
    Tensor negative = from_vector(std::vector<int64_t>{0, 1, 3, -2, 1}, {5}).cuda();
    require_error([&] { nll_loss(x, negative); }, {"[nll_loss]", "target -2", "flat index 3"});
    // segmentation layout: (2, 4, 3) with targets (2, 3)
    Tensor seg = zeros({2, 4, 3}, DType::float64).cuda();
    Tensor seg_target = from_vector(std::vector<int64_t>{0, 1, 2, 3, 5, 4}, {2, 3}).cuda();
    require_error([&] { cross_entropy(seg, seg_target, Tensor(), -100, "sum"); },
                  {"[cross_entropy]", "target 5", "flat index 4"});
    Tensor probs = tensor({0.5, 0.2, 0.1, 1.5, 0.3, 0.4, 0.2, 2.0}, {2, 4}, DType::float32).cuda();
    require_error(
        [&] {
            binary_cross_entropy(probs, zeros({2, 4}, DType::float32).cuda());
        },
        {"[binary_cross_entropy]", "between 0 and 1", "1.5", "flat index 3"});
    // mixed devices
    require_error([&] { cross_entropy(x, rows.cpu()); }, {"[cross_entropy]", "different devices"});
    Tensor good = from_vector(std::vector<int64_t>{0, 1, 2, 3, 1}, {5}).cuda();
    require_error([&] { cross_entropy(x, good, ones({4}, DType::float32)); },
                  {"[cross_entropy]", "different devices"});
    require_error(
        [&] {
            mse_loss(x, zeros({5, 4}, DType::float32));
        },
        {"[mse_loss]", "different devices"});
}
