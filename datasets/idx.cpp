// IDX reading and writing through zlib's gz* functions, which read plain files transparently.
// Sizes from the header are checked against hard limits and against the file's length before
// anything is allocated; the payload must then be exactly as long as the header says.
#include "datasets/idx.h"

#include <bit>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/error.h"
#include "core/file_io.h"

namespace lumen::datasets {

namespace {

constexpr int kMaxDims = 8;
constexpr int64_t kMaxBytes = int64_t(1) << 34;  // 16 GiB: larger is a corrupt header
// Deflate cannot compress better than about 1032:1, so a gzip file of M bytes holds at most
// this many times M bytes (plus slack for tiny files).
constexpr int64_t kMaxGzipRatio = 1032;
constexpr int64_t kGzipSlack = 1 << 16;

struct IdxType {
    uint8_t code;
    const char* name;
    int64_t bytes;  // on disk
    DType dtype;    // in memory
};
constexpr IdxType kTypes[] = {
    {0x08, "ubyte", 1, DType::uint8},   {0x09, "sbyte", 1, DType::int32},
    {0x0B, "short", 2, DType::int32},   {0x0C, "int", 4, DType::int32},
    {0x0D, "float", 4, DType::float32}, {0x0E, "double", 8, DType::float64}};

std::string hex(uint64_t value, int digits) {
    static const char* kDigits = "0123456789abcdef";
    std::string out = "0x";
    for (int i = digits - 1; i >= 0; --i) out += kDigits[(value >> (4 * i)) & 0xf];
    return out;
}

// An open gz stream over a file descriptor we opened, so that errno and fstat describe it.
class GzReader {
  public:
    explicit GzReader(const std::string& path) : path_(path) {
        uint64_t size = 0;
        int fd = open_regular_file(path, "idx", &size).release();  // a FIFO is refused at once
        file_bytes_ = int64_t(size);
        file_ = gzdopen(fd, "rb");
        if (!file_) {
            ::close(fd);
            LUMEN_FAIL("idx", path, ": cannot start reading (zlib out of memory)");
        }
        gzbuffer(file_, 1 << 17);
    }
    ~GzReader() { gzclose_r(file_); }
    GzReader(const GzReader&) = delete;
    GzReader& operator=(const GzReader&) = delete;

    // Reads up to n bytes; returns how many came (fewer only at the end of the data).
    // Throws when the gzip stream is corrupt.
    int64_t read(void* out, int64_t n) {
        int64_t done = 0;
        while (done < n) {
            unsigned chunk = unsigned(std::min<int64_t>(n - done, int64_t(1) << 30));
            int got = gzread(file_, static_cast<char*>(out) + done, chunk);
            if (got < 0) fail_stream();
            done += got;
            if (got < int(chunk)) break;
        }
        int errnum = Z_OK;
        gzerror(file_, &errnum);
        if (errnum != Z_OK && errnum != Z_BUF_ERROR) fail_stream();
        return done;
    }
    bool is_gzip() { return gzdirect(file_) == 0; }  // valid after the first read
    int64_t file_bytes() const { return file_bytes_; }

  private:
    [[noreturn]] void fail_stream() {
        int errnum = Z_OK;
        const char* message = gzerror(file_, &errnum);
        LUMEN_FAIL("idx", path_, ": corrupt gzip data (zlib: ",
                   errnum == Z_ERRNO ? std::strerror(errno) : message, ")");
    }
    std::string path_;
    gzFile file_ = nullptr;
    int64_t file_bytes_ = 0;
};

struct Header {
    const IdxType* type = nullptr;
    Shape shape;
    int64_t header_bytes = 0;
    int64_t payload_bytes = 0;
};

const IdxType& find_type(uint8_t code, const std::string& path) {
    for (const IdxType& type : kTypes) {
        if (type.code == code) return type;
    }
    LUMEN_FAIL("idx", path, ": unknown dtype code (got ", hex(code, 2),
               ", expected one of 0x08 ubyte, 0x09 sbyte, 0x0b short, 0x0c int, 0x0d float, "
               "0x0e double)");
}

// Bytes of `shape` elements of `type`, rejecting sizes that overflow or exceed kMaxBytes.
int64_t payload_size(const Shape& shape, const IdxType& type, const std::string& path) {
    int64_t total = type.bytes;
    for (size_t d = 0; d < shape.size(); ++d) {
        LUMEN_CHECK(shape[d] > 0, "idx", path, ": dim ", d, " is 0 (got shape ", shape,
                    ", expected every dim > 0)");
        LUMEN_CHECK(total <= kMaxBytes / shape[d], "idx", path, ": data too large (got shape ",
                    shape, " of ", type.name, ", expected at most ", kMaxBytes, " bytes)");
        total *= shape[d];
    }
    return total;
}

Header read_header(GzReader& in, const std::string& path) {
    uint8_t magic[4];
    int64_t got = in.read(magic, 4);
    LUMEN_CHECK(got == 4, "idx", path, ": truncated header (got ", got,
                " bytes, expected at least 4 for the magic number)");
    uint32_t word = (uint32_t(magic[0]) << 24) | (uint32_t(magic[1]) << 16) |
                    (uint32_t(magic[2]) << 8) | magic[3];
    LUMEN_CHECK(magic[0] == 0 && magic[1] == 0, "idx", path, ": bad magic number (got ",
                hex(word, 8), ", expected 0x0000TTNN: two zero bytes, dtype code, dim count)");
    Header header;
    header.type = &find_type(magic[2], path);
    int ndim = magic[3];
    LUMEN_CHECK(ndim >= 1 && ndim <= kMaxDims, "idx", path, ": bad number of dims (got ", ndim,
                ", expected 1..", kMaxDims, ")");
    uint8_t dims[4 * kMaxDims];
    got = in.read(dims, 4 * ndim);
    LUMEN_CHECK(got == 4 * ndim, "idx", path, ": truncated header (got ", 4 + got,
                " bytes, expected ", 4 + 4 * ndim, " for ", ndim, " dims)");
    for (int d = 0; d < ndim; ++d) {
        const uint8_t* b = dims + 4 * d;
        header.shape.push_back(int64_t((uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) |
                                       (uint32_t(b[2]) << 8) | b[3]));
    }
    header.header_bytes = 4 + 4 * int64_t(ndim);
    header.payload_bytes = payload_size(header.shape, *header.type, path);
    return header;
}

// Before allocating: a plain file must hold exactly the payload; a gzip file at least
// could (by the deflate ratio bound).
void check_file_length(GzReader& in, const Header& header, const std::string& path) {
    int64_t need = header.payload_bytes;
    if (!in.is_gzip()) {
        int64_t have = in.file_bytes() - header.header_bytes;
        LUMEN_CHECK(have >= need, "idx", path, ": payload too short (got ", have,
                    " bytes after the ", header.header_bytes, "-byte header, expected ", need,
                    " for shape ", header.shape, " of ", header.type->name, ")");
        LUMEN_CHECK(have == need, "idx", path, ": trailing bytes after the data (got ", have,
                    " bytes after the ", header.header_bytes, "-byte header, expected ", need,
                    " for shape ", header.shape, " of ", header.type->name, ")");
        return;
    }
    int64_t bound = kMaxGzipRatio * in.file_bytes() + kGzipSlack;
    LUMEN_CHECK(need <= bound, "idx", path,
                ": header claims more data than the gzip file can hold (got shape ", header.shape,
                " = ", need, " bytes, expected at most ", bound, " from a ", in.file_bytes(),
                "-byte gzip file)");
}

// Big-endian file values to host order, in place, for `count` values of `bytes` each.
void to_host_order(uint8_t* data, int64_t count, int64_t bytes) {
    if (std::endian::native == std::endian::big || bytes == 1) return;
    for (int64_t i = 0; i < count; ++i) {
        uint8_t* v = data + i * bytes;
        for (int64_t a = 0, b = bytes - 1; a < b; ++a, --b) std::swap(v[a], v[b]);
    }
}

// sbyte and short widen to int32 (lumen has no int8/int16).
void widen_to_int32(const uint8_t* raw, const IdxType& type, int32_t* out, int64_t count) {
    for (int64_t i = 0; i < count; ++i) {
        if (type.bytes == 1) {
            out[i] = int8_t(raw[i]);
        } else {
            out[i] = int16_t((uint16_t(raw[2 * i]) << 8) | raw[2 * i + 1]);
        }
    }
}

void read_payload(GzReader& in, const Header& header, Tensor& out, const std::string& path) {
    const IdxType& type = *header.type;
    bool widen = type.dtype == DType::int32 && type.bytes < 4;
    std::vector<uint8_t> staging(widen ? size_t(header.payload_bytes) : 0);
    uint8_t* target = widen ? staging.data() : static_cast<uint8_t*>(out.data_ptr());
    int64_t got = in.read(target, header.payload_bytes);
    LUMEN_CHECK(got == header.payload_bytes, "idx", path, ": payload too short (got ", got,
                " bytes, expected ", header.payload_bytes, " for shape ", header.shape, " of ",
                type.name, ")");
    uint8_t extra[4096];
    int64_t more = in.read(extra, sizeof(extra));
    LUMEN_CHECK(more == 0, "idx", path, ": trailing bytes after the data (got ", more,
                more == int64_t(sizeof(extra)) ? " or more" : "", " extra bytes, expected 0)");
    if (widen) {
        widen_to_int32(staging.data(), type, out.data_ptr<int32_t>(), out.numel());
    } else {
        to_host_order(target, out.numel(), type.bytes);
    }
}

// Reads the file; when `want_ndim` > 0 the header must say ubyte data with that many dims
// (checked before the data is allocated).
Tensor read_ubyte_or_any(const std::string& path, int want_ndim, const char* what) {
    GzReader in(path);
    Header header = read_header(in, path);
    if (want_ndim > 0) {
        LUMEN_CHECK(header.type->code == 0x08, "idx", path, ": ", what,
                    " must hold ubyte data (got dtype code ", hex(header.type->code, 2), " ",
                    header.type->name, ", expected 0x08 ubyte)");
        LUMEN_CHECK(int(header.shape.size()) == want_ndim, "idx", path, ": ", what, " must have ",
                    want_ndim, " dims (got shape ", header.shape, ", expected ", want_ndim,
                    " dims)");
    }
    check_file_length(in, header, path);
    Tensor out = empty(header.shape, header.type->dtype);
    read_payload(in, header, out, path);
    return out;
}

// The IDX type of a tensor's dtype, or null when IDX cannot store it.
const IdxType* type_for(DType dtype) {
    switch (dtype) {
        case DType::uint8: return &kTypes[0];
        case DType::int32: return &kTypes[3];
        case DType::float32: return &kTypes[4];
        case DType::float64: return &kTypes[5];
        default: return nullptr;
    }
}

void write_all(gzFile file, const void* data, int64_t n, const std::string& path) {
    const char* bytes = static_cast<const char*>(data);
    while (n > 0) {
        unsigned chunk = unsigned(std::min<int64_t>(n, int64_t(1) << 30));
        int wrote = gzwrite(file, bytes, chunk);
        if (wrote <= 0) {
            int errnum = Z_OK;
            const char* message = gzerror(file, &errnum);
            gzclose_w(file);
            LUMEN_FAIL("idx", path, ": write failed (",
                       errnum == Z_ERRNO ? std::strerror(errno) : message, ")");
        }
        bytes += wrote;
        n -= wrote;
    }
}

}  // namespace

Tensor read_idx(const std::string& path) { return read_ubyte_or_any(path, 0, "the file"); }

Tensor read_idx_images(const std::string& path) {
    return read_ubyte_or_any(path, 3, "an image file");
}

Tensor read_idx_labels(const std::string& path) {
    return read_ubyte_or_any(path, 1, "a label file").to(DType::int64);
}

void write_idx(const std::string& path, const Tensor& tensor, bool compress) {
    const IdxType* type = type_for(tensor.dtype());
    LUMEN_CHECK(type, "idx", path, ": cannot store dtype ", tensor.dtype(),
                " (expected uint8, int32, float32 or float64)");
    LUMEN_CHECK(tensor.is_cpu(), "idx", path, ": expects a CPU tensor, got one on ",
                tensor.device());
    LUMEN_CHECK(tensor.ndim() >= 1 && tensor.ndim() <= kMaxDims && tensor.numel() > 0, "idx", path,
                ": cannot store shape ", tensor.shape(), " (expected 1..", kMaxDims,
                " dims, none of size 0)");
    Tensor data = tensor.contiguous();
    std::vector<uint8_t> bytes(4 + 4 * data.ndim() + data.numel() * type->bytes);
    bytes[2] = type->code;
    bytes[3] = uint8_t(data.ndim());
    for (int64_t d = 0; d < data.ndim(); ++d) {
        uint32_t size = uint32_t(data.size(d));
        for (int b = 0; b < 4; ++b) bytes[4 + 4 * d + b] = uint8_t(size >> (24 - 8 * b));
    }
    uint8_t* payload = bytes.data() + 4 + 4 * data.ndim();
    std::memcpy(payload, data.data_ptr(), size_t(data.numel() * type->bytes));
    to_host_order(payload, data.numel(), type->bytes);  // the swap is its own inverse
    gzFile file = gzopen(path.c_str(), compress ? "wb" : "wbT");
    if (!file) LUMEN_FAIL("idx", path, ": cannot open for writing: ", std::strerror(errno));
    write_all(file, bytes.data(), int64_t(bytes.size()), path);
    LUMEN_CHECK(gzclose_w(file) == Z_OK, "idx", path, ": write failed when closing the file");
}

}  // namespace lumen::datasets
