#include "hardware_models/profile_host.hpp"

#include "hardware_models/catalog_parse.hpp"

namespace cuboid::hw {

// Dispatch times above 100 ms per op are no host overhead but a mistake in the unit.
static constexpr double kMaxDispatchUs = 1e5;

static void parse_sync(const YamlReader& r, HostDispatchCosts& h) {
    for (const auto& item : r.items()) {
        const std::string s = item.text();
        if (s == "optimizer") h.sync_optimizer = true;
        else if (s == "pipeline") h.sync_pipeline = true;
        else item.fail("unknown host sync point '" + s + "' (allowed: optimizer, pipeline)");
    }
}

HostDispatchCosts parse_host_dispatch(const YamlReader& r) {
    if (!r.is_map()) r.fail("the host section is a map (dispatch_us, comm_dispatch_us, sync)");
    for (const auto& [key, value] : r.entries())
        if (key != "dispatch_us" && key != "comm_dispatch_us" && key != "sync")
            value.fail("unknown key '" + key + "' in host (allowed: dispatch_us, comm_dispatch_us, sync)");
    HostDispatchCosts h;
    const double compute_us = number_in(r, "dispatch_us", 0.0, kMaxDispatchUs);
    h.compute = microseconds(compute_us);
    h.communication = r.find("comm_dispatch_us") ? microseconds(number_in(r, "comm_dispatch_us", 0.0, kMaxDispatchUs))
                                                 : h.compute;
    if (auto s = r.find("sync")) parse_sync(*s, h);
    return h;
}

}  // namespace cuboid::hw
