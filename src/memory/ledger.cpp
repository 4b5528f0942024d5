#include "memory/ledger.h"

#include <algorithm>
#include <cassert>
#include <map>
#include <tuple>
#include <utility>

namespace specd::memory {

namespace {

size_t index_of(Bucket bucket) { return static_cast<size_t>(bucket); }
size_t index_of(OwnerKind kind) { return static_cast<size_t>(kind); }

} // namespace

const char * bucket_name(Bucket bucket) {
    switch (bucket) {
        case Bucket::weights:      return "weights";
        case Bucket::kv_target:    return "kv_target";
        case Bucket::kv_draft:     return "kv_draft";
        case Bucket::compute:      return "compute";
        case Bucket::prompt_cache: return "prompt_cache";
        case Bucket::images:       return "images";
        case Bucket::grammar:      return "grammar";
        case Bucket::request:      return "request";
    }
    return "unknown";
}

const char * owner_kind_name(OwnerKind kind) {
    switch (kind) {
        case OwnerKind::model:   return "model";
        case OwnerKind::request: return "request";
        case OwnerKind::cache:   return "cache";
    }
    return "unknown";
}

// Reservation

Reservation::Reservation(Reservation && other) noexcept
    : ledger_(std::exchange(other.ledger_, nullptr)),
      id_(std::exchange(other.id_, 0)),
      bucket_(other.bucket_),
      bytes_(std::exchange(other.bytes_, 0)) {}

Reservation & Reservation::operator=(Reservation && other) noexcept {
    if (this != &other) {
        release();
        ledger_ = std::exchange(other.ledger_, nullptr);
        id_     = std::exchange(other.id_, 0);
        bucket_ = other.bucket_;
        bytes_  = std::exchange(other.bytes_, 0);
    }
    return *this;
}

void Reservation::resize(size_t bytes) {
    assert(ledger_ && "resize of a reservation that holds nothing");
    if (!ledger_) {
        return;
    }
    ledger_->resize(id_, bytes);
    bytes_ = bytes;
}

void Reservation::release() {
    if (!ledger_) {
        return;
    }
    ledger_->release(id_);
    ledger_ = nullptr;
    id_     = 0;
    bytes_  = 0;
}

// OwnerHandle

OwnerHandle::OwnerHandle(OwnerHandle && other) noexcept
    : ledger_(std::exchange(other.ledger_, nullptr)), owner_(std::move(other.owner_)) {}

OwnerHandle & OwnerHandle::operator=(OwnerHandle && other) noexcept {
    if (this != &other) {
        close();
        ledger_ = std::exchange(other.ledger_, nullptr);
        owner_  = std::move(other.owner_);
    }
    return *this;
}

Reservation OwnerHandle::reserve(Bucket bucket, size_t bytes, DeviceName device) {
    assert(ledger_ && "reserve on a closed owner");
    if (!ledger_) {
        return {};
    }
    return ledger_->reserve(owner_, bucket, bytes, std::move(device));
}

void OwnerHandle::close() {
    if (!ledger_) {
        return;
    }
    ledger_->close_owner(owner_);
    ledger_ = nullptr;
}

// Ledger

Ledger::~Ledger() {
    assert(live_.empty() && "ledger destroyed with live reservations");
}

OwnerHandle Ledger::open_owner(OwnerKind kind, std::string label) {
    std::lock_guard<std::mutex> lock(mutex_);
    Owner owner{ kind, next_owner_id_++, std::move(label) };
    open_owners_.insert(owner.id);
    owners_[index_of(kind)].created++;
    return OwnerHandle(this, std::move(owner));
}

Reservation Ledger::reserve(const Owner & owner, Bucket bucket, size_t bytes, DeviceName device) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t id = next_reservation_id_++;
    live_.emplace(id, Entry{ owner, bucket, bytes, std::move(device) });
    buckets_[index_of(bucket)] += bytes;
    live_per_kind_[index_of(owner.kind)]++;
    return Reservation(this, id, bucket, bytes);
}

void Ledger::resize(uint64_t id, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(id);
    assert(it != live_.end());
    if (it == live_.end()) {
        return;
    }
    size_t & total = buckets_[index_of(it->second.bucket)];
    total          = total - it->second.bytes + bytes;
    it->second.bytes = bytes;
}

void Ledger::release(uint64_t id) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(id);
    assert(it != live_.end());
    if (it == live_.end()) {
        return;
    }
    buckets_[index_of(it->second.bucket)] -= it->second.bytes;
    live_per_kind_[index_of(it->second.owner.kind)]--;
    live_.erase(it);
}

void Ledger::close_owner(const Owner & owner) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (open_owners_.erase(owner.id) > 0) {
        owners_[index_of(owner.kind)].closed++;
    }
}

size_t Ledger::bucket_bytes(Bucket bucket) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return buckets_[index_of(bucket)];
}

size_t Ledger::total_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t total = 0;
    for (size_t b : buckets_) {
        total += b;
    }
    return total;
}

OwnerCounters Ledger::owner_counters(OwnerKind kind) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return owners_[index_of(kind)];
}

bool Ledger::request_buckets_zero() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_per_kind_[index_of(OwnerKind::request)] == 0;
}

LedgerSnapshot Ledger::snapshot() const {
    LedgerSnapshot snap;
    std::map<uint64_t, ModelBytes> models; // by owner id, so the output order is stable
    {
        std::lock_guard<std::mutex> lock(mutex_);
        snap.buckets = buckets_;
        snap.owners  = owners_;
        snap.reservations.reserve(live_.size());
        for (const auto & [id, entry] : live_) {
            const bool owner_open = open_owners_.count(entry.owner.id) > 0;
            snap.reservations.push_back({ entry.owner, entry.bucket, entry.bytes, owner_open, entry.device });
            if (!entry.device.empty()) snap.devices[entry.device][index_of(entry.bucket)] += entry.bytes;
            if (entry.owner.kind == OwnerKind::model) {
                ModelBytes & m = models[entry.owner.id];
                m.owner        = entry.owner;
                m.buckets[index_of(entry.bucket)] += entry.bytes;
                m.total += entry.bytes;
                if (!entry.device.empty()) m.devices[entry.device][index_of(entry.bucket)] += entry.bytes;
            }
        }
    }
    for (size_t b : snap.buckets) {
        snap.total += b;
    }
    for (auto & [id, m] : models) {
        snap.models.push_back(std::move(m));
    }
    std::sort(snap.reservations.begin(), snap.reservations.end(),
              [](const ReservationInfo & a, const ReservationInfo & b) {
                  return std::tuple(index_of(a.owner.kind), a.owner.id, index_of(a.bucket), a.device, a.bytes) <
                         std::tuple(index_of(b.owner.kind), b.owner.id, index_of(b.bucket), b.device, b.bytes);
              });
    return snap;
}

Ledger & process_ledger() {
    static Ledger * ledger = new Ledger();
    return *ledger;
}

} // namespace specd::memory
