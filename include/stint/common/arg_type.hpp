#pragma once
// What a named argument of an event holds (stint::add_args): the record and the event list both say it.

#include <cstdint>  // std::uint8_t

namespace stint {

enum class arg_type : std::uint8_t {
    integer,           ///< a signed integer (int64)
    unsigned_integer,  ///< an unsigned integer (uint64)
    real,              ///< a floating-point number (kept as double)
    boolean,           ///< a bool
    string,            ///< text
};

}  // namespace stint
