#pragma once

#include <cstddef>      // std::size_t
#include <memory>       // std::unique_ptr
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <utility>      // std::move

#include <sys/stat.h>   // struct stat, mode_t
#include <sys/types.h>  // ssize_t

#include "stint/detail/separate_compilation.hpp"
#include "stint/export/detail/gzip_members.hpp"

namespace stint::detail {

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
class output_file {
public:
    /// Opens the path, or the temporary beside the file it names (see above). `gzip_level` (0..9)
    /// applies only to ".gz" paths. `what` names the file in errors ("cannot write trace '...'").
    STINT_DECL explicit output_file(std::string path, int gzip_level = 1, std::string_view what = "trace");

    output_file(const output_file&) = delete;
    output_file& operator=(const output_file&) = delete;

    /// Removes the temporary unless commit() succeeded.
    ~output_file() { discard(); }

    /// Appends `bytes` (compressed for ".gz"). Unbuffered for plain files: callers write in large
    /// pieces, as json_writer does. A worker's failure since the last call throws here.
    STINT_DECL void write(std::string_view bytes);

    /// Between bursts of writes: a ".gz" file emits its finished members and lets its compressing
    /// threads go until the next 256 KiB arrive. A worker's failure throws here.
    STINT_DECL void idle();

    /// Finishes the gzip stream, syncs and closes the temporary (reporting any error, including
    /// one that only close() sees, such as ENOSPC on NFS) and renames it over the file the path
    /// names. Written through (a device, a FIFO), it finishes the stream and closes.
    STINT_DECL void commit();

    /// What commit() does before its rename (the stream finished, synced, closed), so that two files
    /// that must land together fail before either is renamed: finish() both, then commit() both.
    STINT_DECL void finish();

    /// The final path, as given.
    std::string path() const { return path_; }

    /// From now on, a failed write keeps what was written at `path` (renamed there from the temporary)
    /// instead of removing it: a trace streamed for a long time is worth keeping cut off. Nothing is
    /// kept for a file written through (a device, a FIFO): its bytes are already out.
    void keep_partial_at(std::string path) { partial_path_ = std::move(path); }

    /// Gives the file up without committing it, as a failed write does (keep_partial_at applies).
    STINT_DECL void abandon() noexcept;

    /// Where a failure kept what was written (keep_partial_at), or "" when nothing was kept.
    [[nodiscard]] const std::string& kept_partial() const noexcept { return kept_partial_; }
    /// Whether the path is written through (a device, a FIFO, a file named through /proc), in place.
    [[nodiscard]] bool written_through() const noexcept { return through_; }

private:
    enum class state { open, committed, failed };
    // Linux's limit on the links followed in one lookup (MAXSYMLINKS); one more is ELOOP.
    static constexpr int max_links = 40;

    [[noreturn]] STINT_DECL void fail(int error);

    [[noreturn]] STINT_DECL void refuse(const char* what);

    STINT_DECL void check_open() const;

    // "a/b/" for "a/b/c", "/" for "/c", "" for "c": what a relative link target is read against,
    // and where the temporary goes.
    STINT_DECL static std::string directory_of(const std::string& path);

    STINT_DECL void open_destination();

    STINT_DECL static bool in_proc(const struct stat& link);

    // Written as open() would write it: in place, no temporary, no rename. O_TRUNC, which devices
    // and FIFOs ignore, empties a regular file reached through /proc, as a shell's "> /dev/stdout".
    STINT_DECL void open_through(bool regular_allowed);

    // mkstemp's contract with `mode` instead of 0600: 0666 for a new file, so that the umask decides
    // its permissions as for any new file (mkstemp plus fchmod would need the umask, which a process
    // can only read by changing it). The name is short and not derived from the final name, so any
    // legal file name (up to NAME_MAX) can be written.
    STINT_DECL void open_temporary(mode_t mode);

    // A write to a FIFO whose reader has gone raises SIGPIPE, which would end the program: the
    // signal is blocked on this thread for the write and taken back if the write raised it, so the
    // caller gets EPIPE instead. A write that the reader's leaving cut short raises it as well,
    // though it returns what it wrote.
    STINT_DECL ssize_t write_through(const char* bytes, std::size_t size);

    STINT_DECL void write_fully(const void* data, std::size_t size);

    // Where gzip_members puts each finished member, on this thread. A failed write throws from
    // inside gzip_members, which holds no lock then; fail() stops its workers through discard().
    struct emitter {
        output_file* file;
        void operator()(const unsigned char* bytes, std::size_t size) const { file->write_fully(bytes, size); }
    };

    // `failed`: a write failed or the writer gave up, so keep_partial_at applies.
    STINT_DECL void discard(bool failed = false) noexcept;

    std::string path_;
    std::string what_;       // "trace", "table": how errors name the file
    bool finished_ = false;  // finish() ran: commit() only renames
    std::string target_;     // the file the path names, its links followed
    std::string temporary_;  // empty once renamed or removed, and when written through
    int fd_ = -1;
    bool through_ = false;   // a device or a FIFO, written in place
    state state_ = state::open;
    std::unique_ptr<gzip_members> gzip_;  // ".gz" paths
    std::string partial_path_;  // where a failure keeps what was written (keep_partial_at)
    std::string kept_partial_;  // ... once it did
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/export/impl/output_file.ipp"
#endif
