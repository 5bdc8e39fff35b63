#include "strategies/host_dispatch.hpp"

#include <array>
#include <vector>

#include "hardware_models/profile.hpp"
#include "strategies/program_streams.hpp"

namespace cuboid {
namespace {

constexpr std::uint32_t kNone = 0xffffffffU;

bool pipeline_send(sim::StreamId stream) {
    return stream == stream::kPipelineSend || stream == stream::kPipelineSendBack;
}

// The ops the host has issued last on each GPU stream: waiting for them all is waiting for the
// device (each stream runs in order); with several chunks, the pipeline sends aside
// (PipelineChunks).
class IssuedOps {
public:
    void issued(sim::StreamId stream, std::uint32_t op) { last_[stream] = op; }
    std::vector<std::uint32_t> synchronised(PipelineChunks chunks) const {
        std::vector<std::uint32_t> ops;
        for (std::size_t s = 0; s < last_.size(); ++s) {
            if (last_[s] == kNone) continue;
            if (chunks == PipelineChunks::Several && pipeline_send(static_cast<sim::StreamId>(s))) continue;
            ops.push_back(last_[s]);
        }
        return ops;
    }

private:
    std::array<std::uint32_t, stream::kCount> last_ = filled();
    static std::array<std::uint32_t, stream::kCount> filled() {
        std::array<std::uint32_t, stream::kCount> a{};
        a.fill(kNone);
        return a;
    }
};

// The dispatch op of `op`: it carries the op's label and category (a communication category is
// priced with the communication dispatch time) and nothing the GPU would execute.
sim::Op dispatch_of(const sim::Op& op) {
    sim::Op h;
    h.kind = sim::OpKind::HostDispatch;
    h.category = op.category;
    h.precision = op.precision;
    h.stream = stream::kHost;
    h.label = op.label;
    return h;
}

// Does the host wait for the device before issuing `op` (given the op issued just before)?
bool waits_before(const sim::Op& op, const sim::Op* previous, const hw::HostDispatchCosts& host) {
    if (host.sync_optimizer && op.kind == sim::OpKind::Optimizer) return true;
    return host.sync_pipeline && previous && previous->kind == sim::OpKind::Recv;
}

sim::OpList transform(const sim::OpList& in, const hw::HostDispatchCosts& host, PipelineChunks chunks) {
    sim::OpList out;
    out.resident = in.resident;
    out.ops.reserve(2 * in.ops.size());
    out.deps.reserve(in.deps.size() + 2 * in.ops.size());
    sim::OpListBuilder b(out);
    std::vector<std::uint32_t> moved(in.ops.size());  // old op -> its index in `out`
    IssuedOps issued;
    std::vector<std::uint32_t> deps;
    for (std::size_t i = 0; i < in.ops.size(); ++i) {
        const sim::Op& op = in.ops[i];
        const sim::Op* previous = i > 0 ? &in.ops[i - 1] : nullptr;
        const std::uint32_t h =
            b.add(dispatch_of(op), waits_before(op, previous, host) ? issued.synchronised(chunks) : std::vector<std::uint32_t>{});
        deps.assign({h});
        for (std::uint32_t d = op.first_dep; d < op.first_dep + op.dep_count; ++d) deps.push_back(moved[in.deps[d]]);
        moved[i] = b.add(op, deps);
        issued.issued(op.stream, moved[i]);
    }
    return out;
}

}  // namespace

PipelineChunks pipeline_chunks(const ParallelPlan& plan) {
    return plan.virtual_stages > 1 ? PipelineChunks::Several : PipelineChunks::One;
}

sim::Program with_host_dispatch(sim::Program program, const hw::HostDispatchCosts& host, PipelineChunks chunks) {
    for (sim::OpList& list : program.op_lists) list = transform(list, host, chunks);
    return program;
}

sim::Program with_host_dispatch(sim::Program program, const hw::Hardware& hardware, PipelineChunks chunks) {
    const hw::HardwareProfile* profile = hardware.profile();
    if (!profile || !profile->host) return program;
    return with_host_dispatch(std::move(program), *profile->host, chunks);
}

}  // namespace cuboid
