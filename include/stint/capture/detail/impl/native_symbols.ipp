#pragma once
// The bodies of capture/detail/native_symbols.hpp: demangling, and native addresses named from ELF symbols.

#include "stint/capture/detail/native_symbols.hpp"

#include <algorithm>  // std::max, std::sort, std::upper_bound
#include <cstdlib>  // std::free
#include <cstring>  // std::memcmp, std::strcmp
#include <memory>  // std::unique_ptr
#include <string_view>  // std::string_view

#include <fmt/format.h>  // fmt::format

#if STINT_DETAIL_HAS_ELF_SYMBOLS
#include <cxxabi.h>  // abi::__cxa_demangle
#include <elf.h>     // Elf64_Ehdr, Elf64_Shdr, Elf64_Sym
#include <fcntl.h>   // ::open, O_RDONLY, O_CLOEXEC
#include <link.h>    // ::dl_iterate_phdr, dl_phdr_info
#include <unistd.h>  // ::pread, ::close
#endif

namespace stint::detail {

std::string demangle(const char* name) {
#if STINT_DETAIL_HAS_ELF_SYMBOLS
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
    if (status == 0 && out) return out.get();
#endif
    return name;
}

const std::string& native_symbolizer::name_of(std::uint64_t address) {
    auto [it, added] = names_.try_emplace(address);
    if (added) it->second = look_up(address);
    return it->second;
}

std::string native_symbolizer::look_up(std::uint64_t address) {
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
    const std::string_view file = path;
    return fmt::format("{}+0x{:x}", file.substr(file.rfind('/') + 1), at - base);
#else
    return fmt::format("0x{:x}", address);
#endif
}

#if STINT_DETAIL_HAS_ELF_SYMBOLS
std::string native_symbolizer::object_path(const Dl_info& info) {
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

const native_symbolizer::object_symbols& native_symbolizer::symbols_of(const std::string& path) {
    auto [it, added] = objects_.try_emplace(path);
    if (added) read_symbols(path, it->second);
    return it->second;
}

bool native_symbolizer::read_at(int fd, void* out, std::size_t bytes, std::uint64_t offset) {
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

void native_symbolizer::read_symbols(const std::string& path, object_symbols& out) {
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
    std::vector<Elf64_Shdr> sections(header.e_shnum);
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
    std::vector<Elf64_Sym> symbols(table->sh_size / sizeof(Elf64_Sym));
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
#endif

}  // namespace stint::detail
