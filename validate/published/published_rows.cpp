#include <fmt/core.h>

#include "validate/published/csv_table.hpp"
#include "validate/published/published_check.hpp"
#include "validate/published/row_simulation.hpp"

namespace cuboid::validate {
namespace {

// Measured iteration time of a Megatron SC'21 row: the paper reports FLOP/s per GPU with its
// own FLOP count (recompute included), F = 96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h)).
double megatron_measured_seconds(const CsvTable& t, std::size_t row) {
    const double B = t.number(row, "global_batch"), s = t.number(row, "seq_len");
    const double l = t.number(row, "layers"), h = t.number(row, "hidden"), V = t.number(row, "vocab");
    const double flops = 96.0 * B * s * l * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * l * h));
    return flops / (t.number(row, "measured_tflops_per_gpu") * 1e12 * t.number(row, "gpus"));
}

}  // namespace

std::vector<CheckRow> run_megatron_rows(const CheckOptions& options) {
    const CsvTable table = CsvTable::read(options.data_dir + "/megatron_sc21_table1.csv");
    std::vector<RowJob> jobs;
    for (std::size_t r = 0; r < table.rows(); ++r) {
        const std::string name = table.text(r, "name");
        CheckRow row{"megatron-sc21", name,
                     fmt::format("t={} p={} d={} mb={}", table.text(r, "tensor"), table.text(r, "pipeline"),
                                 table.text(r, "data"), table.text(r, "micro_batch")),
                     0.0, megatron_measured_seconds(table, r), {}};
        jobs.push_back({row, options.scenario_dir + "/megatron_sc21/" + name + ".yaml", {}});
    }
    return simulate_rows(jobs, options);
}

std::vector<CheckRow> run_vtrain_rows(const CheckOptions& options) {
    const CsvTable table = CsvTable::read(options.data_dir + "/vtrain/ground_truth_multi.csv");
    std::vector<RowJob> jobs;
    for (std::size_t r = 0; r < table.rows(); ++r) {
        const std::string size = table.text(r, "Parameters (billion)");
        const std::string t = table.text(r, "tensor parallelism"), p = table.text(r, "pipeline parallelism");
        const std::string d = table.text(r, "data parallelism"), mb = table.text(r, "micro batch");
        CheckRow row{"vtrain", "gpt-" + size + "b", fmt::format("t={} p={} d={} mb={}", t, p, d, mb), 0.0,
                     table.number(r, "iteration time (ms)") * 1e-3, {}};
        jobs.push_back({row, options.scenario_dir + "/vtrain/gpt-" + size + "b.yaml",
                        {"parallel.tensor=" + t, "parallel.pipeline=" + p, "parallel.data=" + d,
                         "training.micro_batch=" + mb}});
    }
    return simulate_rows(jobs, options);
}

std::vector<CheckRow> run_single_rows(const CheckOptions& options) {
    const CsvTable table = CsvTable::read(options.data_dir + "/vtrain/ground_truth_single.csv");
    std::vector<RowJob> jobs;
    for (std::size_t r = 0; r < table.rows(); ++r) {
        const auto col = [&](const char* name) { return table.text(r, name); };
        const std::string t = col("tensor parallelism"), p = col("pipeline parallelism");
        const std::string d = col("data parallelism"), mb = col("micro batch");
        CheckRow row{"vtrain-single",
                     fmt::format("h{}-l{}-s{}", col("hidden size"), col("# layers"), col("sequence length")),
                     fmt::format("t={} p={} d={} mb={} gb={}", t, p, d, mb, col("global batch")), 0.0,
                     table.number(r, "iteration time (ms)") * 1e-3, {}};
        jobs.push_back({row, options.data_dir + "/vtrain/single_node.yaml", {
            "cluster.gpus_per_node=" + col("# GPUs"), "model.hidden=" + col("hidden size"),
            "model.heads=" + col("attention heads"), "model.layers=" + col("# layers"),
            "model.seq_len=" + col("sequence length"), "training.global_batch=" + col("global batch"),
            "training.micro_batch=" + mb, "parallel.tensor=" + t, "parallel.pipeline=" + p, "parallel.data=" + d}});
    }
    return simulate_rows(jobs, options);
}

}  // namespace cuboid::validate
