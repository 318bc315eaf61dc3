// PVT-GDLA's losses (Zheng et al. 2026, Sec. 4): the boundary count and alpha by hand and against
// the official plus-stencil convolution, BDoU / soft Dice / Dice + CE against formulas evaluated
// here, an absent class, 3-D maps, float64 gradchecks, errors, and the vectors.
#include <cmath>

#include "support/gradcheck.h"
#include "train/loss_seg.h"

using namespace lumen;
using namespace lumen::testing;

namespace {

// Per-class sums I, Y, Z of softmax(logits) against the labels, by plain loops.
// logits (B, K, H, W) float64, labels (B, H, W).
struct ClassSums {
    std::vector<double> inter, y, z;
};
ClassSums class_sums(const Tensor& logits, const Tensor& labels) {
    const int64_t B = logits.size(0), K = logits.size(1), H = logits.size(2), W = logits.size(3);
    std::vector<double> x = logits.to_vector<double>();
    std::vector<int64_t> t = labels.to_vector<int64_t>();
    ClassSums s{std::vector<double>(size_t(K)), std::vector<double>(size_t(K)),
                std::vector<double>(size_t(K))};
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < H * W; ++i) {
            double total = 0;
            for (int64_t k = 0; k < K; ++k) total += std::exp(x[size_t((b * K + k) * H * W + i)]);
            for (int64_t k = 0; k < K; ++k) {
                double p = std::exp(x[size_t((b * K + k) * H * W + i)]) / total;
                bool on = t[size_t(b * H * W + i)] == k;
                s.inter[size_t(k)] += on ? p : 0.0;
                s.y[size_t(k)] += on ? 1.0 : 0.0;
                s.z[size_t(k)] += p * p;
            }
        }
    return s;
}

// The official alpha: conv2d of the one-hot map with the plus stencil (zero padding), times
// the map; boundary where 0 < Y < 5.
std::vector<double> stencil_alpha(const Tensor& labels, int64_t K) {
    const int64_t B = labels.size(0), H = labels.size(1), W = labels.size(2);
    std::vector<int64_t> t = labels.to_vector<int64_t>();
    auto at = [&](int64_t b, int64_t i, int64_t j, int64_t k) {
        return i >= 0 && i < H && j >= 0 && j < W && t[size_t((b * H + i) * W + j)] == k ? 1 : 0;
    };
    std::vector<double> alpha;
    for (int64_t k = 0; k < K; ++k) {
        double count = 0, size = 0;
        for (int64_t b = 0; b < B; ++b)
            for (int64_t i = 0; i < H; ++i)
                for (int64_t j = 0; j < W; ++j) {
                    int y = at(b, i, j, k) + at(b, i - 1, j, k) + at(b, i + 1, j, k) +
                            at(b, i, j - 1, k) + at(b, i, j + 1, k);
                    y *= at(b, i, j, k);
                    count += y > 0 && y < 5;
                    size += at(b, i, j, k);
                }
        alpha.push_back(std::min(2 * (1 - (count + 1e-5) / (size + 1e-5)) - 1, 0.8));
    }
    return alpha;
}

}  // namespace

TEST_CASE("boundary_dou_alpha: a 4x4 block in a 6x6 image by hand", "[train][loss]") {
    // Class 1 is a 4x4 block (rows/cols 1..4): 12 boundary pixels of 16; class 0 is the
    // 20-pixel frame around it, every pixel of it on the boundary.
    std::vector<int64_t> values(36, 0);
    for (int i = 1; i <= 4; ++i)
        for (int j = 1; j <= 4; ++j) values[size_t(i * 6 + j)] = 1;
    Tensor labels = from_vector(values, {1, 6, 6});
    Tensor alpha = train::boundary_dou_alpha(labels, 3, DType::float64);
    double a1 = 2 * (1 - (12 + 1e-5) / (16 + 1e-5)) - 1;  // -0.5
    double a0 = 2 * (1 - (20 + 1e-5) / (20 + 1e-5)) - 1;  // -1
    double a2 = 2 * (1 - (0 + 1e-5) / (0 + 1e-5)) - 1;    // absent class: -1
    require_close(alpha, {a0, a1, a2}, 1e-12, 1e-12);
    // A 6x6 block of one class in a larger image: 20 of 36 on the boundary -> 2(16/36) - 1.
    std::vector<int64_t> big(100, 0);
    for (int i = 2; i < 8; ++i)
        for (int j = 2; j < 8; ++j) big[size_t(i * 10 + j)] = 1;
    Tensor alpha_big = train::boundary_dou_alpha(from_vector(big, {1, 10, 10}), 2, DType::float64);
    CHECK(alpha_big.to_vector<double>()[1] == Approx(2 * (1 - 20.00001 / 36.00001) - 1));
    // Clamped at alpha_max: a solid class with few boundary pixels.
    Tensor solid = zeros({1, 40, 40}, DType::int64);
    CHECK(train::boundary_dou_alpha(solid, 1, DType::float64).item<double>() == 0.8);
}

TEST_CASE("boundary_dou_alpha equals the official plus-stencil convolution", "[train][loss]") {
    Generator gen(3);
    for (int64_t K : {2, 3, 5}) {
        Tensor labels = randint(0, K, {2, 7, 9}, DType::int64, &gen);
        INFO("K " << K);
        require_close(train::boundary_dou_alpha(labels, K, DType::float64),
                      stencil_alpha(labels, K), 1e-12, 1e-12);
    }
}

// Class 3 is absent: Y = I = 0 and alpha = -1, so its BDoU term is (Z + eps) / (Z + eps) = 1.
TEST_CASE("boundary_dou_loss and soft_dice_loss equal their formulas", "[train][loss]") {
    Generator gen(5);
    Tensor logits = random_input({2, 4, 5, 6}, 11, -2.0, 2.0);
    Tensor labels = randint(0, 3, {2, 5, 6}, DType::int64, &gen);  // class 3 absent
    ClassSums s = class_sums(logits, labels);
    std::vector<double> alpha = stencil_alpha(labels, 4);
    double bdou = 0, dice = 0;
    for (size_t k = 0; k < 4; ++k) {
        double zy = s.z[k] + s.y[k];
        bdou += (zy - 2 * s.inter[k] + 1e-5) / (zy - (1 + alpha[k]) * s.inter[k] + 1e-5) / 4;
        dice += (1 - (2 * s.inter[k] + 1e-5) / (zy + 1e-5)) / 4;
    }
    CHECK(train::boundary_dou_loss(logits, labels).item<double>() == Approx(bdou).epsilon(1e-13));
    CHECK(train::soft_dice_loss(logits, labels).item<double>() == Approx(dice).epsilon(1e-13));
    // The (B, 1, H, W) target layout gives the same.
    CHECK(train::boundary_dou_loss(logits, labels.unsqueeze(1)).item<double>() ==
          Approx(bdou).epsilon(1e-13));
    double ce = cross_entropy(logits, labels).item<double>();
    CHECK(train::soft_dice_ce_loss(logits, labels).item<double>() ==
          Approx(0.5 * ce + 0.5 * dice).epsilon(1e-13));
    CHECK(train::soft_dice_ce_loss(logits, labels, {.lambda_dice = 2.0, .lambda_ce = 0.25})
              .item<double>() == Approx(0.25 * ce + 2.0 * dice).epsilon(1e-13));
}

TEST_CASE("gdla losses: gradients match finite differences, 2-D and 3-D", "[train][loss]") {
    Generator gen(9);
    Tensor logits = random_input({2, 3, 4, 5}, 4, -2.0, 2.0);
    Tensor labels = randint(0, 3, {2, 4, 5}, DType::int64, &gen);
    gradcheck(
        [&](const std::vector<Tensor>& in) { return train::boundary_dou_loss(in[0], labels); },
        {logits});
    gradcheck([&](const std::vector<Tensor>& in) { return train::soft_dice_loss(in[0], labels); },
              {logits});
    gradcheck(
        [&](const std::vector<Tensor>& in) { return train::soft_dice_ce_loss(in[0], labels); },
        {logits});
    gradcheck(
        [&](const std::vector<Tensor>& in) {
            return train::soft_dice_loss(in[0], labels, 1e-5, train::ClassActivation::sigmoid);
        },
        {logits});
    // 3-D volumes: the face neighbourhood has 6 members.
    Tensor volume = random_input({1, 2, 3, 3, 4}, 5, -2.0, 2.0);
    Tensor volume_labels = randint(0, 2, {1, 3, 3, 4}, DType::int64, &gen);
    gradcheck(
        [&](const std::vector<Tensor>& in) {
            return train::boundary_dou_loss(in[0], volume_labels);
        },
        {volume});
    // The centre voxel of a 3x3x3 volume as class 1: it is a boundary voxel (C = S = 1), and
    // each of the 26 class-0 voxels lies on the volume's surface (C = S = 26): alpha = -1.
    std::vector<int64_t> cube(27, 0);
    cube[13] = 1;
    Tensor alpha = train::boundary_dou_alpha(from_vector(cube, {1, 3, 3, 3}), 2, DType::float64);
    require_close(alpha, {-1.0, -1.0}, 1e-9, 1e-9);
}

TEST_CASE("gdla deep supervision sums BDoU over the four outputs", "[train][loss]") {
    Generator gen(12);
    Tensor labels = randint(0, 3, {2, 6, 6}, DType::int64, &gen);
    std::vector<Tensor> outputs;
    double total = 0;
    for (uint64_t seed : {1, 2, 3, 4}) {
        outputs.push_back(random_input({2, 3, 6, 6}, seed, -2.0, 2.0));
        total += train::boundary_dou_loss(outputs.back(), labels).item<double>();
    }
    train::BoundaryDoULoss loss;
    CHECK(loss.name() == "boundary_dou");
    CHECK(train::deep_supervision_loss(outputs, labels, {1, 1, 1, 1}, loss).item<double>() ==
          Approx(total).epsilon(1e-13));
}

TEST_CASE("gdla losses reject bad input", "[train][loss]") {
    Tensor logits = random_input({1, 3, 4, 4});
    Tensor labels = zeros({1, 4, 4}, DType::int64);
    require_error(
        [&] {
            train::boundary_dou_loss(logits, zeros({1, 4, 5}, DType::int64));
        },
        {"[boundary_dou_loss]", "[1, 4, 5]"});
    require_error([&] { train::soft_dice_loss(logits, logits); }, {"[soft_dice_loss]", "integer"});
    require_error(
        [&] {
            train::boundary_dou_loss(random_input({2, 3}), zeros({2}, DType::int64));
        },
        {"[boundary_dou_loss]", "spatial"});
    require_error(
        [&] {
            train::soft_dice_ce_loss(logits, zeros({2, 4, 4}, DType::int64));
        },
        {"[soft_dice_ce_loss]"});
    require_error([&] { train::parse_class_activation("loss", "tanh"); }, {"[loss]", "tanh"});
    require_error(
        [&] {
            train::boundary_dou_loss(logits, full({1, 4, 4}, 3, DType::int64));
        },
        {"[one_hot]"});
}

TEST_CASE("gdla loss vectors", "[train][loss][oracle]") {
    require_oracle_vectors(
        {"loss_bdou_K4_2x12x10_absent3", "loss_bdou_K2_3x9x11", "loss_bdou_K5_1x16x13",
         "loss_dice_K2_3x9x11", "loss_dice_K4_2x12x10_absent3", "loss_dicece_K2_3x9x11",
         "loss_dicece_K4_2x12x10_absent3", "loss_deep_supervision_bdou_K3_16x16"},
        "gdla");
}

TEST_CASE("dice_loss: MONAI's plain Dice per sample, by hand, and its variants", "[train][loss]") {
    // B = 2, K = 2, 2 positions; logits chosen so softmax p(class 1) = 0.8, 0.3 | 0.6, 0.1.
    auto logit = [](double p) { return std::log(p / (1 - p)); };
    Tensor logits = from_vector(std::vector<double>{0, 0, logit(0.8), logit(0.3),  //
                                                    0, 0, logit(0.6), logit(0.1)},
                                {2, 2, 2});
    Tensor labels = from_vector(std::vector<int64_t>{1, 0, 1, 1}, {2, 2});
    // Sample 0: class 1 I = 0.8, Z = 1.1, Y = 1; class 0 I = 0.7, Z = 0.9, Y = 1.
    // Sample 1: class 1 I = 0.7, Z = 0.7, Y = 2; class 0 I = 0, Z = 1.3, Y = 0.
    const double e = 1e-5;
    auto d = [&](double i, double z, double y) { return 1 - (2 * i + e) / (z + y + e); };
    const double plain = (d(0.8, 1.1, 1) + d(0.7, 0.9, 1) + d(0.7, 0.7, 2) + d(0, 1.3, 0)) / 4;
    CHECK(train::dice_loss(logits, labels).item<double>() == Approx(plain).epsilon(1e-12));
    // batch: one dice per class over both samples (class 1: I 1.5, Z 1.8, Y 3).
    const double batch = (d(1.5, 1.8, 3) + d(0.7, 2.2, 1)) / 2;
    CHECK(train::dice_loss(logits, labels, {.batch = true}).item<double>() ==
          Approx(batch).epsilon(1e-12));
    // squared + batch is the gdla soft Dice.
    CHECK(train::dice_loss(logits, labels, {.squared = true, .batch = true}).item<double>() ==
          Approx(train::soft_dice_loss(logits, labels).item<double>()).epsilon(1e-14));
    CHECK(train::DiceLoss().name() == "dice");
    gradcheck([&](const std::vector<Tensor>& in) { return train::dice_loss(in[0], labels); },
              {logits});
    gradcheck(
        [&](const std::vector<Tensor>& in) {
            return train::dice_loss(
                in[0], labels, {.squared = true, .activation = train::ClassActivation::sigmoid});
        },
        {logits});
    require_error([&] { train::dice_loss(logits, labels.to(DType::float32)); },
                  {"[dice_loss]", "integer"});
}
