#include "validate/report/prediction.hpp"

#include <algorithm>
#include <array>
#include <vector>

#include "hardware_models/catalog.hpp"
#include "strategies/host_dispatch.hpp"
#include "strategies/layout.hpp"
#include "strategies/program_builder.hpp"
#include "validate/plan/plan_summary.hpp"

namespace cuboid::validate {
namespace {

// Sums op times per kind over all ranks and keeps per-op times of the first ranks. A compute op
// lasts from its start to its end; a communication op from its post (the moment it is ready on
// its stream, when a GPU executor's start event fires) to its end.
class OpTimes : public sim::SimObserver {
public:
    explicit OpTimes(const sim::Program& p) : program_(p) {
        const auto ranks = std::min<std::size_t>(p.ranks.size(), kPerOpRanks);
        for (std::size_t r = 0; r < p.ranks.size(); ++r) {
            const std::size_t n = p.op_lists[p.ranks[r].op_list].ops.size();
            start_.emplace_back(n, Time(0));
            if (r < ranks) seconds_.emplace_back(n, 0.0);
        }
    }
    void compute_started(std::uint32_t rank, std::uint32_t op, Time t) override { start_[rank][op] = t; }
    void compute_finished(std::uint32_t rank, std::uint32_t op, Time t) override { finish(rank, op, t); }
    void comm_posted(std::uint32_t rank, std::uint32_t op, Time t) override { start_[rank][op] = t; }
    void comm_finished(std::uint32_t rank, std::uint32_t op, Time t) override { finish(rank, op, t); }

    void fill(Figures& f) const {
        const double ranks = static_cast<double>(program_.ranks.size());
        for (int k = 0; k < kOpKindCount; ++k)
            if (kind_seconds_[std::size_t(k)] > 0.0)
                f.op_kind_seconds[op_kind_name(static_cast<sim::OpKind>(k))] = kind_seconds_[std::size_t(k)] / ranks;
        for (std::uint32_t r = 0; r < seconds_.size(); ++r) {
            const auto& ops = program_.op_lists[program_.ranks[r].op_list].ops;
            for (std::uint32_t i = 0; i < seconds_[r].size(); ++i)
                // GPU compute ops only: the executors do not time the host's dispatch ops.
                if (!sim::is_communication(ops[i].kind) && ops[i].kind != sim::OpKind::HostDispatch)
                    f.ops.push_back({r, i, seconds_[r][i]});
        }
    }

private:
    void finish(std::uint32_t rank, std::uint32_t op, Time t) {
        const double s = to_seconds(t - start_[rank][op]);
        const auto kind = program_.op_lists[program_.ranks[rank].op_list].ops[op].kind;
        kind_seconds_[static_cast<std::size_t>(kind)] += s;
        if (rank < seconds_.size()) seconds_[rank][op] = s;
    }

    const sim::Program& program_;
    std::vector<std::vector<Time>> start_;
    std::vector<std::vector<double>> seconds_;
    std::array<double, kOpKindCount> kind_seconds_{};
};

sim::Program build(const Scenario& sc, const hw::Hardware& hardware) {
    const Layout layout = validate_plan(sc);
    const auto checkpointed = checkpointed_layers(sc, layout, BuildOptions{hardware.gpu().memory_capacity});
    // The program run_scenario simulates (with the host's dispatch ops when the profile has a
    // `host:` section), so that op indices agree between prediction, observer and executors.
    return with_host_dispatch(build_program_checkpointing(sc, layout, checkpointed), hardware,
                              pipeline_chunks(sc.parallel));
}

}  // namespace

sim::Program scenario_program(const Scenario& scenario) {
    const auto hardware = hw::Hardware::build(scenario.cluster, hw::Catalog::load_builtin());
    return build(scenario, *hardware);
}

Prediction predict(const Scenario& scenario) {
    const auto hardware = hw::Hardware::build(scenario.cluster, hw::Catalog::load_builtin());
    Prediction p;
    p.program = build(scenario, *hardware);
    OpTimes times(p.program);
    sim::SimObserver* observers[] = {&times};
    RunOptions options;
    options.observers = observers;
    options.hardware = hardware;
    p.result = run_scenario(scenario, options);
    const RunResult& r = p.result;
    Figures& f = p.figures;
    f.device = hardware->gpu().name;
    f.gpus = r.gpus;
    f.iteration_time_s = r.iteration_time_s;
    f.peak_memory_bytes = r.peak_memory_bytes;
    f.breakdown = r.breakdown;
    times.fill(f);
    p.tokens_per_iteration = r.tokens_per_s * r.iteration_time_s;
    return p;
}

}  // namespace cuboid::validate
