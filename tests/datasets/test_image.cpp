// Images: PNG written by lumen and read back (8 and 16 bits, 1-4 channels), and damaged or
// hostile files refused with a message naming them. tests/conformance/check_pillow.py compares
// every format with Pillow.
#include <filesystem>
#include <fstream>

#include "datasets/image.h"
#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using namespace lumen::datasets;

namespace {

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("png: lumen writes and reads 8- and 16-bit images of 1 to 4 channels",
          "[datasets][image]") {
    TempDir dir("image_png");
    const std::string path = dir.file("a.png");
    for (int64_t channels : {1, 2, 3, 4}) {
        INFO(channels);
        Tensor eight = randint(0, 256, {5, 7, channels}, DType::int64).to(DType::uint8);
        write_png(path, eight);
        int bits = 0;
        Tensor back = read_image(path, &bits);
        CHECK(bits == 8);
        CHECK(back.dtype() == DType::uint8);
        CHECK(back.to_vector<int64_t>() == eight.to_vector<int64_t>());
        Tensor sixteen = randint(0, 65536, {5, 7, channels}, DType::int32);
        write_png(path, sixteen);
        back = read_image(path, &bits);
        CHECK(bits == 16);
        CHECK(back.dtype() == DType::int32);
        CHECK(back.to_vector<int64_t>() == sixteen.to_vector<int64_t>());
    }
    // (H, W) is one channel; int values up to 255 may be written with 8 bits.
    write_png(path, full({3, 4}, 200, DType::int32), 8);
    CHECK(read_image(path).shape() == Shape{3, 4, 1});
    require_error(
        [&] {
            write_png(path, full({3, 4}, 300, DType::int32), 8);
        },
        {"[image] " + path, "value 300 does not fit 8-bit PNG samples"});
    require_error(
        [&] {
            write_png(path, zeros({3, 4, 5}).to(DType::uint8));
        },
        {"cannot write shape [3, 4, 5]"});
    require_error([&] { write_png(path, zeros({3, 4})); }, {"cannot write dtype float32"});
}

TEST_CASE("images: damaged and hostile files are refused with a clear message",
          "[datasets][image][hostile]") {
    TempDir dir("image_hostile");
    const std::string path = dir.file("a.png");
    write_png(path, zeros({20, 30, 3}).to(DType::uint8));
    const std::string good = read_bytes(path);
    auto expect = [&](const std::string& bytes, const std::string& fragment) {
        INFO(fragment);
        write_bytes(path, bytes);
        require_error([&] { read_image(path); }, {"[image] " + path + ": ", fragment});
    };
    expect("plain text, not an image at all", "not a PNG, JPEG, BMP or TGA image");
    expect(good.substr(0, 40), "");  // cut inside the image data
    // A header claiming 1,000,000 x 1,000,000 pixels (the IHDR CRC is not what stb checks).
    std::string huge = good;
    for (size_t at : {16, 20}) {
        huge[at] = 0;
        huge[at + 1] = 0x0f;
        huge[at + 2] = 0x42;
        huge[at + 3] = 0x40;
    }
    expect(huge, "");
    std::string garbled = good;
    for (size_t i = 45; i < garbled.size() - 12; ++i) garbled[i] = char(i * 7);
    expect(garbled, "");
}

TEST_CASE("images: inputs the fuzzer found are refused cleanly", "[datasets][image][hostile]") {
    // fuzz/regressions/image: JPEGs whose Huffman tables overran stb_image's tables (found by
    // fuzz/fuzz_targets.cpp under ASan + UBSan); the sanitizer build runs this test too.
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(LUMEN_TEST_DATA).parent_path().parent_path() / "fuzz" /
                         "regressions" / "image";
    int count = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
        INFO(entry.path());
        require_error([&] { read_image(entry.path().string()); },
                      {"[image] " + entry.path().string() + ": "});
        ++count;
    }
    CHECK(count >= 3);
}
