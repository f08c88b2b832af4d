// DLPack tensors as op inputs (capture/dlpack.hpp) with Debian's libdlpack-dev header: dims, strides,
// torch's dtype names, identity in the execution trace, bad tensors, and the same with a framework's
// own copy of the struct (no DLPack header: stint recognises the members).
#include <dlpack/dlpack.h>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <stint/stint.hpp>

#include "execution_trace_schema.hpp"
#include "test_util.hpp"

namespace dlpack_test {

using shapes = stint::config<stint::record_shapes>;

// A framework that vendors DLPack under its own namespace (as some do): the same members, another type.
namespace vendored {
struct device_ref {
    int device_type;
    int device_id;
};
struct data_type {
    std::uint8_t code;
    std::uint8_t bits;
    std::uint16_t lanes;
};
struct tensor {
    void* data;
    device_ref device;
    int ndim;
    data_type dtype;
    std::int64_t* shape;
    std::int64_t* strides;
    std::uint64_t byte_offset;
};
}  // namespace vendored

DLTensor make(std::vector<std::int64_t>& dims, DLDataType dtype, std::int64_t* strides = nullptr, void* data = nullptr) {
    DLTensor t{};
    t.data = data;
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<int>(dims.size());
    t.dtype = dtype;
    t.shape = dims.data();
    t.strides = strides;
    t.byte_offset = 0;
    return t;
}

// The recorded args of the one op named `name`.
stint::event_args args_of(const stint::profiler<shapes>& prof, std::string_view name) {
    for (const stint::event& e : prof.events()) {
        if (e.name != name) continue;
        const stint::event_args* a = prof.events().args(e);
        REQUIRE(a != nullptr);
        return *a;
    }
    FAIL("no op named " << name);
    return {};
}

}  // namespace dlpack_test

static_assert(stint::detail::dlpack_tensor<DLTensor>);
static_assert(stint::detail::dlpack_managed_tensor<DLManagedTensor>);
static_assert(stint::detail::dlpack_tensor<dlpack_test::vendored::tensor>);
static_assert(!stint::detail::dlpack_input<std::vector<float>>);

TEST_CASE("a DLTensor records its dims, strides and torch's dtype name, by value, reference or pointer") {
    using namespace dlpack_test;
    std::vector<std::int64_t> dims{64, 32};
    std::array<std::int64_t, 2> steps{1, 64};  // column-major
    const DLTensor contiguous = make(dims, {kDLFloat, 32, 1});
    const DLTensor transposed = make(dims, {kDLFloat, 16, 1}, steps.data());
    DLManagedTensor managed{};
    managed.dl_tensor = make(dims, {kDLBfloat, 16, 1});
    stint::profiler<shapes> prof;
    prof.start();
    {
        const DLTensor& ref = contiguous;
        STINT_OP(shapes, "my::gemm", ref, &transposed, managed, &managed);
    }
    prof.stop();
    const stint::event_args args = args_of(prof, "my::gemm");
    CHECK(args.input_types == std::vector<std::string>{"float", "c10::Half", "c10::BFloat16", "c10::BFloat16"});
    CHECK(args.input_dims == std::vector<std::vector<std::int64_t>>{{64, 32}, {64, 32}, {64, 32}, {64, 32}});
    // Null strides: compact row-major, as DLPack defines them; given strides as they are.
    CHECK(args.input_strides == std::vector<std::vector<std::int64_t>>{{32, 1}, {1, 64}, {32, 1}, {32, 1}});
    CHECK(args.input_kinds == std::vector<stint::input_kind>(4, stint::input_kind::tensor));
    CHECK_FALSE(args.truncated);
}

TEST_CASE("DLPack dtypes take torch's names; ones torch has none for spell their three fields") {
    using namespace dlpack_test;
    struct expected {
        DLDataType dtype;
        std::string name;
    };
    const std::vector<expected> table{
        {{kDLInt, 8, 1}, "signed char"},       {{kDLInt, 16, 1}, "short int"},
        {{kDLInt, 32, 1}, "int"},              {{kDLInt, 64, 1}, "long int"},
        {{kDLUInt, 8, 1}, "unsigned char"},    {{kDLUInt, 16, 1}, "short unsigned int"},
        {{kDLUInt, 32, 1}, "unsigned int"},    {{kDLUInt, 64, 1}, "long unsigned int"},
        {{kDLFloat, 16, 1}, "c10::Half"},      {{kDLFloat, 32, 1}, "float"},
        {{kDLFloat, 64, 1}, "double"},         {{kDLBfloat, 16, 1}, "c10::BFloat16"},
        {{kDLComplex, 32, 1}, "c10::complex<c10::Half>"},
        {{kDLComplex, 64, 1}, "c10::complex<float>"},
        {{kDLComplex, 128, 1}, "c10::complex<double>"},
        {{6, 8, 1}, "bool"},  // kDLBool, DLPack 0.8 (Debian's header is 0.6)
        {{kDLFloat, 32, 4}, "DLDataType(2, 32, 4)"},
        {{kDLOpaqueHandle, 64, 1}, "DLDataType(3, 64, 1)"},
        {{kDLFloat, 8, 1}, "DLDataType(2, 8, 1)"},
    };
    std::vector<std::int64_t> dims{3};
    stint::profiler<shapes> prof;
    prof.start();
    for (const expected& e : table) {
        const DLTensor t = make(dims, e.dtype);
        STINT_OP(shapes, "my::cast", t);
    }
    prof.stop();
    std::vector<std::string> seen;
    for (const stint::event& e : prof.events()) {
        if (e.name != "my::cast") continue;
        const stint::event_args* a = prof.events().args(e);
        REQUIRE(a != nullptr);
        REQUIRE(a->input_types.size() == 1);
        seen.push_back(a->input_types[0]);
    }
    std::vector<std::string> want;
    for (const expected& e : table) want.push_back(e.name);
    CHECK(seen == want);
}

TEST_CASE("a DLTensor with ndim < 0 or a null shape records \"invalid DLTensor\", and the op goes on") {
    using namespace dlpack_test;
    std::vector<std::int64_t> dims{2, 2};
    DLTensor negative = make(dims, {kDLFloat, 32, 1});
    negative.ndim = -1;
    DLTensor no_shape = make(dims, {kDLFloat, 32, 1});
    no_shape.shape = nullptr;
    DLTensor scalar = make(dims, {kDLFloat, 32, 1});  // ndim 0 needs no shape
    scalar.ndim = 0;
    scalar.shape = nullptr;
    stint::profiler<shapes> prof;
    prof.start();
    {
        STINT_OP(shapes, "my::bad", negative, no_shape, scalar, 7);
    }
    prof.stop();
    const stint::event_args args = args_of(prof, "my::bad");
    CHECK(args.input_types == std::vector<std::string>{"invalid DLTensor", "invalid DLTensor", "float", "Scalar"});
    CHECK(args.input_dims == std::vector<std::vector<std::int64_t>>{{}, {}, {}, {}});
    CHECK(args.concrete_inputs == std::vector<std::string>{"", "", "", "7"});
}

TEST_CASE("a framework's own copy of DLTensor is recognised by its members, no DLPack header needed") {
    using namespace dlpack_test;
    std::vector<std::int64_t> dims{4, 5, 6};
    vendored::tensor t{nullptr, {kDLCUDA, 0}, 3, {kDLInt, 64, 1}, dims.data(), nullptr, 0};
    stint::profiler<shapes> prof;
    prof.start();
    {
        STINT_OP(shapes, "my::embed", t);
    }
    prof.stop();
    const stint::event_args args = args_of(prof, "my::embed");
    CHECK(args.input_types == std::vector<std::string>{"long int"});
    CHECK(args.input_dims == std::vector<std::vector<std::int64_t>>{{4, 5, 6}});
    CHECK(args.input_strides == std::vector<std::vector<std::int64_t>>{{30, 6, 1}});
}

namespace dlpack_test {

// The ET's node of `name` in the file at `path`.
nlohmann::json et_node(const std::string& path, std::string_view name) {
    const nlohmann::json doc = stint_test::read_json(path);
    for (const nlohmann::json& n : doc["nodes"]) {
        if (n["name"] == name) return n;
    }
    FAIL("no node named " << name);
    return {};
}

}  // namespace dlpack_test

TEST_CASE("in an execution trace a DLTensor's identity is data + byte_offset in its allocation, on its device") {
    using namespace dlpack_test;
    std::vector<float> storage(100);
    std::vector<std::int64_t> dims{5};
    DLTensor first = make(dims, {kDLFloat, 32, 1}, nullptr, storage.data());
    first.byte_offset = 10 * sizeof(float);
    DLTensor second = first;
    second.byte_offset = 30 * sizeof(float);
    DLTensor on_gpu = first;
    on_gpu.device = {kDLCUDA, 1};
    const stint_test::temp_dir dir;
    const std::string path = dir.file("dlpack.et.json");
    stint::execution_trace_observer et;
    et.register_callback(path).start();
    {
        STINT_OP(shapes, "my::two_views", first, second, on_gpu);
    }
    et.stop();
    et.unregister_callback();
    stint_test::check_execution_trace_file(path);
    const nlohmann::json values = et_node(path, "my::two_views")["inputs"]["values"];
    REQUIRE(values.size() == 3);
    // [tensor id, storage id, offset in elements, elements, item size, device]
    CHECK(values[0][0] != values[1][0]);  // two tensors
    CHECK(values[0][1] == values[1][1]);  // one allocation
    CHECK(values[0][2] == 10);
    CHECK(values[1][2] == 30);
    CHECK(values[0][3] == 5);
    CHECK(values[0][4] == 4);
    CHECK(values[0][5] == "cpu");
    CHECK(values[2][5] == "cuda:1");
}

TEST_CASE("in an execution trace a DLTensor on a device stint has no type for keeps no identity") {
    using namespace dlpack_test;
    std::vector<float> storage(8);
    std::vector<std::int64_t> dims{8};
    DLTensor on_vulkan = make(dims, {kDLFloat, 32, 1}, nullptr, storage.data());
    on_vulkan.device = {kDLVulkan, 0};
    const stint_test::temp_dir dir;
    const std::string path = dir.file("vulkan.et.json");
    stint::execution_trace_observer et;
    et.register_callback(path).start();
    {
        STINT_OP(shapes, "my::vulkan", on_vulkan);
    }
    et.stop();
    et.unregister_callback();
    // Not checked against the schema: stint writes such a tensor's numel, where torch writes 0.
    const nlohmann::json values = et_node(path, "my::vulkan")["inputs"]["values"];
    REQUIRE(values.size() == 1);
    CHECK(values[0][1] == 0);  // no storage
    CHECK(values[0][4] == 0);  // no item size
    CHECK(values[0][5] == "");
}
