// A check of the scenario that, when it fails, reports at the offending key (file, line, key) with
// the reason: the one way plan validation speaks to the user.
#pragma once

#include <string>

#include "hardware_models/errors.hpp"
#include "strategies/scenario.hpp"

namespace cuboid {

class PlanChecker {
public:
    explicit PlanChecker(const Scenario& sc) : sc_(sc) {}
    void require(bool ok, const std::string& key, const std::string& why) const {
        if (!ok) throw InputError(sc_.where(key), why);
    }

private:
    const Scenario& sc_;
};

}  // namespace cuboid
