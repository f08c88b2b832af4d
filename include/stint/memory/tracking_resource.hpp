#pragma once
// A std::pmr::memory_resource that reports what it allocates and frees to a profile_memory session.

#include <cstddef>          // std::size_t
#include <memory_resource>  // std::pmr::memory_resource, std::pmr::get_default_resource
#include <new>              // std::bad_alloc

#include "stint/memory/out_of_memory.hpp"
#include "stint/memory/report.hpp"

namespace stint {

/// Forwards to `upstream` (the default resource unless said) and reports each allocation and
/// deallocation as host memory; one relaxed load per call outside a profile_memory session. An upstream
/// std::bad_alloc becomes an "[OutOfMemory]" event and a stint::out_of_memory.
///
///     stint::tracking_resource tracked;                    // over std::pmr::get_default_resource()
///     std::pmr::vector<int> v(&tracked);
///     std::pmr::monotonic_buffer_resource arena(&tracked);  // reports the arena's blocks
class tracking_resource : public std::pmr::memory_resource {
public:
    explicit tracking_resource(std::pmr::memory_resource* upstream = std::pmr::get_default_resource()) noexcept
        : upstream_(upstream) {}
    [[nodiscard]] std::pmr::memory_resource* upstream() const noexcept { return upstream_; }

private:
    void* do_allocate(std::size_t bytes, std::size_t alignment) override {
        void* p = nullptr;
        try {
            p = upstream_->allocate(bytes, alignment);
        } catch (const std::bad_alloc&) {
            detail::report_oom_without_totals(bytes, {});
            throw out_of_memory(bytes, {}, "stint::tracking_resource");
        }
        report_alloc(p, bytes);
        return p;
    }
    void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
        report_free(p, bytes);
        upstream_->deallocate(p, bytes, alignment);
    }
    [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override {
        return this == &other;
    }

    std::pmr::memory_resource* upstream_;
};

}  // namespace stint
