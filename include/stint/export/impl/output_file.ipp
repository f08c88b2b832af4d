#pragma once
// output_file's bodies: the destination's kind, the temporary beside it, the writes and the commit.
#include "stint/export/output_file.hpp"

#include <algorithm>     // std::min
#include <atomic>        // std::atomic
#include <cerrno>        // errno, EISDIR, ENOENT, ELOOP, ENAMETOOLONG, EINTR, EAGAIN, EEXIST, EINVAL, EIO
#include <chrono>        // std::chrono::steady_clock
#include <climits>       // PATH_MAX
#include <cstdint>       // std::uint64_t
#include <cstdio>        // std::rename
#include <stdexcept>     // std::invalid_argument, std::logic_error
#include <system_error>  // std::system_error, std::generic_category

#include <fcntl.h>    // open, O_*, AT_FDCWD
#include <pthread.h>  // pthread_sigmask
#include <signal.h>   // sigset_t, sigtimedwait, SIGPIPE
#include <time.h>     // timespec
#include <unistd.h>   // write, close, fsync, readlink, faccessat, fchown, unlink, getpid

namespace stint::detail {

output_file::output_file(std::string path, int gzip_level, std::string_view what)
    : path_(std::move(path)), what_(what) {
    if (path_.empty()) {
        throw std::invalid_argument("stint: cannot write " + what_ + " '': the path is empty");
    }
    if (gzip_level < 0 || gzip_level > 9) {
        throw std::invalid_argument("stint: cannot write " + what_ + " '" + path_ + "': gzip level " +
                                    std::to_string(gzip_level) + " is not in 0..9");
    }
    open_destination();
    if (path_.ends_with(".gz")) gzip_ = std::make_unique<gzip_members>(gzip_level);
}

void output_file::write(std::string_view bytes) {
    check_open();
    if (gzip_) {
        if (const int error = gzip_->write(bytes, emitter{this})) fail(error);
    } else {
        write_fully(bytes.data(), bytes.size());
    }
}

void output_file::idle() {
    check_open();
    if (gzip_) {
        if (const int error = gzip_->pause(emitter{this})) fail(error);
    }
}

void output_file::finish() {
    check_open();
    if (finished_) return;
    if (gzip_) {
        if (const int error = gzip_->finish(emitter{this})) fail(error);
    }
    // fsync before rename: otherwise a power loss can leave the new name on an empty file.
    // EINVAL only says the file system has nothing to sync.
    if (!through_ && ::fsync(fd_) != 0 && errno != EINVAL) fail(errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail(errno);
    finished_ = true;
}

void output_file::commit() {
    finish();
    if (!through_ && std::rename(temporary_.c_str(), target_.c_str()) != 0) fail(errno);
    temporary_.clear();
    state_ = state::committed;
}

void output_file::abandon() noexcept {
    if (state_ == state::committed) return;
    discard(true);
    state_ = state::failed;
}

void output_file::fail(int error) {
    discard(true);
    state_ = state::failed;
    throw std::system_error(error, std::generic_category(),
                            "stint: cannot write " + what_ + " '" + path_ + "'");
}

void output_file::refuse(const char* what) {
    state_ = state::failed;
    throw std::invalid_argument("stint: cannot write " + what_ + " '" + path_ + "': it is " + what +
                                "; a trace goes to a file, a character device or a FIFO");
}

void output_file::check_open() const {
    if (state_ == state::committed) {
        throw std::logic_error("stint: cannot write " + what_ + " '" + path_ +
                               "': it was already committed");
    }
    if (state_ == state::failed) {
        throw std::logic_error("stint: cannot write " + what_ + " '" + path_ +
                               "': an earlier write failed");
    }
}

std::string output_file::directory_of(const std::string& path) {
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

void output_file::open_destination() {
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

bool output_file::in_proc(const struct stat& link) {
    struct stat proc {};
    return ::lstat("/proc/self", &proc) == 0 && link.st_dev == proc.st_dev;
}

void output_file::open_through(bool regular_allowed) {
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

void output_file::open_temporary(mode_t mode) {
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

ssize_t output_file::write_through(const char* bytes, std::size_t size) {
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

void output_file::write_fully(const void* data, std::size_t size) {
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

void output_file::discard(bool failed) noexcept {
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


}  // namespace stint::detail
