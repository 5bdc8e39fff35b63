#include "strategies/cli/search_share.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "strategies/cli/sweep_outcome_codec.hpp"

namespace cuboid::cli {
namespace {

using nlohmann::json;

json counts_to_json(const SearchCounts& c) {
    return json::array({c.candidates, c.invalid, c.pruned_memory, c.pruned_bound, c.simulated, c.not_reached});
}

SearchCounts counts_from_json(const json& j) {
    return SearchCounts{j.at(0).get<std::size_t>(), j.at(1).get<std::size_t>(), j.at(2).get<std::size_t>(),
                        j.at(3).get<std::size_t>(), j.at(4).get<std::size_t>(), j.at(5).get<std::size_t>()};
}

}  // namespace

std::vector<std::uint8_t> encode_search_share(const SearchResult& r, const std::string& failure) {
    SweepShare plans{r.candidate, r.plans.outcomes, failure, r.plans.interrupted_by};
    return json::to_cbor(json{{"plans", json::binary(encode_share(plans))},
                              {"bounds", r.bound_s},
                              {"counts", counts_to_json(r.counts)},
                              {"first_invalid", r.first_invalid},
                              {"first_error", r.first_error},
                              {"stopped", r.plans.stopped},
                              {"check_wall_s", r.check_wall_s}});
}

SearchShare decode_search_share(const std::vector<std::uint8_t>& bytes) {
    try {
        const json j = json::from_cbor(bytes);
        SweepShare plans = decode_share(j.at("plans").get_binary());
        SearchShare s;
        s.failure = plans.failure;
        SearchResult& r = s.result;
        r.candidate = std::move(plans.indices);
        r.plans.outcomes = std::move(plans.outcomes);
        r.plans.interrupted_by = plans.signal;
        r.bound_s = j.at("bounds").get<std::vector<double>>();
        if (r.bound_s.size() != r.candidate.size()) throw std::runtime_error("a rank sent bounds that match no plan");
        r.counts = counts_from_json(j.at("counts"));
        r.first_invalid = j.at("first_invalid").get<std::string>();
        r.first_error = j.at("first_error").get<std::string>();
        r.plans.stopped = j.at("stopped").get<std::string>();
        r.check_wall_s = j.at("check_wall_s").get<double>();
        return s;
    } catch (const json::exception& e) {
        throw std::runtime_error(std::string("a rank's search could not be read: ") + e.what());
    }
}

SearchResult merge_search_shares(std::vector<SearchShare> shares, const SearchCandidates& candidates,
                                 const SearchResult& first) {
    struct Entry {
        double bound;
        std::size_t candidate, share, plan;
    };
    std::vector<Entry> entries;
    SearchResult m;
    m.plans.name = first.plans.name;
    m.plans.source_file = first.plans.source_file;
    m.plans.axes = candidates.axes;
    m.plans.threads = first.plans.threads;
    m.plans.clusters = first.plans.clusters;
    m.plans.ranks = static_cast<int>(shares.size());
    m.check_wall_s = first.check_wall_s;
    for (std::size_t s = 0; s < shares.size(); ++s) {
        const SearchShare& share = shares[s];
        if (!share.failure.empty()) throw std::runtime_error(fmt::format("rank {}: {}", s, share.failure));
        const SearchResult& r = share.result;
        for (std::size_t k = 0; k < r.candidate.size(); ++k) {
            if (r.candidate[k] >= candidates.points.size())
                throw std::runtime_error(fmt::format("rank {} sent a candidate index out of range", s));
            entries.push_back({r.bound_s[k], r.candidate[k], s, k});
        }
        SearchCounts& c = m.counts;
        c.candidates += r.counts.candidates;
        c.invalid += r.counts.invalid;
        c.pruned_memory += r.counts.pruned_memory;
        c.pruned_bound += r.counts.pruned_bound;
        c.simulated += r.counts.simulated;
        c.not_reached += r.counts.not_reached;
        if (m.first_invalid.empty()) m.first_invalid = r.first_invalid;
        if (m.first_error.empty()) m.first_error = r.first_error;
        if (m.plans.stopped.empty()) m.plans.stopped = r.plans.stopped;
        if (m.plans.interrupted_by == 0) m.plans.interrupted_by = r.plans.interrupted_by;
    }
    // Bound order, as one process simulates them (its plans are listed in the order taken).
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return std::tie(a.bound, a.candidate) < std::tie(b.bound, b.candidate);
    });
    for (const Entry& e : entries) {
        m.plans.points.push_back(candidates.points[e.candidate]);
        m.plans.outcomes.push_back(std::move(shares[e.share].result.plans.outcomes[e.plan]));
        m.bound_s.push_back(e.bound);
        m.candidate.push_back(e.candidate);
    }
    return m;
}

}  // namespace cuboid::cli
