#pragma once

namespace stint::detail {

/// The UTF-8 sequence that starts at `p` (`p < end`): its length when it is well formed (1 to 4,
/// Unicode Table 3-7), or minus the length of its maximal ill-formed subpart. Replacing each such
/// subpart with one U+FFFD is the Unicode §3.9 practice that browsers and Python follow, so a
/// replaced name reads the same in every tool.
///     bytes C3 A9 (é) -> 2;   E4 B8 'x' (中 cut short) -> -2;   C0 AF (overlong '/') -> -1
constexpr int utf8_sequence(const unsigned char* p, const unsigned char* end) noexcept {
    const unsigned char lead = p[0];
    if (lead < 0x80) return 1;
    int length = 0;
    unsigned char low = 0x80;   // range of the second byte; the others are always 80..BF
    unsigned char high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3;
        if (lead == 0xE0) low = 0xA0;        // below: overlong
        else if (lead == 0xED) high = 0x9F;  // above: surrogates D800..DFFF
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4;
        if (lead == 0xF0) low = 0x90;        // below: overlong
        else if (lead == 0xF4) high = 0x8F;  // above: beyond U+10FFFF
    } else {
        return -1;  // stray continuation byte, C0/C1 (always overlong) or F5..FF
    }
    const auto available = end - p;
    if (available < 2 || p[1] < low || p[1] > high) return -1;
    for (int i = 2; i < length; ++i) {
        if (available <= i || p[i] < 0x80 || p[i] > 0xBF) return -i;
    }
    return length;
}

}  // namespace stint::detail
