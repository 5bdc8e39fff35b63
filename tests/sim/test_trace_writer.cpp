#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/executor.hpp"
#include "sim/trace_writer.hpp"
#include "sim_test_support.hpp"

using namespace cuboid;
using namespace cuboid::sim;
using namespace cuboid::sim::test;

TEST_CASE("the trace is valid JSON with one slice per op", "[sim][trace]") {
    const Time us = microseconds(1.0);
    TestProgram p;
    const auto g = p.group({0, 1}, "pp");
    const auto first = p.add_list();
    const auto second = p.add_list();
    const auto f = p.compute(first, "F \"quoted\"", us * 10);
    p.comm(first, OpKind::Send, "send", 0, Bytes(8.0), stream::kPipelineSend, comm_class::kPipeline, {f});
    const auto r = p.comm(second, OpKind::Recv, "recv", 0, Bytes(8.0), stream::kPipelineRecv, comm_class::kPipeline);
    p.compute(second, "G", us * 4, stream::kCompute, OpCategory::Recompute, {r});
    p.rank(first, {g});
    p.rank(second, {g});
    TablePlanner planner;
    planner.plans[g] = TransferPlan{{TransferPhase{us, {}}}};

    std::ostringstream out;
    {
        TraceWriter trace(p.program, out);
        SimObserver* observers[] = {&trace};
        simulate(p.program, p.costs, {}, planner, observers);
        trace.finish();
    }
    const auto doc = nlohmann::json::parse(out.str());
    const auto& events = doc.at("traceEvents");
    int slices = 0, waits = 0;
    std::map<std::string, nlohmann::json> by_name;
    std::set<std::string> process_names;
    for (const auto& e : events) {
        if (e.at("ph") == "M" && e.at("name") == "process_name") process_names.insert(e.at("args").at("name"));
        if (e.at("ph") != "X") continue;
        if (e.at("cat") == "wait") {
            ++waits;
            // The receive was posted at 0 and started when the send was posted, at 10 us.
            CHECK(e.at("ts").get<double>() == Approx(0.0));
            CHECK(e.at("dur").get<double>() == Approx(10.0));
            continue;
        }
        ++slices;
        by_name[e.at("name")] = e;
    }
    CHECK(slices == 4);  // every op once
    CHECK(waits == 1);   // only the receive waited for its partner
    CHECK(process_names == std::set<std::string>{"gpu 0", "gpu 1"});
    // F runs 0..10 us on rank 0's compute stream; the transfer 10..11 us (latency only); G on
    // rank 1 11..15 us as recompute. Times are microseconds.
    const auto& fs = by_name.at("F \"quoted\"");
    CHECK(fs.at("pid") == 0);
    CHECK(fs.at("tid") == stream::kCompute);
    CHECK(fs.at("dur").get<double>() == Approx(10.0));
    CHECK(by_name.at("send").at("ts").get<double>() == Approx(10.0));
    CHECK(by_name.at("send").at("cat") == "pipeline_comm");
    CHECK(by_name.at("G").at("ts").get<double>() == Approx(11.0));
    CHECK(by_name.at("G").at("cat") == "recompute");
}
