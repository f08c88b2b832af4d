// record_shapes: STINT_OP captures its inputs; the Chrome trace shows them as torch does (seed 000's
// test_profiler_op_event_args and test_profiler_strides), bounded, and a config without the policy
// records no trace of them.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory_resource>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "stint/stint.hpp"
#include "stint/capture/detail/input_decoding.hpp"
#include "test_util.hpp"

#if __has_include(<Eigen/Core>)
#include <Eigen/Core>
#define STINT_TEST_HAS_EIGEN 1
#else
#define STINT_TEST_HAS_EIGEN 0
#endif

namespace {

using shapes = stint::config<stint::record_shapes>;
using json = nlohmann::json;

// A tensor as a framework would have it: sizes(), strides() and dtype(), no stint code.
struct fake_tensor {
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> steps;
    std::string type = "float";
    const std::vector<std::int64_t>& sizes() const { return dims; }
    const std::vector<std::int64_t>& strides() const { return steps; }
    const std::string& dtype() const { return type; }
};

// Row-major strides of `dims`.
fake_tensor contiguous(std::vector<std::int64_t> dims, std::string type = "float") {
    std::vector<std::int64_t> steps(dims.size(), 1);
    for (std::size_t i = dims.size(); i-- > 1;) steps[i - 1] = steps[i] * dims[i];
    return {std::move(dims), std::move(steps), std::move(type)};
}

// No strides(), sizes() by value, dtype() as a C string.
struct shape_only {
    std::array<int, 3> s{2, 3, 4};
    std::array<int, 3> sizes() const { return s; }
    const char* dtype() const { return "c10::Half"; }
};

// An undefined tensor (torch: None for a Tensor? argument) reads as absent.
struct maybe_tensor {
    bool present = false;
    std::vector<std::int64_t> sizes() const { return {5}; }
    std::string_view dtype() const { return "double"; }
    bool defined() const { return present; }
};

// A tensor whose accessor throws: the op is still recorded, its capture marked truncated.
struct throwing_tensor {
    std::vector<std::int64_t> sizes() const { throw std::runtime_error("no sizes"); }
    std::string_view dtype() const { return "float"; }
};

// An mdspan-like 2-D view (the interface of std::mdspan, which libstdc++ 12 lacks).
struct view_2d {
    using element_type = const double;
    const double* data = nullptr;
    std::size_t rows = 0, cols = 0, row_stride = 0;
    static constexpr std::size_t rank() { return 2; }
    std::size_t extent(std::size_t r) const { return r == 0 ? rows : cols; }
    std::size_t stride(std::size_t r) const { return r == 0 ? row_stride : 1; }
};

// The interface of an Eigen dense matrix (column-major unless told otherwise).
template <bool RowMajor>
struct eigen_like_matrix {
    using Scalar = float;
    enum { IsRowMajor = RowMajor };
    long r = 3, c = 5;
    long rows() const { return r; }
    long cols() const { return c; }
    long innerStride() const { return 1; }
    long outerStride() const { return RowMajor ? c : r; }
};

enum class scalar_type_code : std::int8_t { float32 = 6 };
enum class layout { strided = 0, sparse = 1 };

// A parameter block as plain struct: captured field by field (Boost.PFR), no user code.
struct conv_params {
    std::array<std::int64_t, 2> stride;
    std::array<std::int64_t, 2> padding;
    std::array<std::int64_t, 2> dilation;
    std::int64_t groups;
};
struct nested_params {
    int a;
    struct {
        double b;
        bool c;
    } inner;
};

// A type captured through user traits.
struct image {
    int h, w, c;
};

}  // namespace

template <>
struct stint::input_traits<image> {
    static void capture(stint::input_writer& w, const image& im) {
        w.tensor("unsigned char", std::array<std::int64_t, 3>{im.h, im.w, im.c});
    }
};

namespace {

// The trace's op events by name (cat cpu_op or user_annotation), read back with nlohmann-json.
struct trace_reader {
    json trace;
    std::vector<json> named(std::string_view name) const {
        std::vector<json> out;
        for (const auto& e : stint_test::timed_events(trace)) {
            if (e.at("name") == name) out.push_back(e);
        }
        return out;
    }
    json one(std::string_view name) const {
        const auto all = named(name);
        REQUIRE(all.size() == 1);
        return all[0];
    }
};

template <class Config>
trace_reader export_and_read(const stint::profiler<Config>& prof) {
    stint_test::temp_dir dir;
    const std::string path = dir.file("trace.json");
    prof.export_chrome_trace(path);
    return {stint_test::read_json(path)};
}

using stint_test::find;

struct concrete_inputs_guard {
    explicit concrete_inputs_guard(bool on) { stint::set_record_concrete_inputs(on); }
    ~concrete_inputs_guard() { stint::set_record_concrete_inputs(true); }
    concrete_inputs_guard(const concrete_inputs_guard&) = delete;
    concrete_inputs_guard& operator=(const concrete_inputs_guard&) = delete;
};

void ones(const std::vector<std::int64_t>& size, scalar_type_code dtype, std::optional<layout> lay,
          std::optional<int> device, bool pin_memory) {
    STINT_OP(shapes, "aten::ones", size, dtype, lay, device, pin_memory);
}

void cat(const std::vector<fake_tensor>& tensors, std::int64_t dim) { STINT_OP(shapes, "aten::cat", tensors, dim); }

}  // namespace

static_assert(stint::tensor_like<fake_tensor>);
static_assert(stint::tensor_like<shape_only>);
static_assert(!stint::tensor_like<image>);
static_assert(!stint::tensor_like<std::vector<int>>);
// std::vector is a list by its shape (inputs.hpp names no std::vector, so annotate.hpp needs no <vector>).
static_assert(stint::detail::vector_like<std::vector<int>> && stint::detail::vector_like<std::vector<bool>>);
static_assert(stint::detail::vector_like<std::pmr::vector<double>>);
static_assert(!stint::detail::vector_like<std::string> && !stint::detail::vector_like<std::array<int, 2>>);
static_assert(stint::config<stint::with_flops>::has<stint::record_shapes>, "with_flops implies record_shapes");
static_assert(stint::config<stint::record_shapes_limits<2, 3, 64>>::has<stint::record_shapes>);
static_assert(!stint::config<>::has<stint::record_shapes>);
static_assert(!stint::config<stint::record_shapes>::has<stint::with_flops>);

TEST_CASE("aten::ones and aten::cat show the seed's Input type, Concrete Inputs and Input Dims") {
    concrete_inputs_guard on(true);
    stint::profiler<shapes> prof;
    prof.start();
    {
        ones({64, 32}, scalar_type_code::float32, std::nullopt, std::nullopt, false);
        const fake_tensor a = contiguous({64, 32});
        cat({a, a}, 0);
    }
    prof.stop();
    const trace_reader trace = export_and_read(prof);

    const json ones_args = trace.one("aten::ones").at("args");
    CHECK(ones_args.at("Input type") == json({"ScalarList", "Scalar", "", "", "Scalar"}));
    CHECK(ones_args.at("Concrete Inputs") == json({"[64, 32]", "6", "", "", "False"}));
    CHECK(ones_args.at("Input Dims") == json::parse("[[], [], [], [], []]"));

    const json cat_args = trace.one("aten::cat").at("args");
    CHECK(cat_args.at("Input Dims") == json::parse("[[[64, 32], [64, 32]], []]"));
    CHECK(cat_args.at("Input type") == json({"TensorList", "Scalar"}));
    CHECK(cat_args.at("Input Strides") == json::parse("[[[32, 1], [32, 1]], []]"));
    CHECK(cat_args.at("Concrete Inputs") == json({"", "0"}));

    for (const auto& e : stint_test::timed_events(trace.trace)) {
        if (e.at("cat") != "cpu_op") continue;
        CHECK(e.at("args").value("Record function id", -1) >= 0);
        CHECK_FALSE(e.at("args").contains("Inputs truncated"));
    }

    // key_averages sees a TensorList's dims as [] (torch's shapes for its table), the trace nests them.
    std::optional<stint::event> c = find(prof.events(), "aten::cat");
    REQUIRE(c != std::nullopt);
    const stint::event_args* args = prof.events().args(*c);
    REQUIRE(args != nullptr);
    CHECK(args->input_dims == std::vector<std::vector<std::int64_t>>{{}, {}});
    CHECK(args->input_kinds == std::vector<stint::input_kind>{stint::input_kind::tensor_list, stint::input_kind::scalar});
}

TEST_CASE("aten::add shows the seed's Input Strides for strided views") {
    stint::profiler<shapes> prof;
    prof.start();
    {
        const fake_tensor a{{16, 16}, {17, 1}};
        const fake_tensor b{{16, 16}, {25, 2}};
        STINT_OP(shapes, "aten::add", a, b, 1);
    }
    prof.stop();
    const json args = export_and_read(prof).one("aten::add").at("args");
    CHECK(args.at("Input Strides") == json::parse("[[17, 1], [25, 2], []]"));
    CHECK(args.at("Input Dims") == json::parse("[[16, 16], [16, 16], []]"));
    CHECK(args.at("Input type") == json({"float", "float", "Scalar"}));
    CHECK(args.at("Concrete Inputs") == json({"", "", "1"}));
}

TEST_CASE("scalars, lists, strings and absent inputs are encoded as torch prints them") {
    concrete_inputs_guard on(true);
    stint::profiler<shapes> prof;
    prof.start();
    {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const double inf = std::numeric_limits<double>::infinity();
        STINT_OP(shapes, "reals", 2.5, 2.0, 0.1, 1e-5, inf, -inf, nan, -0.0, 1e20, 3.0f);
        STINT_OP(shapes, "integers", std::numeric_limits<std::int64_t>::min(),
                 std::numeric_limits<std::uint64_t>::max(), true, false, layout::sparse, 'A');
        STINT_OP(shapes, "lists", std::vector<double>{1.5, 2.0}, std::array<bool, 2>{true, false},
                 std::vector<int>{}, std::vector<layout>{layout::sparse, layout::strided},
                 std::vector<std::uint64_t>{std::numeric_limits<std::uint64_t>::max()}, std::vector<bool>{false, true},
                 std::pmr::vector<std::int64_t>{64, 32});
        const std::string s = "text";
        const fake_tensor t = contiguous({3});
        const fake_tensor* null_tensor = nullptr;
        STINT_OP(shapes, "others", "hello", s, std::string_view("view"), std::optional<int>{}, std::optional<int>{7},
                 nullptr, null_tensor, &t, std::vector<std::string>{"a", "b"});
    }
    prof.stop();
    const trace_reader trace = export_and_read(prof);

    const json reals = trace.one("reals").at("args");
    CHECK(reals.at("Concrete Inputs") ==
          json({"2.5", "2.", "0.10000000000000001", "1.0000000000000001e-05", "inf", "-inf", "nan", "0.",
                "1e+20", "3."}));
    CHECK(reals.at("Input type") == json(std::vector<std::string>(10, "Scalar")));

    const json integers = trace.one("integers").at("args");
    CHECK(integers.at("Concrete Inputs") ==
          json({"-9223372036854775808", "18446744073709551615", "True", "False", "1", "65"}));

    const json lists = trace.one("lists").at("args");
    CHECK(lists.at("Input type") == json(std::vector<std::string>(7, "ScalarList")));
    CHECK(lists.at("Concrete Inputs") == json({"[1.5, 2.]", "[True, False]", "[]", "[1, 0]", "[18446744073709551615]",
                                               "[False, True]", "[64, 32]"}));

    const json others = trace.one("others").at("args");
    CHECK(others.at("Input type") == json({"String", "String", "String", "", "Scalar", "", "", "float", ""}));
    CHECK(others.at("Concrete Inputs") == json({"hello", "text", "view", "", "7", "", "", "", ""}));
    CHECK(others.at("Input Dims") == json::parse("[[], [], [], [], [], [], [], [3], []]"));
}

TEST_CASE("doubles print as std::ostream with max_digits10 prints them (%.17g)") {
    // torch prints integral doubles as "<int>." only when they fit an int64; beyond, %.17g.
    std::string out;
    stint::detail::append_real(out, 1e20);
    CHECK(out == "1e+20");
    out.clear();
    stint::detail::append_real(out, 1.0 / 3.0);
    CHECK(out == "0.33333333333333331");
    out.clear();
    stint::detail::append_real(out, 123456789.0);
    CHECK(out == "123456789.");
}

TEST_CASE("set_record_concrete_inputs(false) drops Concrete Inputs and keeps dims and types") {
    stint::profiler<shapes> prof;
    {
        concrete_inputs_guard off(false);
        CHECK_FALSE(stint::record_concrete_inputs());
        prof.start();
        {
            const fake_tensor a = contiguous({4, 2});
            STINT_OP(shapes, "aten::mul", a, 3, "secret", std::vector<int>{1, 2});
        }
        prof.stop();
    }
    CHECK(stint::record_concrete_inputs());
    const json args = export_and_read(prof).one("aten::mul").at("args");
    CHECK_FALSE(args.contains("Concrete Inputs"));
    CHECK(args.at("Input Dims") == json::parse("[[4, 2], [], [], []]"));
    CHECK(args.at("Input type") == json({"float", "Scalar", "String", "ScalarList"}));
    const stint::event_args* ea = prof.events().args(*find(prof.events(), "aten::mul"));
    REQUIRE(ea != nullptr);
    CHECK(ea->concrete_inputs.empty());

    // Back on: the next session has them again.
    stint::profiler<shapes> again;
    again.start();
    {
        STINT_OP(shapes, "aten::mul", 3);
    }
    again.stop();
    CHECK(export_and_read(again).one("aten::mul").at("args").at("Concrete Inputs") == json({"3"}));
}

TEST_CASE("tensor-like types, spans, mdspan-like views and Eigen-like matrices are tensors with no user code") {
    stint::profiler<shapes> prof;
    const std::vector<float> data(12, 1.0f);
    const std::vector<double> grid(20, 0.0);
    prof.start();
    {
        STINT_OP(shapes, "shape_only", shape_only{});
        STINT_OP(shapes, "undefined", maybe_tensor{false}, maybe_tensor{true});
        STINT_OP(shapes, "span", std::span<const float>(data), std::span<const float>());
        STINT_OP(shapes, "mdspan", view_2d{grid.data(), 4, 3, 5});
        STINT_OP(shapes, "eigen", eigen_like_matrix<false>{}, eigen_like_matrix<true>{});
        STINT_OP(shapes, "image", image{480, 640, 3});
        const fake_tensor scalar_tensor{{}, {}, "long int"};
        const fake_tensor rank8 = contiguous({1, 2, 3, 4, 5, 6, 7, 8}, "double");
        STINT_OP(shapes, "ranks", scalar_tensor, rank8);
    }
    prof.stop();
    const trace_reader trace = export_and_read(prof);

    const json shape_only_args = trace.one("shape_only").at("args");
    CHECK(shape_only_args.at("Input Dims") == json::parse("[[2, 3, 4]]"));
    CHECK(shape_only_args.at("Input Strides") == json::parse("[[]]"));
    CHECK(shape_only_args.at("Input type") == json({"c10::Half"}));

    const json undefined = trace.one("undefined").at("args");
    CHECK(undefined.at("Input type") == json({"", "double"}));
    CHECK(undefined.at("Input Dims") == json::parse("[[], [5]]"));

    const json span = trace.one("span").at("args");
    CHECK(span.at("Input Dims") == json::parse("[[12], [0]]"));
    CHECK(span.at("Input Strides") == json::parse("[[1], [1]]"));
    CHECK(span.at("Input type") == json({"float", "float"}));

    const json mdspan = trace.one("mdspan").at("args");
    CHECK(mdspan.at("Input Dims") == json::parse("[[4, 3]]"));
    CHECK(mdspan.at("Input Strides") == json::parse("[[5, 1]]"));
    CHECK(mdspan.at("Input type") == json({"double"}));

    const json eigen = trace.one("eigen").at("args");
    CHECK(eigen.at("Input Dims") == json::parse("[[3, 5], [3, 5]]"));
    CHECK(eigen.at("Input Strides") == json::parse("[[1, 3], [5, 1]]"));
    CHECK(eigen.at("Input type") == json({"float", "float"}));

    const json im = trace.one("image").at("args");
    CHECK(im.at("Input Dims") == json::parse("[[480, 640, 3]]"));
    CHECK(im.at("Input type") == json({"unsigned char"}));

    const json ranks = trace.one("ranks").at("args");
    CHECK(ranks.at("Input Dims") == json::parse("[[], [1, 2, 3, 4, 5, 6, 7, 8]]"));
    CHECK(ranks.at("Input Strides") == json::parse("[[], [40320, 20160, 6720, 1680, 336, 56, 8, 1]]"));
    CHECK(ranks.at("Input type") == json({"long int", "double"}));
    CHECK_FALSE(ranks.contains("Inputs truncated"));
}

TEST_CASE("dims and strides beyond 32 bits are kept exactly") {
    // Shapes that fit 32 bits are stored narrow; one value that does not switches the tensor to 64.
    stint::profiler<shapes> prof;
    const std::int64_t big = (std::int64_t{1} << 40) + 3;
    prof.start();
    {
        const fake_tensor wide{{big, 2}, {2, 1}};
        const fake_tensor wide_stride{{2, 3}, {big, 1}};
        const fake_tensor negative{{4}, {-1}};
        STINT_OP(shapes, "wide", wide, wide_stride, negative);
    }
    prof.stop();
    const json args = export_and_read(prof).one("wide").at("args");
    CHECK(args.at("Input Dims") == json::parse("[[1099511627779, 2], [2, 3], [4]]"));
    CHECK(args.at("Input Strides") == json::parse("[[2, 1], [1099511627779, 1], [-1]]"));
}

TEST_CASE("tensors at the edges of the inline encoding read back exactly") {
    // The common tensor (int64 arrays, values within 32 bits, at most 4 dims, dtype of 4 to 8 bytes) is
    // encoded inline; one step past any edge takes the general encoder. Both must read back the same.
    stint::profiler<shapes> prof;
    const std::int64_t lo = std::numeric_limits<std::int32_t>::min();
    const std::int64_t hi = std::numeric_limits<std::int32_t>::max();
    prof.start();
    {
        const fake_tensor fits{{hi, 1}, {lo, hi}};
        const fake_tensor past_hi{{hi + 1, 1}, {1, 1}};
        const fake_tensor past_lo{{1, 1}, {1, lo - 1}};
        const fake_tensor rank4 = contiguous({2, 3, 4, 5});
        const fake_tensor rank5 = contiguous({2, 3, 4, 5, 6});
        const fake_tensor stride_count_differs{{2, 3}, {1}};
        const fake_tensor no_dims{{}, {}};
        STINT_OP(shapes, "edges", fits, past_hi, past_lo, rank4, rank5, stride_count_differs, no_dims);
        const std::vector<fake_tensor> list{fits, rank4};
        STINT_OP(shapes, "in_list", list, fits);
    }
    prof.stop();
    const auto trace = export_and_read(prof);
    const json args = trace.one("edges").at("args");
    CHECK(args.at("Input Dims") ==
          json::parse("[[2147483647, 1], [2147483648, 1], [1, 1], [2, 3, 4, 5], [2, 3, 4, 5, 6], [2, 3], []]"));
    CHECK(args.at("Input Strides") ==
          json::parse("[[-2147483648, 2147483647], [1, 1], [1, -2147483649], [60, 20, 5, 1], [360, 120, 30, 6, 1], "
                      "[], []]"));
    CHECK(args.at("Input type") == json(std::vector<std::string>(7, "float")));
    const json listed = trace.one("in_list").at("args");
    CHECK(listed.at("Input Dims") == json::parse("[[[2147483647, 1], [2, 3, 4, 5]], [2147483647, 1]]"));
    CHECK(listed.at("Input Strides") ==
          json::parse("[[[-2147483648, 2147483647], [60, 20, 5, 1]], [-2147483648, 2147483647]]"));
}

TEST_CASE("dtype names of every length from 0 to 12 bytes read back exactly") {
    // 4 to 8 bytes are copied as two overlapping 4-byte words, others byte by byte.
    stint::profiler<shapes> prof;
    const std::string letters = "abcdefghijkl";
    prof.start();
    for (std::size_t n = 0; n <= letters.size(); ++n) {
        const fake_tensor t = contiguous({2, 3}, letters.substr(0, n));
        STINT_OP(shapes, "dtype", t, t);
    }
    prof.stop();
    const auto ops = export_and_read(prof).named("dtype");
    REQUIRE(ops.size() == letters.size() + 1);
    for (std::size_t n = 0; n <= letters.size(); ++n) {
        const json args = ops[n].at("args");
        const std::string name = letters.substr(0, n);
        CHECK(args.at("Input type") == json({name, name}));
        CHECK(args.at("Input Dims") == json::parse("[[2, 3], [2, 3]]"));
        CHECK(args.at("Input Strides") == json::parse("[[3, 1], [3, 1]]"));
    }
}

TEST_CASE("ops whose inputs fill many chunks read back whole, in order") {
    // Each record is appended inline while its chunk has room and through the slow path when it
    // fills; both must give the same bytes.
    stint::profiler<shapes> prof;
    constexpr std::int64_t ops = 3000;
    prof.start();
    for (std::int64_t i = 0; i < ops; ++i) {
        const fake_tensor a = contiguous({i, 7}), b = contiguous({3, i + 1}, "long int");
        STINT_OP(shapes, "many", a, b, i);
    }
    prof.stop();
    CHECK(prof.stats().dropped == 0);
    const auto many = export_and_read(prof).named("many");
    REQUIRE(many.size() == static_cast<std::size_t>(ops));
    for (std::int64_t i = 0; i < ops; ++i) {
        const json args = many[static_cast<std::size_t>(i)].at("args");
        REQUIRE(args.at("Input Dims") == json::array({json::array({i, 7}), json::array({3, i + 1}), json::array()}));
        REQUIRE(args.at("Input Strides") == json::array({json::array({7, 1}), json::array({i + 1, 1}), json::array()}));
        REQUIRE(args.at("Input type") == json({"float", "long int", "Scalar"}));
        REQUIRE(args.at("Concrete Inputs") == json({"", "", std::to_string(i)}));
    }
}

#if STINT_TEST_HAS_EIGEN
TEST_CASE("Eigen matrices are captured through the Eigen-like rules") {
    stint::profiler<shapes> prof;
    const Eigen::MatrixXf m = Eigen::MatrixXf::Zero(3, 5);
    prof.start();
    {
        STINT_OP(shapes, "eigen", m);
    }
    prof.stop();
    const json args = export_and_read(prof).one("eigen").at("args");
    CHECK(args.at("Input Dims") == json::parse("[[3, 5]]"));
    CHECK(args.at("Input Strides") == json::parse("[[1, 3]]"));
    CHECK(args.at("Input type") == json({"float"}));
}
#endif

#if STINT_USE_PFR
TEST_CASE("aggregates are captured field by field with Boost.PFR") {
    stint::profiler<shapes> prof;
    prof.start();
    {
        const fake_tensor x = contiguous({1, 3, 8, 8});
        STINT_OP(shapes, "conv", x, conv_params{{2, 2}, {1, 1}, {1, 1}, 1});
        STINT_OP(shapes, "nested", nested_params{4, {0.5, true}});
    }
    prof.stop();
    const trace_reader trace = export_and_read(prof);
    const json conv = trace.one("conv").at("args");
    CHECK(conv.at("Input type") == json({"float", "ScalarList", "ScalarList", "ScalarList", "Scalar"}));
    CHECK(conv.at("Concrete Inputs") == json({"", "[2, 2]", "[1, 1]", "[1, 1]", "1"}));
    const json nested = trace.one("nested").at("args");
    CHECK(nested.at("Concrete Inputs") == json({"4", "0.5", "True"}));
}
#else
#error "the tests need Boost.PFR (Debian: libboost1.81-dev); tools/install_deps.sh installs it"
#endif

TEST_CASE("capture is bounded: long lists, many inputs, deep tensors and long strings mark the record truncated") {
    concrete_inputs_guard on(true);
    using tight = stint::config<stint::record_shapes_limits<3, 4, 128>>;
    using tight_bytes = stint::config<stint::record_shapes_limits<4, 4, 64>>;
    stint::profiler<shapes> prof;
    std::vector<std::int64_t> huge(10'000);
    for (std::size_t i = 0; i < huge.size(); ++i) huge[i] = static_cast<std::int64_t>(i);
    prof.start();
    {
        STINT_OP(shapes, "huge_list", huge);
        STINT_OP(shapes, "many_inputs", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34);
        const fake_tensor rank8 = contiguous({1, 2, 3, 4, 5, 6, 7, 8});
        STINT_OP(tight, "deep", rank8, 1, 2, 3);
        STINT_OP(tight, "long_string", std::string(100, 'x'));
        // Two strings take 38 of the 64 bytes; the list (35 bytes) no longer fits and is dropped, and
        // the scalar after it keeps its position.
        STINT_OP(tight_bytes, "dropped", std::string(15, 'y'), std::string(15, 'z'), std::vector<int>{1, 2, 3, 4}, 5);
        STINT_OP(shapes, "fine", 1);
    }
    prof.stop();
    CHECK(prof.stats().truncated_inputs == 5);
    const trace_reader trace = export_and_read(prof);

    const json huge_args = trace.one("huge_list").at("args");
    CHECK(huge_args.at("Concrete Inputs") ==
          json({"[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, ...]"}));
    CHECK(huge_args.at("Inputs truncated") == true);

    const json many = trace.one("many_inputs").at("args");
    CHECK(many.at("Input type").size() == 32);
    CHECK(many.at("Concrete Inputs").back() == "31");
    CHECK(many.at("Inputs truncated") == true);

    const json deep = trace.one("deep").at("args");
    CHECK(deep.at("Input Dims") == json::parse("[[1, 2, 3, 4], [], []]"));
    CHECK(deep.at("Inputs truncated") == true);

    const json long_string = trace.one("long_string").at("args");
    CHECK(long_string.at("Concrete Inputs") == json({std::string(32, 'x')}));  // max_bytes / 4
    CHECK(long_string.at("Inputs truncated") == true);

    const json dropped = trace.one("dropped").at("args");
    CHECK(dropped.at("Input type") == json({"String", "String", "", "Scalar"}));
    CHECK(dropped.at("Concrete Inputs") == json({std::string(15, 'y'), std::string(15, 'z'), "", "5"}));
    CHECK(dropped.at("Inputs truncated") == true);

    CHECK_FALSE(trace.one("fine").at("args").contains("Inputs truncated"));
}

TEST_CASE("a 10,000-element list never makes a 10,000-element record: records stay within the bound") {
    // One 64 KiB chunk of budget. Each record: 24 bytes + 8 header + the list (tag, flags, count,
    // 16 x 8 bytes = 131, padded to 136) = 168 bytes, so exactly 65472 / 168 = 389 fit.
    stint::profiler<shapes> prof({.buffer_budget_bytes = stint::detail::chunk::total_bytes});
    const std::vector<std::int64_t> huge(10'000, 7);
    prof.start();
    for (int i = 0; i < 500; ++i) {
        STINT_OP(shapes, "huge", huge);
    }
    prof.stop();
    CHECK(prof.stats().recorded == 389);
    CHECK(prof.stats().dropped == 111);
    CHECK(prof.stats().truncated_inputs == 389);
}

TEST_CASE("without record_shapes an op records no inputs: same scope size, 24-byte records, inputs never evaluated") {
    int evaluated = 0;
    const auto input = [&] {
        ++evaluated;
        return 1;
    };
    static_assert(std::is_same_v<stint::detail::op_scope_or_site<stint::config<>>, stint::detail::scope<stint::config<>>>);
    static_assert(sizeof(stint::detail::op_scope_or_site<stint::config<>>) == sizeof(stint::detail::scope_timer));
    static_assert(std::is_same_v<stint::detail::op_scope_or_site<stint::disabled>, const stint::detail::site&>);
    static_assert(sizeof(stint::detail::record) == 24);
    static_assert(stint::detail::op_payload_kind<stint::config<>>() == stint::detail::payload_kind::none);
    static_assert(stint::detail::op_payload_kind<shapes>() == stint::detail::payload_kind::inputs);
    static_assert(stint::detail::op_flop_formula<shapes>("aten::mm").empty());

    // Exactly 65472 / 24 = 2728 timing-only op records fit in one chunk: no byte of payload.
    stint::profiler<> prof({.buffer_budget_bytes = stint::detail::chunk::total_bytes});
    prof.start();
    for (int i = 0; i < 3000; ++i) {
        STINT_OP(stint::config<>, "timing_only", input(), std::vector<int>(100));
    }
    prof.stop();
    CHECK(evaluated == 0);
    CHECK(prof.stats().recorded == 2728);
    CHECK(prof.stats().dropped == 272);
    std::optional<stint::event> e = find(prof.events(), "timing_only");
    REQUIRE(e != std::nullopt);
    CHECK(prof.events().args(*e) == nullptr);
    const json args = export_and_read(prof).named("timing_only").at(0).at("args");
    CHECK_FALSE(args.contains("Input Dims"));

    // With record_shapes but no session, the inputs are not evaluated either.
    {
        STINT_OP(shapes, "no_session", input());
    }
    CHECK(evaluated == 0);
    stint::profiler<shapes> recording;
    recording.start();
    {
        STINT_OP(shapes, "in_session", input());
    }
    recording.stop();
    CHECK(evaluated == 1);
}

TEST_CASE("an op without inputs has no args, as torch's; an input that throws marks the capture truncated") {
    stint::profiler<shapes> prof;
    prof.start();
    {
        STINT_OP(shapes, "no_inputs");
        STINT_OP(shapes, "throws", 1, throwing_tensor{}, 2);
    }
    prof.stop();
    const trace_reader trace = export_and_read(prof);
    CHECK_FALSE(trace.one("no_inputs").at("args").contains("Input Dims"));
    const json throws = trace.one("throws").at("args");
    CHECK(throws.at("Concrete Inputs") == json({"1"}));
    CHECK(throws.at("Inputs truncated") == true);
}

TEST_CASE("record_function's args string is its one input, as torch records it") {
    concrete_inputs_guard on(true);
    stint::profiler<> prof;
    prof.start();
    {
        stint::record_function with_args("## TEST 1 ##", "1, 2, 3");
        stint::record_function without_args("plain");
    }
    prof.stop();
    const trace_reader trace = export_and_read(prof);
    const json e = trace.one("## TEST 1 ##");
    CHECK(e.at("cat") == "user_annotation");
    CHECK(e.at("args").at("Input type") == json({"String"}));
    CHECK(e.at("args").at("Input Dims") == json::parse("[[]]"));
    CHECK(e.at("args").at("Concrete Inputs") == json({"1, 2, 3"}));
    CHECK_FALSE(trace.one("plain").at("args").contains("Input type"));
    std::optional<stint::event> rf = find(prof.events(), "## TEST 1 ##");
    REQUIRE(rf != std::nullopt);
    REQUIRE(prof.events().args(*rf) != nullptr);
    CHECK(prof.events().args(*rf)->record_args == "1, 2, 3");
}

TEST_CASE("key_averages(group_by_input_shape) splits an op by its recorded dims") {
    stint::profiler<shapes> prof;
    prof.start();
    for (int i = 0; i < 3; ++i) {
        const fake_tensor a = contiguous({8, 4});
        const fake_tensor b = contiguous({4, 2});
        STINT_OP(shapes, "aten::mm", a, b);
    }
    {
        const fake_tensor a = contiguous({2, 2});
        STINT_OP(shapes, "aten::mm", a, a);
    }
    prof.stop();
    const auto grouped = prof.key_averages({.group_by_input_shape = true});
    REQUIRE(grouped.size() == 2);
    CHECK(grouped[0].count == 3);
    CHECK(grouped[0].input_shapes == std::vector<std::vector<std::int64_t>>{{8, 4}, {4, 2}});
    CHECK(grouped[1].count == 1);
    CHECK(grouped[1].input_shapes == std::vector<std::vector<std::int64_t>>{{2, 2}, {2, 2}});
    const std::string table = grouped.table();
    CHECK(table.find("Input Shapes") != std::string::npos);
    CHECK(table.find("[[8, 4], [4, 2]]") != std::string::npos);
    CHECK(prof.key_averages().size() == 1);
}

TEST_CASE("ops capture their inputs from many threads at once") {
    stint::profiler<shapes> prof;
    prof.start();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([t] {
            for (int i = 0; i < 200; ++i) {
                const fake_tensor x = contiguous({t + 1, i + 1});
                STINT_OP(shapes, "threaded", x, t, i);
            }
        });
    }
    for (auto& th : threads) th.join();
    prof.stop();
    int seen = 0;
    for (const stint::event& e : prof.events()) {
        if (e.name != "threaded") continue;
        const stint::event_args* args = prof.events().args(e);
        REQUIRE(args != nullptr);
        REQUIRE(args->concrete_inputs.size() == 3);
        const std::int64_t t = std::stoll(args->concrete_inputs[1]);
        const std::int64_t i = std::stoll(args->concrete_inputs[2]);
        CHECK(args->input_dims[0] == std::vector<std::int64_t>{t + 1, i + 1});
        ++seen;
    }
    CHECK(seen == 800);
}
