// POSIX open/read/write with the checks and messages of core/file_io.h.
#include "core/file_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fault.h"

namespace lumen {

FileHandle::~FileHandle() {
    if (fd_ >= 0) ::close(fd_);
}

FileHandle& FileHandle::operator=(FileHandle&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = other.release();
    }
    return *this;
}

int FileHandle::release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
}

namespace {

const char* file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "a special file";
}

}  // namespace

FileHandle open_regular_file(const std::string& path, const std::string& owner, uint64_t* size) {
    // O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever. It is cleared
    // once the file is known to be regular (where it changes nothing anyway).
    FileHandle file(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (file.get() < 0) {
        int error = errno;
        LUMEN_FAIL(owner, path, ": cannot open: ", std::strerror(error));
    }
    struct stat info {};
    if (::fstat(file.get(), &info) != 0) {
        int error = errno;
        LUMEN_FAIL(owner, path, ": cannot stat: ", std::strerror(error));
    }
    LUMEN_CHECK(S_ISREG(info.st_mode), owner, path, ": is ", file_kind(info.st_mode),
                S_ISREG(info.st_mode) || S_ISDIR(info.st_mode) ? "" : ", not a regular file",
                S_ISDIR(info.st_mode) ? ", not a file" : "");
    int flags = ::fcntl(file.get(), F_GETFL);
    if (flags >= 0) ::fcntl(file.get(), F_SETFL, flags & ~O_NONBLOCK);
    if (size) *size = uint64_t(info.st_size);
    return file;
}

std::string read_file(const std::string& path, const std::string& owner, uint64_t max_bytes,
                      const std::string& what) {
    uint64_t size = 0;
    FileHandle file = open_regular_file(path, owner, &size);
    LUMEN_CHECK(size <= max_bytes, owner, path, ": is ", format_bytes(double(size)),
                ", over the limit of ", format_bytes(double(max_bytes)), " for ", what);
    std::string text(size_t(size), '\0');
    size_t done = 0;
    while (done < text.size()) {
        ssize_t got = ::read(file.get(), text.data() + done, text.size() - done);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            int error = errno;
            LUMEN_FAIL(owner, path, ": read failed: ", std::strerror(error));
        }
        if (got == 0) break;  // shrank while reading: keep what is there
        done += size_t(got);
    }
    text.resize(done);
    return text;
}

FileWriter::FileWriter(std::string path, std::string owner, Mode mode)
    : path_(std::move(path)), owner_(std::move(owner)) {
    append_ = mode == Mode::append;
    int flags =
        O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY | (mode == Mode::append ? O_APPEND : O_TRUNC);
    fd_ = ::open(path_.c_str(), flags, 0644);
    if (fd_ < 0) fail("open for writing", errno);
    if (mode == Mode::append) {
        struct stat info {};
        if (::fstat(fd_, &info) == 0) written_ = uint64_t(info.st_size);
    }
}

FileWriter::~FileWriter() {
    if (fd_ >= 0) ::close(fd_);
}

void FileWriter::fail(const char* operation, int error) const {
    LUMEN_FAIL(owner_, path_, ": ", operation, " failed: ", std::strerror(error));
}

void FileWriter::write(const void* data, size_t nbytes) {
    const char* bytes = static_cast<const char*>(data);
    while (nbytes > 0) {
        if (fault::at("write")) fail("write", ENOSPC);
        ssize_t done = ::write(fd_, bytes, nbytes);
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) fail("write", errno);
        bytes += done;
        nbytes -= size_t(done);
        written_ += uint64_t(done);
    }
}

void FileWriter::write_at(uint64_t offset, const void* data, size_t nbytes) {
    LUMEN_CHECK(!append_, owner_, path_, ": write_at needs a file opened in truncate mode");
    const char* bytes = static_cast<const char*>(data);
    while (nbytes > 0) {
        if (fault::at("write")) fail("write", ENOSPC);
        ssize_t done = ::pwrite(fd_, bytes, nbytes, off_t(offset));
        if (done < 0 && errno == EINTR) continue;
        if (done < 0) fail("write", errno);
        bytes += done;
        nbytes -= size_t(done);
        offset += uint64_t(done);
    }
}

void FileWriter::sync() {
    if (::fsync(fd_) != 0) fail("fsync", errno);
}

void FileWriter::close() {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("close", errno);
}

std::string format_bytes(double bytes) {
    const char* units[] = {"bytes", "KB", "MB", "GB", "TB", "PB"};
    int unit = 0;
    while (bytes >= 1024 && unit < 5) {
        bytes /= 1024;
        ++unit;
    }
    char text[48];
    if (unit == 0)
        std::snprintf(text, sizeof(text), "%.0f bytes", bytes);
    else
        std::snprintf(text, sizeof(text), "%.1f %s", bytes, units[unit]);
    return text;
}

void write_file_atomically(const std::string& path, const std::string& owner,
                           const std::function<void(FileWriter&)>& fill) {
    const std::string temp = path + ".tmp";
    try {
        FileWriter out(temp, owner);
        fill(out);
        out.close();
    } catch (...) {
        std::remove(temp.c_str());
        throw;
    }
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
        int error = errno;
        std::remove(temp.c_str());
        LUMEN_FAIL(owner, path, ": cannot rename ", temp, " to it: ", std::strerror(error));
    }
}

}  // namespace lumen
