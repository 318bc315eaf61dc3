// stb_image for decoding (compiled here only, with its functions static, so a program that
// embeds lumen may use its own copy), limited to PNG, JPEG, BMP and TGA; a small PNG encoder on
// zlib for writing (signature, IHDR, IDAT of filtered rows, IEND; https://www.w3.org/TR/png/).
#include "datasets/image.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <zlib.h>

#include "core/error.h"
#include "core/file_io.h"

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC
#define STBI_NO_STDIO
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_TGA
#define STBI_MAX_DIMENSIONS (1 << 20)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#include <stb/stb_image.h>
#pragma GCC diagnostic pop

namespace lumen::datasets {

namespace {

constexpr uint64_t kMaxFileBytes = uint64_t(1) << 30;
constexpr uint64_t kMaxPixels = uint64_t(1) << 28;

#define IMAGE_CHECK(cond, path, ...) LUMEN_CHECK(cond, "image", path, ": ", __VA_ARGS__)

struct StbFree {
    void operator()(void* p) const { stbi_image_free(p); }
};

// stb_image (Debian's 2022-09 copy) trusts the 16 code counts of a JPEG Huffman table (DHT):
// counts summing past 256 overrun its 257-entry size table and 256-entry value table (found by
// fuzz/). So every DHT segment is checked first, walking the markers as stb does: bytes that
// are not 0xFF between segments are skipped, 0xFF fill bytes too, and after a start of scan
// the entropy-coded data runs to the next 0xFF that is not stuffing (00) or a restart (D0-D7).
// Returns "" or the problem.
std::string check_jpeg_huffman_tables(const std::string& bytes) {
    const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
    const size_t n = bytes.size();
    // stb takes the data for a JPEG when it starts with 0xFF, more 0xFF fill bytes, then SOI.
    size_t p = 0;
    if (n == 0 || b[0] != 0xFF) return "";
    while (p < n && b[p] == 0xFF) ++p;
    if (p >= n || b[p] != 0xD8) return "";
    ++p;
    while (p + 1 < n) {
        if (b[p] != 0xFF) {
            ++p;
            continue;
        }
        while (p < n && b[p] == 0xFF) ++p;
        if (p >= n) break;
        const unsigned char marker = b[p++];
        if (marker == 0xD9) break;  // EOI
        if (marker == 0x00 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) continue;
        if (p + 2 > n) break;
        const size_t length = size_t(b[p]) << 8 | b[p + 1];
        if (marker == 0xC4) {
            // As stb: tables follow while the segment's length says bytes remain, each read in
            // full even past the segment's end (bytes past the file read as 0).
            auto at = [&](size_t i) { return i < n ? b[i] : 0; };
            int64_t remaining = int64_t(length) - 2;
            size_t q = p + 2;
            while (remaining > 0) {
                size_t count = 0;
                for (size_t i = 1; i <= 16; ++i) count += at(q + i);
                if (count > 256)
                    return "a Huffman table (DHT) claims " + std::to_string(count) +
                           " codes (at most 256)";
                q += 17 + count;
                remaining -= int64_t(17 + count);
            }
        }
        p = std::max(p + length, p + 2);
        if (marker == 0xDA) {  // skip the entropy-coded data
            while (p + 1 < n &&
                   !(b[p] == 0xFF && b[p + 1] != 0x00 && !(b[p + 1] >= 0xD0 && b[p + 1] <= 0xD7)))
                ++p;
        }
    }
    return "";
}

}  // namespace

Tensor read_image(const std::string& path, int* bits) {
    const std::string bytes = read_file(path, "image", kMaxFileBytes, "an image");
    IMAGE_CHECK(bytes.size() <= size_t(INT32_MAX), path, "too large");
    const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
    const int length = int(bytes.size());
    const std::string jpeg_problem = check_jpeg_huffman_tables(bytes);
    IMAGE_CHECK(jpeg_problem.empty(), path, "corrupt JPEG: ", jpeg_problem);
    int width = 0, height = 0, channels = 0;
    IMAGE_CHECK(stbi_info_from_memory(data, length, &width, &height, &channels), path,
                "not a PNG, JPEG, BMP or TGA image, or a damaged one (", stbi_failure_reason(),
                ")");
    IMAGE_CHECK(width > 0 && height > 0 && channels >= 1 && channels <= 4 &&
                    uint64_t(width) * uint64_t(height) <= kMaxPixels,
                path, "the header claims ", width, " x ", height, " pixels of ", channels,
                " channels (at most 2^28 pixels of 1 to 4 channels)");
    // No format here packs more than about 8256 pixels into a byte (1-bit PNG rows deflated at
    // deflate's best, 1032:1); a header claiming more than that (with room for small files)
    // lies, and decoding it would allocate for pixels that are not there.
    const uint64_t plausible = 8256 * uint64_t(bytes.size()) + (uint64_t(1) << 20);
    IMAGE_CHECK(uint64_t(width) * uint64_t(height) <= plausible, path, "the header claims ", width,
                " x ", height, " pixels, more than a file of ", bytes.size(),
                " bytes can hold (at most ", plausible, ")");
    const bool sixteen = stbi_is_16_bit_from_memory(data, length) != 0;
    int w = 0, h = 0, c = 0;
    Tensor out;
    if (sixteen) {
        std::unique_ptr<stbi_us, StbFree> pixels(
            stbi_load_16_from_memory(data, length, &w, &h, &c, 0));
        IMAGE_CHECK(pixels != nullptr, path, "cannot decode (", stbi_failure_reason(), ")");
        out = empty({h, w, c}, DType::int32);
        int32_t* dst = static_cast<int32_t*>(out.data_ptr());
        for (int64_t i = 0; i < out.numel(); ++i) dst[i] = pixels.get()[i];
    } else {
        std::unique_ptr<stbi_uc, StbFree> pixels(
            stbi_load_from_memory(data, length, &w, &h, &c, 0));
        IMAGE_CHECK(pixels != nullptr, path, "cannot decode (", stbi_failure_reason(), ")");
        out = empty({h, w, c}, DType::uint8);
        std::memcpy(out.data_ptr(), pixels.get(), size_t(out.numel()));
    }
    IMAGE_CHECK(w == width && h == height && c == channels, path,
                "decoded a different size than its header claims");
    if (bits) *bits = sixteen ? 16 : 8;
    return out;
}

namespace {

void append_chunk(std::string& png, const char* type, const std::string& data) {
    uint32_t length = uint32_t(data.size());
    for (int i = 3; i >= 0; --i) png.push_back(char(length >> (8 * i)));
    std::string body = std::string(type, 4) + data;
    png += body;
    uint32_t crc = uint32_t(crc32_z(0, reinterpret_cast<const Bytef*>(body.data()), body.size()));
    for (int i = 3; i >= 0; --i) png.push_back(char(crc >> (8 * i)));
}

}  // namespace

void write_png(const std::string& path, const Tensor& image, int bits) {
    IMAGE_CHECK(image.defined() && (image.ndim() == 2 || image.ndim() == 3), path,
                "write_png needs (H, W) or (H, W, C), got ",
                image.defined() ? image.shape() : Shape{});
    const int64_t height = image.size(0), width = image.size(1);
    const int64_t channels = image.ndim() == 3 ? image.size(2) : 1;
    IMAGE_CHECK(channels >= 1 && channels <= 4 && height >= 1 && width >= 1 &&
                    height <= INT32_MAX && width <= INT32_MAX,
                path, "cannot write shape ", image.shape(),
                " as a PNG (C must be 1 grey, 2 grey+alpha, 3 RGB or 4 RGBA)");
    const DType dtype = image.dtype();
    IMAGE_CHECK(dtype == DType::uint8 || dtype == DType::int32 || dtype == DType::int64, path,
                "cannot write dtype ", dtype, " as a PNG (uint8, or int32/int64 for 16 bits)");
    if (bits == 0) bits = dtype == DType::uint8 ? 8 : 16;
    IMAGE_CHECK(bits == 8 || bits == 16, path, "bits must be 8 or 16, got ", bits);
    Tensor values = image.detach().cpu().to(DType::int64).contiguous();
    const int64_t* v = static_cast<const int64_t*>(values.data_ptr());
    const int64_t top = bits == 8 ? 255 : 65535;
    for (int64_t i = 0; i < values.numel(); ++i)
        IMAGE_CHECK(v[i] >= 0 && v[i] <= top, path, "value ", v[i], " does not fit ", bits,
                    "-bit PNG samples (0..", top, ")");
    // Rows of samples (big-endian when 16-bit), each after filter byte 0 (none).
    const int64_t row_bytes = width * channels * (bits / 8);
    std::string raw;
    raw.reserve(size_t(height * (row_bytes + 1)));
    for (int64_t y = 0; y < height; ++y) {
        raw.push_back('\0');
        for (int64_t x = 0; x < width * channels; ++x) {
            int64_t sample = v[y * width * channels + x];
            if (bits == 16) raw.push_back(char(sample >> 8));
            raw.push_back(char(sample & 0xff));
        }
    }
    uLongf packed_size = compressBound(uLong(raw.size()));
    std::string packed(packed_size, '\0');
    IMAGE_CHECK(compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size,
                          reinterpret_cast<const Bytef*>(raw.data()), uLong(raw.size()), 6) == Z_OK,
                path, "zlib could not compress the image");
    packed.resize(packed_size);
    static const char kColorType[] = {0, 0, 4, 2, 6};  // by channels: grey, grey+alpha, RGB, RGBA
    std::string header;
    for (int64_t size : {width, height})
        for (int i = 3; i >= 0; --i) header.push_back(char(size >> (8 * i)));
    header += char(bits);
    header += kColorType[channels];
    header += std::string(3, '\0');  // deflate, adaptive filtering, no interlace
    std::string png = "\x89PNG\r\n\x1a\n";
    append_chunk(png, "IHDR", header);
    append_chunk(png, "IDAT", packed);
    append_chunk(png, "IEND", "");
    write_file_atomically(path, "image", [&](FileWriter& out) { out.write(png); });
}

}  // namespace lumen::datasets
