// The flows on one link of the flow network, with their weights on it.
//
// A list in attachment order, where removing an entry moves the last one into its place (as
// std::vector with swap-and-pop; the network's results depend on this order, which decides the
// order of the component search and so of water-filling's sums). Up to two entries live inside the
// list itself: most links carry one or two flows (a ring's own NIC hop, a hop two rings share), and
// a component search that reads them from the link's own state, not from a heap block of their
// own, saves a cache miss per link, which was half of the search's time on clusters of 65,536 GPUs.
#pragma once

#include <cstdint>
#include <memory>

namespace cuboid::sim {

struct OnLink {
    std::uint32_t flow;
    double weight;  // bytes on the link per byte of the flow
};

class LinkFlows {
public:
    LinkFlows() = default;
    LinkFlows(const LinkFlows&) = delete;
    LinkFlows& operator=(const LinkFlows&) = delete;
    LinkFlows(LinkFlows&& other) noexcept { take(other); }
    LinkFlows& operator=(LinkFlows&& other) noexcept {
        if (this != &other) take(other);
        return *this;
    }

    std::uint32_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    OnLink* begin() { return data(); }
    OnLink* end() { return data() + size_; }
    const OnLink* begin() const { return data(); }
    const OnLink* end() const { return data() + size_; }
    OnLink& back() { return data()[size_ - 1]; }

    void push_back(const OnLink& entry) {
        if (size_ == capacity_) grow();
        data()[size_++] = entry;
    }
    void pop_back() { --size_; }

private:
    static constexpr std::uint32_t kInline = 2;

    OnLink* data() { return heap_ ? heap_.get() : local_; }
    const OnLink* data() const { return heap_ ? heap_.get() : local_; }

    void grow() {
        const std::uint32_t capacity = capacity_ * 2;
        auto bigger = std::make_unique<OnLink[]>(capacity);
        for (std::uint32_t i = 0; i < size_; ++i) bigger[i] = data()[i];
        heap_ = std::move(bigger);
        capacity_ = capacity;
    }

    void take(LinkFlows& other) {
        size_ = other.size_;
        capacity_ = other.capacity_;
        heap_ = std::move(other.heap_);
        for (std::uint32_t i = 0; i < kInline; ++i) local_[i] = other.local_[i];
        other.size_ = 0;
        other.capacity_ = kInline;
    }

    OnLink local_[kInline] = {};
    std::unique_ptr<OnLink[]> heap_;
    std::uint32_t size_ = 0;
    std::uint32_t capacity_ = kInline;
};

}  // namespace cuboid::sim
