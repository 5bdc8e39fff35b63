// Rank layout and the rejection of impossible plans.
#include <catch2/catch.hpp>

#include <functional>
#include <set>

#include "strategies/layout.hpp"
#include "strategies/names.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

TEST_CASE("Megatron rank order: tensor innermost, then data, then pipeline") {
    const Scenario sc = test::tiny_scenario(2, 4, 3, 4);
    const Layout l = validate_plan(sc);
    REQUIRE(l.gpus() == 24);
    std::set<std::uint32_t> seen;
    for (int pp = 0; pp < 4; ++pp)
        for (int dp = 0; dp < 3; ++dp)
            for (int tp = 0; tp < 2; ++tp) {
                const std::uint32_t r = l.rank(tp, dp, pp);
                CHECK(r == static_cast<std::uint32_t>(tp + 2 * (dp + 3 * pp)));
                CHECK(l.tp_of(r) == tp);
                CHECK(l.dp_of(r) == dp);
                CHECK(l.stage_of(r) == pp);
                seen.insert(r);
            }
    CHECK(seen.size() == 24);  // a bijection onto the GPUs
}

TEST_CASE("layers are split evenly, the remainder one each over the first chunks") {
    // 10 layers over 4 chunks: 10 = 3 + 3 + 2 + 2.
    CHECK(balanced_split(10, 4) == std::vector<int>{3, 3, 2, 2});
    Scenario sc = test::tiny_scenario(1, 2, 1, 4, 12);
    sc.parallel.schedule = Schedule::Interleaved;
    sc.parallel.virtual_stages = 3;
    const Layout l = validate_plan(sc);
    // Stage s holds chunks s, s+p, s+2p of 12/(2*3) = 2 layers each.
    CHECK(l.layers_on_stage(0) == 6);
    CHECK(l.first_layer_of(1, 1) == 6);  // global chunk 1*2+1 = 3 starts after 3 chunks of 2
}

TEST_CASE("the data degree is derived from the GPU count when absent") {
    Scenario sc = test::tiny_scenario(2, 2, 2, 4);
    sc.parallel.data = 0;  // 8 GPUs / (2*2)
    CHECK(validate_plan(sc).data == 2);
}

namespace {

// The key an invalid plan of 2 x 2 x 2 GPUs, 4 micro-batches is reported at, or "" if accepted.
std::string rejected_key(const std::function<void(Scenario&)>& change) {
    return test::rejected_key(test::tiny_scenario(2, 2, 2, 4), change);
}

}  // namespace

TEST_CASE("each invalid plan is rejected at its key") {
    using S = Scenario&;
    CHECK(rejected_key([](S) {}).empty());
    CHECK(rejected_key([](S s) { s.parallel.data = 3; }) == "parallel.data");
    CHECK(rejected_key([](S s) { s.parallel.data = 0; s.parallel.pipeline = 3; }) == "parallel.pipeline");
    CHECK(rejected_key([](S s) { s.parallel.tensor = 8; s.parallel.data = 1; s.parallel.pipeline = 1; }) ==
          "parallel.tensor");  // 4 heads
    CHECK(rejected_key([](S s) { s.model.kv_heads = 3; }) == "model.kv_heads");
    CHECK(rejected_key([](S s) { s.training.global_batch = 7; }) == "training.global_batch");
    CHECK(rejected_key([](S s) { s.training.micro_batch = 0; }) == "training.micro_batch");
    // 2^26 sequences of 32 tokens: 2^31 tokens, one past the largest GEMM dimension an op stores.
    CHECK(rejected_key([](S s) {
              s.training.micro_batch = 1 << 26;
              s.training.global_batch = 1 << 27;
          }) == "training.micro_batch");
    CHECK(rejected_key([](S s) { s.parallel.schedule = Schedule::Interleaved; }) == "parallel.virtual_stages");
    CHECK(rejected_key([](S s) { s.parallel.virtual_stages = 2; }) == "parallel.virtual_stages");
    CHECK(rejected_key([](S s) {
              s.parallel.schedule = Schedule::Interleaved;
              s.parallel.virtual_stages = 2;
              s.training.global_batch = 6;  // 3 micro-batches, not a multiple of p = 2
          }) == "training.global_batch");
    CHECK(rejected_key([](S s) { s.model.layers = 1; }) == "parallel.pipeline");
    CHECK(rejected_key([](S s) { s.parallel.schedule = Schedule::ShiftedCriticalPath; }) == "parallel.recompute");
    CHECK(rejected_key([](S s) {
              s.parallel.schedule = Schedule::ShiftedCriticalPath;
              s.parallel.recompute = Recompute::Full;
              s.training.global_batch = 6;  // 3 micro-batches: Merak's SCP needs m >= 4
          }) == "parallel.schedule");
    CHECK(rejected_key([](S s) { s.parallel.tensor_mode = TensorMode::ThreeD; }) == "parallel.tensor");  // t = 2 is not q^3
    CHECK(rejected_key([](S s) {  // a valid 2d plan, but ZB-H1's split backward is 1d's
              s.parallel.tensor = 4;
              s.parallel.data = 1;
              s.parallel.tensor_mode = TensorMode::TwoD;
              s.training.micro_batch = 2;
              s.training.global_batch = 8;
          }).empty());
    CHECK(rejected_key([](S s) {
              s.parallel.tensor = 4;
              s.parallel.data = 1;
              s.parallel.tensor_mode = TensorMode::TwoD;
              s.training.micro_batch = 2;
              s.training.global_batch = 8;
              s.parallel.schedule = Schedule::ZeroBubbleH1;
          }) == "parallel.tensor_mode");
    CHECK(rejected_key([](S s) { s.parallel.schedule = Schedule::ZeroBubbleH1; }).empty());
    // 3 sub-batches divide neither the micro-batch (1 sequence) nor seq_len 32.
    CHECK(rejected_key([](S s) { s.parallel.overlap_chunks = 3; }) == "parallel.overlap_chunks");
    CHECK(rejected_key([](S s) { s.parallel.shard_group = 1; }) == "parallel.shard_group");  // hybrid without ZeRO 3
    CHECK(rejected_key([](S s) { s.parallel.shard_group = 2; }).empty());  // the whole data group: any stage
    CHECK(rejected_key([](S s) {
              s.parallel.zero_stage = 3;
              s.parallel.shard_group = 3;  // does not divide the data degree
          }) == "parallel.shard_group");
    CHECK(rejected_key([](S s) { s.parallel.zero_stage = 4; }) == "parallel.zero_stage");
    CHECK(rejected_key([](S s) {
              s.model.heads = 6;
              s.model.hidden = 96;
              s.cluster.nodes = 3;  // 24 GPUs
              s.cluster.gpus_per_node = 8;
              s.parallel.tensor = 3;  // tensor groups would straddle nodes
              s.parallel.pipeline = 1;
              s.parallel.data = 8;
              s.training.global_batch = 8;
          }) == "parallel.tensor");
    CHECK(rejected_key([](S s) {
              s.parallel.sequence_parallel = true;
              s.model.seq_len = 33;
          }) == "parallel.sequence_parallel");
}

TEST_CASE("rejections name the file and line of the key and say what is allowed") {
    Scenario sc = test::tiny_scenario(2, 2, 2, 4);
    sc.source_file = "plan.yaml";
    sc.key_lines["parallel.schedule"] = 17;
    sc.parallel.schedule = Schedule::ShiftedCriticalPath;
    sc.parallel.recompute = Recompute::Full;
    sc.training.global_batch = 6;  // 3 micro-batches per pipeline
    try {
        validate_plan(sc);
        FAIL("accepted");
    } catch (const InputError& e) {
        const std::string what = e.what();
        CHECK(what.find("plan.yaml:17") != std::string::npos);
        CHECK(what.find(">= 4") != std::string::npos);
        CHECK(what.find("got 3 micro-batches") != std::string::npos);
    }
}

TEST_CASE("enum words parse and print back, unknown words list the allowed ones") {
    const InputLocation at{"", 0, "parallel.schedule"};
    for (const auto& n : schedule_names()) CHECK(to_string(parse_schedule(n.name, at)) == n.name);
    for (const auto& n : recompute_names()) CHECK(to_string(parse_recompute(n.name, at)) == n.name);
    for (const auto& n : tensor_mode_names()) CHECK(to_string(parse_tensor_mode(n.name, at)) == n.name);
    for (const auto& n : precision_names()) CHECK(precision_name(parse_precision(n.name, at)) == n.name);
    CHECK_THROWS_WITH(parse_schedule("zb", at), Catch::Contains("gpipe, 1f1b, interleaved"));
}
