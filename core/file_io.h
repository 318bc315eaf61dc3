// Files at paths that may come from anyone, and files written so that a failure says why.
// Opening for reading never blocks: a FIFO, socket or device where a regular file is expected
// is refused at once instead of waiting in open(). Every error names the file and the
// system's reason, taken from errno right at the failing call (a later call would overwrite
// it: a full disk must not be reported as "No such file or directory").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace lumen {

// An open file descriptor, closed when the handle dies.
class FileHandle {
  public:
    FileHandle() = default;
    explicit FileHandle(int fd) : fd_(fd) {}
    ~FileHandle();
    FileHandle(FileHandle&& other) noexcept : fd_(other.release()) {}
    FileHandle& operator=(FileHandle&& other) noexcept;
    FileHandle(const FileHandle&) = delete;
    FileHandle& operator=(const FileHandle&) = delete;
    int get() const { return fd_; }
    int release();  // the caller owns the descriptor now

  private:
    int fd_ = -1;
};

// Opens `path` for reading when it is a regular file, and stores its size in `size`. Throws
// "[<owner>] <path>: cannot open: <reason>" or "... is a FIFO, not a regular file" (directory,
// socket, device likewise).
FileHandle open_regular_file(const std::string& path, const std::string& owner,
                             uint64_t* size = nullptr);

// The whole content of a regular file. Throws as open_regular_file, and "[<owner>] <path>: is
// <n> bytes, over the limit of <max_bytes> for <what>" before reading a byte of a larger file.
std::string read_file(const std::string& path, const std::string& owner, uint64_t max_bytes,
                      const std::string& what = "this file");

// A file being written with POSIX calls. Each failure throws "[<owner>] <path>: <operation>
// failed: <reason>" with the reason of that call. The fault point "write" (core/fault.h) makes
// write() fail with ENOSPC, as a full disk does.
class FileWriter {
  public:
    enum class Mode { truncate, append };
    FileWriter(std::string path, std::string owner, Mode mode = Mode::truncate);
    ~FileWriter();  // closes without reporting; call close() to learn of a failure
    FileWriter(const FileWriter&) = delete;
    FileWriter& operator=(const FileWriter&) = delete;

    void write(const void* data, size_t nbytes);
    void write(const std::string& text) { write(text.data(), text.size()); }
    // Overwrites bytes already written (pwrite); the file position does not move. Mode
    // truncate only (in append mode Linux appends whatever the offset).
    void write_at(uint64_t offset, const void* data, size_t nbytes);
    void sync();   // fsync: the data is on disk when it returns
    void close();  // some file systems report write errors only here
    uint64_t bytes_written() const { return written_; }
    const std::string& path() const { return path_; }

  private:
    [[noreturn]] void fail(const char* operation, int error) const;
    std::string path_, owner_;
    int fd_ = -1;
    bool append_ = false;
    uint64_t written_ = 0;
};

// "1.5 GB", "312.0 MB", "4.0 KB", "12 bytes" for messages.
std::string format_bytes(double bytes);

// Writes `path` whole or not at all: `fill` writes the content into "<path>.tmp", which is then
// closed and renamed over `path`, so a reader never sees a half-written file. On any error
// (from `fill` too) the temporary file is removed; a failed rename throws "[<owner>] <path>:
// cannot rename <temp> to it: <reason>". (train/atomic_file.h also syncs to disk, for
// checkpoints.)
void write_file_atomically(const std::string& path, const std::string& owner,
                           const std::function<void(FileWriter&)>& fill);

}  // namespace lumen
