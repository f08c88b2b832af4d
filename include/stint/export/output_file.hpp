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
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stint/detail/deferred.hpp"
#include "stint/export/detail/gzip_members.hpp"

namespace stint::detail {

template <class = void>
class basic_output_file;
/// basic_output_file's one form (a template only so that a file that does not use it does not compile it).
using output_file = basic_output_file<>;

/// A trace file, written by what is at its path:
/// - nothing, or a regular file: the bytes go to a temporary file with a short name of its own
///   (".stint-XXXXXX") in the same directory, and commit() renames it into place, so a crash or a
///   failed write never leaves a partial file under the final name. A replaced file keeps its
///   permission bits (and its owner where the caller may set it); a new one gets 0666 less the umask.
/// - a symbolic link, or a chain of them: followed as open() would, a relative target read against
///   its link's directory; the file at the end is replaced (or created) as above; the link stays.
/// - a character device or a FIFO, or any file named by a link in /proc (/dev/stdout, /dev/fd/N):
///   written through, with no temporary and no rename. As with open(), opening a FIFO that has no
///   reader blocks until a reader opens it; a reader that leaves gives EPIPE, never SIGPIPE.
/// - a directory: refused (EISDIR); a block device or a socket: refused (std::invalid_argument).
/// An existing file the caller may not write, or a directory it may not create files in, is refused
/// with the OS reason before anything is written. A path ending in ".gz" is written gzip-compressed,
/// as a series of independent 256 KiB members deflated on worker threads (gzip_members); the threads
/// start only once 256 KiB were written and are joined by idle(), commit() or the destructor. Every OS failure,
/// and a worker's (ENOMEM, EIO), throws std::system_error naming the path and removes the temporary.
///     output_file out("trace.json.gz");
///     out.write("{\"traceEvents\":[]}");
///     out.commit();
template <class Unused>
class basic_output_file {
    using gzip_type = basic_gzip_members<deferred_t<void, Unused>>;  // gzip_members, checked when used

public:
    /// Opens the path, or the temporary beside the file it names (see above). `gzip_level` (0..9)
    /// applies only to ".gz" paths.
    explicit basic_output_file(std::string path, int gzip_level = 1) : path_(std::move(path)) {
        if (path_.empty()) {
            throw std::invalid_argument("stint: cannot write trace '': the path is empty");
        }
        if (gzip_level < 0 || gzip_level > 9) {
            throw std::invalid_argument("stint: cannot write trace '" + path_ + "': gzip level " +
                                        std::to_string(gzip_level) + " is not in 0..9");
        }
        open_destination();
        if (path_.ends_with(".gz")) gzip_ = std::make_unique<gzip_type>(gzip_level);
    }

    basic_output_file(const basic_output_file&) = delete;
    basic_output_file& operator=(const basic_output_file&) = delete;

    /// Removes the temporary unless commit() succeeded.
    ~basic_output_file() { discard(); }

    /// Appends `bytes` (compressed for ".gz"). Unbuffered for plain files: callers write in large
    /// pieces, as json_writer does. A worker's failure since the last call throws here.
    void write(std::string_view bytes) {
        check_open();
        if (gzip_) {
            if (const int error = gzip_->write(bytes, emitter{this})) fail(error);
        } else {
            write_fully(bytes.data(), bytes.size());
        }
    }

    /// Between bursts of writes: a ".gz" file emits its finished members and lets its compressing
    /// threads go until the next 256 KiB arrive. A worker's failure throws here.
    void idle() {
        check_open();
        if (gzip_) {
            if (const int error = gzip_->pause(emitter{this})) fail(error);
        }
    }

    /// Finishes the gzip stream, syncs and closes the temporary (reporting any error, including
    /// one that only close() sees, such as ENOSPC on NFS) and renames it over the file the path
    /// names. Written through (a device, a FIFO), it finishes the stream and closes.
    void commit() {
        check_open();
        if (gzip_) {
            if (const int error = gzip_->finish(emitter{this})) fail(error);
        }
        // fsync before rename: otherwise a power loss can leave the new name on an empty file.
        // EINVAL only says the file system has nothing to sync.
        if (!through_ && ::fsync(fd_) != 0 && errno != EINVAL) fail(errno);
        const int fd = fd_;
        fd_ = -1;
        if (::close(fd) != 0) fail(errno);
        if (!through_ && std::rename(temporary_.c_str(), target_.c_str()) != 0) fail(errno);
        temporary_.clear();
        state_ = state::committed;
    }

    /// The final path, as given.
    std::string path() const { return path_; }

    /// From now on, a failed write keeps what was written at `path` (renamed there from the temporary)
    /// instead of removing it: a trace streamed for a long time is worth keeping cut off. Nothing is
    /// kept for a file written through (a device, a FIFO): its bytes are already out.
    void keep_partial_at(std::string path) { partial_path_ = std::move(path); }

    /// Gives the file up without committing it, as a failed write does (keep_partial_at applies).
    void abandon() noexcept {
        if (state_ == state::committed) return;
        discard(true);
        state_ = state::failed;
    }

    /// Where a failure kept what was written (keep_partial_at), or "" when nothing was kept.
    [[nodiscard]] const std::string& kept_partial() const noexcept { return kept_partial_; }
    /// Whether the path is written through (a device, a FIFO, a file named through /proc), in place.
    [[nodiscard]] bool written_through() const noexcept { return through_; }

private:
    enum class state { open, committed, failed };
    // Linux's limit on the links followed in one lookup (MAXSYMLINKS); one more is ELOOP.
    static constexpr int max_links = 40;

    [[noreturn]] void fail(int error) {
        discard(true);
        state_ = state::failed;
        throw std::system_error(error, std::generic_category(),
                                "stint: cannot write trace '" + path_ + "'");
    }

    [[noreturn]] void refuse(const char* what) {
        state_ = state::failed;
        throw std::invalid_argument("stint: cannot write trace '" + path_ + "': it is " + what +
                                    "; a trace goes to a file, a character device or a FIFO");
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

    // "a/b/" for "a/b/c", "/" for "/c", "" for "c": what a relative link target is read against,
    // and where the temporary goes.
    static std::string directory_of(const std::string& path) {
        const std::size_t slash = path.rfind('/');
        return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
    }

    void open_destination() {
        // What is there, as open() sees it: through every link, /proc's included.
        struct stat info {};
        const bool exists = ::stat(path_.c_str(), &info) == 0;
        if (!exists && errno != ENOENT) fail(errno);
        if (exists) {
            // Refused now rather than at the final rename, after the whole trace was written.
            if (S_ISDIR(info.st_mode)) fail(EISDIR);
            if (S_ISCHR(info.st_mode) || S_ISFIFO(info.st_mode)) return open_through(false);
            if (S_ISBLK(info.st_mode)) refuse("a block device");
            if (!S_ISREG(info.st_mode)) refuse("a socket");
        } else if (path_.ends_with('/')) {
            fail(EISDIR);  // as open("new/", O_CREAT) says
        }
        // A regular file or nothing: the links at the end of the path are followed here only to
        // learn which name the rename must replace. Whether the caller may follow them and write is
        // the kernel's answer for the path as given (faccessat below), so fs.protected_symlinks and
        // the like apply as they do to open().
        target_ = path_;
        for (int links = 0;; ++links) {
            struct stat link {};
            if (::lstat(target_.c_str(), &link) != 0) {
                if (errno != ENOENT) fail(errno);
                break;  // the end of a dangling link, or a new file
            }
            if (!S_ISLNK(link.st_mode)) break;
            // /dev/stdout -> /proc/self/fd/1, /dev/fd/N: a link in /proc names an open file, and its
            // text is no name to rename over, so the file is written in place as open() would.
            if (in_proc(link)) return open_through(true);
            if (links == max_links) fail(ELOOP);
            char text[PATH_MAX];
            const ssize_t size = ::readlink(target_.c_str(), text, sizeof text);
            if (size < 0) fail(errno);
            if (static_cast<std::size_t>(size) == sizeof text) fail(ENAMETOOLONG);
            std::string next(text, static_cast<std::size_t>(size));
            if (!next.starts_with('/')) next.insert(0, directory_of(target_));
            target_ = std::move(next);
        }
        // rename() asks only for the directory's permission: a file the caller could not open for
        // writing must not be replaced behind its back. A dangling link passes (ENOENT): the file
        // it names is created, as open(O_CREAT) would.
        if (::faccessat(AT_FDCWD, path_.c_str(), W_OK, AT_EACCESS) != 0 && (exists || errno != ENOENT)) {
            fail(errno);
        }
        open_temporary(exists ? 0600 : 0666);
        if (exists) {
            // The replacement keeps the file's owner where the caller may set it (root) and its
            // permission bits; where the file system refuses them it stays 0600, never wider.
            [[maybe_unused]] const int owner_kept = ::fchown(fd_, info.st_uid, info.st_gid);
            [[maybe_unused]] const int mode_kept = ::fchmod(fd_, info.st_mode & 0777);
        }
    }

    static bool in_proc(const struct stat& link) {
        struct stat proc {};
        return ::lstat("/proc/self", &proc) == 0 && link.st_dev == proc.st_dev;
    }

    // Written as open() would write it: in place, no temporary, no rename. O_TRUNC, which devices
    // and FIFOs ignore, empties a regular file reached through /proc, as a shell's "> /dev/stdout".
    void open_through(bool regular_allowed) {
        do {
            fd_ = ::open(path_.c_str(), O_WRONLY | O_TRUNC | O_NOCTTY | O_CLOEXEC);
        } while (fd_ < 0 && errno == EINTR);  // a signal while a FIFO waits for its reader
        if (fd_ < 0) fail(errno);
        through_ = true;
        // Something else put there since stat would be written in place, not atomically.
        struct stat info {};
        if (::fstat(fd_, &info) != 0) fail(errno);
        if (!S_ISCHR(info.st_mode) && !S_ISFIFO(info.st_mode) && !(regular_allowed && S_ISREG(info.st_mode))) {
            fail(EAGAIN);
        }
    }

    // mkstemp's contract with `mode` instead of 0600: 0666 for a new file, so that the umask decides
    // its permissions as for any new file (mkstemp plus fchmod would need the umask, which a process
    // can only read by changing it). The name is short and not derived from the final name, so any
    // legal file name (up to NAME_MAX) can be written.
    void open_temporary(mode_t mode) {
        static constexpr char alphabet[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        static std::atomic<std::uint64_t> counter{0};
        temporary_ = directory_of(target_) + ".stint-XXXXXX";
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
            fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
            if (fd_ >= 0) return;
            if (errno != EEXIST) break;
        }
        const int error = errno;
        temporary_.clear();  // not ours: never unlink it
        fail(error);
    }

    // A write to a FIFO whose reader has gone raises SIGPIPE, which would end the program: the
    // signal is blocked on this thread for the write and taken back if the write raised it, so the
    // caller gets EPIPE instead. A write that the reader's leaving cut short raises it as well,
    // though it returns what it wrote.
    ssize_t write_through(const char* bytes, std::size_t size) {
        sigset_t pipe_signal;
        sigset_t saved;
        sigset_t pending;
        sigemptyset(&pipe_signal);
        sigaddset(&pipe_signal, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_signal, &saved);
        sigpending(&pending);
        const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
        const ssize_t written = ::write(fd_, bytes, size);
        const int error = errno;
        if (!was_pending) {
            const timespec none{};
            while (sigtimedwait(&pipe_signal, nullptr, &none) < 0 && errno == EINTR) {
            }
        }
        pthread_sigmask(SIG_SETMASK, &saved, nullptr);
        errno = error;
        return written;
    }

    void write_fully(const void* data, std::size_t size) {
        const auto* bytes = static_cast<const char*>(data);
        while (size > 0) {
            const std::size_t piece = std::min<std::size_t>(size, 1u << 30);
            const ssize_t written = through_ ? write_through(bytes, piece) : ::write(fd_, bytes, piece);
            if (written < 0) {
                if (errno == EINTR) continue;
                fail(errno);
            }
            if (written == 0) fail(EIO);  // a file, a device or a FIFO never takes nothing; do not spin
            bytes += written;
            size -= static_cast<std::size_t>(written);
        }
    }

    // Where gzip_members puts each finished member, on this thread. A failed write throws from
    // inside gzip_members, which holds no lock then; fail() stops its workers through discard().
    struct emitter {
        basic_output_file* file;
        void operator()(const unsigned char* bytes, std::size_t size) const { file->write_fully(bytes, size); }
    };

    // `failed`: a write failed or the writer gave up, so keep_partial_at applies.
    void discard(bool failed = false) noexcept {
        // Joined, not destroyed: discard() may run inside gzip_->write(), through an emitter.
        if (gzip_) gzip_->stop();
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
        if (!temporary_.empty()) {
            if (failed && !partial_path_.empty() && std::rename(temporary_.c_str(), partial_path_.c_str()) == 0) {
                kept_partial_.swap(partial_path_);
            } else {
                ::unlink(temporary_.c_str());
            }
            temporary_.clear();
        }
    }

    std::string path_;
    std::string target_;     // the file the path names, its links followed
    std::string temporary_;  // empty once renamed or removed, and when written through
    int fd_ = -1;
    bool through_ = false;   // a device or a FIFO, written in place
    state state_ = state::open;
    std::unique_ptr<gzip_type> gzip_;  // ".gz" paths
    std::string partial_path_;  // where a failure keeps what was written (keep_partial_at)
    std::string kept_partial_;  // ... once it did
};

}  // namespace stint::detail
