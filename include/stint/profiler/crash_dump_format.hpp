#pragma once
// The crash dump's file format, in one place: the writer (profiler/crash_dump.hpp) and the reader
// (profiler/crash_dump_reader.hpp) both name its parts from here, so neither can drift from the other.
//
// File layout (little-endian, version 3): the magic, a u16 version, the fixed header (crash_dump_header),
// then sections, each a u8 tag (crash_section):
// open_scopes  a thread's open scopes: u64 tid, u32 name length, name, u32 depth, u32 entries kept, then
//              per entry, outermost first, a crash_open_entry; an entry that began after the crash tick
//              is stale, one whose site is 0 was rewritten while it was read;
// thread_begin a thread's records begin: crash_thread_fields, u32 name length, name;
// records      a run of its records, whole, as recording/buffer.hpp lays them out (u64 bytes, the bytes);
// thread_end   its records end: u64 records written, u64 records left out as ended after the crash, u8 1
//              when all were left out because its ring lock was held;
// site         a site: u64 address, u8 crash_site_shape, u8 crash_site_payload, u32 name length, name;
// end          the end: a file without it was cut short.

#include <cstddef>      // std::size_t
#include <cstdint>      // std::uint8_t, std::uint16_t, std::uint64_t
#include <string_view>  // std::string_view

namespace stint::detail {

inline constexpr std::string_view crash_dump_magic = "STINTCRASH";
/// Bumped whenever a byte of the layout changes (3: 'T' and 'R' apart, thread names in 'O').
inline constexpr std::uint16_t crash_dump_version = 3;

/// The fixed header after the magic and the version, written and read whole (no padding).
struct crash_dump_header {
    std::uint64_t pid = 0;
    std::uint64_t signal = 0;  ///< 0: std::terminate
    std::uint64_t crashed_tid = 0;
    std::uint64_t anchor_ticks = 0;
    std::uint64_t anchor_system_ns = 0;
    double ns_per_tick = 0;
    std::uint64_t crash_ticks = 0;
};
static_assert(sizeof(crash_dump_header) == 7 * 8, "stint: the crash dump's header is packed u64s");

/// Where the sections start: a file shorter than this is cut inside its header.
inline constexpr std::size_t crash_dump_header_end =
    crash_dump_magic.size() + sizeof(std::uint16_t) + sizeof(crash_dump_header);

/// A section's tag, its first byte.
enum class crash_section : char {
    open_scopes = 'O',
    thread_begin = 'T',
    records = 'R',
    thread_end = 'X',
    site = 'S',
    end = 'E',
};

/// A thread_begin section's fixed fields, before the thread's name.
struct crash_thread_fields {
    std::uint64_t tid = 0;
    std::uint64_t overwritten = 0;        ///< the ring's records overwritten before the crash
    std::uint64_t overwritten_until = 0;  ///< the latest end tick among them (0: none)
    std::uint64_t dropped = 0;
};
static_assert(sizeof(crash_thread_fields) == 4 * 8);

/// The bytes of a runtime name an open scope keeps (recording/thread_node.hpp's open_scope_stack).
inline constexpr std::size_t crash_open_name_bytes = 24;

/// One open scope of an open_scopes section.
struct crash_open_entry {
    std::uint64_t site = 0;  ///< 0: rewritten while it was read (its scope ended after the crash)
    std::uint64_t begin_ticks = 0;
    std::uint64_t name_size = 0;  ///< the whole runtime name's size, of which the first bytes are kept
    char name[crash_open_name_bytes] = {};
};
static_assert(sizeof(crash_open_entry) == 3 * 8 + crash_open_name_bytes);

/// What a site's records draw.
enum class crash_site_shape : std::uint8_t {
    span = 0,   ///< a scope: begin to end
    point = 1,  ///< a point in time
    own = 2,    ///< stint's own work (category "overhead")
    none = 3,   ///< no event of its own (a device link, outputs, args)
};

/// What follows a site's records, as far as a crash dump's reader needs to know.
enum class crash_site_payload : std::uint8_t {
    none = 0,
    runtime_name = 1,  ///< the event's name first (the header's aux is its length)
    point = 2,         ///< a point's u64 id, then its name (aux: its length, 0 for none)
    other = 3,         ///< bytes the reader steps over
};

}  // namespace stint::detail
