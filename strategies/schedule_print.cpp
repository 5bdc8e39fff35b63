#include "strategies/schedule_print.hpp"

#include <sstream>

#include "strategies/layout.hpp"
#include "strategies/schedule.hpp"

namespace cuboid {

std::string describe_schedule(const Scenario& sc) {
    const Layout l = validate_plan(sc);
    std::ostringstream out;
    for (int s = 0; s < l.pipeline; ++s) {
        const auto steps = stage_schedule(sc.parallel.schedule, l.pipeline, l.micro_batches, l.virtual_stages, s);
        out << "s" << s << ": " << step_words(steps, l.virtual_stages > 1) << "\n";
    }
    return out.str();
}

}  // namespace cuboid
