// --set: the same checks as the file, errors located at "--set" with the key as given.
#include <catch2/catch.hpp>

#include "strategies/cli/overrides.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "tests/cli/loader_fixtures.hpp"

using namespace cuboid;
using namespace cuboid::cli;
using namespace cuboid::cli::test;

namespace {
Scenario base() {
    return load_scenario_text("model:\n  preset: tiny\n  hidden: 512\nparallel:\n  tensor: 2\n", "t.yaml", ".",
                              fake_names());
}
}  // namespace

TEST_CASE("--set overrides the file's value by dotted key", "[cli][set]") {
    Scenario s = base();
    const std::vector<std::string> sets{"parallel.tensor=8", "cluster.nodes=16", "parallel.schedule=interleaved",
                                        "training.tokens=1e12"};
    const auto keys = apply_overrides(s, sets, fake_names());
    CHECK(keys == std::vector<std::string>{"parallel.tensor", "cluster.nodes", "parallel.schedule", "training.tokens"});
    CHECK(s.parallel.tensor == 8);
    CHECK(s.cluster.nodes == 16);
    CHECK(s.parallel.schedule == Schedule::Interleaved);
    CHECK(s.training.tokens == Approx(1e12));
}

TEST_CASE("a --set preset is applied before the other --set model keys", "[cli][set]") {
    Scenario s = base();
    // Written after model.layers, the preset still comes first; so layers=7 survives, while the
    // file's hidden=512 is replaced by the preset's 256 (a preset set on the command line
    // replaces the whole model).
    const std::vector<std::string> sets{"model.layers=7", "model.preset=tiny"};
    apply_overrides(s, sets, fake_names());
    CHECK(s.model.layers == 7);
    CHECK(s.model.hidden == 256);
}

TEST_CASE("--set with an unknown key lists the section's keys", "[cli][set]") {
    Scenario s = base();
    const std::vector<std::string> sets{"parallel.tensr=8"};
    const auto e = input_error_of([&] { apply_overrides(s, sets, fake_names()); });
    check_located(e, "--set", 0, "parallel.tensr");
    CHECK(contains(e.what(), "did you mean 'parallel.tensor'?"));
    CHECK(contains(e.what(), "parallel.pipeline"));
    CHECK_FALSE(contains(e.what(), "cluster.nodes"));  // only the section the user aimed at
    const std::vector<std::string> other{"bogus=1"};
    const auto all = input_error_of([&] { apply_overrides(s, other, fake_names()); });
    check_located(all, "--set", 0, "bogus");
    CHECK(contains(all.what(), "cluster.nodes"));
}

TEST_CASE("--set with a bad value says what is allowed", "[cli][set]") {
    Scenario s = base();
    const auto check = [&](const std::string& assignment, const std::string& key, const std::string& says) {
        const std::vector<std::string> sets{assignment};
        const auto e = input_error_of([&] { apply_overrides(s, sets, fake_names()); });
        check_located(e, "--set", 0, key);
        CHECK(contains(e.what(), says));
    };
    check("parallel.tensor=abc", "parallel.tensor", "expected an integer, got 'abc'");
    check("parallel.tensor=0", "parallel.tensor", "must be >= 1");
    check("parallel.recompute=some", "parallel.recompute", "none, full, selective, stage-aware");
    check("model.preset=huge", "model.preset", "known: tiny");
    check("sweep=1", "sweep", "cannot be set with --set");
    check("training.framework=megatron-2024", "training.framework", "allowed: megatron-2021, megatron-core");
    check("model.attention=flash", "model.attention", "allowed: fused, unfused");
    check("model.attention_dropout=maybe", "model.attention_dropout", "true");
    check("model.attention_mask=sliding", "model.attention_mask", "allowed: causal, full");
    check("training.transformer_engine=maybe", "training.transformer_engine", "expected true or false");
    check("parallel.shard_group=0", "parallel.shard_group", "must be >= 1");
    check("parallel.shard_group=two", "parallel.shard_group", "expected an integer");
    check("parallel.context=0", "parallel.context", "must be >= 1");
    check("parallel.context=two", "parallel.context", "expected an integer");
    check("parallel.context_mode=ulysses", "parallel.context_mode", "allowed: ring, all-gather, all-to-all");
    check("training.fp8_recipe=nvfp4", "training.fp8_recipe", "allowed: delayed, current, mxfp8");
    check("reliability.failures_per_gpu_day=2", "reliability.failures_per_gpu_day", "must be between 0 and 1");
    check("reliability.checkpoint_gb_per_s=0", "reliability.checkpoint_gb_per_s", "must be between");
    check("reliability.checkpoint_interval_s=0.5", "reliability.checkpoint_interval_s", "must be between 1 and");
    check("reliability.restart_overhead_s=-1", "reliability.restart_overhead_s", "must be between 0 and");
    check("reliability.failures_per_gpu_day=abc", "reliability.failures_per_gpu_day", "expected a number");
    check("parallel.recompute_modules=[core_attn, flash]", "parallel.recompute_modules",
          "unknown module 'flash'; allowed: core_attn, mla_up_proj, layernorm, moe_act, mlp, moe, shared_experts");
    check("parallel.recompute_modules=[mla_up_proj, mla_up_proj]", "parallel.recompute_modules", "named twice");
    check("parallel.recompute_modules=[]", "parallel.recompute_modules", "expected a list of modules");
}

TEST_CASE("training.framework sets the stack's defaults; a key given in the file or by --set wins", "[cli][set]") {
    Scenario s = base();  // no framework key: megatron-core
    CHECK(s.model.attention == AttentionKernel::Fused);
    CHECK(s.parallel.zero_stage == 1);
    const std::vector<std::string> old{"training.framework=megatron-2021", "parallel.zero_stage=2"};
    apply_overrides(s, old, fake_names());
    CHECK(s.model.attention == AttentionKernel::Unfused);
    CHECK(s.model.attention_dropout);
    CHECK_FALSE(s.parallel.dp_overlap);
    CHECK(s.parallel.zero_stage == 2);
    // A model preset replaces the model; the stack's attention settings stay the framework's.
    const std::vector<std::string> preset{"model.preset=tiny"};
    apply_overrides(s, preset, fake_names());
    CHECK(s.model.attention == AttentionKernel::Unfused);
}

TEST_CASE("--set without '=' is an error naming the form", "[cli][set]") {
    const auto e = input_error_of([] { parse_override("parallel.tensor"); });
    CHECK(e.where().file == "--set");
    CHECK(contains(e.what(), "KEY=VALUE"));
    const auto o = parse_override(" parallel.tensor = 4 ");
    CHECK(o.key == "parallel.tensor");
    CHECK(o.value == "4");
}

TEST_CASE("--set takes list values in each of their spellings", "[cli][set]") {
    Scenario s = base();
    apply_overrides(s, std::vector<std::string>{"parallel.stage_layers=[6, 8, 8, 6]"}, fake_names());
    CHECK(s.parallel.stage_layers == std::vector<int>{6, 8, 8, 6});
    apply_overrides(s, std::vector<std::string>{"parallel.stage_layers=3,5"}, fake_names());
    CHECK(s.parallel.stage_layers == std::vector<int>{3, 5});
    for (const std::string mesh : {"4x2", "[4, 2]", "4 2"}) {
        apply_overrides(s, std::vector<std::string>{"parallel.atp_mesh=" + mesh}, fake_names());
        CHECK(s.parallel.atp_mesh == std::array<int, 2>{4, 2});
    }
    // 'x' separates mesh sizes only; a count below 1 and a third mesh size are refused.
    const auto layers = input_error_of(
        [&] { apply_overrides(s, std::vector<std::string>{"parallel.stage_layers=4x2"}, fake_names()); });
    check_located(layers, "--set", 0, "parallel.stage_layers");
    const auto zero = input_error_of(
        [&] { apply_overrides(s, std::vector<std::string>{"parallel.stage_layers=[4, 0]"}, fake_names()); });
    check_located(zero, "--set", 0, "parallel.stage_layers");
    const auto three = input_error_of(
        [&] { apply_overrides(s, std::vector<std::string>{"parallel.atp_mesh=2x2x2"}, fake_names()); });
    CHECK(contains(three.what(), "expected two mesh sizes"));
    for (const std::string modules : {"[mla_up_proj, core_attn]", "mla_up_proj,core_attn", "mla_up_proj core_attn"}) {
        apply_overrides(s, std::vector<std::string>{"parallel.recompute_modules=" + modules}, fake_names());
        CHECK(s.parallel.recompute_modules.core_attn);
        CHECK(s.parallel.recompute_modules.mla_up_proj);
    }
    apply_overrides(s, std::vector<std::string>{"parallel.recompute_modules=mla_up_proj"}, fake_names());
    CHECK_FALSE(s.parallel.recompute_modules.core_attn);
}

TEST_CASE("--set values must be UTF-8", "[cli][set]") {
    Scenario s = base();
    const std::vector<std::string> sets{"name=caf\xE9"};
    const auto e = input_error_of([&] { apply_overrides(s, sets, fake_names()); });
    CHECK(e.where().key == "name");
    CHECK_THAT(e.what(), Catch::Contains("--set") && Catch::Contains("not valid UTF-8"));
}
