// The descriptor tables of the pluggable kinds (strategies/names.hpp): every value of each enum
// appears once, its word parses back to it, and an unknown word names the allowed ones.
#include <catch2/catch.hpp>

#include <set>

#include "sim/names.hpp"
#include "strategies/layout.hpp"
#include "strategies/names.hpp"
#include "strategies/program_builder.hpp"
#include "strategies/program_streams.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

// Each row's word parses to the row's value and prints as the word; no word or value twice; the
// table holds `count` values.
template <class E, class Parse, class Print>
void check_table(std::span<const Descriptor<E>> table, std::size_t count, Parse parse, Print print) {
    std::set<std::string> words;
    std::set<int> values;
    for (const auto& d : table) {
        INFO(d.name);
        CHECK(words.insert(d.name).second);
        CHECK(values.insert(static_cast<int>(d.value)).second);
        CHECK(parse(d.name, InputLocation{}) == d.value);
        CHECK(print(d.value) == d.name);
        CHECK(std::string(d.description).size() > 10);
    }
    CHECK(table.size() == count);
}

}  // namespace

TEST_CASE("descriptor tables: every value once, its word parses back and prints") {
    check_table(schedule_table(), 7, parse_schedule, [](Schedule s) { return to_string(s); });
    check_table(recompute_table(), 4, parse_recompute, [](Recompute r) { return to_string(r); });
    check_table(tensor_mode_table(), 4, parse_tensor_mode, [](TensorMode m) { return to_string(m); });
    check_table(context_mode_table(), 3, parse_context_mode, [](ContextMode m) { return to_string(m); });
    check_table(fp8_recipe_table(), 3, parse_fp8_recipe, fp8_recipe_name);
    check_table(precision_table(), 5, parse_precision, precision_name);
    for (const auto& d : atp_order_table()) CHECK(parse_atp_order(d.name, InputLocation{}) == d.value);
}

TEST_CASE("descriptor tables: an unknown word is an input error naming the allowed words") {
    try {
        parse_schedule("zb-h2", InputLocation{"s.yaml", 7, "parallel.schedule"});
        FAIL("accepted");
    } catch (const InputError& e) {
        CHECK(e.where().line == 7);
        CHECK_THAT(e.what(), Catch::Contains("allowed: gpipe, 1f1b, interleaved, shifted-critical-path, zb-h1, zb-v, dualpipev"));
    }
}

// sim knows streams and communication classes only by the names a program gives them: every
// stream and class a built program uses must be named, in the order of the constants.
TEST_CASE("program streams and classes: named in the constants' order, every one used is named") {
    sim::Program named;
    name_streams_and_classes(named);
    REQUIRE(named.stream_names.size() == static_cast<std::size_t>(stream::kCount));
    CHECK(sim::stream_name(named, stream::kCompute) == "compute");
    CHECK(sim::stream_name(named, stream::kTensorComm) == "tensor-comm");
    CHECK(sim::stream_name(named, stream::kDataComm) == "data-comm");
    CHECK(sim::stream_name(named, stream::kContextComm) == "context-comm");
    CHECK(sim::stream_name(named, stream::kPipelineSendBack) == "pipeline-send-back");
    CHECK(sim::stream_name(named, stream::kOffload) == "offload");
    CHECK(sim::stream_name(named, stream::kReload) == "reload");
    CHECK(sim::stream_name(named, static_cast<sim::StreamId>(stream::kCount)) == "stream 11");
    CHECK(sim::category_name(named, comm_class::kTensor) == "tensor_comm");
    CHECK(sim::category_name(named, comm_class::kPipeline) == "pipeline_comm");
    CHECK(sim::category_name(named, comm_class::kData) == "data_comm");
    CHECK(sim::category_name(named, sim::OpCategory::Recompute) == "recompute");
    CHECK(sim::category_name(named, comm_class::kContext) == "context_comm");
    CHECK(sim::category_name(named, comm_class::kExpert) == "expert_comm");
    CHECK(sim::category_name(named, comm_class::kOffload) == "offload_comm");
    REQUIRE(named.comm_classes.size() == static_cast<std::size_t>(comm_class::kCount));
    // The layer's classes form lockstep runs; pipeline and data transfers do not.
    for (const sim::OpCategory c : {comm_class::kTensor, comm_class::kContext, comm_class::kExpert}) {
        CHECK(named.comm_classes[static_cast<std::size_t>(sim::comm_class_of(c))].lockstep);
    }
    for (const sim::OpCategory c : {comm_class::kPipeline, comm_class::kData}) {
        CHECK_FALSE(named.comm_classes[static_cast<std::size_t>(sim::comm_class_of(c))].lockstep);
    }

    // Two tensor ranks, two pipeline stages, two replicas, two context ranks under ZeRO-3 (16
    // GPUs): tensor collectives, pipeline sends and receives, data reductions, parameter gathers
    // and context exchanges all appear.
    Scenario sc = test::tiny_scenario(2, 2, 2, 4, 4);
    sc.cluster.gpus_per_node = 16;
    sc.model.swiglu = true;
    sc.model.attention = AttentionKernel::Fused;
    sc.model.attention_dropout = false;
    sc.parallel.context = 2;
    sc.parallel.zero_stage = 3;
    const sim::Program program = build_program(sc, validate_plan(sc));
    CHECK(program.stream_names == named.stream_names);
    std::set<int> streams, classes;
    for (const sim::OpList& list : program.op_lists) {
        for (const sim::Op& op : list.ops) {
            streams.insert(op.stream);
            if (sim::is_communication(op.kind)) classes.insert(sim::comm_class_of(op.category));
        }
    }
    for (const int s : streams) CHECK(s < stream::kCount);
    for (const int c : classes) CHECK((c >= 0 && c < static_cast<int>(program.comm_classes.size())));
    // Every class but the experts'.
    CHECK(classes == std::set<int>{sim::comm_class_of(comm_class::kTensor), sim::comm_class_of(comm_class::kContext),
                                   sim::comm_class_of(comm_class::kPipeline), sim::comm_class_of(comm_class::kData)});
    CHECK(streams.count(stream::kParamGather) == 1);
    CHECK(streams.count(stream::kContextComm) == 1);
}
