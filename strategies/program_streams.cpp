// The names of program_streams.hpp's streams and classes.
#include "strategies/program_streams.hpp"

namespace cuboid {

void name_streams_and_classes(sim::Program& program) {
    // Indexed by stream id; a test checks the order against the constants.
    program.stream_names = {"compute",      "tensor-comm",  "pipeline-send", "pipeline-recv",
                            "data-comm",    "host",         "param-gather",  "context-comm",
                            "pipeline-send-back", "offload", "reload"};
    // Indexed by class (comm_class::k*); the layer's classes form lockstep runs.
    program.comm_classes = {{"tensor", true},     {"context", true},  {"expert", true},
                            {"pipeline", false},  {"offload", false}, {"data", false}};
}

}  // namespace cuboid
