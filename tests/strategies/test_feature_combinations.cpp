// A fixed sample of combinations of the plan's features, each either refused at a key (InputError,
// the user's error) or run to its end: a deadlock, a logic error or any other exception is a defect
// that the user would see as an internal error. The host model's synchronisation deadlocked every
// interleaved and ZB-V plan before it left the pipeline sends alone (host_dispatch.hpp); a sample
// like this one found it.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "hardware_models/errors.hpp"
#include "strategies/run.hpp"
#include "tests/scratch_dir.hpp"
#include "tests/strategies/strategy_fixtures.hpp"

using namespace cuboid;

namespace {

// A host section as the vTrain node's profile has, both synchronisation points.
std::string host_profile() {
    const auto path = scratch::file("host-dispatch-profile.yaml");
    std::ofstream(path) << "format: cuboid-hardware-profile/1\nhost:\n  dispatch_us: 20\n  sync: [optimizer, pipeline]\n";
    return path.string();
}

template <class T, std::size_t N>
const T& pick(std::mt19937& rng, const T (&options)[N]) {
    return options[rng() % N];
}

struct Sampled {
    Scenario scenario;
    std::string description;
};

// Megatron-Core's stack on two nodes of 8 H100s: context, experts, ZeRO, every schedule, the
// recompute policies and modules, fp8, the host model.
Sampled modern_sample(std::mt19937& rng, const std::string& host) {
    Scenario sc = test::te_fp8_scenario(1, 8, 8);
    sc.model.hidden = 256;
    sc.model.seq_len = 256;
    sc.model.kv_heads = 2;
    sc.cluster.gpu = "h100-sxm-80gb";
    sc.cluster.nodes = 2;
    sc.cluster.gpus_per_node = 8;
    sc.cluster.nic_gbps = 400;
    sc.training.global_batch = 32;
    const struct {
        Schedule schedule;
        int chunks;
    } schedules[] = {{Schedule::GPipe, 1},        {Schedule::OneFOneB, 1},     {Schedule::Interleaved, 2},
                     {Schedule::ShiftedCriticalPath, 1}, {Schedule::ZeroBubbleH1, 1}, {Schedule::ZeroBubbleV, 2}};
    const auto& s = pick(rng, schedules);
    sc.parallel.schedule = s.schedule;
    sc.parallel.virtual_stages = s.chunks;
    sc.parallel.tensor = pick(rng, {1, 2});
    sc.parallel.sequence_parallel = sc.parallel.tensor > 1;
    sc.parallel.pipeline = pick(rng, {2, 4});
    sc.parallel.data = 0;
    const int context = pick(rng, {1, 2, 2, 2});
    sc.parallel.context = context;
    sc.parallel.context_mode = pick(rng, {ContextMode::Ring, ContextMode::AllGather, ContextMode::AllToAll});
    sc.parallel.zero_stage = pick(rng, {0, 1, 3});
    const bool experts = pick(rng, {false, true});
    if (experts) {
        sc.model.experts = 8;
        sc.model.experts_per_token = 2;
        sc.model.expert_ffn_hidden = 256;
        sc.model.shared_experts = pick(rng, {0, 1});
        sc.parallel.expert = 2;
    }
    sc.parallel.recompute = pick(rng, {Recompute::None, Recompute::Full, Recompute::Selective, Recompute::StageAware});
    if (sc.parallel.recompute == Recompute::Selective && experts) {
        sc.parallel.recompute_modules = {true, false, true, true, false, true, sc.model.shared_experts > 0};
        sc.key_lines["parallel.recompute_modules"] = 1;
    }
    sc.training.precision = pick(rng, {sim::Precision::Bf16, sim::Precision::Fp8});
    const bool with_host = pick(rng, {false, true});
    if (with_host) sc.cluster.profile = host;
    std::ostringstream d;
    d << "modern: schedule " << static_cast<int>(s.schedule) << " t" << sc.parallel.tensor << " p"
      << sc.parallel.pipeline << " c" << context << " mode " << static_cast<int>(sc.parallel.context_mode) << " zero "
      << sc.parallel.zero_stage << (experts ? " experts" : "") << " recompute "
      << static_cast<int>(sc.parallel.recompute) << " fp8 " << (sc.training.precision == sim::Precision::Fp8)
      << (with_host ? " host" : "");
    return {sc, d.str()};
}

// Megatron-LM 2021 on four nodes of 8 A100s: the tensor modes of the papers, Merak's sub-batches
// and partitioner, the overlap switches, the host model.
Sampled papers_sample(std::mt19937& rng, const std::string& host) {
    Scenario sc = test::tiny_scenario(1, 1, 1, 16, 8);
    sc.model.hidden = 256;
    sc.model.heads = 8;
    sc.model.seq_len = 256;
    sc.cluster.nodes = 4;
    sc.cluster.gpus_per_node = 8;
    sc.cluster.nics_per_node = 4;
    sc.cluster.oversubscription = 2.0;
    sc.training.micro_batch = 4;
    sc.training.global_batch = 64;
    sc.training.precision = sim::Precision::Fp16;
    const struct {
        TensorMode mode;
        int t;
    } modes[] = {{TensorMode::OneD, 2}, {TensorMode::OneD, 8}, {TensorMode::TwoD, 4},
                 {TensorMode::ThreeD, 8}, {TensorMode::Atp, 4}, {TensorMode::Atp, 8}};
    const auto& m = pick(rng, modes);
    sc.parallel.tensor_mode = m.mode;
    sc.parallel.tensor = m.t;
    sc.parallel.pipeline = pick(rng, {1, 2, 4});
    sc.parallel.data = 0;
    const Schedule schedules[] = {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved,
                                  Schedule::ShiftedCriticalPath, Schedule::ZeroBubbleH1};
    sc.parallel.schedule = pick(rng, schedules);
    sc.parallel.virtual_stages = sc.parallel.schedule == Schedule::Interleaved ? 2 : 1;
    sc.parallel.zero_stage = pick(rng, {0, 1, 2});
    sc.parallel.recompute = pick(rng, {Recompute::None, Recompute::Full, Recompute::Selective, Recompute::StageAware});
    sc.parallel.dp_overlap = pick(rng, {false, true});
    sc.parallel.tp_backward_overlap = pick(rng, {false, true});
    sc.parallel.overlap_chunks = pick(rng, {1, 2});
    sc.parallel.partition = pick(rng, {PartitionMethod::Uniform, PartitionMethod::Auto});
    const bool with_host = pick(rng, {false, true});
    if (with_host) sc.cluster.profile = host;
    std::ostringstream d;
    d << "papers: mode " << static_cast<int>(m.mode) << " t" << m.t << " p" << sc.parallel.pipeline << " schedule "
      << static_cast<int>(sc.parallel.schedule) << " zero " << sc.parallel.zero_stage << " recompute "
      << static_cast<int>(sc.parallel.recompute) << " chunks " << sc.parallel.overlap_chunks
      << (with_host ? " host" : "");
    return {sc, d.str()};
}

}  // namespace

TEST_CASE("a sample of feature combinations runs to its end or is refused at a key", "[combinations]") {
    const std::string host = host_profile();
    std::mt19937 rng(20261207);  // a fixed sample: the same combinations on every run
    int ran = 0, refused = 0;
    for (int i = 0; i < 160; ++i) {
        const Sampled s = i % 4 == 3 ? papers_sample(rng, host) : modern_sample(rng, host);
        INFO(s.description);
        try {
            const RunResult r = run_scenario(s.scenario);
            CHECK(r.iteration_time_s > 0.0);
            ++ran;
        } catch (const InputError&) {
            ++refused;  // the user's error, named at its key
        }
    }
    // The sample must exercise the simulator, not only the checks.
    CHECK(ran >= 60);
    CHECK(ran + refused == 160);
}
