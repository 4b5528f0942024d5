#include "process/ledger_mirror.h"

namespace specd::process {

void LedgerMirror::apply(const memory::LedgerSnapshot & snap) {
    struct Seen {
        memory::Owner                    owner;
        bool                             open = true;
        std::map<HeldKey, size_t>        bytes;
    };
    std::map<uint64_t, Seen> seen;
    for (const memory::ReservationInfo & r : snap.reservations) {
        Seen & s = seen[r.owner.id];
        s.owner  = r.owner;
        s.open   = r.owner_open;
        s.bytes[{r.bucket, r.device}] += r.bytes;
    }
    for (auto it = owners_.begin(); it != owners_.end();) {
        if (!seen.count(it->first)) it = owners_.erase(it); // its reservations go, then its handle
        else ++it;
    }
    for (auto & [id, s] : seen) {
        auto [it, added] = owners_.try_emplace(id);
        Mirrored & m     = it->second;
        if (added) {
            m.handle = ledger_.open_owner(s.owner.kind, s.owner.label);
            m.owner  = m.handle.owner();
            ++opened_[static_cast<size_t>(s.owner.kind)];
        }
        if (!s.open) m.handle.close(); // the reservations stay, flagged as left behind
        for (auto h = m.held.begin(); h != m.held.end();) {
            if (!s.bytes.count(h->first)) h = m.held.erase(h);
            else ++h;
        }
        for (const auto & [key, bytes] : s.bytes) {
            auto held = m.held.find(key);
            if (held == m.held.end()) m.held.emplace(key, ledger_.reserve(m.owner, key.first, bytes, key.second));
            else if (held->second.bytes() != bytes) held->second.resize(bytes);
        }
    }
    // Requests the runner served that no snapshot showed: opened and closed at once here, so
    // the counters count every request. (Models and the cache live long; one of them can only
    // be missed while it holds nothing, and counting it then would count it twice.)
    constexpr size_t request = static_cast<size_t>(memory::OwnerKind::request);
    for (; opened_[request] < snap.owners[request].created; ++opened_[request]) {
        ledger_.open_owner(memory::OwnerKind::request, "(a request between two snapshots)").close();
    }
}

void LedgerMirror::clear() { owners_.clear(); }

uint64_t LedgerMirror::server_owner(uint64_t runner_owner) const {
    const auto it = owners_.find(runner_owner);
    return it == owners_.end() ? 0 : it->second.owner.id;
}

} // namespace specd::process
