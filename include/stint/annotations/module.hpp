#pragma once
// Module scopes: one call of a model module's method, for with_modules' "Module Hierarchy"
// (`TOP(Net)::forward.encoder(Encoder)::forward.`). They record as ordinary scopes of kind
// `module`; the hierarchy of each op is read from the module scopes around it when the session is
// drained (analysis/module_hierarchy.hpp).

#include <string_view>  // std::string_view

#include "stint/scope.hpp"
#include "stint/recording/site.hpp"

namespace stint {

/// A module call whose names are known only at run time (a framework's module objects). The event
/// is named `attribute(Type)::method`; attribute "SELF" means a call on the enclosing module's own
/// object, and its type is then taken from that module.
///
///     stint::module_scope call(child.attribute_name(), child.type_name());   // method "forward"
class module_scope : public record_function {
public:
    module_scope(std::string_view attribute, std::string_view type, std::string_view method = "forward")
        : record_function(detail::runtime_named_module_site, {attribute, "(", type, ")::", method}) {}
};

}  // namespace stint

#if defined(STINT_DISABLE)
#include "stint/detail/compiled_out.hpp"  // every macro compiled out, in one place
#else
/// Times the rest of the block as the `forward` call of the module held in attribute `attribute`
/// (string literals) of type `type`, for with_modules. The outermost module shows as TOP.
///
///     Tensor Encoder::forward(const Tensor& x) { STINT_MODULE("encoder", "Encoder"); ... }
#define STINT_MODULE(attribute, type) STINT_MODULE_METHOD(attribute, type, "forward")

/// STINT_MODULE for another method than `forward`.
#define STINT_MODULE_METHOD(attribute, type, method)                                                         \
    STINT_DETAIL_MODULE(attribute "(" type ")::" method, __COUNTER__)

/// A call of `method` on the enclosing module's own object: `SELF(Type)::method.` in the hierarchy,
/// as torch shows `self.forward_impl_(x)`.
#define STINT_MODULE_SELF(method) STINT_DETAIL_MODULE("SELF::" method, __COUNTER__)

#define STINT_DETAIL_MODULE(name, id)                                                                        \
    STINT_DETAIL_SITE(STINT_DETAIL_CAT(stint_site_, id), name, ::stint::event_kind::module,                 \
                      ::stint::detail::scope_payload_kind<STINT_CONFIG>());                                  \
    [[maybe_unused]] ::stint::detail::scope_or_site<STINT_CONFIG> STINT_DETAIL_CAT(stint_scope_, id) {        \
        STINT_DETAIL_CAT(stint_site_, id)                                                                    \
    }
#endif
