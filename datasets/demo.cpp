// The demo datasets of datasets/demo.h: drawing with a RandomStream per case (derive_seed of the
// seed and the case index), written through the PNG, NIfTI and NPY writers.
#include "datasets/demo.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file_io.h"
#include "datasets/fashion_mnist.h"
#include "datasets/image.h"
#include "datasets/nifti.h"
#include "datasets/npy.h"
#include "datasets/random_stream.h"

namespace lumen::datasets {

namespace fs = std::filesystem;

namespace {

void write_text(const std::string& path, const std::string& text) {
    FileWriter out(path, "make-demo");
    out.write(text);
    out.close();
}

std::string case_name(const char* prefix, int64_t index, int digits) {
    std::string number = std::to_string(index);
    return prefix + std::string(size_t(std::max(0, digits - int(number.size()))), '0') + number;
}

// ---- shapes2d ----

void shapes2d(const std::string& dir, uint64_t seed, std::ostream& out) {
    constexpr int64_t kSize = 64;
    const struct Split {
        const char* name;
        int64_t count, first;
    } splits[] = {{"train", 240, 0}, {"test", 60, 240}};
    for (const Split& split : splits) {
        fs::create_directories(dir + "/" + split.name + "/images");
        fs::create_directories(dir + "/" + split.name + "/masks");
        for (int64_t n = 0; n < split.count; ++n) {
            Generator g(derive_seed(seed, uint64_t(split.first + n)));
            RandomStream r(g);
            Tensor image = empty({kSize, kSize, 3}, DType::uint8);
            Tensor mask = zeros({kSize, kSize}, DType::uint8);
            uint8_t* px = static_cast<uint8_t*>(image.data_ptr());
            uint8_t* label = static_cast<uint8_t*>(mask.data_ptr());
            // Smooth background: two random plane waves per channel, plus pixel noise.
            double f[3][4];
            for (auto& c : f)
                for (double& v : c) v = r.uniform(0.02, 0.15);
            float noise_a = 0, noise_b = 0;
            for (int64_t y = 0; y < kSize; ++y)
                for (int64_t x = 0; x < kSize; ++x)
                    for (int c = 0; c < 3; ++c) {
                        r.normal_pair(noise_a, noise_b);
                        double v = 110 + 35 * std::sin(f[c][0] * double(x) + f[c][1] * double(y)) +
                                   25 * std::cos(f[c][2] * double(x) - f[c][3] * double(y)) +
                                   12 * noise_a;
                        px[(y * kSize + x) * 3 + c] = uint8_t(std::clamp(v, 0.0, 255.0));
                    }
            // 1 to 3 shapes; class colours: disc reddish, square greenish (striped), triangle
            // bluish (dotted), each jittered.
            const int64_t shapes = 1 + int64_t(r.below(3));
            for (int64_t s = 0; s < shapes; ++s) {
                const int cls = 1 + int(r.below(3));
                const double cx = r.uniform(12, 52), cy = r.uniform(12, 52),
                             size = r.uniform(6, 13);
                const double base[3][3] = {{200, 60, 50}, {60, 190, 70}, {60, 80, 210}};
                double colour[3];
                for (int c = 0; c < 3; ++c) colour[c] = base[cls - 1][c] + r.uniform(-25, 25);
                for (int64_t y = 0; y < kSize; ++y)
                    for (int64_t x = 0; x < kSize; ++x) {
                        const double dx = double(x) - cx, dy = double(y) - cy;
                        bool inside = false;
                        double texture = 0;
                        if (cls == 1) {
                            inside = dx * dx + dy * dy <= size * size;
                        } else if (cls == 2) {
                            inside = std::abs(dx) <= size && std::abs(dy) <= size;
                            texture = (int64_t(x + y) / 3) % 2 ? 20 : -20;
                        } else {
                            inside = dy <= size && dy >= -size && std::abs(dx) <= (dy + size) / 2;
                            texture = (x % 4 == 0 && y % 4 == 0) ? -40 : 0;
                        }
                        if (!inside) continue;
                        label[y * kSize + x] = uint8_t(cls);
                        for (int c = 0; c < 3; ++c) {
                            r.normal_pair(noise_a, noise_b);
                            double v = colour[c] + texture + 10 * noise_a;
                            px[(y * kSize + x) * 3 + c] = uint8_t(std::clamp(v, 0.0, 255.0));
                        }
                    }
            }
            const std::string stem = case_name("case_", split.first + n, 4);
            write_png(dir + "/" + split.name + "/images/" + stem + ".png", image);
            write_png(dir + "/" + split.name + "/masks/" + stem + ".png", mask);
        }
    }
    out << "wrote shapes2d to " << dir
        << ": 240 train and 60 test PNG images (64 x 64 RGB) with masks (0 background, 1 disc, "
           "2 square, 3 triangle)\n";
}

// ---- organs3d ----

struct Blob {
    double centre[3], radius[3];  // in voxels
    double hu, texture;
    int label;
};

void organs3d(const std::string& dir, uint64_t seed, std::ostream& out) {
    constexpr int64_t I = 48, J = 48, K = 32;
    const int64_t train = 24, test = 6;
    for (const char* sub : {"imagesTr", "labelsTr", "imagesTs", "labelsTs"})
        fs::create_directories(dir + "/" + sub);
    nlohmann::json training = nlohmann::json::array(), testing = nlohmann::json::array();
    const std::array<std::array<double, 3>, 3> spacings = {
        {{0.8, 0.8, 2.5}, {1.0, 1.0, 2.0}, {0.7, 0.7, 3.0}}};
    for (int64_t n = 0; n < train + test; ++n) {
        Generator g(derive_seed(seed, uint64_t(n)));
        RandomStream r(g);
        auto jitter = [&](double v, double by) { return v + r.uniform(-by, by); };
        std::vector<Blob> blobs = {
            // body, liver (right side of the patient), kidneys, spleen
            {{jitter(24, 1), jitter(24, 1), 16}, {jitter(20, 1), jitter(17, 1), 40}, 40, 12, 0},
            {{jitter(16, 2), jitter(22, 2), jitter(17, 2)},
             {jitter(8, 1), jitter(7, 1), jitter(7, 1)},
             62,
             8,
             1},
            {{jitter(15, 1), jitter(32, 1), jitter(12, 2)}, {3.5, 3, jitter(5, 1)}, 150, 15, 2},
            {{jitter(33, 1), jitter(32, 1), jitter(12, 2)}, {3.5, 3, jitter(5, 1)}, 150, 15, 2},
            {{jitter(34, 2), jitter(20, 2), jitter(18, 2)},
             {jitter(5, 1), jitter(4, 1), jitter(5, 1)},
             45,
             25,
             3}};
        Tensor image = empty({I, J, K}, DType::int32);
        Tensor labels = zeros({I, J, K}, DType::uint8);
        int32_t* hu = static_cast<int32_t*>(image.data_ptr());
        uint8_t* lab = static_cast<uint8_t*>(labels.data_ptr());
        float a = 0, b = 0;
        for (int64_t i = 0; i < I; ++i)
            for (int64_t j = 0; j < J; ++j)
                for (int64_t k = 0; k < K; ++k) {
                    double value = -1000;  // air
                    int label = 0;
                    for (const Blob& blob : blobs) {
                        double d = 0;
                        const double p[3] = {double(i), double(j), double(k)};
                        for (int c = 0; c < 3; ++c)
                            d += std::pow((p[c] - blob.centre[c]) / blob.radius[c], 2);
                        if (d > 1) continue;
                        r.normal_pair(a, b);
                        value = blob.hu + blob.texture * a;
                        label = blob.label;
                    }
                    r.normal_pair(a, b);
                    const int64_t at = (i * J + j) * K + k;
                    hu[at] = int32_t(std::lround(value + 8 * b));
                    lab[at] = uint8_t(label);
                }
        // Spacing and orientation vary: LPS-like (flipped i and j) every third case.
        const std::array<double, 3>& s = spacings[size_t(n % 3)];
        const double flip = n % 3 == 0 ? -1 : 1;
        std::array<double, 16> affine = {
            flip * s[0], 0, 0,    -flip * s[0] * I / 2, 0, flip * s[1], 0, -flip * s[1] * J / 2,
            0,           0, s[2], -s[2] * K / 2,        0, 0,           0, 1};
        NiftiHeader header = nifti_header_from_affine(affine);
        const bool is_train = n < train;
        const std::string stem = case_name("organs_", n, 3) + ".nii.gz";
        const std::string images = is_train ? "imagesTr/" : "imagesTs/";
        const std::string label_dir = is_train ? "labelsTr/" : "labelsTs/";
        write_nifti(dir + "/" + images + stem, image, header);
        write_nifti(dir + "/" + label_dir + stem, labels, header);
        if (is_train)
            training.push_back(
                {{"image", "./" + images + stem}, {"label", "./" + label_dir + stem}});
        else
            testing.push_back("./" + images + stem);
    }
    nlohmann::json manifest = {
        {"name", "organs3d"},
        {"description", "lumen's synthetic CT-like abdomen volumes (make-demo organs3d)"},
        {"tensorImageSize", "3D"},
        {"modality", {{"0", "CT"}}},
        {"labels", {{"0", "background"}, {"1", "liver"}, {"2", "kidney"}, {"3", "spleen"}}},
        {"numTraining", train},
        {"numTest", test},
        {"training", training},
        {"test", testing}};
    write_text(dir + "/dataset.json", manifest.dump(2) + "\n");
    out << "wrote organs3d to " << dir
        << ": 24 training and 6 test CT-like volumes (48 x 48 x 32, NIfTI), label maps (1 "
           "liver, 2 kidney, 3 spleen; test labels in labelsTs) and dataset.json\n";
}

// ---- lesions3d ----

// A CT-like volume of varying size and spacing holding one lesion of the class: a cyst (a
// round, water-dense, smooth lesion), a solid mass (denser than the tissue around it, textured)
// or a calcified nodule (soft tissue inside a bright rim).
void lesions3d(const std::string& dir, uint64_t seed, std::ostream& out) {
    const char* classes[3] = {"calcified", "cyst", "solid"};
    const int64_t per_class_train = 100, per_class_test = 20;
    for (const char* split : {"train", "test"})
        for (const char* name : classes) fs::create_directories(dir + "/" + split + "/" + name);
    const int64_t cases = 3 * (per_class_train + per_class_test);
    for (int64_t n = 0; n < cases; ++n) {
        Generator g(derive_seed(seed, uint64_t(n)));
        RandomStream r(g);
        const int kind = int(n % 3);
        const int64_t I = 28 + int64_t(r.below(9)), J = 28 + int64_t(r.below(9)),
                      K = 20 + int64_t(r.below(9));
        const double radius = r.uniform(4.0, 6.5);
        // The lesion's centre lies well inside the body ellipsoid.
        const double centre[3] = {I / 2.0 + r.uniform(-4, 4), J / 2.0 + r.uniform(-4, 4),
                                  K / 2.0 + r.uniform(-3, 3)};
        const double body[3] = {I / 2.0 - 1, J / 2.0 - 1, K / 2.0};
        Tensor image = empty({I, J, K}, DType::int32);
        int32_t* hu = static_cast<int32_t*>(image.data_ptr());
        float a = 0, b = 0;
        for (int64_t i = 0; i < I; ++i)
            for (int64_t j = 0; j < J; ++j)
                for (int64_t k = 0; k < K; ++k) {
                    const double p[3] = {double(i), double(j), double(k)};
                    double in_body = 0, d = 0;
                    for (int c = 0; c < 3; ++c) {
                        in_body += std::pow((p[c] - body[c] + 0.5) / body[c], 2);
                        d += std::pow(p[c] - centre[c], 2);
                    }
                    d = std::sqrt(d) / radius;  // 1 on the lesion's surface
                    r.normal_pair(a, b);
                    double value = in_body <= 1 ? 40 + 12 * a : -1000;
                    if (d <= 1) {
                        if (kind == 0)  // calcified: a bright rim around soft tissue
                            value = d > 0.6 ? 500 + 60 * a : 40 + 12 * a;
                        else if (kind == 1)  // cyst: water, smooth
                            value = 5 + 4 * a;
                        else  // solid: enhancing, textured
                            value = 120 + 25 * a;
                    }
                    hu[(i * J + j) * K + k] = int32_t(std::lround(value + 6 * b));
                }
        const double s = r.uniform(0.7, 1.2), sk = r.uniform(1.0, 2.5);
        std::array<double, 16> affine = {s, 0, 0,  -s * I / 2,  0, s, 0, -s * J / 2,
                                         0, 0, sk, -sk * K / 2, 0, 0, 0, 1};
        const bool train = n < 3 * per_class_train;
        const std::string path = dir + "/" + (train ? "train/" : "test/") + classes[kind] + "/" +
                                 case_name("lesion_", n, 3) + ".nii.gz";
        write_nifti(path, image, nifti_header_from_affine(affine));
    }
    out << "wrote lesions3d to " << dir << ": " << 3 * per_class_train << " training and "
        << 3 * per_class_test
        << " test CT-like volumes (28-36 x 28-36 x 20-28, NIfTI) in train/ and test/, one "
           "folder per class (calcified, cyst, solid)\n";
}

// ---- fmnist_denoise ----

void fmnist_denoise(const std::string& dir, uint64_t seed, std::ostream& out,
                    const std::string& source) {
    fs::create_directories(dir);
    const struct {
        Split split;
        const char* file;
        int64_t count;
    } parts[] = {{Split::train, "train.npz", 2000}, {Split::test, "test.npz", 500}};
    for (const auto& part : parts) {
        FashionMnist data =
            load_fashion_mnist(part.split, source.empty() ? kFashionMnistDir : source);
        Tensor clean =
            data.images.narrow(0, 0, part.count).reshape({part.count, 28, 28}).contiguous();
        Tensor noisy = empty_like(clean);
        Generator g(derive_seed(seed, uint64_t(part.split)));
        RandomStream r(g);
        const float* c = static_cast<const float*>(clean.data_ptr());
        float* y = static_cast<float*>(noisy.data_ptr());
        float a = 0, b = 0;
        for (int64_t i = 0; i < clean.numel(); i += 2) {
            r.normal_pair(a, b);
            y[i] = c[i] + 0.2f * a;
            if (i + 1 < clean.numel()) y[i + 1] = c[i + 1] + 0.2f * b;
        }
        write_npz(dir + "/" + part.file, {{"image", noisy}, {"target", clean}}, true);
    }
    out << "wrote fmnist_denoise to " << dir
        << ": train.npz (2000) and test.npz (500) with 'image' (noisy, sigma 0.2) and 'target' "
           "(clean), (N, 28, 28) float32 in [0, 1] before noise\n";
}

// ---- bags ----

void bags(const std::string& dir, uint64_t seed, std::ostream& out) {
    constexpr int64_t kDim = 32;
    fs::create_directories(dir + "/bags");
    std::string csv = "slide,label,split\n";
    for (int64_t n = 0; n < 160; ++n) {
        Generator g(derive_seed(seed, uint64_t(n)));
        RandomStream r(g);
        const int64_t count = 16 + int64_t(r.below(49));
        const int label = int(r.below(2));
        Tensor features = empty({count, kDim}, DType::float32);
        float* f = static_cast<float*>(features.data_ptr());
        float a = 0, b = 0;
        for (int64_t i = 0; i < count * kDim; i += 2) {
            r.normal_pair(a, b);
            f[i] = a;
            f[i + 1] = b;
        }
        if (label == 1) {  // 2 to 5 instances carry the signal in the first 8 features
            const int64_t carriers = 2 + int64_t(r.below(4));
            for (int64_t c = 0; c < carriers; ++c) {
                const int64_t row = int64_t(r.below(uint64_t(count)));
                for (int64_t d = 0; d < 8; ++d) f[row * kDim + d] += 2.0f;
            }
        }
        const std::string slide = case_name("slide_", n, 3);
        write_npy(dir + "/bags/" + slide + ".npy", features);
        csv += slide + "," + std::to_string(label) + "," + (n < 120 ? "train" : "test") + "\n";
    }
    write_text(dir + "/labels.csv", csv);
    out << "wrote bags to " << dir
        << ": 160 feature bags (16-64 instances x 32, .npy in bags/), labels.csv (slide, label, "
           "split: 120 train, 40 test)\n";
}

// ---- text ----

void text(const std::string& dir, uint64_t seed, std::ostream& out) {
    const std::vector<std::vector<std::string>> topics = {
        {"match", "goal", "team", "coach", "league", "season", "striker", "referee", "score",
         "stadium", "fans", "tournament"},
        {"experiment", "theory", "cell", "quantum", "data", "laboratory", "molecule", "physics",
         "genome", "hypothesis", "telescope", "climate"},
        {"recipe", "flavour", "kitchen", "bread", "spicy", "dinner", "chef", "sauce", "cheese",
         "dessert", "roasted", "garlic"},
        {"flight", "hotel", "beach", "journey", "passport", "island", "museum", "train",
         "mountains", "luggage", "tourist", "harbour"}};
    const std::vector<std::string> common = {
        "the", "a",  "was",   "really", "and",  "this", "we",    "it",  "very", "of",
        "in",  "on", "today", "with",   "good", "new",  "after", "our", "some", "great"};
    const std::vector<std::string> names = {"sports", "science", "food", "travel"};
    fs::create_directories(dir);
    for (const auto& [file, count, first] :
         {std::tuple<const char*, int64_t, int64_t>{"train.csv", 800, 0}, {"test.csv", 200, 800}}) {
        std::string csv = "label,text\n";
        for (int64_t n = 0; n < count; ++n) {
            Generator g(derive_seed(seed, uint64_t(first + n)));
            RandomStream r(g);
            const size_t topic = r.below(4);
            const int64_t words = 6 + int64_t(r.below(15));
            std::string sentence;
            for (int64_t w = 0; w < words; ++w) {
                const bool on_topic = r.uniform() < 0.45;
                const auto& pool = on_topic ? topics[topic] : common;
                std::string word = pool[r.below(pool.size())];
                if (w == 0) word[0] = char(std::toupper(word[0]));
                sentence += (w ? " " : "") + word;
                if (r.uniform() < 0.08) sentence += ",";
            }
            sentence += r.uniform() < 0.2 ? "!" : ".";
            if (r.uniform() < 0.1) sentence = "\"" + sentence + "\" they said.";
            // CSV quoting: the text is quoted, its quotes doubled.
            std::string quoted;
            for (char c : sentence) quoted += c == '"' ? "\"\"" : std::string(1, c);
            csv += names[topic] + ",\"" + quoted + "\"\n";
        }
        write_text(dir + "/" + file, csv);
    }
    out << "wrote text to " << dir
        << ": train.csv (800) and test.csv (200) with columns label (sports, science, food, "
           "travel) and text\n";
}

}  // namespace

std::vector<std::string> demo_names() {
    return {"shapes2d", "organs3d", "lesions3d", "fmnist_denoise", "bags", "text"};
}

void make_demo(const std::string& name, const std::string& directory, uint64_t seed,
               std::ostream& out, const std::string& fashion_mnist_dir) {
    if (name == "shapes2d") return shapes2d(directory, seed, out);
    if (name == "organs3d") return organs3d(directory, seed, out);
    if (name == "lesions3d") return lesions3d(directory, seed, out);
    if (name == "fmnist_denoise") return fmnist_denoise(directory, seed, out, fashion_mnist_dir);
    if (name == "bags") return bags(directory, seed, out);
    if (name == "text") return text(directory, seed, out);
    std::string known;
    for (const std::string& n : demo_names()) known += (known.empty() ? "" : ", ") + n;
    LUMEN_FAIL("make-demo", "unknown demo dataset '", name, "' (known: ", known, ")");
}

}  // namespace lumen::datasets
