#pragma once
// The memory ledger: every sizeable buffer the server holds is a Reservation, tagged with
// the owner it belongs to and the bucket it counts in. Totals per bucket feed /api/ps and
// /metrics; the list of live reservations says who holds what, so a buffer that outlives
// its request shows up with its owner's name on it.
//
// Owners are explicit: open_owner() returns an OwnerHandle, and the owner is open until that
// handle is destroyed. The alternative (an owner is open while it holds any reservation)
// would count a request that reserved nothing as never having existed, and would close a
// model between two reservations; an explicit lifetime makes the created/closed counters
// mean "requests started/finished", and lets the ledger flag reservations whose owner has
// already closed (a leak) instead of silently keeping the owner alive.
//
// Threading: the Ledger is thread-safe. A single Reservation or OwnerHandle is not: each is
// used by one thread at a time, like any other value.
// Lifetime: the Ledger must outlive every Reservation and OwnerHandle made from it.
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace specd::memory {

enum class Bucket { weights, kv_target, kv_draft, compute, prompt_cache, images, grammar, request };
inline constexpr size_t bucket_count = 8;

enum class OwnerKind { model, request, cache };
inline constexpr size_t owner_kind_count = 3;

const char * bucket_name(Bucket bucket);
const char * owner_kind_name(OwnerKind kind);

struct Owner {
    OwnerKind   kind  = OwnerKind::request;
    uint64_t    id    = 0;  // unique per ledger; assigned by open_owner()
    std::string label;      // for people: a model name, a request id
};

using BucketBytes = std::array<size_t, bucket_count>; // indexed by Bucket

// Where the bytes are: "" for the host's memory, else the name ggml gives the device that
// holds them ("RPC0[127.0.0.1:50052]"). Every bucket's total counts all devices.
using DeviceName = std::string;

struct ReservationInfo {
    Owner      owner;
    Bucket     bucket     = Bucket::request;
    size_t     bytes      = 0;
    bool       owner_open = true; // false: the owner closed and left this behind
    DeviceName device;
};

struct OwnerCounters {
    uint64_t created = 0;
    uint64_t closed  = 0;
    uint64_t open() const { return created - closed; }
};

// Bytes per bucket on each device other than the host.
using DeviceBuckets = std::map<DeviceName, BucketBytes>;

struct ModelBytes {
    Owner         owner;
    BucketBytes   buckets{};
    size_t        total = 0;
    DeviceBuckets devices; // the part of `buckets` on other devices than the host
};

struct LedgerSnapshot {
    BucketBytes                                  buckets{};    // live bytes per bucket, every device
    size_t                                       total = 0;    // sum of buckets
    DeviceBuckets                                devices;      // the part of `buckets` off the host
    std::vector<ModelBytes>                      models;       // per model owner, by id
    std::vector<ReservationInfo>                 reservations; // by owner kind, owner id, bucket
    std::array<OwnerCounters, owner_kind_count>  owners{};     // indexed by OwnerKind
};

class Ledger;

// Bytes held in one bucket on behalf of one owner, returned when this object dies.
// A default-constructed or moved-from Reservation holds nothing.
class Reservation {
  public:
    Reservation() = default;
    ~Reservation() { release(); }
    Reservation(Reservation && other) noexcept;
    Reservation & operator=(Reservation && other) noexcept;
    Reservation(const Reservation &)             = delete;
    Reservation & operator=(const Reservation &) = delete;

    void   resize(size_t bytes); // must hold a reservation
    void   release();            // returns the bytes now; a no-op when it holds nothing
    size_t bytes() const { return bytes_; }
    Bucket bucket() const { return bucket_; }
    bool   held() const { return ledger_ != nullptr; }

  private:
    friend class Ledger;
    Reservation(Ledger * ledger, uint64_t id, Bucket bucket, size_t bytes)
        : ledger_(ledger), id_(id), bucket_(bucket), bytes_(bytes) {}

    Ledger * ledger_ = nullptr;
    uint64_t id_     = 0;
    Bucket   bucket_ = Bucket::request;
    size_t   bytes_  = 0;
};

// An open owner; closing it (destructor or close()) counts it closed. Reservations it made
// are independent objects and are released by their own destructors.
class OwnerHandle {
  public:
    OwnerHandle() = default;
    ~OwnerHandle() { close(); }
    OwnerHandle(OwnerHandle && other) noexcept;
    OwnerHandle & operator=(OwnerHandle && other) noexcept;
    OwnerHandle(const OwnerHandle &)             = delete;
    OwnerHandle & operator=(const OwnerHandle &) = delete;

    const Owner & owner() const { return owner_; }
    // Must be open. `device`: where the bytes are ("" is the host).
    Reservation   reserve(Bucket bucket, size_t bytes, DeviceName device = {});
    void          close();
    bool          open() const { return ledger_ != nullptr; }

  private:
    friend class Ledger;
    OwnerHandle(Ledger * ledger, Owner owner) : ledger_(ledger), owner_(std::move(owner)) {}

    Ledger * ledger_ = nullptr;
    Owner    owner_;
};

class Ledger {
  public:
    Ledger() = default;
    ~Ledger();
    Ledger(const Ledger &)             = delete;
    Ledger & operator=(const Ledger &) = delete;

    OwnerHandle open_owner(OwnerKind kind, std::string label);
    // An owner that is not open here (closed, or never opened) is accepted: the
    // reservation is recorded and shows in snapshot() with owner_open = false.
    Reservation reserve(const Owner & owner, Bucket bucket, size_t bytes, DeviceName device = {});

    size_t         bucket_bytes(Bucket bucket) const;
    size_t         total_bytes() const;
    OwnerCounters  owner_counters(OwnerKind kind) const;
    LedgerSnapshot snapshot() const;

    // No request-owned reservation is alive: what must hold whenever no request is running.
    bool request_buckets_zero() const;

  private:
    friend class Reservation;
    friend class OwnerHandle;

    struct Entry {
        Owner      owner;
        Bucket     bucket;
        size_t     bytes;
        DeviceName device;
    };

    void resize(uint64_t id, size_t bytes);
    void release(uint64_t id);
    void close_owner(const Owner & owner);

    mutable std::mutex                              mutex_;
    std::unordered_map<uint64_t, Entry>             live_;        // by reservation id
    std::unordered_set<uint64_t>                    open_owners_; // by owner id
    BucketBytes                                     buckets_{};
    std::array<size_t, owner_kind_count>            live_per_kind_{}; // live reservations
    std::array<OwnerCounters, owner_kind_count>     owners_{};
    uint64_t                                        next_owner_id_       = 1;
    uint64_t                                        next_reservation_id_ = 1;
};

// The server's one ledger. Never destroyed, so reservations in static objects stay safe.
Ledger & process_ledger();

} // namespace specd::memory
