// Mixture of experts through the built `cuboid`: a preset with expert parallelism runs and its
// report names the experts and the expert degrees (text and JSON); bad expert keys are exit 2
// naming file, line and key; `cuboid search` covers the expert degrees.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/binary_run.hpp"
#include "tests/scratch_dir.hpp"

using cuboid::cli::test::Outcome;
using cuboid::cli::test::run_cuboid;
using nlohmann::json;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
    return cuboid::cli::test::write_temp_file("cuboid_moe_test_", name, text);
}

// Mixtral 8x7B cut to 4 layers on one DGX H100 node; `extra` lines go at the end of `parallel:`
// (line 14 on).
std::string mixtral(const std::string& extra = "", const std::string& model_extra = "") {
    return write_file("run.yaml", "name: moe\n"
                                  "model:\n"
                                  "  preset: mixtral-8x7b\n"
                                  "  layers: 4\n" +
                                      model_extra +
                                      "cluster:\n"
                                      "  gpu: h100-sxm-80gb\n"
                                      "  nodes: 1\n"
                                      "  gpus_per_node: 8\n"
                                      "training:\n"
                                      "  global_batch: 16\n"
                                      "parallel:\n"
                                      "  tensor: 2\n"
                                      "  sequence_parallel: true\n" +
                                      extra);
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("cuboid run: a mixture of experts with expert parallelism reports its experts and degrees",
          "[cli][binary][moe]") {
    const Outcome o = run_cuboid("run '" + mixtral("  expert: 4\n") + "'");
    INFO(o.out << o.err);
    REQUIRE(o.code == 0);
    CHECK(has(o.out, "experts   8 routed experts, top-2, expert ffn 14336"));
    CHECK(has(o.out, "experts: ep4 etp1 (expert 4 x expert tensor 1 x expert data 2)"));
    const Outcome j = run_cuboid("run '" + mixtral("  expert: 2\n  expert_tensor: 2\n") + "' --json -");
    REQUIRE(j.code == 0);
    const json plan = json::parse(j.out).at("plan");
    CHECK(plan.at("expert") == 2);
    CHECK(plan.at("expert_tensor") == 2);
    CHECK(plan.at("expert_data") == 2);
    CHECK(plan.at("expert_shard_group") == 2);  // no hybrid sharding: the expert-data group
    // ZeRO-3 hybrid sharding over pairs of data ranks: 4 ranks per shard group, each expert
    // sharded over the 2 expert-data ranks among them, the other 2 of its expert-data group copies.
    const Outcome h = run_cuboid("run '" + mixtral("  expert: 2\n  zero_stage: 3\n  shard_group: 2\n") + "' --json -");
    INFO(h.err);
    REQUIRE(h.code == 0);
    const json hybrid = json::parse(h.out).at("plan");
    CHECK(hybrid.at("expert_data") == 4);
    CHECK(hybrid.at("expert_shard_group") == 2);
    const Outcome text = run_cuboid("run '" + mixtral("  expert: 2\n  zero_stage: 3\n  shard_group: 2\n") + "'");
    CHECK(has(text.out, "expert data 4), ZeRO 3 over the 2 expert-data ranks of each shard group"));
    // A dense model's plan has no expert fields.
    const Outcome dense = run_cuboid(
        "run '" + write_file("dense.yaml", "model: {preset: gpt-1.7b}\ncluster: {gpu: h100-sxm-80gb, gpus_per_node: 8}\n"
                                           "training: {global_batch: 16}\nparallel: {tensor: 8}\n") +
        "' --json -");
    REQUIRE(dense.code == 0);
    CHECK_FALSE(json::parse(dense.out).at("plan").contains("expert"));
}

TEST_CASE("cuboid run: bad expert keys are exit 2 naming file, line and key", "[cli][binary][moe]") {
    struct Bad {
        std::string parallel, model, key, says;
        int line;
    };
    for (const Bad& b : {Bad{"  expert: 3\n", "", "parallel.expert", "must divide the 8 experts", 14},
                         Bad{"  expert: 0\n", "", "parallel.expert", ">= 1", 14},
                         Bad{"  expert_tensor: 3\n", "", "parallel.expert_tensor", "", 14},
                         Bad{"", "  experts_per_token: 9\n", "model.experts_per_token", "at most the 8 experts", 5},
                         Bad{"", "  attention_kind: mla\n", "model.q_lora_rank", "multi-head latent attention needs it", 2},
                         Bad{"", "  kv_lora_rank: 512\n", "model.kv_lora_rank", "set model.attention_kind: mla", 5},
                         Bad{"", "  attention_kind: gqa\n", "model.attention_kind", "allowed: mha, mla", 5},
                         Bad{"", "  moe_load_imbalance: 0.5\n", "model.moe_load_imbalance", "", 5},
                         Bad{"", "  dense_layers: 4\n", "model.dense_layers", "at least one", 5}}) {
        const std::string path = mixtral(b.parallel, b.model);
        const Outcome o = run_cuboid("run '" + path + "'");
        INFO(b.key << ": " << o.err);
        CHECK(o.code == 2);
        CHECK(has(o.err, path + ":" + std::to_string(b.line)));
        CHECK(has(o.err, b.key));
        CHECK(has(o.err, b.says));
    }
}

TEST_CASE("cuboid search covers the expert degrees of a mixture of experts", "[cli][binary][moe]") {
    const std::string path = write_file(
        "search.yaml", "name: moe-search\n"
                       "model: {preset: mixtral-8x7b, layers: 4}\n"
                       "cluster: {gpu: h100-sxm-80gb, nodes: 1, gpus_per_node: 8}\n"
                       "training: {global_batch: 16}\n"
                       "search: {tensor: [1, 2], pipeline: [1], micro_batch: [1], schedule: [1f1b], recompute: [full],\n"
                       "         zero_stage: [1], expert: [1, 2, 4, 8], expert_tensor: [1, 2]}\n");
    const std::string csv = cuboid::scratch::file("cuboid_moe_search.csv").string();
    const Outcome o = run_cuboid("search '" + path + "' --csv '" + csv + "'");
    INFO(o.out << o.err);
    REQUIRE(o.code == 0);
    CHECK(has(o.out, " ep"));
    CHECK(has(o.out, " etp"));
    std::ifstream in(csv);
    std::string header;
    std::getline(in, header);
    CHECK(has(header, "parallel.expert"));
    CHECK(has(header, "parallel.expert_tensor"));
    std::set<std::string> degrees;  // the expert and expert-tensor columns of the plans written
    for (std::string line; std::getline(in, line);) {
        std::stringstream fields(line);
        std::string field;
        for (int column = 0; column < 15 && std::getline(fields, field, ','); ++column)
            if (column == 13) degrees.insert(field);
    }
    CHECK(degrees.size() >= 2);
    // t in {1, 2} x ep in {1, 2, 4, 8} x etp in {1, 2} with ep * etp dividing 8: 7 each.
    CHECK(has(o.out, "14 candidates"));
}

TEST_CASE("cuboid search covers hybrid sharding of a mixture of experts", "[cli][binary][moe]") {
    const auto search = [](const std::string& shard_group) {
        return write_file("hybrid.yaml", "name: moe-hybrid-search\n"
                                         "model: {preset: mixtral-8x7b, layers: 4}\n"
                                         "cluster: {gpu: h100-sxm-80gb, nodes: 1, gpus_per_node: 8}\n"
                                         "training: {global_batch: 16}\n"
                                         "search: {tensor: [1], pipeline: [1], micro_batch: [1], schedule: [1f1b],\n"
                                         "         recompute: [full], zero_stage: [3], expert: [2],\n"
                                         "         shard_group: " + shard_group + "}\n");
    };
    const Outcome o = run_cuboid("search '" + search("[full, 2, 4]") + "' --top 5");
    INFO(o.out << o.err);
    REQUIRE(o.code == 0);
    // Shard groups of 4 hold 2 copies of each expert (ep 2): the plan runs. Groups of 2 hold one,
    // which the plan validation refuses (counted invalid, never dropped).
    CHECK(has(o.out, "3 candidates: 1 invalid"));
    CHECK(has(o.out, "zero3 shard4 ep2"));
    const std::string bad = search("[full, two]");
    const Outcome e = run_cuboid("search '" + bad + "'");
    CHECK(e.code == 2);
    CHECK(has(e.err, bad + ":7"));
    CHECK(has(e.err, "search.shard_group"));
    CHECK(has(e.err, "expected 'full' or an integer >= 1, got 'two'"));
}
