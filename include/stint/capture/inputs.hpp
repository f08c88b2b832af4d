#pragma once
// Capturing an op's inputs (record_shapes): which C++ types count as tensors, scalars and lists, the
// bounded writer that encodes them on the hot path, and the run-time switch for concrete values.
//
// What counts as what, in the order it is decided:
//   1. a specialisation of stint::input_traits<T> (yours, or a built-in one below);
//   2. stint::tensor_like: any type with sizes() (integers) and dtype() (text), optionally
//      strides() and defined();
//   3. DLPack tensors (DLTensor, DLManagedTensor), by their members, with no DLPack header (dlpack.hpp);
//   4. mdspan-like views of numbers (rank(), extent(r), element_type; stride(r) if present);
//   5. Eigen-like matrices (rows(), cols(), Scalar, IsRowMajor; innerStride()/outerStride() if
//      present), so Eigen types are captured with no Eigen dependency in stint;
//   6. std::vector and containers shaped like it (an allocator, capacity(), a sized random-access
//      range): a list, as std::array (known by shape, so that this header needs no <vector>);
//   7. aggregates (plain structs), field by field, where <stint/capture/aggregates.hpp> (Boost.PFR) is
//      included (stint.hpp includes it when Boost.PFR is found; the light annotate.hpp does not);
//   8. anything else is a compile error naming the type.

#include <array>     // std::array
#include <atomic>    // std::atomic, std::memory_order_relaxed
#include <concepts>  // std::convertible_to, std::same_as, std::integral
#include <cstddef>   // std::size_t, std::byte, std::nullptr_t
#include <cstdint>   // std::int64_t, std::uint8_t, std::uint32_t, std::uint64_t
#include <cstring>   // std::memcpy
#if __has_include(<bits/refwrap.h>)
#include <bits/refwrap.h>  // libstdc++'s std::reference_wrapper alone: <functional> costs every file more
#else
#include <functional>  // std::reference_wrapper
#endif
#include <optional>     // std::optional, std::nullopt_t
#include <span>         // with the range concepts and std::ranges::size/data (<ranges>' views are not needed)
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <type_traits>  // std::is_same_v, std::remove_cv_t, std::remove_cvref_t, std::is_floating_point_v

#include "stint/capture/detail/input_encoding.hpp"
#include "stint/capture/dlpack.hpp"
#include "stint/capture/tensor_address.hpp"
#include "stint/common/device.hpp"
#include "stint/detail/export_macros.hpp"


namespace stint {

/// Customisation point: how a type is captured as an op input. Specialise it for a type stint does
/// not capture by itself (or to override how it does); `capture` calls one `input_writer` method per
/// input it contributes (usually one).
///
///     template <> struct stint::input_traits<my::image> {
///         static void capture(stint::input_writer& w, const my::image& im) {
///             w.tensor("unsigned char", std::array<std::int64_t, 3>{im.h, im.w, im.c});
///         }
///     };
template <class T>
struct input_traits {
    using stint_unspecialized = void;  ///< marks the primary template: "no traits"
};

/// A type captured as a tensor with no user code: `sizes()` gives a range of integers, `dtype()`
/// something convertible to `std::string_view` ("float"); `strides()` (integers, one per dim) and
/// `defined()` (false: captured as absent) are used when present.
///
///     struct my_tensor {
///         std::vector<std::int64_t> sizes() const;
///         std::string_view dtype() const { return "float"; }
///     };
///     static_assert(stint::tensor_like<my_tensor>);
template <class T>
concept tensor_like = requires(const T& t) {
    { t.sizes() } -> std::ranges::forward_range;
    { t.dtype() } -> std::convertible_to<std::string_view>;
} && std::integral<std::remove_cvref_t<std::ranges::range_reference_t<decltype(std::declval<const T&>().sizes())>>>;

namespace detail {

/// std::complex<float> and <double>, and types shaped like them (value_type, real(), imag()).
template <class T>
concept is_complex = std::is_floating_point_v<typename T::value_type> && requires(const T& c) {
    { c.real() } -> std::same_as<typename T::value_type>;
    { c.imag() } -> std::same_as<typename T::value_type>;
};

template <class T>
constexpr std::string_view builtin_dtype_name() noexcept {
    // The names torch's TypeMeta gives these types (gcc's spelling of fundamental types).
    using U = std::remove_cv_t<T>;
    if constexpr (std::is_same_v<U, float>) return "float";
    else if constexpr (std::is_same_v<U, double>) return "double";
    else if constexpr (std::is_same_v<U, long double>) return "long double";
    else if constexpr (std::is_same_v<U, bool>) return "bool";
    else if constexpr (std::is_same_v<U, char>) return "char";
    else if constexpr (std::is_same_v<U, signed char>) return "signed char";
    else if constexpr (std::is_same_v<U, unsigned char>) return "unsigned char";
    else if constexpr (std::is_same_v<U, short>) return "short int";
    else if constexpr (std::is_same_v<U, unsigned short>) return "short unsigned int";
    else if constexpr (std::is_same_v<U, int>) return "int";
    else if constexpr (std::is_same_v<U, unsigned>) return "unsigned int";
    else if constexpr (std::is_same_v<U, long>) return "long int";
    else if constexpr (std::is_same_v<U, unsigned long>) return "long unsigned int";
    else if constexpr (std::is_same_v<U, long long>) return "long long int";
    else if constexpr (std::is_same_v<U, unsigned long long>) return "long long unsigned int";
    else if constexpr (is_complex<U>) {
        // std::complex (found by its shape, so that <complex> need not be included here).
        if constexpr (std::is_same_v<typename U::value_type, float>) return "c10::complex<float>";
        else if constexpr (std::is_same_v<typename U::value_type, double>) return "c10::complex<double>";
        else return "";
    } else return "";
}

}  // namespace detail

/// The dtype name stint reports for element type T of spans, mdspans and Eigen matrices: torch's
/// names for fundamental types ("float", "long int"), "" for others. Specialise it for your own.
///
///     template <> inline constexpr std::string_view stint::dtype_name_v<my::half> = "c10::Half";
template <class T>
inline constexpr std::string_view dtype_name_v = detail::builtin_dtype_name<T>();

namespace detail {
inline namespace STINT_DETAIL_ABI_NAMESPACE {

/// What captured ops keep, process-wide. Read at each captured op's entry (relaxed: an op that races
/// with a change records either setting); on their own cache line, written only by the setter and by
/// sessions as they open and close.
struct alignas(64) capture_switches {
    std::atomic<bool> concrete{true};     ///< set_record_concrete_inputs
    std::atomic<bool> identities{false};  ///< an execution trace records: tensors carry their identity
    std::atomic<bool> outputs{false};     ///< the session keeps record_outputs (record_shapes, or an ET)
};
STINT_DETAIL_EXPORT inline constinit capture_switches capture_state{};

}  // namespace STINT_DETAIL_ABI_NAMESPACE

template <class T>
inline constexpr bool has_input_traits = !requires { typename input_traits<T>::stint_unspecialized; };

template <class T>
inline constexpr bool is_scalar_input = std::is_arithmetic_v<T> || std::is_enum_v<T>;

template <class T>
inline constexpr bool is_text_input = std::is_convertible_v<const T&, std::string_view>;

template <class T>
concept mdspan_like = requires(const T& m, std::size_t r) {
    typename T::element_type;
    { T::rank() } -> std::convertible_to<std::size_t>;
    { m.extent(r) } -> std::convertible_to<std::int64_t>;
} && std::is_arithmetic_v<std::remove_cv_t<typename T::element_type>>;

template <class T>
concept eigen_like = requires(const T& m) {
    typename T::Scalar;
    { m.rows() } -> std::convertible_to<std::int64_t>;
    { m.cols() } -> std::convertible_to<std::int64_t>;
    { T::IsRowMajor } -> std::convertible_to<bool>;
};

// std::vector (any allocator, vector<bool> too) and containers shaped like it (boost's, small vectors),
// known by their shape rather than a specialisation: naming std::vector here would need <vector>, about
// a sixth of <iostream>'s cost to compile, in every file that includes annotate.hpp.
template <class T>
concept vector_like = std::ranges::random_access_range<const T> && std::ranges::sized_range<const T> &&
                      requires(const T& v) {
                          typename T::allocator_type;
                          { v.capacity() } -> std::convertible_to<std::size_t>;
                      } && !requires { typename T::traits_type; };  // strings are text, not lists

template <class T>
inline constexpr bool is_aggregate_input = std::is_class_v<T> && std::is_aggregate_v<T> && !std::is_union_v<T>;

/// Captures an aggregate field by field: a partial specialisation in <stint/capture/aggregates.hpp>
/// (Boost.PFR) does, where that header is included; this primary template only says it is missing.
template <class T>
struct aggregate_capture {
    static constexpr bool available = false;
};

/// Named after the rule so that the rejected type shows in the compiler's diagnostic.
template <class T>
struct no_input_traits_for_this_type {
    static constexpr bool value = false;
};

/// A contiguous, sized range of 64-bit integers (std::vector<int64_t>, torch's IntArrayRef, a span).
template <class R>
concept int64_array = std::ranges::contiguous_range<const R> && std::ranges::sized_range<const R> &&
                      std::is_integral_v<std::remove_cvref_t<std::ranges::range_reference_t<const R>>> &&
                      sizeof(std::remove_cvref_t<std::ranges::range_reference_t<const R>>) == 8 &&
                      std::is_signed_v<std::remove_cvref_t<std::ranges::range_reference_t<const R>>>;

template <class R>
std::size_t range_size(const R& r) noexcept {
    if constexpr (std::ranges::sized_range<R>) {
        return static_cast<std::size_t>(std::ranges::size(r));
    } else {
        return static_cast<std::size_t>(std::ranges::distance(r));
    }
}

// Writes the first n integers of r as int64 at dst (unaligned). Shapes are short: fixed 8-byte copies
// in a loop beat a call to memcpy with a run-time length.
template <class R>
void put_int64s(std::byte* dst, const R& r, std::size_t n) noexcept {
    using value = std::remove_cvref_t<std::ranges::range_reference_t<const R>>;
    if constexpr (std::ranges::contiguous_range<const R> && sizeof(value) == 8 && std::is_integral_v<value>) {
        const value* src = std::ranges::data(r);
        for (std::size_t i = 0; i < n; ++i) std::memcpy(dst + i * 8, src + i, 8);
    } else {
        std::size_t i = 0;
        for (auto&& x : r) {
            if (i == n) break;
            const auto v = static_cast<std::int64_t>(x);
            std::memcpy(dst + i * 8, &v, 8);
            ++i;
        }
    }
}

// Writes the first n integers of r as int32 at dst (unaligned) and returns whether they all fit;
// when one does not, the caller writes them again as int64.
template <class R>
bool put_int32s(std::byte* dst, const R& r, std::size_t n) noexcept {
    std::size_t i = 0;
    bool fits = true;
    for (auto&& x : r) {
        if (i == n) break;
        const auto v = static_cast<std::int64_t>(x);
        const auto narrow = static_cast<std::int32_t>(v);
        fits &= v == narrow;
        std::memcpy(dst + i * 4, &narrow, 4);
        ++i;
    }
    return fits;
}

}  // namespace detail

/// Encodes one op's inputs into a bounded buffer; what `input_traits<T>::capture` writes to. Each
/// call of `tensor`, `scalar`, `scalar_list`, `string`, `tensor_list`, `none` or `other` adds one
/// input (`value` adds what T's capture adds). Past a bound the input is cut or dropped and the
/// record is marked truncated; nothing here allocates, locks or throws.
///
///     w.tensor("float", std::array<std::int64_t, 2>{64, 32});  // "Input Dims" [64, 32]
///     w.scalar(6);                                             // "Scalar", "6"
///     w.scalar_list(std::vector<int>{64, 32});                 // "ScalarList", "[64, 32]"
class input_writer {
public:
    /// A writer into `capacity` bytes at `buffer` keeping at most `max_inputs` inputs (and tensors
    /// per list), `max_dims` integers per shape, stride or list, and `max_text` bytes per string;
    /// `concrete`: whether string values are kept (numbers are always kept, for flop formulas).
    /// `identities`: whether tensors keep their tensor_address (an execution trace records).
    input_writer(std::byte* buffer, std::size_t capacity, std::size_t max_inputs, std::size_t max_dims,
                 std::size_t max_text, bool concrete, bool identities = false) noexcept
        : begin_(buffer),
          at_(buffer),
          end_(buffer + capacity),
          max_inputs_(static_cast<std::uint32_t>(max_inputs < 0xffff ? max_inputs : 0xffff)),
          max_dims_(static_cast<std::uint32_t>(max_dims < 255 ? max_dims : 255)),
          max_text_(static_cast<std::uint32_t>(max_text < 0xffff ? max_text : 0xffff)),
          concrete_(concrete),
          identities_(identities) {}

    input_writer(const input_writer&) = delete;
    input_writer& operator=(const input_writer&) = delete;

    /// Captures `v` by the rules at the top of this header.
    template <class T>
    STINT_DETAIL_ALWAYS_INLINE void value(const T& v);

    /// An absent input (torch: None, an undefined tensor): type "", value "".
    void none() noexcept { put_tag(detail::wire_tag::none); }
    /// A present input shown without type or value (torch's "other" inputs).
    void other() noexcept {
        if (in_list_) return none();
        put_tag(detail::wire_tag::other);
    }

    /// A tensor of the given dtype name and sizes (a range of integers), with unknown strides.
    template <std::ranges::forward_range Sizes>
    STINT_DETAIL_ALWAYS_INLINE void tensor(std::string_view dtype, const Sizes& sizes) noexcept {
        tensor_impl(dtype, sizes, static_cast<const Sizes*>(nullptr));
    }
    /// A tensor with its strides (one integer per dim; a mismatched count records no strides).
    template <std::ranges::forward_range Sizes, std::ranges::forward_range Strides>
    STINT_DETAIL_ALWAYS_INLINE void tensor(std::string_view dtype, const Sizes& sizes, const Strides& strides) noexcept {
        tensor_impl(dtype, sizes, &strides);
    }
    /// A tensor with where its elements are (kept while an execution trace records).
    template <std::ranges::forward_range Sizes>
    STINT_DETAIL_ALWAYS_INLINE void tensor(std::string_view dtype, const Sizes& sizes,
                                           const tensor_address& address) noexcept {
        tensor_impl(dtype, sizes, static_cast<const Sizes*>(nullptr), &address);
    }
    /// A tensor with its strides and where its elements are.
    template <std::ranges::forward_range Sizes, std::ranges::forward_range Strides>
    STINT_DETAIL_ALWAYS_INLINE void tensor(std::string_view dtype, const Sizes& sizes, const Strides& strides,
                                           const tensor_address& address) noexcept {
        tensor_impl(dtype, sizes, &strides, &address);
    }

    /// A number, bool or enum (an enum as its integer value): type "Scalar".
    template <class T>
        requires(detail::is_scalar_input<T>)
    void scalar(T v) noexcept {
        if (in_list_) return none();
        if constexpr (std::is_enum_v<T>) {
            scalar(static_cast<std::underlying_type_t<T>>(v));
        } else if constexpr (std::is_same_v<T, bool>) {
            if (std::byte* p = start_entry(2)) {
                p[0] = static_cast<std::byte>(detail::wire_tag::boolean);
                p[1] = static_cast<std::byte>(v ? 1 : 0);
            }
        } else if constexpr (std::is_floating_point_v<T>) {
            put_word(detail::wire_tag::real, static_cast<double>(v));
        } else if constexpr (std::is_signed_v<T>) {
            put_word(detail::wire_tag::int64, static_cast<std::int64_t>(v));
        } else {
            put_word(detail::wire_tag::uint64, static_cast<std::uint64_t>(v));
        }
    }

    /// A list of numbers, bools or enums: type "ScalarList", value "[64, 32]". Longer lists keep
    /// their first max_dims values.
    template <std::ranges::forward_range R>
    void scalar_list(const R& values) noexcept {
        using elem = std::remove_cvref_t<std::ranges::range_value_t<R>>;
        static_assert(detail::is_scalar_input<elem>, "stint: scalar_list needs a range of numbers, bools or enums");
        if (in_list_) return none();
        const std::size_t n = detail::range_size(values);
        const std::size_t kept = n < max_dims_ ? n : max_dims_;
        constexpr bool is_bool = std::is_same_v<elem, bool>;
        std::byte* p = start_entry(3 + kept * (is_bool ? 1 : 8));
        if (p == nullptr) return;
        p[0] = static_cast<std::byte>(list_tag<elem>());
        p[1] = static_cast<std::byte>(kept < n ? detail::wire_cut : 0);
        p[2] = static_cast<std::byte>(kept);
        if (kept < n) truncated_ = true;
        std::byte* out = p + 3;
        std::size_t i = 0;
        for (auto&& x : values) {
            if (i == kept) break;
            const elem e = x;
            if constexpr (is_bool) {
                out[i] = static_cast<std::byte>(e ? 1 : 0);
            } else {
                put_list_value(out + i * 8, e);
            }
            ++i;
        }
    }

    /// Text: type "String", the text as its value (cut at max_text bytes; not kept when concrete
    /// capture is off).
    void string(std::string_view text) noexcept {
        if (in_list_) return none();
        std::size_t len = concrete_ ? text.size() : 0;
        if (len > max_text_) len = max_text_;
        std::byte* p = start_entry(4 + len);
        if (p == nullptr) return;
        const std::uint8_t flags = concrete_ ? (len < text.size() ? detail::wire_cut : 0) : detail::wire_text_omitted;
        if ((flags & detail::wire_cut) != 0) truncated_ = true;
        const auto len16 = static_cast<std::uint16_t>(len);
        p[0] = static_cast<std::byte>(detail::wire_tag::string);
        p[1] = static_cast<std::byte>(flags);
        std::memcpy(p + 2, &len16, 2);
        if (len != 0) std::memcpy(p + 4, text.data(), len);
    }

    /// A container of tensors: type "TensorList", dims nested per tensor. Each element is captured
    /// by its own rules; an element that is not a tensor is recorded as absent.
    template <std::ranges::input_range R>
    void tensor_list(const R& tensors) {
        if (in_list_) return none();
        std::byte* p = start_entry(4);
        if (p == nullptr) return;
        in_list_ = true;
        list_count_ = 0;
        list_cut_ = false;
        for (auto&& t : tensors) {
            if (list_count_ >= max_inputs_) {
                list_cut_ = true;
                truncated_ = true;
                break;
            }
            value(t);
            if (list_cut_) break;
        }
        in_list_ = false;
        const auto count = static_cast<std::uint16_t>(list_count_);
        p[0] = static_cast<std::byte>(detail::wire_tag::tensor_list);
        p[1] = static_cast<std::byte>(list_cut_ ? detail::wire_cut : 0);
        std::memcpy(p + 2, &count, 2);
    }

    /// Whether string values are being kept (stint::record_concrete_inputs() at the op's entry).
    [[nodiscard]] bool concrete() const noexcept { return concrete_; }
    /// Whether tensors keep their tensor_address (an execution trace records): traits may skip
    /// computing one otherwise.
    [[nodiscard]] bool identities() const noexcept { return identities_; }
    /// Marks the capture incomplete (an input's accessor threw, say).
    void mark_truncated() noexcept { truncated_ = true; }

    /// Bytes written so far.
    [[nodiscard]] std::size_t size() const noexcept { return static_cast<std::size_t>(at_ - begin_); }
    /// The payload header's aux word for what was written (see input_encoding.hpp).
    [[nodiscard]] std::uint32_t aux() const noexcept {
        return inputs_ | (concrete_ ? detail::inputs_aux_concrete : 0U) | (truncated_ ? detail::inputs_aux_truncated : 0U);
    }

private:
    // Reserves one entry of `bytes` bytes, or returns nullptr (and records why) when a bound is hit.
    // A top-level input that does not fit leaves a one-byte "dropped" entry so later inputs keep
    // their positions.
    std::byte* start_entry(std::size_t bytes) noexcept {
        const auto room = static_cast<std::size_t>(end_ - at_);
        if (in_list_) {
            if (list_count_ >= max_inputs_ || bytes > room) {
                list_cut_ = true;
                truncated_ = true;
                return nullptr;
            }
            ++list_count_;
        } else {
            if (inputs_ >= max_inputs_) {
                truncated_ = true;
                return nullptr;
            }
            if (bytes > room) {
                truncated_ = true;
                if (room != 0) {
                    *at_++ = static_cast<std::byte>(detail::wire_tag::dropped);
                    ++inputs_;
                }
                return nullptr;
            }
            ++inputs_;
        }
        std::byte* p = at_;
        at_ += bytes;
        return p;
    }

    void put_tag(detail::wire_tag tag) noexcept {
        if (std::byte* p = start_entry(1)) p[0] = static_cast<std::byte>(tag);
    }

    template <class W>
    void put_word(detail::wire_tag tag, W v) noexcept {
        static_assert(sizeof(W) == 8);
        if (std::byte* p = start_entry(9)) {
            p[0] = static_cast<std::byte>(tag);
            std::memcpy(p + 1, &v, 8);
        }
    }

    template <class E>
    static constexpr detail::wire_tag list_tag() noexcept {
        if constexpr (std::is_same_v<E, bool>) {
            return detail::wire_tag::bool_list;
        } else if constexpr (std::is_enum_v<E>) {
            return list_tag<std::underlying_type_t<E>>();
        } else if constexpr (std::is_floating_point_v<E>) {
            return detail::wire_tag::real_list;
        } else if constexpr (std::is_signed_v<E>) {
            return detail::wire_tag::int_list;
        } else {
            return detail::wire_tag::uint_list;
        }
    }

    template <class E>
    static void put_list_value(std::byte* dst, E e) noexcept {
        if constexpr (std::is_enum_v<E>) {
            put_list_value(dst, static_cast<std::underlying_type_t<E>>(e));
        } else if constexpr (std::is_floating_point_v<E>) {
            const auto v = static_cast<double>(e);
            std::memcpy(dst, &v, 8);
        } else if constexpr (std::is_signed_v<E>) {
            const auto v = static_cast<std::int64_t>(e);
            std::memcpy(dst, &v, 8);
        } else {
            const auto v = static_cast<std::uint64_t>(e);
            std::memcpy(dst, &v, 8);
        }
    }

    // A tensor entry: the common one inline, any other by encode_tensor.
    template <class Sizes, class Strides>
    STINT_DETAIL_ALWAYS_INLINE void tensor_impl(std::string_view dtype, const Sizes& sizes, const Strides* strides,
                                                const tensor_address* address = nullptr) noexcept {
        if constexpr (detail::int64_array<Sizes> && detail::int64_array<Strides>) {
            if ((address == nullptr || !identities_) &&
                common_tensor(dtype, std::ranges::data(sizes), detail::range_size(sizes),
                              strides != nullptr ? std::ranges::data(*strides) : nullptr,
                              strides != nullptr ? detail::range_size(*strides) : 0)) {
                return;
            }
        }
        encode_tensor(dtype, sizes, strides, address);
    }

    template <class Sizes, class Strides>
    void encode_tensor(std::string_view dtype, const Sizes& sizes, const Strides* strides,
                       const tensor_address* address) noexcept {
        const std::size_t rank = detail::range_size(sizes);
        const std::size_t kept = rank < max_dims_ ? rank : max_dims_;
        const bool has_strides = strides != nullptr && detail::range_size(*strides) == rank;
        const std::size_t dtype_len = dtype.size() < 255 ? dtype.size() : 255;
        const std::size_t values = has_strides ? 2 * kept : kept;
        const std::uint8_t identity = identities_ && address != nullptr && address->data != nullptr
                                          ? identity_flags(*address)
                                          : std::uint8_t{0};
        const std::size_t identity_bytes = identity_size(identity);
        std::byte* p = start_entry(4 + dtype_len + values * 8 + identity_bytes);
        if (p == nullptr) return;
        const bool cut = kept < rank || dtype_len < dtype.size();
        if (cut) truncated_ = true;
        // dtype names are a few bytes ("float", "long int"): two overlapping 4-byte copies for 4 to 8
        // bytes, else a byte loop; both beat a memcpy call (3 rank-2 "float" tensors: ~1 ns less per op
        // than the byte loop alone, bench/scope_bench.cpp).
        if (dtype_len >= 4 && dtype_len <= 8) {
            std::memcpy(p + 4, dtype.data(), 4);
            std::memcpy(p + dtype_len, dtype.data() + dtype_len - 4, 4);
        } else {
            for (std::size_t i = 0; i < dtype_len; ++i) p[4 + i] = static_cast<std::byte>(dtype[i]);
        }
        // Shapes whose values all fit in 32 bits (nearly all) take 4 bytes per value, in one pass:
        // written narrow, and again wide only when one does not fit. Fewer bytes to copy into the
        // record and to write to memory (3 rank-2 tensors: 123 -> 75 bytes).
        std::byte* dims = p + 4 + dtype_len;
        bool narrow = detail::put_int32s(dims, sizes, kept);
        if (narrow && has_strides) narrow = detail::put_int32s(dims + kept * 4, *strides, kept);
        if (narrow) {
            at_ -= values * 4;  // give back the room reserved for 64-bit values
        } else {
            detail::put_int64s(dims, sizes, kept);
            if (has_strides) detail::put_int64s(dims + kept * 8, *strides, kept);
        }
        if (identity != 0) put_identity(at_ - identity_bytes, identity, *address);
        const std::uint8_t head[4] = {
            static_cast<std::uint8_t>(detail::wire_tag::tensor),
            static_cast<std::uint8_t>((has_strides ? detail::wire_has_strides : 0) | (cut ? detail::wire_cut : 0) |
                                      (narrow ? detail::wire_narrow : 0) | identity),
            static_cast<std::uint8_t>(kept), static_cast<std::uint8_t>(dtype_len)};
        std::memcpy(p, head, 4);
    }

    // The common tensor, as torch's and most frameworks' are: sizes and strides are arrays of 64-bit
    // integers whose values fit in 32 bits, at most 4 dims, a dtype name of 4 to 8 bytes, no identity,
    // room to spare. Inline and without loop control, where encode_tensor is a call with loops and
    // checks for every case (3 rank-2 tensors: 46 -> 37 ns an op with the append's prefetch, one run,
    // bench/scope_bench.cpp). False when the tensor is not one, with nothing reserved (bytes past at_
    // may have been written); tensor_impl then encodes it.
    STINT_DETAIL_ALWAYS_INLINE bool common_tensor(std::string_view dtype, const std::int64_t* sizes, std::size_t rank,
                                                  const std::int64_t* strides, std::size_t strides_count) noexcept {
        const std::size_t dtype_len = dtype.size();
        const bool has_strides = strides != nullptr && strides_count == rank;
        const std::size_t values = has_strides ? 2 * rank : rank;
        const std::size_t bytes = 4 + dtype_len + values * 4;
        if (in_list_ || inputs_ >= max_inputs_ || rank > max_dims_ || dtype_len - 4 > 4 ||
            bytes > static_cast<std::size_t>(end_ - at_)) {
            return false;
        }
        std::byte* p = at_;
        std::byte* dims = p + 4 + dtype_len;
        std::int64_t wide = 0;  // any bit above a value's 32 low ones that its sign does not explain
        switch (rank) {  // a loop of known length unrolls: no loop control per value
            case 0: break;
            case 1: wide = put_narrow<1>(dims, sizes, has_strides ? strides : nullptr); break;
            case 2: wide = put_narrow<2>(dims, sizes, has_strides ? strides : nullptr); break;
            case 3: wide = put_narrow<3>(dims, sizes, has_strides ? strides : nullptr); break;
            case 4: wide = put_narrow<4>(dims, sizes, has_strides ? strides : nullptr); break;
            default: return false;
        }
        if (wide != 0) return false;
        std::memcpy(p + 4, dtype.data(), 4);
        std::memcpy(p + dtype_len, dtype.data() + dtype_len - 4, 4);
        const std::uint8_t head[4] = {
            static_cast<std::uint8_t>(detail::wire_tag::tensor),
            static_cast<std::uint8_t>((has_strides ? detail::wire_has_strides : 0) | detail::wire_narrow),
            static_cast<std::uint8_t>(rank), static_cast<std::uint8_t>(dtype_len)};
        std::memcpy(p, head, 4);
        at_ = p + bytes;
        ++inputs_;
        return true;
    }

    // Writes Rank sizes and, when given, Rank strides as int32 at dims; returns the bits that did not fit
    // (0 when all did).
    template <std::size_t Rank>
    STINT_DETAIL_ALWAYS_INLINE static std::int64_t put_narrow(std::byte* dims, const std::int64_t* sizes,
                                                              const std::int64_t* strides) noexcept {
        std::int64_t wide = 0;
        for (std::size_t i = 0; i < Rank; ++i) {
            const auto narrow = static_cast<std::int32_t>(sizes[i]);
            wide |= sizes[i] ^ narrow;
            std::memcpy(dims + i * 4, &narrow, 4);
        }
        if (strides != nullptr) {
            for (std::size_t i = 0; i < Rank; ++i) {
                const auto narrow = static_cast<std::int32_t>(strides[i]);
                wide |= strides[i] ^ narrow;
                std::memcpy(dims + (Rank + i) * 4, &narrow, 4);
            }
        }
        return wide;
    }

    // The identity's part of a tensor entry (input_encoding.hpp): a storage or key that equals the
    // data pointer is left out.
    static std::uint8_t identity_flags(const tensor_address& a) noexcept {
        return static_cast<std::uint8_t>(detail::wire_has_identity |
                                         (a.storage != nullptr && a.storage != a.data ? detail::wire_has_storage : 0) |
                                         (a.key != nullptr && a.key != a.data ? detail::wire_has_key : 0));
    }
    static std::size_t identity_size(std::uint8_t flags) noexcept {
        if (flags == 0) return 0;
        return detail::wire_identity_bytes + ((flags & detail::wire_has_storage) != 0 ? 8 : 0) +
               ((flags & detail::wire_has_key) != 0 ? 8 : 0);
    }
    static void put_identity(std::byte* at, std::uint8_t flags, const tensor_address& a) noexcept {
        const auto address = [](const void* p) {
            return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
        };
        detail::wire_identity head{address(a.data),
                                   static_cast<std::uint32_t>(a.itemsize <= 0xffffffffU ? a.itemsize : 0),
                                   static_cast<std::uint8_t>(a.device.type), 0,
                                   static_cast<std::int16_t>(a.device.index)};
        std::memcpy(at, &head, sizeof(head));
        at += sizeof(head);
        if ((flags & detail::wire_has_storage) != 0) {
            const std::uint64_t storage = address(a.storage);
            std::memcpy(at, &storage, 8);
            at += 8;
        }
        if ((flags & detail::wire_has_key) != 0) {
            const std::uint64_t key = address(a.key);
            std::memcpy(at, &key, 8);
        }
    }

    std::byte* begin_;
    std::byte* at_;
    std::byte* end_;
    std::uint32_t inputs_ = 0;
    std::uint32_t list_count_ = 0;
    std::uint32_t max_inputs_;
    std::uint32_t max_dims_;
    std::uint32_t max_text_;
    bool concrete_;
    bool identities_;
    bool truncated_ = false;
    bool in_list_ = false;
    bool list_cut_ = false;
};

namespace detail {

template <class P>
concept element_pointer = std::is_pointer_v<P> && !std::is_function_v<std::remove_pointer_t<P>>;

template <class P>
constexpr std::size_t pointee_size() noexcept {
    using E = std::remove_cv_t<std::remove_pointer_t<P>>;
    if constexpr (std::is_void_v<E>) {
        return 0;
    } else {
        return sizeof(E);
    }
}

/// Where a tensor-like value's elements are, from what it offers: `data()`, `data_handle()` (mdspan)
/// or `data_ptr()` for the address (its pointee's size for the item size), `itemsize()` or
/// `element_size()` for the item size, `device()` (a stint::device) for the device.
template <class T>
tensor_address address_of(const T& t) noexcept {
    tensor_address a;
    if constexpr (requires { { t.data() } -> element_pointer; }) {
        a.data = static_cast<const void*>(t.data());
        a.itemsize = pointee_size<decltype(t.data())>();
    } else if constexpr (requires { { t.data_handle() } -> element_pointer; }) {
        a.data = static_cast<const void*>(t.data_handle());
        a.itemsize = pointee_size<decltype(t.data_handle())>();
    } else if constexpr (requires { { t.data_ptr() } -> element_pointer; }) {
        a.data = static_cast<const void*>(t.data_ptr());
        a.itemsize = pointee_size<decltype(t.data_ptr())>();
    }
    if constexpr (requires { { t.itemsize() } -> std::convertible_to<std::size_t>; }) {
        a.itemsize = static_cast<std::size_t>(t.itemsize());
    } else if constexpr (requires { { t.element_size() } -> std::convertible_to<std::size_t>; }) {
        a.itemsize = static_cast<std::size_t>(t.element_size());
    }
    if constexpr (requires { { t.device() } -> std::convertible_to<stint::device>; }) {
        a.device = t.device();
    }
    return a;
}

// A std::vector / std::array / span of non-numbers: numbers make a ScalarList, text an opaque input
// (as torch records a list of strings), anything else a TensorList.
template <class R>
void capture_sequence(input_writer& w, const R& r) {
    using elem = std::remove_cvref_t<std::ranges::range_value_t<R>>;
    if constexpr (is_scalar_input<elem>) {
        w.scalar_list(r);
    } else if constexpr (is_text_input<elem>) {
        w.other();
    } else {
        w.tensor_list(r);
    }
}

template <class M>
void capture_mdspan(input_writer& w, const M& m) {
    constexpr std::size_t rank = M::rank();
    std::array<std::int64_t, rank> dims{};
    for (std::size_t r = 0; r < rank; ++r) dims[r] = static_cast<std::int64_t>(m.extent(r));
    const std::string_view dtype = dtype_name_v<std::remove_cv_t<typename M::element_type>>;
    const tensor_address address = w.identities() ? address_of(m) : tensor_address{};
    if constexpr (requires(std::size_t r) { { m.stride(r) } -> std::convertible_to<std::int64_t>; }) {
        std::array<std::int64_t, rank> strides{};
        for (std::size_t r = 0; r < rank; ++r) strides[r] = static_cast<std::int64_t>(m.stride(r));
        w.tensor(dtype, dims, strides, address);
    } else {
        w.tensor(dtype, dims, address);
    }
}

template <class M>
void capture_eigen(input_writer& w, const M& m) {
    // std::array<std::int64_t, 2>, named through `m`'s rows(): with a non-dependent array the calls below
    // would check the writer's range concepts where this template is defined, in every file.
    using int64x2 = std::array<decltype(static_cast<std::int64_t>(m.rows())), 2>;
    const int64x2 dims{static_cast<std::int64_t>(m.rows()), static_cast<std::int64_t>(m.cols())};
    const std::string_view dtype = dtype_name_v<std::remove_cv_t<typename M::Scalar>>;
    const tensor_address address = w.identities() ? address_of(m) : tensor_address{};
    if constexpr (requires { m.innerStride(); m.outerStride(); }) {
        const auto inner = static_cast<std::int64_t>(m.innerStride());
        const auto outer = static_cast<std::int64_t>(m.outerStride());
        const int64x2 strides = static_cast<bool>(M::IsRowMajor) ? int64x2{outer, inner} : int64x2{inner, outer};
        w.tensor(dtype, dims, strides, address);
    } else {
        w.tensor(dtype, dims, address);
    }
}

}  // namespace detail

template <class T>
STINT_DETAIL_ALWAYS_INLINE void input_writer::value(const T& v) {
    using U = std::remove_cvref_t<T>;
    if constexpr (detail::has_input_traits<U>) {
        input_traits<U>::capture(*this, v);
    } else if constexpr (tensor_like<U>) {
        if constexpr (requires { { v.defined() } -> std::convertible_to<bool>; }) {
            if (!static_cast<bool>(v.defined())) return none();
        }
        // decltype(auto): a sizes() or dtype() returning by value stays alive while it is copied.
        decltype(auto) sizes = v.sizes();
        decltype(auto) dtype = v.dtype();
        if constexpr (requires { { v.strides() } -> std::ranges::forward_range; }) {
            decltype(auto) strides = v.strides();
            if (identities_) return tensor(std::string_view(dtype), sizes, strides, detail::address_of(v));
            tensor(std::string_view(dtype), sizes, strides);
        } else {
            if (identities_) return tensor(std::string_view(dtype), sizes, detail::address_of(v));
            tensor(std::string_view(dtype), sizes);
        }
    } else if constexpr (detail::dlpack_input<U>) {
        detail::capture_dlpack(*this, v);
    } else if constexpr (detail::mdspan_like<U>) {
        detail::capture_mdspan(*this, v);
    } else if constexpr (detail::eigen_like<U>) {
        detail::capture_eigen(*this, v);
    } else if constexpr (detail::vector_like<U>) {
        detail::capture_sequence(*this, v);
    } else if constexpr (detail::is_aggregate_input<U>) {
        static_assert(detail::aggregate_capture<U>::available,
                      "stint: to capture a struct field by field, include <stint/capture/aggregates.hpp> (Boost.PFR; "
                      "stint.hpp includes it where Boost.PFR is found), or specialise stint::input_traits<T>");
        detail::aggregate_capture<U>::capture(*this, v);
    } else {
        static_assert(detail::no_input_traits_for_this_type<U>::value,
                      "stint: no input_traits for this type; specialise stint::input_traits<T> or give it sizes() and "
                      "dtype()");
    }
}

// ---- built-in traits -------------------------------------------------------------------------------

/// Numbers, bools and enums: "Scalar" (an enum shows its integer value, as torch's dtype "6").
template <class T>
    requires(detail::is_scalar_input<T>)
struct input_traits<T> {
    static void capture(input_writer& w, T v) noexcept { w.scalar(v); }
};

/// nullptr and std::nullopt: absent.
template <>
struct input_traits<std::nullptr_t> {
    static void capture(input_writer& w, std::nullptr_t) noexcept { w.none(); }
};
template <>
struct input_traits<std::nullopt_t> {
    static void capture(input_writer& w, std::nullopt_t) noexcept { w.none(); }
};

/// std::optional: its value, or absent ("" in both Input type and Concrete Inputs).
template <class T>
struct input_traits<std::optional<T>> {
    static void capture(input_writer& w, const std::optional<T>& v) {
        if (v.has_value()) {
            w.value(*v);
        } else {
            w.none();
        }
    }
};

/// A pointer to a capturable value: that value, or absent when null.
template <class T>
    requires(!std::is_void_v<T> && !std::is_function_v<T> && !std::is_same_v<std::remove_cv_t<T>, char>)
struct input_traits<T*> {
    static void capture(input_writer& w, const T* v) {
        if (v != nullptr) {
            w.value(*v);
        } else {
            w.none();
        }
    }
};

template <class T>
struct input_traits<std::reference_wrapper<T>> {
    static void capture(input_writer& w, std::reference_wrapper<T> v) { w.value(v.get()); }
};

/// Text: "String" with the text as its value.
template <>
struct input_traits<std::string> {
    static void capture(input_writer& w, const std::string& v) noexcept { w.string(v); }
};
template <>
struct input_traits<std::string_view> {
    static void capture(input_writer& w, std::string_view v) noexcept { w.string(v); }
};
template <>
struct input_traits<const char*> {
    static void capture(input_writer& w, const char* v) noexcept {
        if (v == nullptr) return w.none();
        w.string(v);
    }
};
template <>
struct input_traits<char*> : input_traits<const char*> {};
template <std::size_t N>
struct input_traits<char[N]> {
    static void capture(input_writer& w, const char (&v)[N]) noexcept {
        w.string(std::string_view(v, N != 0 && v[N - 1] == '\0' ? N - 1 : N));
    }
};

/// std::array (and std::vector, detail::vector_like): of numbers a "ScalarList" ("[64, 32]"), of tensors a
/// "TensorList".
template <class T, std::size_t N>
struct input_traits<std::array<T, N>> {
    static void capture(input_writer& w, const std::array<T, N>& v) { detail::capture_sequence(w, v); }
};

/// std::span of numbers: a contiguous 1-D tensor (dims [size], strides [1]); of tensors: a TensorList.
template <class T, std::size_t E>
struct input_traits<std::span<T, E>> {
    static void capture(input_writer& w, std::span<T, E> v) {
        if constexpr (std::is_arithmetic_v<std::remove_cv_t<T>>) {
            const std::array<std::int64_t, 1> dims{static_cast<std::int64_t>(v.size())};
            const std::array<std::int64_t, 1> strides{1};
            w.tensor(dtype_name_v<std::remove_cv_t<T>>, dims, strides,
                     w.identities() ? detail::address_of(v) : tensor_address{});
        } else {
            detail::capture_sequence(w, v);
        }
    }
};

// ---- the run-time switch ---------------------------------------------------------------------------

/// Turns the capture of concrete values ("Concrete Inputs") on or off for the whole process, as torch's
/// `_set_record_concrete_inputs_enabled_val`; dims and types are still recorded. On by default.
/// (Numbers stay in the record for flop formulas; strings are not copied while it is off.)
///
///     stint::set_record_concrete_inputs(false);  // traces lose "Concrete Inputs", keep "Input Dims"
inline void set_record_concrete_inputs(bool enabled) noexcept {
    // relaxed: ops read it once at entry and need no ordering with anything else.
    detail::capture_state.concrete.store(enabled, std::memory_order_relaxed);
}

/// Whether concrete values are being captured (see set_record_concrete_inputs).
[[nodiscard]] inline bool record_concrete_inputs() noexcept {
    return detail::capture_state.concrete.load(std::memory_order_relaxed);
}

}  // namespace stint
