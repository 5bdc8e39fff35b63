// DurationMemo (compute_model.hpp): each distinct op is priced once, and an op that differs from
// a priced one in any field the compute model reads gets its own price, never the cached one.
#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

#include "hardware_models/catalog.hpp"
#include "hardware_models/compute_model.hpp"
#include "hardware_models/profile.hpp"

using namespace cuboid;
using namespace cuboid::hw;

namespace {

// A profile in which every field the model reads moves the price: a bf16 GEMM grid over m, n
// and k (rates differ on each axis, and m x batch rows land elsewhere on it), two memory
// sizes, and host dispatch times that differ for compute and communication categories.
const char* kProfile = R"(
format: cuboid-hardware-profile/1
metadata: {gpu: a100-sxm-80gb}
gemm:
  - {precision: bf16, m: 1024, n: 1024, k: 1024, tflops: 100}
  - {precision: bf16, m: 4096, n: 1024, k: 1024, tflops: 110}
  - {precision: bf16, m: 1024, n: 4096, k: 1024, tflops: 120}
  - {precision: bf16, m: 4096, n: 4096, k: 1024, tflops: 130}
  - {precision: bf16, m: 1024, n: 1024, k: 4096, tflops: 140}
  - {precision: bf16, m: 4096, n: 1024, k: 4096, tflops: 150}
  - {precision: bf16, m: 1024, n: 4096, k: 4096, tflops: 160}
  - {precision: bf16, m: 4096, n: 4096, k: 4096, tflops: 170}
memory:
  - {kind: elementwise, bytes: 1.0e6, gb_per_s: 500}
  - {kind: elementwise, bytes: 1.0e8, gb_per_s: 1500}
host:
  dispatch_us: 70
  comm_dispatch_us: 25
)";

// 1024^3 bf16 GEMM: 2.1 GFLOP at 100 TFLOP/s is 21 us, its 6 MB of operands ~7 us: compute-bound,
// so a rate change on any shape axis shows in the duration.
sim::Op base_gemm() {
    sim::Op op;
    op.kind = sim::OpKind::Gemm;
    op.precision = sim::Precision::Bf16;
    op.shape = {1024, 1024, 1024, 1};
    op.flops = Flops(2.0 * 1024.0 * 1024.0 * 1024.0);
    op.bytes = Bytes(2.0 * 3.0 * 1024.0 * 1024.0);
    return op;
}

sim::Op elementwise(double bytes) {
    sim::Op op;
    op.kind = sim::OpKind::Elementwise;
    op.bytes = Bytes(bytes);
    return op;
}

sim::Op dispatch(sim::OpCategory category) {
    sim::Op op;
    op.kind = sim::OpKind::HostDispatch;
    op.category = category;
    return op;
}

struct Variant {
    std::string field;
    sim::Op base;
    std::function<void(sim::Op&)> change;
};

}  // namespace

TEST_CASE("duration memo: an op differing in one read field is priced anew", "[compute][memo]") {
    const Catalog catalog = Catalog::load_builtin();
    const HardwareProfile profile = HardwareProfile::parse(kProfile, "memo.yaml");
    const ComputeModel model(catalog.gpu("a100-sxm-80gb"), &profile);
    const std::vector<Variant> variants{
        {"kind", base_gemm(), [](sim::Op& op) { op.kind = sim::OpKind::Elementwise; }},
        {"precision", base_gemm(), [](sim::Op& op) { op.precision = sim::Precision::Fp16; }},
        {"flops", base_gemm(), [](sim::Op& op) { op.flops = op.flops * 2.0; }},
        {"bytes", elementwise(1e6), [](sim::Op& op) { op.bytes = Bytes(1e7); }},
        {"shape.m", base_gemm(), [](sim::Op& op) { op.shape.m = 4096; }},
        {"shape.n", base_gemm(), [](sim::Op& op) { op.shape.n = 4096; }},
        {"shape.k", base_gemm(), [](sim::Op& op) { op.shape.k = 4096; }},
        {"shape.batch", base_gemm(), [](sim::Op& op) { op.shape.batch = 4; }},  // 4096 rows
        {"category", dispatch(sim::OpCategory::Compute), [](sim::Op& op) { op.category = sim::comm_category(0); }},
    };
    for (const Variant& v : variants) {
        INFO("field " << v.field);
        sim::Op changed = v.base;
        v.change(changed);
        // Otherwise the check below could not tell a stale entry from a fresh one.
        REQUIRE(model.duration(changed) != model.duration(v.base));
        DurationMemo memo(model);
        CHECK(memo.duration(v.base) == model.duration(v.base));
        CHECK(memo.duration(changed) == model.duration(changed));
        CHECK(memo.duration(v.base) == model.duration(v.base));
        CHECK(memo.size() == 2);
    }
}

TEST_CASE("duration memo: repeats hit, growth keeps every entry, communication skips the table", "[compute][memo]") {
    const Catalog catalog = Catalog::load_builtin();
    const ComputeModel model(catalog.gpu("a100-sxm-80gb"), nullptr);
    DurationMemo memo(model);
    // 300 distinct sizes: several doublings of the table past its first size.
    std::vector<sim::Op> ops;
    for (int i = 0; i < 300; ++i) ops.push_back(elementwise(1e6 * (1.0 + i)));
    for (int pass = 0; pass < 2; ++pass)
        for (const auto& op : ops) CHECK(memo.duration(op) == model.duration(op));
    CHECK(memo.size() == ops.size());

    // -0 and +0 FLOPs are equal keys (same price), so they share one entry.
    sim::Op zero = elementwise(5e5);
    sim::Op negative_zero = zero;
    negative_zero.flops = Flops(-0.0);
    memo.duration(zero);
    memo.duration(negative_zero);
    CHECK(memo.size() == ops.size() + 1);

    sim::Op all_reduce = elementwise(1e9);
    all_reduce.kind = sim::OpKind::AllReduce;
    CHECK(memo.duration(all_reduce) == kTimeZero);  // the transfer planner prices it
    CHECK(memo.size() == ops.size() + 1);
}

// append_durations answers from the slot its label last used when the op matches it bit for bit
// (DurationMemo::Key::same_bits). All ops here share one label, so each changed op meets the
// hint of the op before it: it must be priced anew, and the base op found again after it.
TEST_CASE("duration memo: a list priced at once equals the model op by op", "[compute][memo]") {
    const Catalog catalog = Catalog::load_builtin();
    const HardwareProfile profile = HardwareProfile::parse(kProfile, "memo.yaml");
    const ComputeModel model(catalog.gpu("a100-sxm-80gb"), &profile);
    std::vector<sim::Op> ops;
    for (const sim::Op& base : {base_gemm(), elementwise(1e6), dispatch(sim::OpCategory::Compute)}) {
        sim::Op negative_zero = base;  // == the base, other bits: found through the table
        negative_zero.flops = Flops(base.flops.value == 0.0 ? -0.0 : base.flops.value);
        ops.insert(ops.end(), {base, base, negative_zero, base});
    }
    sim::Op all_reduce = elementwise(1e9);
    all_reduce.kind = sim::OpKind::AllReduce;
    ops.push_back(all_reduce);
    for (const auto& change : std::vector<std::function<void(sim::Op&)>>{
             [](sim::Op& op) { op.kind = sim::OpKind::Elementwise; },
             [](sim::Op& op) { op.precision = sim::Precision::Fp16; },
             [](sim::Op& op) { op.flops = op.flops * 2.0; },
             [](sim::Op& op) { op.bytes = Bytes(1e7); },
             [](sim::Op& op) { op.shape.m = 4096; },
             [](sim::Op& op) { op.shape.n = 4096; },
             [](sim::Op& op) { op.shape.k = 4096; },
             [](sim::Op& op) { op.shape.batch = 4; },
             [](sim::Op& op) { op.category = sim::comm_category(0); },
         }) {
        sim::Op changed = base_gemm();
        change(changed);
        ops.insert(ops.end(), {base_gemm(), changed, base_gemm()});
    }
    DurationMemo memo(model, 1);
    std::vector<Time> got{Time(-1)};  // appended after what is there
    memo.append_durations(ops, got);
    REQUIRE(got.size() == ops.size() + 1);
    CHECK(got[0] == Time(-1));
    for (std::size_t i = 0; i < ops.size(); ++i) {
        INFO("op " << i);
        CHECK(got[i + 1] == model.duration(ops[i]));
    }
}
