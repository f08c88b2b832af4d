#pragma once
// Names of native return addresses, for with_stack<native> at drain time: the object an address
// belongs to (dladdr), that object's function symbols read from its ELF file (.symtab, else
// .dynsym), demangled. Every address and object is looked up once per symbolizer.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "stint/detail/deferred.hpp"

#if defined(__linux__) && defined(__GLIBC__)
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>
#define STINT_DETAIL_HAS_ELF_SYMBOLS 1
#else
#define STINT_DETAIL_HAS_ELF_SYMBOLS 0
#endif

namespace stint::detail {

/// `name` demangled if it is a C++ symbol, else as is.
template <class Unused = void>
std::string demangle(const char* name) {
#if STINT_DETAIL_HAS_ELF_SYMBOLS
    int status = 0;
    deferred_t<std::unique_ptr<char, void (*)(void*)>, Unused> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
    if (status == 0 && out) return out.get();
#endif
    return name;
}

template <class = void>
class basic_native_symbolizer;
/// basic_native_symbolizer's one form (a template only so that a file that does not use it does not compile it).
using native_symbolizer = basic_native_symbolizer<>;

template <class Unused>
class basic_native_symbolizer {
    template <class T>
    using later = deferred_t<T, Unused>;  // checked when used (detail/deferred.hpp)

public:
    /// The function containing the return address `address` ("ns::f(int)"), or "<object>+0x<offset>"
    /// when no symbol covers it, or "0x<address>" outside every loaded object.
    const std::string& name_of(std::uint64_t address) {
        auto [it, added] = names_.try_emplace(address);
        if (added) it->second = look_up(address);
        return it->second;
    }

private:
    struct symbol {
        std::uint64_t begin = 0;  // as in the file: relative to the load base for ET_DYN objects
        std::uint64_t size = 0;
        std::uint32_t name = 0;   // offset into the object's string table
    };
    struct object_symbols {
        bool relative = true;  // ET_DYN (PIE executables, shared objects)
        later<std::vector<symbol>> symbols;
        std::string strings;
    };

    std::string look_up(later<std::uint64_t> address) {
#if STINT_DETAIL_HAS_ELF_SYMBOLS
        // A return address follows its call: look up the call instruction's last byte.
        const std::uint64_t at = address - 1;
        Dl_info info{};
        void* const where = reinterpret_cast<void*>(static_cast<std::uintptr_t>(at));
        if (::dladdr(where, &info) == 0 || info.dli_fbase == nullptr) {
            return fmt::format("0x{:x}", address);
        }
        const auto base = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(info.dli_fbase));
        const std::string path = object_path(info);
        const object_symbols& object = symbols_of(path);
        const std::uint64_t key = object.relative ? at - base : at;
        auto next = std::upper_bound(object.symbols.begin(), object.symbols.end(), key,
                                     [](std::uint64_t k, const symbol& s) { return k < s.begin; });
        if (next != object.symbols.begin()) {
            const symbol& s = *(next - 1);
            if (key < s.begin + std::max<std::uint64_t>(s.size, 1) && s.name < object.strings.size()) {
                return demangle(object.strings.c_str() + s.name);
            }
        }
        if (info.dli_sname != nullptr) return demangle(info.dli_sname);  // the nearest exported symbol
        const later<std::string_view> file = path;
        return fmt::format("{}+0x{:x}", file.substr(file.rfind('/') + 1), at - base);
#else
        return fmt::format("0x{:x}", address);
#endif
    }

#if STINT_DETAIL_HAS_ELF_SYMBOLS
    // dladdr names the main program as it was started (argv[0]); read it through /proc instead.
    static std::string object_path(const Dl_info& info) {
        static const void* main_base = [] {
            const void* found = nullptr;
            ::dl_iterate_phdr(
                [](dl_phdr_info* phdr, std::size_t, void* out) {
                    *static_cast<const void**>(out) = reinterpret_cast<const void*>(phdr->dlpi_addr);
                    return 1;  // the first object is the main program
                },
                &found);
            return found;
        }();
        const bool is_main = info.dli_fbase == main_base ||
                             (info.dli_fname != nullptr && std::strcmp(info.dli_fname, "") == 0);
        if (is_main || info.dli_fname == nullptr) return "/proc/self/exe";
        return info.dli_fname;
    }

    const object_symbols& symbols_of(const std::string& path) {
        auto [it, added] = objects_.try_emplace(path);
        if (added) read_symbols(path, it->second);
        return it->second;
    }

    static bool read_at(int fd, void* out, std::size_t bytes, std::uint64_t offset) {
        auto* to = static_cast<char*>(out);
        while (bytes > 0) {
            const ssize_t n = ::pread(fd, to, bytes, static_cast<off_t>(offset));
            if (n <= 0) return false;
            to += n;
            bytes -= static_cast<std::size_t>(n);
            offset += static_cast<std::uint64_t>(n);
        }
        return true;
    }

    // Reads the function symbols of a 64-bit ELF file; an unreadable file leaves `out` empty.
    static void read_symbols(const std::string& path, object_symbols& out) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return;
        struct closer {
            int fd;
            ~closer() { ::close(fd); }
        } close_at_exit{fd};
        Elf64_Ehdr header{};
        if (!read_at(fd, &header, sizeof(header), 0) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
            header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_shentsize != sizeof(Elf64_Shdr)) {
            return;
        }
        out.relative = header.e_type == ET_DYN;
        later<std::vector<Elf64_Shdr>> sections(header.e_shnum);
        if (sections.empty() ||
            !read_at(fd, sections.data(), sections.size() * sizeof(Elf64_Shdr), header.e_shoff)) {
            return;
        }
        // .symtab has every function; stripped objects keep only the exported ones in .dynsym.
        const Elf64_Shdr* table = nullptr;
        for (const Elf64_Shdr& s : sections) {
            if (s.sh_type == SHT_SYMTAB) table = &s;
        }
        if (table == nullptr) {
            for (const Elf64_Shdr& s : sections) {
                if (s.sh_type == SHT_DYNSYM) table = &s;
            }
        }
        if (table == nullptr || table->sh_link >= sections.size() || table->sh_entsize != sizeof(Elf64_Sym)) return;
        const Elf64_Shdr& strings = sections[table->sh_link];
        later<std::vector<Elf64_Sym>> symbols(table->sh_size / sizeof(Elf64_Sym));
        out.strings.resize(strings.sh_size);
        if (!read_at(fd, symbols.data(), symbols.size() * sizeof(Elf64_Sym), table->sh_offset) ||
            !read_at(fd, out.strings.data(), out.strings.size(), strings.sh_offset)) {
            out.strings.clear();
            return;
        }
        for (const Elf64_Sym& s : symbols) {
            const unsigned type = ELF64_ST_TYPE(s.st_info);
            if ((type == STT_FUNC || type == STT_GNU_IFUNC) && s.st_value != 0 && s.st_name < out.strings.size()) {
                out.symbols.push_back({s.st_value, s.st_size, s.st_name});
            }
        }
        std::sort(out.symbols.begin(), out.symbols.end(),
                  [](const symbol& a, const symbol& b) { return a.begin < b.begin; });
    }

    later<std::unordered_map<std::string, object_symbols>> objects_;
#endif
    later<std::unordered_map<std::uint64_t, std::string>> names_;
};

}  // namespace stint::detail
