// NIfTI: write/read round trips (.nii and .nii.gz, every written dtype, 1-D to 4-D, the index
// order (i, j, k, t)), the affine cases (sform, qform with qfac, the centred fallback), nibabel's
// load-time fixes, scaling, and damaged files refused with a message naming them.
// tests/conformance/check_nibabel.py compares with nibabel itself.
#include <cmath>
#include <cstring>
#include <fstream>

#include <zlib.h>

#include "datasets/nifti.h"
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

template <typename T>
void poke(std::string& bytes, size_t offset, T value) {
    std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

NiftiHeader geometry() {
    NiftiHeader h =
        nifti_header_from_affine({0, 0, 2.5, -10, -1.5, 0, 0, 20, 0, 0.75, 0, -30, 0, 0, 0, 1});
    return h;
}

}  // namespace

TEST_CASE("nifti: round trips keep values, index order and geometry", "[datasets][nifti]") {
    TempDir dir("nifti_roundtrip");
    Tensor volume = arange(0, 2 * 3 * 4, 1, DType::float32).reshape({2, 3, 4});
    for (const char* name : {"a.nii", "a.nii.gz"}) {
        for (DType dtype :
             {DType::float32, DType::float64, DType::int32, DType::int64, DType::uint8}) {
            INFO(name << " " << dtype);
            const std::string path = dir.file(name);
            write_nifti(path, volume.to(dtype), geometry());
            NiftiImage image = read_nifti(path);
            CHECK(image.data.dtype() == dtype);
            CHECK(image.data.shape() == Shape{2, 3, 4});
            CHECK(image.data.to_vector<double>() == volume.to_vector<double>());
            CHECK(image.fdata().to_vector<double>() == volume.to_vector<double>());
            CHECK(image.header.affine() == geometry().affine());
            CHECK(image.header.spacing() == std::array<double, 3>{1.5, 0.75, 2.5});
        }
    }
    // On disk i runs fastest: the second value in the file is voxel (1, 0, 0).
    write_nifti(dir.file("order.nii"), volume, geometry());
    std::string bytes = read_bytes(dir.file("order.nii"));
    float second = 0;
    std::memcpy(&second, bytes.data() + 352 + 4, 4);
    CHECK(second == volume.select(0, 1).select(0, 0).select(0, 0).item<float>());
    // 1-D and 4-D.
    for (Shape shape : {Shape{7}, Shape{2, 3, 2, 3}}) {
        Tensor t = randn(shape);
        write_nifti(dir.file("n.nii.gz"), t, geometry());
        CHECK(read_nifti(dir.file("n.nii.gz")).data.to_vector<float>() == t.to_vector<float>());
    }
    CHECK(orientation_code(geometry().affine()) == "PSR");
    CHECK(orientation_code({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}) == "RAS");
    CHECK(orientation_code({-1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}) == "LPS");
}

TEST_CASE("nifti: qform, fallback affine, nibabel's fixes, scaling and big-endian files",
          "[datasets][nifti]") {
    TempDir dir("nifti_header");
    const std::string path = dir.file("h.nii");
    write_nifti(path, ones({4, 3, 2}), geometry());
    const std::string good = read_bytes(path);
    // A qform of a 90 degree turn about z (b = c = 0, d = sin 45), qfac -1, zooms (2, 3, 4).
    std::string q = good;
    poke<int16_t>(q, 254, 0);  // no sform
    poke<int16_t>(q, 252, 1);
    poke<float>(q, 76, -1.0f);
    poke<float>(q, 80, 2.0f);
    poke<float>(q, 84, 3.0f);
    poke<float>(q, 88, 4.0f);
    poke<float>(q, 256, 0.0f);
    poke<float>(q, 260, 0.0f);
    poke<float>(q, 264, float(std::sqrt(0.5)));
    poke<float>(q, 268, 5.0f);
    write_bytes(path, q);
    std::array<double, 16> a = read_nifti(path).header.affine();
    CHECK(std::abs(a[0]) < 1e-6);
    CHECK(std::abs(a[1] + 3.0) < 1e-6);  // x <- -j * 3
    CHECK(std::abs(a[4] - 2.0) < 1e-6);  // y <- i * 2
    CHECK(a[10] == -4.0);                // qfac -1 flips k
    CHECK(a[3] == 5.0);
    // No transform: the centred Analyze affine, x flipped.
    poke<int16_t>(q, 252, 0);
    write_bytes(path, q);
    CHECK(read_nifti(path).header.affine() ==
          std::array<double, 16>{-2, 0, 0, 3, 0, 3, 0, -3, 0, 0, 4, -2, 0, 0, 0, 1});
    // nibabel's fixes: pixdim 0 -> 1, negative -> absolute, qfac 0 -> 1, code 9 -> 0.
    poke<float>(q, 76, 0.0f);
    poke<float>(q, 80, 0.0f);
    poke<float>(q, 84, -3.0f);
    poke<int16_t>(q, 252, 9);
    write_bytes(path, q);
    NiftiHeader fixed = read_nifti(path).header;
    CHECK(fixed.pixdim[0] == 1);
    CHECK(fixed.spacing() == std::array<double, 3>{1, 3, 4});
    CHECK(fixed.qform_code == 0);
    // Scaling: value * slope + inter in float64; slope 0 means none.
    poke<float>(q, 112, 2.5f);
    poke<float>(q, 116, -1.0f);
    write_bytes(path, q);
    CHECK(read_nifti(path).fdata().to_vector<double>()[0] == 1.5);
    poke<float>(q, 112, 0.0f);
    write_bytes(path, q);
    CHECK(read_nifti(path).fdata().to_vector<double>()[0] == 1.0);
    // A big-endian int16 file: every header field and value byte-swapped.
    std::string be(352 + 2 * 3, '\0');
    auto poke_be16 = [&](size_t at, int16_t v) {
        be[at] = char((v >> 8) & 0xff);
        be[at + 1] = char(v & 0xff);
    };
    auto poke_be32 = [&](size_t at, uint32_t v) {
        for (int i = 0; i < 4; ++i) be[at + size_t(i)] = char((v >> (24 - 8 * i)) & 0xff);
    };
    auto bits = [](float f) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        return u;
    };
    poke_be32(0, 348);
    poke_be16(40, 1);
    poke_be16(42, 3);
    poke_be16(70, 4);
    poke_be16(72, 16);
    for (size_t d = 0; d < 4; ++d) poke_be32(76 + 4 * d, bits(1.0f));
    poke_be32(108, bits(352.0f));
    std::memcpy(be.data() + 344, "n+1\0", 4);
    for (int i = 0; i < 3; ++i) poke_be16(352 + 2 * size_t(i), int16_t(-300 + 200 * i));
    write_bytes(path, be);
    NiftiImage image = read_nifti(path);
    CHECK(image.data.to_vector<int64_t>() == std::vector<int64_t>{-300, -100, 100});
}

TEST_CASE("nifti: damaged and hostile files are refused with a clear message",
          "[datasets][nifti][hostile]") {
    TempDir dir("nifti_hostile");
    const std::string path = dir.file("bad.nii");
    write_nifti(path, ones({4, 3, 2}), geometry());
    const std::string good = read_bytes(path);
    auto expect = [&](const std::string& bytes, const std::string& fragment) {
        INFO(fragment);
        write_bytes(path, bytes);
        require_error([&] { read_nifti(path); }, {"[nifti] " + path + ": ", fragment});
    };
    expect("short", "shorter than a NIfTI header");
    expect(std::string(400, 'x'), "not a NIfTI file (header size");
    std::string b = good;
    std::memcpy(b.data() + 344, "ni1\0", 4);
    expect(b, "a .hdr/.img pair is not supported");
    b = good;
    poke<int16_t>(b, 40, 9);
    expect(b, "dim[0] is 9, expected 1 to 7");
    b = good;
    poke<int16_t>(b, 44, -3);
    expect(b, "dim[2] is -3, expected >= 1");
    b = good;
    poke<int16_t>(b, 70, 32);
    expect(b, "datatype 32 is not supported");
    b = good;
    poke<int16_t>(b, 42, 1000);
    poke<int16_t>(b, 44, 1000);
    poke<int16_t>(b, 46, 1);
    expect(b, "needs 4000000 bytes of data but the file has 96");
    b = good;
    poke<int16_t>(b, 40, 4);
    for (int d = 1; d <= 4; ++d) poke<int16_t>(b, 40 + 2 * size_t(d), 32767);
    expect(b, "claims more than 16 GiB");
    poke<int16_t>(b, 40, 7);
    for (int d = 1; d <= 7; ++d) poke<int16_t>(b, 40 + 2 * size_t(d), 32767);
    expect(b, "overflows");
    expect(good.substr(0, good.size() - 4), "truncated?");
    b = good;
    poke<float>(b, 108, 100.0f);
    expect(b, "vox_offset 100 is outside [352, ");
    b = good;
    poke<float>(b, 112, 2.0f);
    poke<float>(b, 116, INFINITY);
    expect(b, "with a non-finite scl_inter");
    // A gzip file that is cut short, and one that inflates far beyond what deflate can do.
    write_nifti(dir.file("a.nii.gz"), ones({4, 3, 2}), geometry());
    std::string gz = read_bytes(dir.file("a.nii.gz"));
    write_bytes(path, gz.substr(0, gz.size() - 10));
    require_error([&] { read_nifti(path); }, {"[nifti] " + path, "gzip data"});
    gz[gz.size() / 2] ^= 0x55;
    write_bytes(path, gz);
    require_error([&] { read_nifti(path); }, {"[nifti] " + path});
    // A qform quaternion longer than a unit one.
    b = good;
    poke<int16_t>(b, 254, 0);
    poke<int16_t>(b, 252, 1);
    poke<float>(b, 256, 0.9f);
    poke<float>(b, 260, 0.9f);
    write_bytes(path, b);
    require_error([&] { read_nifti(path).header.affine(); }, {"[nifti]", "longer than a unit"});
    require_error([&] { write_nifti(dir.file("x.nii"), ones({2}).to(DType::bool_), geometry()); },
                  {"[nifti]", "cannot write dtype bool"});
}
