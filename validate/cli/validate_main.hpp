// cuboid-validate SCENARIO.yaml [--profile P] [--iterations N] [--warmup N] [--csv F] [--json F]
//                 [--measured FILE] [--write-measured FILE] [--timeout S] [--dry-run]
// Predicts the scenario, measures the same program on this machine's GPUs (or reads a measured
// file) and prints predicted against measured with the errors and a verdict (docs/validation.md).
// Under mpirun (OMPI_COMM_WORLD_SIZE or PMI_SIZE > 1) every process is one rank and rank 0 reports.
// Exit status: 0 done, 1 no GPU, 2 bad input (or mpirun with a build without MPI), 3 a CUDA /
// NCCL failure while measuring, or ranks that did not finish within --timeout.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace cuboid::validate {

int validate_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace cuboid::validate
