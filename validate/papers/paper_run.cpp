// Running one paper check and judging its speed-up.
#include <filesystem>

#include <fmt/core.h>

#include "strategies/cli/overrides.hpp"
#include "strategies/cli/scenario_loader.hpp"
#include "strategies/run.hpp"
#include "strategies/tensor_modes/atp_choice.hpp"
#include "validate/papers/paper_checks.hpp"

namespace cuboid::validate {
namespace {

Scenario load(const std::string& path, const std::vector<std::string>& sets, const cli::NameResolvers& names) {
    Scenario s = cli::load_scenario_file(path, names);
    cli::apply_overrides(s, sets, names);
    cli::check_complete(s);
    return s;
}

// One line about the ATP mesh cuboid's cost model picks for this cluster (whether or not the ATP
// layer program can run yet).
std::string atp_note(const Scenario& s) {
    try {
        return choose_atp(s, s.parallel.tensor).why;
    } catch (const std::exception& e) {
        return std::string("mesh choice failed: ") + e.what();
    }
}

}  // namespace

std::optional<double> PaperResult::speedup() const {
    if (!baseline_s || !strategy_s || *strategy_s <= 0.0) return std::nullopt;
    return *baseline_s / *strategy_s;
}

std::string PaperResult::verdict() const {
    const auto s = speedup();
    if (!s) return "not available: " + failure;
    if (check.band_lo <= 0.0 && check.band_hi <= 0.0)
        return *s > 1.0 ? "faster (as the paper)" : "not faster (paper: faster)";
    if (*s < check.band_lo) return *s > 1.0 ? "below band (faster)" : "below band (not faster)";
    if (*s > check.band_hi) return "above band";
    return "in band";
}

PaperResult run_paper_check(const PaperCheck& check, const cli::NameResolvers& names) {
    PaperResult r{check, std::filesystem::path(check.scenario).stem().string(), {}, {}, {}, {}};
    try {
        const Scenario base = load(check.scenario, check.baseline_sets, names);
        r.setup = fmt::format("{} ({} GPUs, t={} p={})", base.name, base.cluster.gpus(), base.parallel.tensor,
                              base.parallel.pipeline);
        r.baseline_s = run_scenario(base).iteration_time_s;
        const Scenario strategy = load(check.scenario, check.strategy_sets, names);
        if (strategy.parallel.tensor_mode == TensorMode::Atp) r.note = atp_note(strategy);
        r.strategy_s = run_scenario(strategy).iteration_time_s;
    } catch (const std::exception& e) {
        r.failure = e.what();
    }
    return r;
}

}  // namespace cuboid::validate
