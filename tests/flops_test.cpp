// with_flops: flops estimated at drain from recorded shapes with torch's formulas (expected values are
// worked out here by hand), shown by key_averages().table() as seed 000's test_flops expects, and
// never an exception or a bogus value when a formula cannot apply.
#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "stint/stint.hpp"
#include "test_util.hpp"

namespace {

using flops_cfg = stint::config<stint::with_flops>;
using shapes_only = stint::config<stint::record_shapes>;

struct flop_tensor {
    std::vector<std::int64_t> dims;
    const std::vector<std::int64_t>& sizes() const { return dims; }
    std::string_view dtype() const { return "float"; }
};

flop_tensor t(std::vector<std::int64_t> dims) { return {std::move(dims)}; }

template <class Config>
std::int64_t only_flops(const stint::profiler<Config>& prof, std::string_view name) {
    std::optional<stint::event> found;
    for (const stint::event& e : prof.events()) {
        if (e.name == name) {
            REQUIRE(found == std::nullopt);
            found = e;
        }
    }
    REQUIRE(found != std::nullopt);
    return found->flops;
}

// The flops stint records for one op of `config` named `name` with the given inputs.
#define FLOPS_OF_CONFIG(config, name, ...)       \
    ([&] {                                       \
        stint::profiler<config> prof_;           \
        prof_.start();                           \
        {                                        \
            STINT_OP(config, name, __VA_ARGS__); \
        }                                        \
        prof_.stop();                            \
        return only_flops(prof_, name);          \
    }())
#define FLOPS_OF(name, ...) FLOPS_OF_CONFIG(flops_cfg, name, __VA_ARGS__)

using ints2 = std::array<std::int64_t, 2>;

std::int64_t my_formula(const stint::op_inputs& in) {
    const auto* x = in.shape(0);
    return x != nullptr ? 1000 + static_cast<std::int64_t>(x->size()) : -1;
}

struct formula_guard {
    std::string name;
    ~formula_guard() { stint::unregister_flop_formula(name); }
};

// test_flops's model: Conv2d(16, 33, 18), ReLU, Linear(243, 243), ReLU, on a [batch, 16, 18, 260] input.
void model(std::int64_t batch) {
    STINT_SCOPE("model");
    const flop_tensor x = t({batch, 16, 18, 260});
    const flop_tensor conv_w = t({33, 16, 18, 18});
    const flop_tensor conv_b = t({33});
    const flop_tensor y = t({batch, 33, 1, 243});
    {
        STINT_OP(flops_cfg, "aten::conv2d", x, conv_w, conv_b, ints2{1, 1}, ints2{0, 0}, ints2{1, 1}, 1);
    }
    {
        STINT_OP(flops_cfg, "aten::relu", y);
    }
    {
        STINT_OP(flops_cfg, "aten::linear", y, t({243, 243}), t({243}));
    }
    {
        STINT_OP(flops_cfg, "aten::relu", y);
    }
}

}  // namespace

TEST_CASE("matrix products follow torch's formulas: 2 * batch * M * K * N") {
    CHECK(FLOPS_OF("aten::mm", t({64, 32}), t({32, 16})) == 2 * 64 * 32 * 16);
    CHECK(FLOPS_OF("aten::addmm", t({16}), t({64, 32}), t({32, 16}), 1, 1) == 2 * 64 * 32 * 16);
    CHECK(FLOPS_OF("aten::bmm", t({3, 4, 5}), t({3, 5, 6})) == 2 * 3 * 4 * 5 * 6);
    CHECK(FLOPS_OF("aten::baddbmm", t({3, 4, 6}), t({3, 4, 5}), t({3, 5, 6})) == 2 * 3 * 4 * 5 * 6);
    CHECK(FLOPS_OF("aten::matmul", t({2, 3, 4, 5}), t({5, 6})) == 2 * (2 * 3) * 4 * 5 * 6);
    CHECK(FLOPS_OF("aten::matmul", t({7}), t({7})) == 2 * 7);
    CHECK(FLOPS_OF("aten::matmul", t({4, 5}), t({5})) == 2 * 4 * 5);
    CHECK(FLOPS_OF("aten::matmul", t({1, 4, 5}), t({3, 5, 6})) == 2 * 3 * 4 * 5 * 6);
    CHECK(FLOPS_OF("aten::linear", t({10, 20}), t({30, 20}), t({30})) == 2 * 10 * 20 * 30);
    CHECK(FLOPS_OF("aten::linear", t({2, 10, 20}), t({30, 20}), std::nullopt) == 2 * 2 * 10 * 20 * 30);
}

TEST_CASE("convolutions follow torch's formulas") {
    // test_flops's Conv2d(16, 33, 18) on [40, 16, 18, 260]: out 1 x 243.
    const std::int64_t out_h = (18 + 2 * 0 - 1 * (18 - 1) - 1) / 1 + 1;
    const std::int64_t out_w = (260 + 2 * 0 - 1 * (18 - 1) - 1) / 1 + 1;
    REQUIRE(out_h == 1);
    REQUIRE(out_w == 243);
    const std::int64_t seed_conv = 2LL * 40 * out_h * out_w * 18 * 18 * 16 * 33 / 1;
    CHECK(seed_conv == 3'325'639'680);
    CHECK(FLOPS_OF("aten::conv2d", t({40, 16, 18, 260}), t({33, 16, 18, 18}), t({33}), ints2{1, 1}, ints2{0, 0},
                   ints2{1, 1}, 1) == seed_conv);
    // Trailing arguments missing: aten's defaults.
    CHECK(FLOPS_OF("aten::conv2d", t({40, 16, 18, 260}), t({33, 16, 18, 18})) == seed_conv);

    // stride 2, padding 1, dilation 2, groups 2 on [2, 8, 15, 20] with [6, 4, 3, 3].
    const std::int64_t h = (15 + 2 * 1 - 2 * (3 - 1) - 1) / 2 + 1;  // 7
    const std::int64_t w = (20 + 2 * 1 - 2 * (3 - 1) - 1) / 2 + 1;  // 9
    CHECK(FLOPS_OF("aten::conv2d", t({2, 8, 15, 20}), t({6, 4, 3, 3}), std::nullopt, ints2{2, 2}, ints2{1, 1},
                   ints2{2, 2}, 2) == 2LL * 2 * h * w * 3 * 3 * 8 * 6 / 2);
    // One int for every spatial dim.
    CHECK(FLOPS_OF("aten::conv2d", t({2, 8, 15, 20}), t({6, 4, 3, 3}), std::nullopt, 2, 1, 2, 2) ==
          2LL * 2 * h * w * 3 * 3 * 8 * 6 / 2);

    CHECK(FLOPS_OF("aten::conv1d", t({4, 3, 50}), t({10, 3, 5}), std::nullopt, std::array<int, 1>{1},
                   std::array<int, 1>{2}) == 2LL * 4 * 50 * 5 * 3 * 10);
    CHECK(FLOPS_OF("aten::conv3d", t({1, 2, 8, 8, 8}), t({4, 2, 3, 3, 3})) == 2LL * 1 * (6 * 6 * 6) * 27 * 2 * 4);

    // Transposed: 2 * N * prod(input spatial) * prod(weight).
    CHECK(FLOPS_OF("aten::conv_transpose2d", t({2, 8, 5, 5}), t({8, 4, 3, 3})) == 2LL * 2 * 25 * (8 * 4 * 3 * 3));
    CHECK(FLOPS_OF("aten::conv_transpose1d", t({1, 2, 9}), t({2, 3, 4})) == 2LL * 1 * 9 * (2 * 3 * 4));
    CHECK(FLOPS_OF("aten::conv_transpose3d", t({1, 2, 3, 3, 3}), t({2, 2, 2, 2, 2})) == 2LL * 27 * 32);

    CHECK(FLOPS_OF("aten::convolution", t({1, 3, 10, 10}), t({5, 3, 3, 3}), std::nullopt, ints2{1, 1}, ints2{0, 0},
                   ints2{1, 1}, false, ints2{0, 0}, 1) == 2LL * 1 * 8 * 8 * 9 * 3 * 5);
    CHECK(FLOPS_OF("aten::convolution", t({1, 3, 10, 10}), t({3, 5, 3, 3}), std::nullopt, ints2{1, 1}, ints2{0, 0},
                   ints2{1, 1}, true, ints2{0, 0}, 1) == 2LL * 1 * 100 * (3 * 5 * 9));
}

TEST_CASE("elementwise add and mul count one flop per element of the first input") {
    CHECK(FLOPS_OF("aten::add", t({4, 5}), t({4, 5}), 1) == 20);
    CHECK(FLOPS_OF("aten::mul", t({2, 3, 4}), 2.0) == 24);
    CHECK(FLOPS_OF("aten::add", t({}), 1) == 1);  // a zero-dim tensor: one element
}

TEST_CASE("a formula that cannot apply gives no flops, never an exception") {
    CHECK(FLOPS_OF("aten::mm", t({2, 3, 4}), t({4, 5})) == -1);              // wrong rank
    CHECK(FLOPS_OF("aten::mm", t({2, 3})) == -1);                            // missing input
    CHECK(FLOPS_OF("aten::mm", 2, t({3, 4})) == -1);                         // not a tensor
    CHECK(FLOPS_OF("aten::mm", t({2, 3}), t({4, 5})) == -1);                 // inner dims differ
    CHECK(FLOPS_OF("aten::bmm", t({2, 3, 4}), t({3, 4, 5})) == -1);          // batch differs
    CHECK(FLOPS_OF("aten::matmul", t({2, 4, 5}), t({3, 5, 6})) == -1);       // batch does not broadcast
    CHECK(FLOPS_OF("aten::add", 1, t({3})) == -1);                           // scalar first
    CHECK(FLOPS_OF("aten::add", std::vector<flop_tensor>{t({2}), t({2})}) == -1);  // a list, like torch's nested tensor
    CHECK(FLOPS_OF("aten::conv2d", t({16, 18, 260}), t({33, 16, 18, 18})) == -1);  // unbatched: torch wants rank 4
    CHECK(FLOPS_OF("aten::conv2d", t({1, 1, 8, 8}), t({1, 1, 3, 3}), std::nullopt, 0) == -1);   // stride 0
    CHECK(FLOPS_OF("aten::conv2d", t({1, 1, 8, 8}), t({1, 1, 3, 3}), std::nullopt, 1, 0, 1, 0) == -1);  // groups 0
    CHECK(FLOPS_OF("aten::conv2d", t({1, 1, 2, 2}), t({1, 1, 3, 3})) == -1);  // kernel larger than the input
    CHECK(FLOPS_OF("aten::conv2d", t({1, 1, 8, 8}), t({1, 1, 3, 3}), std::nullopt, std::vector<int>{1, 1, 1}) == -1);
    CHECK(FLOPS_OF("aten::conv2d", t({1, 1, 8, 8}), t({1, 1, 3, 3}), std::nullopt, "same") == -1);
    const std::int64_t big = std::int64_t{1} << 40;
    CHECK(FLOPS_OF("aten::mm", t({big, big}), t({big, big})) == -1);  // overflow
    CHECK(FLOPS_OF("aten::relu", t({4})) == -1);                          // no formula for the name
    // Dims cut at the record_shapes bound are incomplete: no flops from them.
    using tight = stint::config<stint::with_flops, stint::record_shapes_limits<4, 2, 256>>;
    CHECK(FLOPS_OF_CONFIG(tight, "aten::add", t({2, 3, 4})) == -1);
}

TEST_CASE("key_averages(group_by_input_shape).table() shows Total MFLOPs for test_flops's model") {
    stint::profiler<flops_cfg> prof;
    prof.start();
    model(40);
    model(40);
    model(20);
    prof.stop();

    const std::int64_t conv40 = 2LL * 40 * 1 * 243 * 18 * 18 * 16 * 33;
    const std::int64_t conv20 = 2LL * 20 * 1 * 243 * 18 * 18 * 16 * 33;
    const std::int64_t linear40 = 2LL * (40 * 33 * 1 * 243) * 243;
    const std::int64_t linear20 = 2LL * (20 * 33 * 1 * 243) * 243;
    CHECK(linear40 == 2LL * 1320 * 243 * 243);  // what addmm([1320, 243], [243, 243]) counts in torch

    const stint::averaged_event_list grouped = prof.key_averages({.group_by_input_shape = true});
    std::int64_t conv_rows = 0;
    for (const stint::averaged_event& a : grouped) {
        if (a.key == "aten::conv2d") {
            ++conv_rows;
            CHECK(a.flops == (a.input_shapes.at(0).at(0) == 40 ? 2 * conv40 : conv20));
        } else if (a.key == "aten::linear") {
            CHECK(a.flops == (a.input_shapes.at(0).at(0) == 40 ? 2 * linear40 : linear20));
        } else {
            CHECK(a.flops == 0);
        }
    }
    CHECK(conv_rows == 2);

    const std::string table = grouped.table({.sort_by = "cpu_time_total", .row_limit = 10});
    CHECK(std::regex_search(table, std::regex("Total M?FLOPs")));
    // The smallest non-zero count (linear at batch 20, 77.9 M) picks MFLOPs; every cell is scaled by it.
    CHECK(table.find("Total MFLOPs") != std::string::npos);
    CHECK(table.find(fmt::format("{:8.3f}", static_cast<double>(2 * conv40) / 1e6)) != std::string::npos);
    CHECK(table.find(fmt::format("{:8.3f}", static_cast<double>(linear20) / 1e6)) != std::string::npos);
    CHECK(table.find("[[40, 16, 18, 260], [33, 16, 18, 18], [33], [], [], [], []]") != std::string::npos);
    CHECK(table.find("--") != std::string::npos);  // relu and the model scope have no flops

    // Without grouping by shape, one row per name sums every call.
    for (const stint::averaged_event& a : prof.key_averages()) {
        if (a.key == "aten::conv2d") CHECK(a.flops == 2 * conv40 + conv20);
    }
}

TEST_CASE("the table picks the flops unit from the smallest non-zero count, as torch") {
    stint::profiler<flops_cfg> prof;
    prof.start();
    {
        STINT_OP(flops_cfg, "aten::add", t({999}));
    }
    prof.stop();
    const std::string small = prof.key_averages().table();
    CHECK(small.find("Total FLOPs") != std::string::npos);
    CHECK(small.find(" 999.000") != std::string::npos);

    stint::profiler<flops_cfg> big;
    big.start();
    {
        STINT_OP(flops_cfg, "aten::mm", t({1000, 1000}), t({1000, 1000}));  // 2e9
    }
    big.stop();
    const std::string text = big.key_averages().table();
    CHECK(text.find("Total GFLOPs") != std::string::npos);
    CHECK(text.find("   2.000") != std::string::npos);
}

TEST_CASE("without with_flops no flops are estimated and the table has no flops column") {
    stint::profiler<shapes_only> prof;
    prof.start();
    {
        STINT_OP(shapes_only, "aten::mm", t({64, 32}), t({32, 16}));
    }
    prof.stop();
    CHECK(only_flops(prof, "aten::mm") == -1);
    CHECK(prof.key_averages().table().find("FLOPs") == std::string::npos);
}

TEST_CASE("formulas by op name, by registered name and at the site") {
    formula_guard g1{"test::gemv"};
    formula_guard g2{"test::named"};
    formula_guard g3{"aten::add"};
    stint::register_flop_formula("test::gemv", [](const stint::op_inputs& in) -> std::int64_t {
        const auto* a = in.shape(0);
        return a != nullptr && a->size() == 2 ? 2 * (*a)[0] * (*a)[1] : -1;
    });
    CHECK(FLOPS_OF("test::gemv", t({8, 16}), t({16})) == 2 * 8 * 16);

    stint::profiler<flops_cfg> prof;
    prof.start();
    {
        STINT_OP_FLOPS(flops_cfg, "my::gemm", "aten::mm", t({4, 5}), t({5, 6}));
        STINT_OP_FLOPS(flops_cfg, "my::function", my_formula, t({1, 2, 3}));
        STINT_OP_FLOPS(flops_cfg, "my::lambda",
                       ([](const stint::op_inputs& in) -> std::int64_t { return static_cast<std::int64_t>(in.size()); }),
                       1, 2, 3);
        STINT_OP_FLOPS(flops_cfg, "my::throws",
                       ([](const stint::op_inputs&) -> std::int64_t { throw std::runtime_error("bad formula"); }), 1);
        STINT_OP_FLOPS(flops_cfg, "my::unknown", "no::such_formula", t({4}));
        STINT_OP_FLOPS(flops_cfg, "my::named", "test::named", t({4}));
    }
    // Registered after the ops ran, before the drain: drains use the formulas known at stop().
    stint::register_flop_formula("test::named", [](const stint::op_inputs&) -> std::int64_t { return 77; });
    prof.stop();
    CHECK(only_flops(prof, "my::gemm") == 2 * 4 * 5 * 6);
    CHECK(only_flops(prof, "my::function") == 1003);
    CHECK(only_flops(prof, "my::lambda") == 3);
    CHECK(only_flops(prof, "my::throws") == -1);
    CHECK(only_flops(prof, "my::unknown") == -1);
    CHECK(only_flops(prof, "my::named") == 77);

    // A registered formula overrides the built-in one of the same name, until unregistered.
    stint::register_flop_formula("aten::add", [](const stint::op_inputs&) -> std::int64_t { return 5; });
    CHECK(FLOPS_OF("aten::add", t({100})) == 5);
    CHECK(stint::unregister_flop_formula("aten::add"));
    CHECK_FALSE(stint::unregister_flop_formula("aten::add"));
    CHECK(FLOPS_OF("aten::add", t({100})) == 100);

    // Without with_flops, a site's formula is ignored.
    stint::profiler<shapes_only> plain;
    plain.start();
    {
        STINT_OP_FLOPS(shapes_only, "my::gemm", "aten::mm", t({4, 5}), t({5, 6}));
    }
    plain.stop();
    CHECK(only_flops(plain, "my::gemm") == -1);
}

TEST_CASE("register_flop_formula rejects an empty name or formula with a clear message") {
    CHECK_THROWS_WITH_AS(stint::register_flop_formula("", [](const stint::op_inputs&) -> std::int64_t { return 1; }),
                         "stint: register_flop_formula(): the name is empty", std::invalid_argument);
    CHECK_THROWS_WITH_AS(stint::register_flop_formula("x::y", stint::flop_callable{}),
                         "stint: register_flop_formula(\"x::y\"): the formula is empty", std::invalid_argument);
}

TEST_CASE("the built-in formulas are callable directly and by name") {
    const stint::op_inputs in("aten::mm", [] {
        std::vector<stint::op_input> v(2);
        v[0].kind = v[1].kind = stint::input_kind::tensor;
        v[0].dims = {3, 4};
        v[1].dims = {4, 5};
        return v;
    }());
    CHECK(stint::flop_formulas::mm(in) == 2 * 3 * 4 * 5);
    CHECK(stint::estimate_flops("aten::mm", in) == 2 * 3 * 4 * 5);
    CHECK(stint::estimate_flops("aten::bmm", in) == -1);
    CHECK(stint::estimate_flops({}, in) == -1);
    REQUIRE(stint::find_flop_formula("aten::conv2d"));
    CHECK_FALSE(stint::find_flop_formula("aten::relu"));
}
