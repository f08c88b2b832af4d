#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

namespace stint::detail {

/// A file written atomically: the bytes go to a temporary file beside `path`, and commit() renames
/// it into place, so a crash or a failed write never leaves a partial file under the final name.
/// A path ending in ".gz" is written gzip-compressed, streamed through a fixed 64 KiB buffer.
/// Every OS failure throws std::system_error and removes the temporary.
///     output_file out("trace.json.gz");
///     out.write("{\"traceEvents\":[]}");
///     out.commit();
class output_file {
public:
    /// Creates the temporary `<path>.tmp.XXXXXX` in the directory of `path`. `gzip_level` (0..9)
    /// applies only to ".gz" paths.
    explicit output_file(std::string path, int gzip_level = 1) : path_(std::move(path)) {
        if (path_.empty()) {
            throw std::invalid_argument("stint: cannot write trace '': the path is empty");
        }
        if (gzip_level < 0 || gzip_level > 9) {
            throw std::invalid_argument("stint: cannot write trace '" + path_ + "': gzip level " +
                                        std::to_string(gzip_level) + " is not in 0..9");
        }
        // Refused now rather than at the final rename, after the whole trace was written.
        struct stat info {};
        if (::stat(path_.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) fail(EISDIR);
        open_temporary();
        if (path_.ends_with(".gz")) {
            compressed_ = std::make_unique<unsigned char[]>(buffer_size);
            // windowBits 15 + 16: a gzip header and trailer instead of a raw zlib stream.
            const int rc = deflateInit2(&stream_, gzip_level, Z_DEFLATED, 15 + 16, 8,
                                        Z_DEFAULT_STRATEGY);
            if (rc != Z_OK) fail(rc == Z_MEM_ERROR ? ENOMEM : EINVAL);
            deflating_ = true;
            stream_.next_out = compressed_.get();
            stream_.avail_out = buffer_size;
        }
    }

    output_file(const output_file&) = delete;
    output_file& operator=(const output_file&) = delete;

    /// Removes the temporary unless commit() succeeded.
    ~output_file() { discard(); }

    /// Appends `bytes` (compressed for ".gz"). Unbuffered for plain files: callers write in large
    /// pieces, as json_writer does.
    void write(std::string_view bytes) {
        check_open();
        if (deflating_) {
            deflate_from(bytes);
        } else {
            write_fully(bytes.data(), bytes.size());
        }
    }

    /// Finishes the gzip stream, syncs and closes the temporary (reporting any error, including
    /// one that only close() sees, such as ENOSPC on NFS) and renames it over `path`.
    void commit() {
        check_open();
        if (deflating_) {
            finish_deflate();
            deflateEnd(&stream_);
            deflating_ = false;
        }
        // fsync before rename: otherwise a power loss can leave the new name on an empty file.
        // EINVAL only says the file system has nothing to sync.
        if (::fsync(fd_) != 0 && errno != EINVAL) fail(errno);
        const int fd = fd_;
        fd_ = -1;
        if (::close(fd) != 0) fail(errno);
        if (std::rename(temporary_.c_str(), path_.c_str()) != 0) fail(errno);
        temporary_.clear();
        state_ = state::committed;
    }

    /// The final path, as given.
    std::string path() const { return path_; }

private:
    enum class state { open, committed, failed };
    static constexpr unsigned buffer_size = 64 * 1024;

    [[noreturn]] void fail(int error) {
        discard();
        state_ = state::failed;
        throw std::system_error(error, std::generic_category(),
                                "stint: cannot write trace '" + path_ + "'");
    }

    void check_open() const {
        if (state_ == state::committed) {
            throw std::logic_error("stint: cannot write trace '" + path_ +
                                   "': it was already committed");
        }
        if (state_ == state::failed) {
            throw std::logic_error("stint: cannot write trace '" + path_ +
                                   "': an earlier write failed");
        }
    }

    // mkstemp's contract with mode 0666 instead of 0600, so the umask decides the permissions of
    // the trace as it does for any new file (mkstemp plus fchmod would need the umask, which a
    // process can only read by changing it).
    void open_temporary() {
        static constexpr char alphabet[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        static std::atomic<std::uint64_t> counter{0};
        temporary_ = path_ + ".tmp.XXXXXX";
        const std::size_t suffix = temporary_.size() - 6;
        for (int attempt = 0; attempt < 100; ++attempt) {
            // splitmix64 of time, pid and a counter: unique enough, and O_EXCL settles collisions.
            std::uint64_t x =
                static_cast<std::uint64_t>(
                    std::chrono::steady_clock::now().time_since_epoch().count()) ^
                (static_cast<std::uint64_t>(::getpid()) << 32) ^
                (counter.fetch_add(1, std::memory_order_relaxed) * 0x9E3779B97F4A7C15ULL);
            x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
            x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
            x ^= x >> 31;
            for (std::size_t i = 0; i < 6; ++i) {
                temporary_[suffix + i] = alphabet[x % 62];
                x /= 62;
            }
            fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd_ >= 0) return;
            if (errno != EEXIST) break;
        }
        const int error = errno;
        temporary_.clear();  // not ours: never unlink it
        fail(error);
    }

    void write_fully(const void* data, std::size_t size) {
        const auto* bytes = static_cast<const char*>(data);
        while (size > 0) {
            const ssize_t written = ::write(fd_, bytes, std::min<std::size_t>(size, 1u << 30));
            if (written < 0) {
                if (errno == EINTR) continue;
                fail(errno);
            }
            if (written == 0) fail(EIO);  // a regular file never takes nothing; do not spin
            bytes += written;
            size -= static_cast<std::size_t>(written);
        }
    }

    void write_compressed() {
        write_fully(compressed_.get(), buffer_size - stream_.avail_out);
        stream_.next_out = compressed_.get();
        stream_.avail_out = buffer_size;
    }

    void deflate_from(std::string_view bytes) {
        while (!bytes.empty()) {
            const auto piece = static_cast<uInt>(std::min<std::size_t>(bytes.size(), UINT_MAX));
            // zlib's API is not const-correct without ZLIB_CONST; deflate only reads next_in.
            stream_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
            stream_.avail_in = piece;
            while (stream_.avail_in > 0) {
                if (stream_.avail_out == 0) write_compressed();
                if (deflate(&stream_, Z_NO_FLUSH) == Z_STREAM_ERROR) fail(EIO);
            }
            bytes.remove_prefix(piece);
        }
    }

    void finish_deflate() {
        stream_.next_in = nullptr;
        stream_.avail_in = 0;
        for (;;) {
            if (stream_.avail_out == 0) write_compressed();
            const int rc = deflate(&stream_, Z_FINISH);
            if (rc == Z_STREAM_END) break;
            // Z_BUF_ERROR only means "no room": anything else, or no progress with room, is a bug.
            if (rc != Z_OK && !(rc == Z_BUF_ERROR && stream_.avail_out == 0)) fail(EIO);
        }
        write_compressed();
    }

    void discard() noexcept {
        if (deflating_) {
            deflateEnd(&stream_);
            deflating_ = false;
        }
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
        if (!temporary_.empty()) {
            ::unlink(temporary_.c_str());
            temporary_.clear();
        }
    }

    std::string path_;
    std::string temporary_;  // empty once renamed or removed
    int fd_ = -1;
    state state_ = state::open;
    bool deflating_ = false;
    z_stream stream_{};
    std::unique_ptr<unsigned char[]> compressed_;
};

}  // namespace stint::detail
