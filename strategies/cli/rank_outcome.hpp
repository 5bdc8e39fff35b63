// How a command split over MPI ranks (`cuboid sweep`, `cuboid search`) ends: every rank reaches
// the gather whatever happened to it before (a rank that fails sends its failure instead of
// leaving rank 0 waiting), and every rank reaches the final barrier, rank 0 after its outputs.
#pragma once

#include <exception>
#include <string>

#include "hardware_models/errors.hpp"
#include "sim/output_file.hpp"
#include "strategies/cli/run_command.hpp"
#include "strategies/cli/sweep_mpi.hpp"

namespace cuboid::cli {

// What one rank's part ended with: bad input (the same on every rank, said once by rank 0), an
// output rank 0 could not open, or another failure (`what`; empty: none).
struct RankFailure {
    std::exception_ptr input_error;
    std::exception_ptr output_error;
    std::string what;
    bool failed() const { return !what.empty(); }
};

// Runs `work`, catching what it throws.
template <class Work>
RankFailure attempted(Work&& work) {
    RankFailure f;
    try {
        work();
    } catch (const InputError& e) {
        f.input_error = std::current_exception();
        f.what = e.what();
    } catch (const sim::OutputError& e) {
        f.output_error = std::current_exception();
        f.what = e.what();
    } catch (const std::exception& e) {
        f.what = e.what();
    }
    return f;
}

// After the gather. The other ranks wait at the barrier and exit with their own outcome. Rank 0
// rethrows its bad input or output error, else runs `write` (which decides what another failure
// means) and returns its code; it reaches the barrier either way.
template <class Write>
int concluded(const MpiSession& mpi, const RankFailure& mine, Write&& write) {
    if (mpi.rank() != 0) {
        mpi.barrier();
        return !mine.failed() ? kExitOk : (mine.input_error ? kExitBadInput : kExitFailure);
    }
    int code = kExitFailure;
    try {
        if (mine.input_error) std::rethrow_exception(mine.input_error);
        if (mine.output_error) std::rethrow_exception(mine.output_error);
        code = write();
    } catch (...) {
        mpi.barrier();
        throw;
    }
    mpi.barrier();
    return code;
}

}  // namespace cuboid::cli
