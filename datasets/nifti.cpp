// NIfTI reading and writing. Header layouts: nifti1.h and nifti2.h of the NIfTI standard
// (offsets in the tables below); the geometry follows nibabel (nifti1.py get_qform, get_sform,
// get_best_affine; analyze.py get_base_affine; the fixes of its header checks on load).
#include "datasets/nifti.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "core/file_io.h"
#include "ops/elementwise.h"

namespace lumen::datasets {

namespace {

constexpr uint64_t kMaxDataBytes = uint64_t(1) << 34;  // 16 GiB
constexpr uint64_t kMaxGzipRatio = 1032;               // deflate's best compression

#define NII_CHECK(cond, path, ...) LUMEN_CHECK(cond, "nifti", path, ": ", __VA_ARGS__)

struct DataType {
    int code;
    const char* name;
    int bytes;
    char kind;  // u, i, f
    DType dtype;
};
constexpr DataType kTypes[] = {
    {2, "uint8", 1, 'u', DType::uint8},      {4, "int16", 2, 'i', DType::int32},
    {8, "int32", 4, 'i', DType::int32},      {16, "float32", 4, 'f', DType::float32},
    {64, "float64", 8, 'f', DType::float64}, {256, "int8", 1, 'i', DType::int32},
    {512, "uint16", 2, 'u', DType::int32},   {768, "uint32", 4, 'u', DType::int64},
    {1024, "int64", 8, 'i', DType::int64},   {1280, "uint64", 8, 'u', DType::int64}};

const DataType* find_type(int code) {
    for (const DataType& t : kTypes)
        if (t.code == code) return &t;
    return nullptr;
}

// Little- or big-endian field reads from the header bytes.
class Fields {
  public:
    Fields(const std::string& bytes, bool swap) : bytes_(bytes), swap_(swap) {}
    template <typename T>
    T get(size_t offset) const {
        unsigned char raw[sizeof(T)];
        std::memcpy(raw, bytes_.data() + offset, sizeof(T));
        if (swap_) std::reverse(raw, raw + sizeof(T));
        T value;
        std::memcpy(&value, raw, sizeof(T));
        return value;
    }
    std::string text(size_t offset, size_t length) const {
        std::string s = bytes_.substr(offset, length);
        return s.substr(0, s.find('\0'));
    }

  private:
    const std::string& bytes_;
    bool swap_;
};

// The whole file, gunzipped when it is gzip (zlib detects it; a plain file reads as is),
// within the size limits: at most 16 GiB, and for gzip at most 1032 times the file's size.
std::string read_contents(const std::string& path) {
    uint64_t file_bytes = 0;
    int fd = open_regular_file(path, "nifti", &file_bytes).release();  // a FIFO is refused
    gzFile file = gzdopen(fd, "rb");
    if (file == nullptr) {
        ::close(fd);
        LUMEN_FAIL("nifti", path, ": cannot start reading (zlib out of memory)");
    }
    gzbuffer(file, 1 << 17);
    const uint64_t limit =
        std::min<uint64_t>(kMaxDataBytes + (1 << 20), kMaxGzipRatio * file_bytes + (1 << 16));
    // Plain files read at once; gzip output grows geometrically from the file's size.
    std::string out(size_t(std::min<uint64_t>(limit + 1, std::max<uint64_t>(file_bytes + 1, 4096))),
                    '\0');
    size_t filled = 0;
    while (true) {
        if (filled == out.size()) {
            if (out.size() > limit) {
                gzclose_r(file);
                LUMEN_FAIL("nifti", path, ": inflates past ", format_bytes(double(limit)),
                           " (the limit for a file of ", format_bytes(double(file_bytes)), ")");
            }
            out.resize(size_t(std::min<uint64_t>(limit + 1, 2 * uint64_t(out.size()))));
        }
        const unsigned want = unsigned(std::min<size_t>(out.size() - filled, 1u << 30));
        int got = gzread(file, out.data() + filled, want);
        if (got < 0) {
            int code = Z_OK;
            std::string message = gzerror(file, &code);
            gzclose_r(file);
            LUMEN_FAIL("nifti", path, ": corrupt gzip data (zlib: ", message, ")");
        }
        filled += size_t(got);
        if (got == 0 || (unsigned(got) < want && gzeof(file))) break;
    }
    out.resize(filled);
    int code = Z_OK;
    gzerror(file, &code);
    gzclose_r(file);
    NII_CHECK(code == Z_OK, path, "corrupt or truncated gzip data");
    return out;
}

struct Parsed {
    NiftiHeader header;
    const DataType* type = nullptr;
    bool swap = false;
    uint64_t data_offset = 0;
};

// nibabel's load-time fixes of the geometry fields (see nifti.h).
void fix_like_nibabel(NiftiHeader& h) {
    for (int d = 1; d <= 3; ++d) {
        if (h.pixdim[d] == 0) h.pixdim[d] = 1;
        h.pixdim[d] = std::abs(h.pixdim[d]);
    }
    if (h.pixdim[0] != 1 && h.pixdim[0] != -1) h.pixdim[0] = 1;
    if (h.qform_code < 0 || h.qform_code > 5) h.qform_code = 0;
    if (h.sform_code < 0 || h.sform_code > 5) h.sform_code = 0;
}

Parsed parse_header(const std::string& path, const std::string& bytes) {
    NII_CHECK(bytes.size() >= 348, path, "file is ", bytes.size(),
              " bytes, shorter than a NIfTI header (348)");
    int32_t size_le = 0;
    std::memcpy(&size_le, bytes.data(), 4);
    int32_t size_be = int32_t(__builtin_bswap32(uint32_t(size_le)));
    Parsed p;
    if (size_le == 348 || size_le == 540) {
        p.header.version = size_le == 348 ? 1 : 2;
    } else if (size_be == 348 || size_be == 540) {
        p.header.version = size_be == 348 ? 1 : 2;
        p.swap = true;
    } else {
        LUMEN_FAIL("nifti", path, ": not a NIfTI file (header size ", size_le,
                   ", expected 348 for NIfTI-1 or 540 for NIfTI-2)");
    }
    NiftiHeader& h = p.header;
    const bool v1 = h.version == 1;
    NII_CHECK(bytes.size() >= (v1 ? 352u : 544u), path, "file is ", bytes.size(),
              " bytes, shorter than its header");
    Fields f(bytes, p.swap);
    int64_t dim[8];
    double vox_offset = 0;
    if (v1) {
        NII_CHECK(f.text(344, 4) == "n+1", path, "magic '", f.text(344, 4),
                  "' is not 'n+1' (a .hdr/.img pair is not supported)");
        for (int d = 0; d < 8; ++d) dim[d] = f.get<int16_t>(40 + 2 * d);
        h.datatype = f.get<int16_t>(70);
        for (int d = 0; d < 8; ++d) h.pixdim[d] = f.get<float>(76 + 4 * d);
        vox_offset = f.get<float>(108);
        h.scl_slope = f.get<float>(112);
        h.scl_inter = f.get<float>(116);
        h.xyzt_units = uint8_t(bytes[123]);
        h.descrip = f.text(148, 80);
        h.qform_code = f.get<int16_t>(252);
        h.sform_code = f.get<int16_t>(254);
        double* q[] = {&h.quatern_b, &h.quatern_c, &h.quatern_d,
                       &h.qoffset_x, &h.qoffset_y, &h.qoffset_z};
        for (int i = 0; i < 6; ++i) *q[i] = f.get<float>(256 + 4 * i);
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c) h.srow[r][c] = f.get<float>(280 + 16 * r + 4 * c);
    } else {
        NII_CHECK(bytes.compare(4, 4, std::string("n+2\0", 4)) == 0, path, "magic '", f.text(4, 4),
                  "' is not 'n+2'");
        h.datatype = f.get<int16_t>(12);
        for (int d = 0; d < 8; ++d) dim[d] = f.get<int64_t>(16 + 8 * d);
        for (int d = 0; d < 8; ++d) h.pixdim[d] = f.get<double>(104 + 8 * d);
        int64_t offset = f.get<int64_t>(168);
        NII_CHECK(offset >= 0, path, "vox_offset ", offset, " is negative");
        vox_offset = double(offset);
        h.scl_slope = f.get<double>(176);
        h.scl_inter = f.get<double>(184);
        h.descrip = f.text(240, 80);
        h.qform_code = f.get<int32_t>(344);
        h.sform_code = f.get<int32_t>(348);
        double* q[] = {&h.quatern_b, &h.quatern_c, &h.quatern_d,
                       &h.qoffset_x, &h.qoffset_y, &h.qoffset_z};
        for (int i = 0; i < 6; ++i) *q[i] = f.get<double>(352 + 8 * i);
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c) h.srow[r][c] = f.get<double>(400 + 32 * r + 8 * c);
        h.xyzt_units = f.get<int32_t>(500);
    }
    NII_CHECK(dim[0] >= 1 && dim[0] <= 7, path, "dim[0] is ", dim[0], ", expected 1 to 7");
    uint64_t count = 1;
    for (int d = 1; d <= dim[0]; ++d) {
        NII_CHECK(dim[d] >= 1, path, "dim[", d, "] is ", dim[d], ", expected >= 1");
        h.shape.push_back(dim[d]);
        NII_CHECK(!__builtin_mul_overflow(count, uint64_t(dim[d]), &count), path, "shape ", h.shape,
                  " overflows");
    }
    p.type = find_type(h.datatype);
    NII_CHECK(p.type != nullptr, path, "datatype ", h.datatype,
              " is not supported (supported: uint8, int8, int16, uint16, int32, uint32, int64, "
              "uint64, float32, float64; not complex, RGB, float128 or binary)");
    uint64_t nbytes = 0;
    NII_CHECK(
        !__builtin_mul_overflow(count, uint64_t(p.type->bytes), &nbytes) && nbytes <= kMaxDataBytes,
        path, "shape ", h.shape, " of ", p.type->name, " claims more than 16 GiB");
    const uint64_t minimum = v1 ? 352 : 544;
    if (vox_offset == 0) vox_offset = double(minimum);  // unset, as nibabel treats it
    NII_CHECK(std::isfinite(vox_offset) && vox_offset >= double(minimum) &&
                  vox_offset <= double(bytes.size()),
              path, "vox_offset ", vox_offset, " is outside [", minimum, ", ", bytes.size(), "]");
    p.data_offset = uint64_t(vox_offset);
    NII_CHECK(bytes.size() - p.data_offset >= nbytes, path, "shape ", h.shape, " of ", p.type->name,
              " needs ", nbytes, " bytes of data but the file has ", bytes.size() - p.data_offset,
              " after vox_offset ", p.data_offset, " (truncated?)");
    if (std::isfinite(h.scl_slope) && h.scl_slope != 0)
        NII_CHECK(std::isfinite(h.scl_inter), path, "scl_slope ", h.scl_slope,
                  " with a non-finite scl_inter ", h.scl_inter);
    fix_like_nibabel(h);
    return p;
}

}  // namespace

NiftiImage read_nifti(const std::string& path) {
    const std::string bytes = read_contents(path);
    Parsed p = parse_header(path, bytes);
    const DataType& type = *p.type;
    // The file holds the array with i fastest: read it as the C array of the reversed shape,
    // then reverse the axes.
    Shape reversed(p.header.shape.rbegin(), p.header.shape.rend());
    Tensor data = empty(reversed, type.dtype);
    const int64_t count = data.numel();
    const unsigned char* src = reinterpret_cast<const unsigned char*>(bytes.data()) + p.data_offset;
    for (int64_t i = 0; i < count; ++i) {
        uint64_t v = 0;
        const unsigned char* item = src + i * type.bytes;
        for (int b = 0; b < type.bytes; ++b)
            v |= uint64_t(item[p.swap ? type.bytes - 1 - b : b]) << (8 * b);
        const int shift = 64 - 8 * type.bytes;
        const int64_t as_signed = type.kind == 'i' ? int64_t(v << shift) >> shift : int64_t(v);
        switch (type.dtype) {
            case DType::uint8: static_cast<uint8_t*>(data.data_ptr())[i] = uint8_t(v); break;
            case DType::int32:
                static_cast<int32_t*>(data.data_ptr())[i] = int32_t(as_signed);
                break;
            case DType::int64:
                NII_CHECK(type.kind == 'i' || v <= uint64_t(INT64_MAX), path, "voxel value ", v,
                          " of the uint64 image does not fit int64");
                static_cast<int64_t*>(data.data_ptr())[i] = as_signed;
                break;
            case DType::float32: {
                uint32_t bits = uint32_t(v);
                std::memcpy(static_cast<float*>(data.data_ptr()) + i, &bits, 4);
                break;
            }
            default: std::memcpy(static_cast<double*>(data.data_ptr()) + i, &v, 8); break;
        }
    }
    if (data.ndim() > 1) {
        std::vector<int64_t> axes(size_t(data.ndim()));
        for (size_t d = 0; d < axes.size(); ++d) axes[d] = int64_t(axes.size() - 1 - d);
        data = data.permute(axes).contiguous();
    }
    return {p.header, data};
}

Tensor NiftiImage::fdata() const {
    Tensor values = data.to(DType::float64);
    const double slope = header.scl_slope, inter = header.scl_inter;
    if (!std::isfinite(slope) || slope == 0 || (slope == 1 && inter == 0)) return values;
    // nibabel: arr * slope, then + inter, both in float64 (two roundings, no fused multiply-add).
    double* v = static_cast<double*>(values.data_ptr());
    for (int64_t i = 0; i < values.numel(); ++i) {
        double scaled = v[i];
        if (slope != 1) scaled = scaled * slope;
        if (inter != 0) scaled = scaled + inter;
        v[i] = scaled;
    }
    return values;
}

std::array<double, 3> NiftiHeader::spacing() const {
    std::array<double, 3> out{1, 1, 1};
    for (size_t d = 0; d < 3 && d < shape.size(); ++d) out[d] = pixdim[d + 1];
    return out;
}

std::array<double, 16> NiftiHeader::affine() const {
    std::array<double, 16> a{};
    a[15] = 1;
    if (sform_code != 0) {
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 4; ++c) a[size_t(4 * r + c)] = srow[size_t(r)][size_t(c)];
        return a;
    }
    if (qform_code != 0) {
        // nibabel computes the rotation in the longest float type (long double here too).
        using Real = long double;
        const Real b = quatern_b, c = quatern_c, d = quatern_d;
        const Real threshold = Real(version == 1 ? std::numeric_limits<float>::epsilon()
                                                 : std::numeric_limits<double>::epsilon()) *
                               3;
        const Real w2 = 1.0L - (b * b + c * c + d * d);
        Real w = 0;
        if (std::abs(w2) >= threshold) {
            LUMEN_CHECK(w2 >= 0, "nifti", "qform quaternion (", quatern_b, ", ", quatern_c, ", ",
                        quatern_d, ") is longer than a unit quaternion");
            w = std::sqrt(w2);
        }
        Real R[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
        const Real n = w * w + b * b + c * c + d * d;
        if (n >= Real(std::numeric_limits<double>::epsilon())) {
            const Real s = 2.0L / n, X = b * s, Y = c * s, Z = d * s;
            const Real wX = w * X, wY = w * Y, wZ = w * Z, xX = b * X, xY = b * Y, xZ = b * Z;
            const Real yY = c * Y, yZ = c * Z, zZ = d * Z;
            const Real m[3][3] = {{1.0L - (yY + zZ), xY - wZ, xZ + wY},
                                  {xY + wZ, 1.0L - (xX + zZ), yZ - wX},
                                  {xZ - wY, yZ + wX, 1.0L - (xX + yY)}};
            std::memcpy(R, m, sizeof(R));
        }
        const Real vox[3] = {Real(pixdim[1]), Real(pixdim[2]), Real(pixdim[3] * pixdim[0])};
        for (int r = 0; r < 3; ++r)
            for (int k = 0; k < 3; ++k) a[size_t(4 * r + k)] = double(R[r][k] * vox[k]);
        a[3] = qoffset_x;
        a[7] = qoffset_y;
        a[11] = qoffset_z;
        return a;
    }
    // The base affine: zooms of the first three axes (1 when missing), x flipped, the origin
    // at the centre of the volume.
    for (int axis = 0; axis < 3; ++axis) {
        const bool present = axis < int(shape.size());
        double zoom = present ? pixdim[size_t(axis + 1)] : 1.0;
        const double size = present ? double(shape[size_t(axis)]) : 1.0;
        if (axis == 0) zoom = -zoom;
        a[size_t(5 * axis)] = zoom;
        a[size_t(4 * axis + 3)] = -((size - 1) / 2.0) * zoom;
    }
    return a;
}

// ---- writing ----

namespace {

void put(std::string& bytes, size_t offset, const void* value, size_t n) {
    std::memcpy(bytes.data() + offset, value, n);
}

template <typename T>
void put_value(std::string& bytes, size_t offset, T value) {
    put(bytes, offset, &value, sizeof(T));
}

std::string header_bytes(const NiftiHeader& like, const Shape& shape, const DataType& type) {
    std::string h(352, '\0');  // the 348-byte header and the 4-byte extension flag (none)
    put_value<int32_t>(h, 0, 348);
    put_value<int16_t>(h, 40, int16_t(shape.size()));
    for (size_t d = 0; d < 7; ++d)
        put_value<int16_t>(h, 42 + 2 * d, int16_t(d < shape.size() ? shape[d] : 1));
    put_value<int16_t>(h, 70, int16_t(type.code));
    put_value<int16_t>(h, 72, int16_t(8 * type.bytes));
    for (size_t d = 0; d < 8; ++d) {
        double value = like.pixdim[d];
        if (d >= 1 && d > shape.size()) value = 1;
        put_value<float>(h, 76 + 4 * d, float(d == 0 && value == 0 ? 1 : value));
    }
    put_value<float>(h, 108, 352.0f);  // vox_offset
    put_value<float>(h, 112, 1.0f);    // scl_slope: values are stored as they are
    put_value<float>(h, 116, 0.0f);
    h[123] = char(like.xyzt_units);
    std::string descrip = like.descrip.substr(0, 79);
    put(h, 148, descrip.data(), descrip.size());
    put_value<int16_t>(h, 252, int16_t(like.qform_code));
    put_value<int16_t>(h, 254, int16_t(like.sform_code));
    const double q[] = {like.quatern_b, like.quatern_c, like.quatern_d,
                        like.qoffset_x, like.qoffset_y, like.qoffset_z};
    for (size_t i = 0; i < 6; ++i) put_value<float>(h, 256 + 4 * i, float(q[i]));
    for (size_t r = 0; r < 3; ++r)
        for (size_t c = 0; c < 4; ++c)
            put_value<float>(h, 280 + 16 * r + 4 * c, float(like.srow[r][c]));
    put(h, 344, "n+1\0", 4);
    return h;
}

}  // namespace

void write_nifti(const std::string& path, const Tensor& data, const NiftiHeader& like) {
    NII_CHECK(data.defined() && data.ndim() >= 1 && data.ndim() <= 7, path,
              "needs a tensor of 1 to 7 dimensions");
    for (int64_t size : data.shape())
        NII_CHECK(size >= 1 && size <= 32767, path, "shape ", data.shape(),
                  " does not fit a NIfTI-1 header (each size 1 to 32767)");
    int code = 0;
    switch (data.dtype()) {
        case DType::uint8: code = 2; break;
        case DType::int32: code = 8; break;
        case DType::int64: code = 1024; break;
        case DType::float32: code = 16; break;
        case DType::float64: code = 64; break;
        default:
            LUMEN_FAIL("nifti", path, ": cannot write dtype ", data.dtype(),
                       " (uint8, int32, int64, float32 or float64)");
    }
    const DataType& type = *find_type(code);
    // The file wants i fastest: the C-contiguous array of the reversed axes.
    Tensor host = data.detach().cpu();
    std::vector<int64_t> axes(size_t(host.ndim()));
    for (size_t d = 0; d < axes.size(); ++d) axes[d] = int64_t(axes.size() - 1 - d);
    host = host.permute(axes).contiguous();
    std::string bytes = header_bytes(like, data.shape(), type);
    bytes.append(static_cast<const char*>(host.data_ptr()),
                 size_t(host.numel()) * host.element_size());
    const bool gzip = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
    if (gzip) {
        NII_CHECK(bytes.size() < (uint64_t(1) << 31), path,
                  "is too large to gzip in one piece (2 GiB); write .nii instead");
        uLongf size = compressBound(uLong(bytes.size())) + 64;
        std::string packed(size, '\0');
        z_stream stream{};
        NII_CHECK(deflateInit2(&stream, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK,
                  path, "cannot start gzip (zlib)");
        stream.next_in = reinterpret_cast<Bytef*>(bytes.data());
        stream.avail_in = uInt(bytes.size());
        stream.next_out = reinterpret_cast<Bytef*>(packed.data());
        stream.avail_out = uInt(packed.size());
        int status = deflate(&stream, Z_FINISH);
        packed.resize(stream.total_out);
        deflateEnd(&stream);
        NII_CHECK(status == Z_STREAM_END, path, "gzip failed (zlib status ", status, ")");
        bytes.swap(packed);
    }
    write_file_atomically(path, "nifti", [&](FileWriter& out) { out.write(bytes); });
}

NiftiHeader nifti_header_from_affine(const std::array<double, 16>& affine) {
    NiftiHeader h;
    h.sform_code = 2;
    h.pixdim = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int c = 0; c < 3; ++c) {
        double length = 0;
        for (int r = 0; r < 3; ++r) length += affine[size_t(4 * r + c)] * affine[size_t(4 * r + c)];
        h.pixdim[size_t(c + 1)] = std::sqrt(length);
    }
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) h.srow[size_t(r)][size_t(c)] = affine[size_t(4 * r + c)];
    h.xyzt_units = 2 | 8;  // millimetres and seconds
    return h;
}

std::string orientation_code(const std::array<double, 16>& affine) {
    // Columns normalized (nibabel's io_orientation without its shear-removing SVD step), then
    // each voxel axis takes the world axis it moves along most, strongest axes first.
    double R[3][3];
    for (int c = 0; c < 3; ++c) {
        double length = 0;
        for (int r = 0; r < 3; ++r) length += affine[size_t(4 * r + c)] * affine[size_t(4 * r + c)];
        length = std::sqrt(length);
        for (int r = 0; r < 3; ++r) R[r][c] = length > 0 ? affine[size_t(4 * r + c)] / length : 0;
    }
    int order[3] = {0, 1, 2};
    double strength[3];
    for (int c = 0; c < 3; ++c)
        strength[c] = std::max({R[0][c] * R[0][c], R[1][c] * R[1][c], R[2][c] * R[2][c]});
    std::stable_sort(order, order + 3, [&](int a, int b) { return strength[a] > strength[b]; });
    const char* labels[3][2] = {{"L", "R"}, {"P", "A"}, {"I", "S"}};
    std::string code = "???";
    for (int c : order) {
        int best = -1;
        for (int r = 0; r < 3; ++r)
            if (R[r][c] != 0 && (best < 0 || std::abs(R[r][c]) > std::abs(R[best][c]))) best = r;
        if (best < 0) continue;
        code[size_t(c)] = labels[best][R[best][c] > 0][0];
        for (int k = 0; k < 3; ++k) R[best][k] = 0;
    }
    return code;
}

}  // namespace lumen::datasets
