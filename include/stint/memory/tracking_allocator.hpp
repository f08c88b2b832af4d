#pragma once
// A standard allocator that reports what it allocates and frees to a profile_memory session.

#include <cstddef>      // std::size_t
#include <memory>       // std::allocator, std::allocator_traits
#include <new>          // std::bad_alloc
#include <type_traits>  // std::is_nothrow_copy_constructible_v

#include "stint/memory/out_of_memory.hpp"
#include "stint/memory/report.hpp"

namespace stint {

/// Wraps `Base` (std::allocator<T> unless said) and reports each allocation and deallocation to a
/// profile_memory session as host memory; outside such a session it costs one relaxed load per call.
/// When `Base` throws std::bad_alloc it records an "[OutOfMemory]" event and throws
/// stint::out_of_memory (a std::bad_alloc that names the size).
///
///     std::vector<float, stint::tracking_allocator<float>> buffer(100);  // a 400-byte [memory] event
template <class T, class Base = std::allocator<T>>
class tracking_allocator {
    using base_traits = std::allocator_traits<Base>;

public:
    using value_type = T;
    using size_type = typename base_traits::size_type;
    using difference_type = typename base_traits::difference_type;
    using propagate_on_container_copy_assignment = typename base_traits::propagate_on_container_copy_assignment;
    using propagate_on_container_move_assignment = typename base_traits::propagate_on_container_move_assignment;
    using propagate_on_container_swap = typename base_traits::propagate_on_container_swap;
    using is_always_equal = typename base_traits::is_always_equal;
    template <class U>
    struct rebind {
        using other = tracking_allocator<U, typename base_traits::template rebind_alloc<U>>;
    };

    tracking_allocator() = default;
    explicit tracking_allocator(const Base& base) noexcept(std::is_nothrow_copy_constructible_v<Base>) : base_(base) {}
    template <class U, class OtherBase>
    tracking_allocator(const tracking_allocator<U, OtherBase>& other) noexcept  // NOLINT: rebinding converts
        : base_(other.base()) {}

    [[nodiscard]] T* allocate(std::size_t n) {
        T* p = nullptr;
        try {
            p = base_traits::allocate(base_, n);
        } catch (const std::bad_alloc&) {
            detail::report_oom_without_totals(n * sizeof(T), {});
            throw out_of_memory(n * sizeof(T), {}, "stint::tracking_allocator");
        }
        report_alloc(p, n * sizeof(T));
        return p;
    }
    void deallocate(T* p, std::size_t n) noexcept {
        report_free(p, n * sizeof(T));
        base_traits::deallocate(base_, p, n);
    }

    [[nodiscard]] const Base& base() const noexcept { return base_; }

    template <class U, class OtherBase>
    friend bool operator==(const tracking_allocator& a, const tracking_allocator<U, OtherBase>& b) noexcept {
        return a.base() == b.base();
    }

private:
    [[no_unique_address]] Base base_{};
};

}  // namespace stint
