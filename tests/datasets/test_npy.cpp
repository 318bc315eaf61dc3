// NumPy .npy / .npz: round trips of every dtype and shape (0-d, empty, 1-D, 3-D), hand-made
// files in Fortran order and big-endian (as numpy.save writes them), archives stored and
// deflated, and every kind of damaged file, each refused with a message naming it.
// tests/conformance/check_numpy.py compares with NumPy itself.
#include <cstring>
#include <fstream>

#include "core/safetensors.h"
#include "datasets/npy.h"
#include "datasets/zip.h"
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

// A version 1.0 .npy file with this header dict and data bytes.
std::string npy(const std::string& dict, const std::string& data) {
    std::string header = dict;
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string out = "\x93NUMPY";
    out += char(1);
    out += char(0);
    out += char(header.size() & 0xFF);
    out += char(header.size() >> 8);
    return out + header + data;
}

void require_same(const Tensor& got, const Tensor& want) {
    REQUIRE(got.dtype() == want.dtype());
    REQUIRE(got.shape() == want.shape());
    REQUIRE(got.to_vector<double>() == want.to_vector<double>());
}

}  // namespace

TEST_CASE("npy: every dtype and shape round-trips", "[datasets][npy]") {
    TempDir dir("npy_roundtrip");
    const std::vector<Tensor> tensors = {
        tensor({1.5, -2.25, 3e-8, 1e30, 0.0, -0.0}, {2, 3}),
        tensor({0.1, -1e-300}, {2}, DType::float64),
        tensor({0.5, -2.0, 65504.0}, {3}).to(DType::float16),
        from_vector<int64_t>({int64_t(1) << 40, -5, 0, 7}, {2, 1, 2}),
        from_vector<int32_t>({-7, 2147483647}, {2}),
        from_vector<uint8_t>({0, 255, 17}, {3}),
        from_vector<bool>({true, false, true}, {3}),
        scalar_tensor(3.25),
        zeros({0, 4}),
        tensor({1, 2, 3, 4, 5, 6}, {2, 3}).transpose(0, 1),  // not contiguous
    };
    for (size_t i = 0; i < tensors.size(); ++i) {
        INFO(i);
        const std::string path = dir.file("a.npy");
        write_npy(path, tensors[i]);
        NpyArray back = read_npy(path);
        require_same(back.data, tensors[i].contiguous());
        CHECK(back.descr == npy_descr(tensors[i].dtype()));
        CHECK(read_bytes(path).size() % 64 ==
              size_t(tensors[i].numel()) * tensors[i].element_size() % 64);
    }
    require_error([&] { write_npy(dir.file("b.npy"), ones({2}).to(DType::bfloat16)); },
                  {"[npy]", "NumPy has no dtype for bfloat16"});
}

TEST_CASE("npy: Fortran order, big-endian and the narrow integer types", "[datasets][npy]") {
    TempDir dir("npy_layouts");
    const std::string path = dir.file("f.npy");
    // numpy.asfortranarray([[1, 2, 3], [4, 5, 6]], dtype='<i2'): columns first.
    std::string data;
    for (int16_t v : {1, 4, 2, 5, 3, 6}) data.append(reinterpret_cast<const char*>(&v), 2);
    write_bytes(path, npy("{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }", data));
    require_same(read_npy(path).data, from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}));
    // '>f4' 1.5 and -2.0, big-endian.
    write_bytes(path, npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                          std::string("\x3f\xc0\x00\x00\xc0\x00\x00\x00", 8)));
    require_same(read_npy(path).data, tensor({1.5, -2.0}));
    // int8 -1, uint16 65535, uint32 4e9, big-endian int64 -2.
    write_bytes(path, npy("{'descr': '|i1', 'fortran_order': False, 'shape': (1,), }", "\xff"));
    require_same(read_npy(path).data, from_vector<int32_t>({-1}, {1}));
    write_bytes(path, npy("{'descr': '<u2', 'fortran_order': False, 'shape': (1,), }", "\xff\xff"));
    require_same(read_npy(path).data, from_vector<int32_t>({65535}, {1}));
    write_bytes(path, npy("{'descr': '<u4', 'fortran_order': False, 'shape': (1,), }",
                          std::string("\x00\x28\x6b\xee", 4)));
    require_same(read_npy(path).data, from_vector<int64_t>({4000000000}, {1}));
    write_bytes(path, npy("{'descr': '>i8', 'fortran_order': False, 'shape': (1,), }",
                          std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8)));
    require_same(read_npy(path).data, from_vector<int64_t>({-2}, {1}));
    // A bool byte other than 0/1 reads as true; keys in any order, double quotes.
    write_bytes(path, npy("{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"|b1\"}",
                          std::string("\x00\x07", 2)));
    require_same(read_npy(path).data, from_vector<bool>({false, true}, {2}));
}

TEST_CASE("npz: stored and deflated archives round-trip", "[datasets][npy]") {
    TempDir dir("npz");
    std::map<std::string, Tensor> tensors = {{"image", randn({3, 5, 7})},
                                             {"label", from_vector<uint8_t>({0, 1, 2, 1}, {2, 2})},
                                             {"empty", zeros({0})}};
    for (bool compress : {false, true}) {
        INFO(compress);
        const std::string path = dir.file("a.npz");
        write_npz(path, tensors, compress);
        std::map<std::string, NpyArray> back = read_npz(path);
        REQUIRE(back.size() == 3);
        for (const auto& [name, t] : tensors) require_same(back.at(name).data, t);
    }
}

TEST_CASE("npy and npz: damaged files are refused with a clear message",
          "[datasets][npy][hostile]") {
    TempDir dir("npy_hostile");
    const std::string path = dir.file("bad.npy");
    auto expect = [&](const std::string& bytes, const std::string& fragment) {
        INFO(fragment);
        write_bytes(path, bytes);
        require_error([&] { read_npy(path); }, {"[npy] " + path + ": ", fragment});
    };
    const std::string f4 = "'descr': '<f4', 'fortran_order': False";
    expect("PK\x03\x04", "not a .npy file");
    expect(npy("{" + f4 + ", 'shape': (2,), }", std::string(7, '\0')),
           "shape [2] of <f4 needs 8 bytes of data but the file has 7");
    expect(npy("{" + f4 + ", 'shape': (2,), }", std::string(9, '\0')), "the file has 9");
    expect(npy("{" + f4 + ", 'shape': (4611686018427387904, 4), }", ""), "overflows");
    expect(npy("{" + f4 + ", 'shape': (1099511627776,), }", ""), "claims more than 64 GiB");
    expect(npy("{" + f4 + ", 'shape': (1,1,1,1,1,1,1,1,1), }", ""), "more than 8 dimensions");
    expect(npy("{" + f4 + ", 'shape': (-1,), }", ""), "a shape of non-negative integers");
    expect(npy("{" + f4 + ", 'shape': (1,), 'extra': 1}", ""),
           "unexpected or repeated key 'extra'");
    expect(npy("{" + f4 + ", 'shape': (1,), 'shape': (1,)}", ""), "repeated key 'shape'");
    expect(npy("{'descr': '<f4', 'shape': (1,), }", "abcd"), "must have 'descr', 'fortran_order'");
    expect(npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", std::string(8, 0)),
           "unsupported dtype '<c8'");
    expect(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", ""),
           "expected a quoted string");
    expect(npy("{'descr': '<u8', 'fortran_order': False, 'shape': (1,), }", std::string(8, '\xff')),
           "value 18446744073709551615 of the uint64 array does not fit int64");
    std::string version9 = npy("{" + f4 + ", 'shape': (), }", std::string(4, 0));
    version9[6] = 9;
    expect(version9, "unsupported .npy version 9.0");
    std::string long_header = npy("{" + f4 + ", 'shape': (), }", std::string(4, 0));
    long_header[8] = char(0xff);
    long_header[9] = char(0xff);
    expect(long_header, "header length 65535 runs past the end of the file");

    // Archives: a flipped byte (CRC), a member claiming 1 TB, garbage, a non-.npy member.
    const std::string npz = dir.file("a.npz");
    write_npz(npz, {{"x", tensor({1, 2, 3, 4})}}, false);
    std::string good = read_bytes(npz);
    std::string flipped = good;
    flipped[good.find("\x93NUMPY") + 130] ^= 1;
    write_bytes(npz, flipped);
    require_error([&] { read_npz(npz); }, {"[npz] " + npz, "member 'x.npy' fails its CRC-32"});
    std::string huge = good;
    size_t central = huge.find("PK\x01\x02");
    for (int b = 0; b < 4; ++b) huge[central + 24 + b] = char(0xff);  // uncompressed size
    huge[central + 27] = 0x7f;
    write_bytes(npz, huge);
    require_error([&] { read_npz(npz); },
                  {"[npz]", "member 'x.npy' is stored but its sizes differ"});
    write_bytes(npz, "not a zip file at all, just text that is long enough");
    require_error([&] { read_npz(npz); }, {"[npz]", "is not a ZIP archive"});
    write_bytes(npz, good.substr(0, good.size() - 30));
    require_error([&] { read_npz(npz); }, {"[npz]", npz});
    write_zip(npz, "npz", {{"notes.txt", "hello"}}, false);
    require_error([&] { read_npz(npz); }, {"member 'notes.txt' is not an .npy array"});
    write_zip(npz, "npz", {{"x.npy", "garbage"}}, true);
    require_error([&] { read_npz(npz); }, {"[npy] " + npz + ":x.npy: not a .npy file"});
}

TEST_CASE("feature bags from .npy and .safetensors", "[datasets][npy]") {
    TempDir dir("bags");
    Tensor features = randn({7, 5});
    write_npy(dir.file("a.npy"), features.to(DType::float64));
    CHECK(read_feature_bag(dir.file("a.npy")).to_vector<float>() == features.to_vector<float>());
    save_safetensors(dir.file("b.safetensors"),
                     {{"features", features}, {"coords", zeros({7, 2})}});
    CHECK(read_feature_bag(dir.file("b.safetensors")).shape() == Shape{7, 5});
    save_safetensors(dir.file("c.safetensors"), {{"x", features}, {"y", features}});
    require_error([&] { read_feature_bag(dir.file("c.safetensors")); },
                  {"[bag]", "none is named 'features'"});
    write_npy(dir.file("d.npy"), zeros({3}));
    require_error([&] { read_feature_bag(dir.file("d.npy")); },
                  {"[bag] " + dir.file("d.npy") + ": a bag is (instances, features)", "[3]"});
}
