#pragma once
// Every STINT_* annotation macro compiled out (STINT_DISABLE): no argument is evaluated, each use still
// needs its semicolon, and nothing else of stint is needed. annotate.hpp includes only this (with the
// config and policy tags) under STINT_DISABLE, so a compiled-out file pays almost nothing; every header
// that defines one of the macros includes this one under the switch, so these are their only
// compiled-out definitions.

#if !defined(STINT_DISABLE)
#error "stint/detail/compiled_out.hpp is for STINT_DISABLE builds"
#endif
#if (0 - STINT_DISABLE - 1) == -1
#error "stint: STINT_DISABLE=0 does not enable stint. Fix: 1. remove the definition to record, or 2. define STINT_DISABLE (or =1) to compile every STINT_* macro out."
#endif

#define STINT_DETAIL_CAT2(a, b) a##b
#define STINT_DETAIL_CAT(a, b) STINT_DETAIL_CAT2(a, b)
#ifndef STINT_CONFIG
#define STINT_CONFIG ::stint::config<>
#endif

#define STINT_SCOPE(name) static_assert(true, "")
#define STINT_SCOPE_NAMED(name) static_assert(true, "")
#define STINT_OP(config, name, ...) static_assert(true, "")
#define STINT_OP_FLOPS(config, name, formula, ...) static_assert(true, "")
#define STINT_INSTANT(name) static_assert(true, "")
#define STINT_COUNTER(name, value) static_assert(true, "")
#define STINT_SCOPE_DYNAMIC(prefix, method, object) static_assert(true, "")
#define STINT_FLOW_BEGIN(id) static_assert(true, "")
#define STINT_FLOW_END(id) static_assert(true, "")
#define STINT_MODULE(attribute, type) static_assert(true, "")
#define STINT_MODULE_METHOD(attribute, type, method) static_assert(true, "")
#define STINT_MODULE_SELF(method) static_assert(true, "")
// STINT_REGION: no argument evaluated and nothing counted (its counters go with the event).
#define STINT_REGION(kind, name) static_assert(true, "")
#define STINT_OUTPUTS(...) static_assert(true, "")
