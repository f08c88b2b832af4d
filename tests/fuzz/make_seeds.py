#!/usr/bin/env python3
"""Writes the hand-made seeds of exporters_fuzz into tests/fuzz/corpus/seed_* (fields split by "|#|",
see exporters_fuzz.cpp). The rest of the corpus is what `bash tools/fuzz.sh SECONDS --merge` kept."""
import os

S = b'|#|'
M = [b's', b'r', b'a', b't', b'k', b'v']  # fields 1..6 when a seed is about field 7


def f(*fields):
    return S.join(fields)


SEEDS = {
    'empty': b'',
    'flags_only': b'\x00',
    'names_ascii': f(b'\x00', b'outer', b'inner'),
    'with_args': f(b'\x00', b'outer', b'rf', b'1, 2, 3'),
    'thread_name': f(b'\x00', b's', b'r', b'a', b'worker \xe2\x80\x94 1'),
    'metadata': f(b'\x00', b's', b'r', b'a', b't', b'run', b'baseline'),
    'metadata_json': f(b'\x00', *M, b'{"a": [1, 2.5e3, true, null], "s": "x\\u00e9"}'),
    'op_inputs': f(b'\x00', *M, b'1', b'hello', b'w\xc3\xb6rld', b'', b'\x00'),
    'nested_gzip': f(b'\x05', b'outer', b'rf', b'args', b'thr', b'key', b'val', b'[]', b'i0', b'i1', b'i2', b'i3'),
    'repeats4_noconcrete': f(b'\x32', b'a', b'b', b'c', b'd', b'e', b'f', b'"s"', b'x'),
    'all_bytes_name': f(b'\x00', bytes(range(256)), bytes(range(255, -1, -1))),
    'invalid_utf8': f(b'\x00', b'\x80\xbf', b'\xc3', b'\xe4\xb8x', b'\xf0\x9f\x98!', b'\xff\xfe', b'\xc0\x80'),
    'overlong': f(b'\x00', b'\xc0\x80\xc1\xbf', b'\xe0\x80\x80', b'\xf0\x80\x80\x80', b'\xe0\x9f\xbf'),
    'beyond_max': f(b'\x04', b'\xf4\x90\x80\x80', b'\xf5\x80\x80\x80', b'', b'\xf4\x8f\xbf\xbf'),
    'surrogates_utf8': f(b'\x00', b'\xed\xa0\x80', b'\xed\xbf\xbf', b'\xed\xa0\xbd\xed\xb8\x80', b't',
                         b'\xed\xa0\x80', b'\xed\xa0\x80'),
    'json_lone_high': f(b'\x00', *M, b'"\\ud800"'),
    'json_lone_low': f(b'\x00', *M, b'["\\udc00"]'),
    'json_pair': f(b'\x00', *M, b'"\\ud83d\\ude00"'),
    'json_high_then_ascii': f(b'\x00', *M, b'"\\ud83d\\u0041"'),
    'json_raw_surrogate': f(b'\x00', *M, b'"\xed\xa0\x80"'),
    'json_nul': f(b'\x00', *M, b'"a\x00b"'),
    'json_trailing': f(b'\x00', *M, b'1 2'),
    'json_deep': f(b'\x00', *M, b'[' * 512 + b']' * 512),
    'json_too_deep': f(b'\x00', *M, b'[' * 513 + b']' * 513),
    'json_numbers': f(b'\x00', *M, b'[0, -0, 1e5, 1E-5, 0.0, 01]'),
    'json_bom': f(b'\x00', *M, b'\xef\xbb\xbf{}'),
    'nuls': f(b'\x00', b'a\x00b', b'\x00\x00', b'\x00', b'\x00t', b'\x00', b'\x00'),
    'quotes_controls': f(b'\x00', b'"\\"\\/\'', b'\n\r\t\b\x0c\x1b\x7f', b'}]},"x": ["', b'a b;c\nd', b'"', b'\\'),
    'stack_separators': f(b'\x04', b'a;b c\td\ne\rf\x0bg', b'x y;z', b'', b'; ;'),
    'reserved_key': f(b'\x00', b's', b'r', b'a', b't', b'traceEvents', b'v'),
    'reserved_key_stint': f(b'\x00', b's', b'r', b'a', b't', b'stint', b'v', b'{}'),
    'key_fuzz_json': f(b'\x00', b's', b'r', b'a', b't', b'fuzz_json', b'v', b'7'),
    'key_invalid': f(b'\x00', b's', b'r', b'a', b't', b'k\xff', b'v\xfe', b'"\xef\xbf\xbd"'),
    'long_name': f(b'\x00', b'x' * 5000, b'y' * 4100, b'z' * 5000),
    'long_name_cut_in_sequence': f(b'\x00', b'a' * 4095 + b'\xc3\xa9', b'b' * 4094 + b'\xf0\x9f\x98\x80'),
    'long_input': f(b'\x04', *M, b'0', b'i' * 2000, b'j' * 1500),
    'mangled': f(b'\x00', b'_Z3foov', b'_Z3foov\x00x', b'', b'ProfilerStep#3'),
    'utf8_valid': f(b'\x00', b'\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80',
                    b'\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf',
                    b'\xf0\x90\x80\x80\xf4\x8f\xbf\xbf', b'\xe2\x80\xa8', b'\xef\xbf\xbd', b'\xef\xbf\xbd'),
    # Found by the fuzzer: nlohmann-json takes a NUL for the end of input, stint refuses the text.
    'json_trailing_nul': f(b'\x00', b'', b'', b'', b'', b'', b'', b'"\xef\xbf\xbd"\x00\x00'),
}

if __name__ == '__main__':
    corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'corpus')
    os.makedirs(corpus, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(corpus, 'seed_' + name), 'wb') as out:
            out.write(data)
    print(f'{len(SEEDS)} seeds in {corpus}')
