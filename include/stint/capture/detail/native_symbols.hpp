#pragma once
// Names of native return addresses, for with_stack<native> at drain time: the object an address
// belongs to (dladdr), that object's function symbols read from its ELF file (.symtab, else
// .dynsym), demangled. Every address and object is looked up once per symbolizer.

#include <cstddef>  // std::size_t
#include <cstdint>  // std::uint32_t, std::uint64_t
#include <string>  // std::string
#include <unordered_map>  // std::unordered_map
#include <vector>  // std::vector

#include "stint/detail/separate_compilation.hpp"

#if defined(__linux__) && defined(__GLIBC__)
#include <dlfcn.h>  // Dl_info
#define STINT_DETAIL_HAS_ELF_SYMBOLS 1
#else
#define STINT_DETAIL_HAS_ELF_SYMBOLS 0
#endif

namespace stint::detail {

/// `name` demangled if it is a C++ symbol, else as is.
STINT_DECL std::string demangle(const char* name);

class native_symbolizer {
public:
    /// The function containing the return address `address` ("ns::f(int)"), or "<object>+0x<offset>"
    /// when no symbol covers it, or "0x<address>" outside every loaded object.
    STINT_DECL const std::string& name_of(std::uint64_t address);

private:
    struct symbol {
        std::uint64_t begin = 0;  // as in the file: relative to the load base for ET_DYN objects
        std::uint64_t size = 0;
        std::uint32_t name = 0;   // offset into the object's string table
    };
    struct object_symbols {
        bool relative = true;  // ET_DYN (PIE executables, shared objects)
        std::vector<symbol> symbols;
        std::string strings;
    };

    STINT_DECL std::string look_up(std::uint64_t address);

#if STINT_DETAIL_HAS_ELF_SYMBOLS
    // dladdr names the main program as it was started (argv[0]); read it through /proc instead.
    STINT_DECL static std::string object_path(const Dl_info& info);

    STINT_DECL const object_symbols& symbols_of(const std::string& path);

    STINT_DECL static bool read_at(int fd, void* out, std::size_t bytes, std::uint64_t offset);

    // Reads the function symbols of a 64-bit ELF file; an unreadable file leaves `out` empty.
    STINT_DECL static void read_symbols(const std::string& path, object_symbols& out);

    std::unordered_map<std::string, object_symbols> objects_;
#endif
    std::unordered_map<std::uint64_t, std::string> names_;
};

}  // namespace stint::detail

#if defined(STINT_HEADER_ONLY)
#include "stint/capture/detail/impl/native_symbols.ipp"
#endif
