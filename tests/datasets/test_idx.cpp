// IDX reader: round trips of every dtype, plain and gzipped, and every kind of corrupt file
// (each error must name the file).
#include <cstring>
#include <fstream>

#include <zlib.h>

#include "support/gradcheck.h"

using namespace lumen;
using namespace lumen::testing;
using lumen::datasets::read_idx;
using lumen::datasets::read_idx_images;
using lumen::datasets::read_idx_labels;
using lumen::datasets::write_idx;

namespace {

using Bytes = std::vector<uint8_t>;

void write_bytes(const std::string& path, const Bytes& bytes, bool gzip = false) {
    if (gzip) {
        gzFile file = gzopen(path.c_str(), "wb");
        REQUIRE(file != nullptr);
        if (!bytes.empty()) REQUIRE(gzwrite(file, bytes.data(), unsigned(bytes.size())) > 0);
        REQUIRE(gzclose(file) == Z_OK);
        return;
    }
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// A header: magic 0 0 code ndim, then big-endian dims.
Bytes header(uint8_t code, const std::vector<uint32_t>& dims) {
    Bytes out = {0, 0, code, uint8_t(dims.size())};
    for (uint32_t d : dims) {
        for (int b = 3; b >= 0; --b) out.push_back(uint8_t(d >> (8 * b)));
    }
    return out;
}

Bytes with_payload(Bytes bytes, size_t n) {
    for (size_t i = 0; i < n; ++i) bytes.push_back(uint8_t(i * 7));
    return bytes;
}

bool same(const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && a.dtype() == b.dtype() &&
           a.to_vector<double>() == b.to_vector<double>();
}

}  // namespace

TEST_CASE("idx: uint8 images round trip plain and gzipped", "[datasets][idx]") {
    TempDir dir("idx_images");
    Tensor images = arange(0, 30, 1, DType::uint8).reshape({2, 3, 5});
    for (bool gzip : {false, true}) {
        std::string path = dir.file(gzip ? "images.gz" : "images");
        write_idx(path, images, gzip);
        CHECK(same(read_idx(path), images));
        CHECK(same(read_idx_images(path), images));
    }
}

TEST_CASE("idx: labels read as int64", "[datasets][idx]") {
    TempDir dir("idx_labels");
    Tensor labels = from_vector<uint8_t>({3, 0, 9, 255});
    write_idx(dir.file("labels.gz"), labels, true);
    Tensor got = read_idx_labels(dir.file("labels.gz"));
    CHECK(got.dtype() == DType::int64);
    CHECK(got.to_vector<int64_t>() == std::vector<int64_t>{3, 0, 9, 255});
}

TEST_CASE("idx: multi-byte dtypes are big-endian on disk", "[datasets][idx]") {
    TempDir dir("idx_dtypes");
    std::vector<Tensor> tensors = {from_vector<int32_t>({-2, 70000, 1 << 30}, {3}),
                                   from_vector<float>({1.5f, -0.25f, 3e9f, 0.f}, {2, 2}),
                                   from_vector<double>({1e-300, -7.0}, {1, 2, 1})};
    for (const Tensor& t : tensors) {
        for (bool gzip : {false, true}) {
            write_idx(dir.file("t"), t, gzip);
            CHECK(same(read_idx(dir.file("t")), t));
        }
    }
    // An int 258 is stored 00 00 01 02.
    write_bytes(dir.file("int"), {0, 0, 0x0C, 1, 0, 0, 0, 1, 0, 0, 1, 2});
    CHECK(read_idx(dir.file("int")).to_vector<int64_t>() == std::vector<int64_t>{258});
}

TEST_CASE("idx: sbyte and short widen to int32", "[datasets][idx]") {
    TempDir dir("idx_widen");
    Bytes sbyte = header(0x09, {3});
    for (uint8_t v : {0xFF, 0x7F, 0x80}) sbyte.push_back(v);
    write_bytes(dir.file("sbyte"), sbyte);
    Tensor a = read_idx(dir.file("sbyte"));
    CHECK(a.dtype() == DType::int32);
    CHECK(a.to_vector<int64_t>() == std::vector<int64_t>{-1, 127, -128});
    Bytes shorts = header(0x0B, {2});
    for (uint8_t v : {0xFF, 0xFE, 0x01, 0x00}) shorts.push_back(v);
    write_bytes(dir.file("short"), shorts, true);
    CHECK(read_idx(dir.file("short")).to_vector<int64_t>() == std::vector<int64_t>{-2, 256});
}

TEST_CASE("idx: a bad header is an error naming the file", "[datasets][idx]") {
    TempDir dir("idx_header");
    std::string path = dir.file("bad.idx");
    struct Case {
        Bytes bytes;
        std::string fragment;
    };
    std::vector<Case> cases = {
        {{}, "truncated header (got 0 bytes, expected at least 4"},
        {{0, 0, 8}, "truncated header (got 3 bytes"},
        {{0, 0, 8, 3, 0, 0, 0, 2, 0, 0}, "truncated header (got 10 bytes, expected 16 for 3 dims"},
        {with_payload({1, 0, 8, 1, 0, 0, 0, 2}, 2), "bad magic number (got 0x01000801"},
        {with_payload({0x12, 0x34, 8, 1, 0, 0, 0, 2}, 2), "bad magic number"},
        {with_payload(header(0x07, {2}), 2), "unknown dtype code (got 0x07"},
        {{0, 0, 8, 0}, "bad number of dims (got 0, expected 1..8)"},
        {with_payload({0, 0, 8, 9}, 36), "bad number of dims (got 9"},
        {with_payload(header(0x08, {2, 0, 3}), 0), "dim 1 is 0"},
        {header(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}), "data too large"},
        {header(0x0E, {1u << 16, 1u << 16}), "data too large"},
    };
    for (bool gzip : {false, true}) {
        for (const Case& c : cases) {
            INFO("gzip " << gzip << ", expecting " << c.fragment);
            write_bytes(path, c.bytes, gzip);
            require_error([&] { read_idx(path); }, {"[idx]", path, c.fragment});
        }
    }
}

TEST_CASE("idx: a payload of the wrong length is an error naming the file", "[datasets][idx]") {
    TempDir dir("idx_payload");
    std::string path = dir.file("data.idx");
    Bytes head = header(0x08, {2, 3, 4});  // 24 bytes of data
    for (bool gzip : {false, true}) {
        INFO("gzip " << gzip);
        write_bytes(path, with_payload(head, 23), gzip);
        require_error([&] { read_idx(path); },
                      {"[idx]", path, "payload too short (got 23 bytes", "expected 24"});
        write_bytes(path, with_payload(head, 0), gzip);
        require_error([&] { read_idx(path); }, {"[idx]", path, "payload too short (got 0"});
        write_bytes(path, with_payload(head, 27), gzip);
        require_error([&] { read_idx(path); }, {"[idx]", path, "trailing bytes"});
        write_bytes(path, with_payload(head, 24), gzip);
        CHECK(read_idx(path).shape() == Shape{2, 3, 4});
    }
}

TEST_CASE("idx: huge dims within the limit are rejected before allocating", "[datasets][idx]") {
    TempDir dir("idx_huge");
    std::string path = dir.file("huge.idx");
    Bytes head = header(0x08, {60000, 2800, 28});  // 4.7 GB claimed, 10 bytes present
    write_bytes(path, with_payload(head, 10));
    require_error([&] { read_idx(path); },
                  {"[idx]", path, "payload too short (got 10 bytes", "expected 4704000000"});
    write_bytes(path, with_payload(head, 10), true);
    require_error([&] { read_idx(path); },
                  {"[idx]", path, "more data than the gzip file can hold", "4704000000"});
}

TEST_CASE("idx: corrupt gzip data is an error naming the file", "[datasets][idx]") {
    TempDir dir("idx_gzip");
    std::string path = dir.file("data.gz");
    std::vector<uint8_t> values(4000);
    for (size_t i = 0; i < values.size(); ++i) values[i] = uint8_t(i * i % 7);
    Tensor data = from_vector(values);
    write_idx(path, data, true);
    // Cut the compressed stream in half: zlib reports an unexpected end.
    std::ifstream in(path, std::ios::binary);
    Bytes full((std::istreambuf_iterator<char>(in)), {});
    write_bytes(dir.file("cut.gz"), Bytes(full.begin(), full.begin() + full.size() / 2));
    require_error([&] { read_idx(dir.file("cut.gz")); }, {"[idx]", dir.file("cut.gz")});
    // Garbage after a valid gzip header: a data error.
    Bytes garbage(full.begin(), full.begin() + 10);
    for (int i = 0; i < 200; ++i) garbage.push_back(uint8_t(0xFF - i));
    write_bytes(dir.file("garbage.gz"), garbage);
    require_error([&] { read_idx(dir.file("garbage.gz")); },
                  {"[idx]", dir.file("garbage.gz"), "corrupt gzip data"});
}

TEST_CASE("idx: missing files and directories name the path", "[datasets][idx]") {
    TempDir dir("idx_missing");
    require_error([&] { read_idx(dir.file("nope.gz")); },
                  {"[idx]", dir.file("nope.gz"), "cannot open", std::strerror(ENOENT)});
    require_error([&] { read_idx(dir.path.string()); },
                  {"[idx]", dir.path.string(), "is a directory, not a file"});
}

TEST_CASE("idx: images and labels must have their dims and dtype", "[datasets][idx]") {
    TempDir dir("idx_kinds");
    write_idx(dir.file("flat"), from_vector<uint8_t>({1, 2, 3}));
    require_error([&] { read_idx_images(dir.file("flat")); },
                  {"[idx]", dir.file("flat"), "must have 3 dims (got shape [3]"});
    write_idx(dir.file("ints"), from_vector<int32_t>({1, 2, 3}));
    require_error([&] { read_idx_labels(dir.file("ints")); },
                  {"[idx]", dir.file("ints"), "must hold ubyte data (got dtype code 0x0c"});
    require_error([&] { write_idx(dir.file("x"), zeros({2}, DType::int64)); },
                  {"[idx]", dir.file("x"), "cannot store dtype int64"});
}
