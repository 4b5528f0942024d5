#include "http/connection_registry.h"

namespace specd::http {

bool ConnectionRegistry::make_room(const std::string & client) {
    while (count(client) >= max_per_client_) {
        Tracked * victim = oldest_waiting(&client);
        if (!victim) return false;
        victim->close();
        remove(victim); // close() removes it already; never loop on one that stays
    }
    while (all_.size() >= max_total_) {
        Tracked * victim = oldest_waiting(nullptr);
        if (!victim) return false;
        victim->close();
        remove(victim);
    }
    return true;
}

void ConnectionRegistry::add(Tracked * c) {
    if (all_.insert(c).second) ++per_client_[c->client()];
}

void ConnectionRegistry::remove(Tracked * c) {
    if (all_.erase(c) == 0) return;
    if (auto pc = per_client_.find(c->client()); pc != per_client_.end() && --pc->second == 0) per_client_.erase(pc);
}

void ConnectionRegistry::close_all() {
    while (!all_.empty()) {
        Tracked * c = *all_.begin();
        c->close();
        remove(c);
    }
}

size_t ConnectionRegistry::count(const std::string & client) const {
    const auto it = per_client_.find(client);
    return it == per_client_.end() ? 0 : it->second;
}

Tracked * ConnectionRegistry::oldest_waiting(const std::string * client) const {
    Tracked * best = nullptr;
    for (Tracked * c : all_) {
        if (!c->awaiting_head() || (client && c->client() != *client)) continue;
        if (!best || c->waiting_since() < best->waiting_since()) best = c;
    }
    return best;
}

} // namespace specd::http
