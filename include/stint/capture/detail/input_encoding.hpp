#pragma once
// The wire format of captured op inputs (record_shapes): a packed byte stream after the record's
// payload header, written on the hot path by stint::input_writer and read at drain by
// input_decoding.hpp. Values are native-endian and unaligned (copied with memcpy); the stream never
// leaves the process.
//
//   payload header aux: bits 0-15 inputs written, bit 30 concrete values kept, bit 31 truncated
//   entry:              u8 tag, then by tag:
//     none, other, dropped   nothing
//     tensor                 u8 flags, u8 rank, u8 dtype length, dtype bytes, rank dims,
//                            [rank strides if flags has wire_has_strides]; dims and strides are
//                            i32 when flags has wire_narrow, else i64; then with wire_has_identity
//                            a wire_identity, [u64 storage if wire_has_storage], [u64 key if
//                            wire_has_key]
//     tensor_list            u8 flags, u16 count, count entries (each tensor or none)
//     int64, uint64, real    8 bytes
//     boolean                1 byte
//     *_list                 u8 flags, u8 count, count x 8 bytes (bool_list: count x 1 byte)
//     string                 u8 flags, u16 length, bytes

#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint8_t, std::uint32_t, std::uint64_t, std::int16_t

namespace stint::detail {

enum class wire_tag : std::uint8_t {
    none = 0,
    tensor = 1,
    tensor_list = 2,
    int64 = 3,
    uint64 = 4,
    real = 5,
    boolean = 6,
    int_list = 7,
    uint_list = 8,
    real_list = 9,
    bool_list = 10,
    string = 11,
    other = 12,
    dropped = 13,  ///< an input that did not fit in the byte budget (keeps later inputs' positions)
};

inline constexpr std::uint8_t wire_has_strides = 1;   ///< tensor: strides follow the dims
inline constexpr std::uint8_t wire_cut = 2;           ///< dims, list elements or text were cut
inline constexpr std::uint8_t wire_text_omitted = 4;  ///< string: text not kept (concrete capture off)
inline constexpr std::uint8_t wire_narrow = 8;        ///< tensor: dims and strides are stored as i32
inline constexpr std::uint8_t wire_has_identity = 16; ///< tensor: a wire_identity follows (an ET records)
inline constexpr std::uint8_t wire_has_storage = 32;  ///< tensor: its storage differs from its data
inline constexpr std::uint8_t wire_has_key = 64;      ///< tensor: its identity key differs from its data

/// Where a tensor's elements are (stint::tensor_address), as a tensor entry carries it.
struct wire_identity {
    std::uint64_t data;
    std::uint32_t itemsize;
    std::uint8_t device_type;
    std::uint8_t unused;
    std::int16_t device_index;
};
inline constexpr std::size_t wire_identity_bytes = sizeof(wire_identity);
static_assert(wire_identity_bytes == 16);

inline constexpr std::uint32_t inputs_aux_count_mask = 0xffffU;
inline constexpr std::uint32_t inputs_aux_concrete = 1U << 30;
inline constexpr std::uint32_t inputs_aux_truncated = 1U << 31;

}  // namespace stint::detail
