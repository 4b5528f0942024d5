#pragma once
// A runner process's memory ledger, mirrored into the server's: /api/ps, /metrics and
// /api/debug/memory read the server's ledger, and through the mirror they show every byte a
// runner holds under its owners' names and buckets, as when the runner ran in the server's
// own process. One reservation per owner, bucket and device (the runner's own may be several).
// Requests that began and ended between two snapshots never show in one; the mirror still
// counts them, from the runner's created counter, as request owners opened and closed.
#include "memory/ledger.h"

#include <array>
#include <cstdint>
#include <map>
#include <utility>

namespace specd::process {

class LedgerMirror {
  public:
    explicit LedgerMirror(memory::Ledger & ledger) : ledger_(ledger) {}

    // Makes the mirror hold what `snap` (the runner's latest) holds: owners that appeared are
    // opened, owners gone are closed, bytes resized. An owner the runner closed while it
    // still held bytes (a leak) shows as closed here too.
    void apply(const memory::LedgerSnapshot & snap);
    // The runner ended: everything it held is gone.
    void clear();
    // The mirror's owner id for the runner's owner id (LoadedInfo::memory_owner); 0 if none.
    uint64_t server_owner(uint64_t runner_owner) const;

    using HeldKey = std::pair<memory::Bucket, memory::DeviceName>;

  private:
    struct Mirrored {
        memory::OwnerHandle                   handle; // open while the runner's owner is
        memory::Owner                         owner;  // as the server's ledger knows it
        std::map<HeldKey, memory::Reservation> held;
    };

    memory::Ledger &                                    ledger_;
    std::map<uint64_t, Mirrored>                        owners_; // by the runner's owner id
    std::array<uint64_t, memory::owner_kind_count>      opened_{}; // owners opened here, by kind
};

} // namespace specd::process
