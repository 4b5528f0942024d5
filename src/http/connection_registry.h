#pragma once
// The open connections, counted globally and per client address. When a new connection
// would pass a cap, the connections that have not sent a complete request head (new,
// slow, or idle between keep-alive requests) are closed first, the longest waiting first;
// a connection whose request is being read or answered is never closed for room. A new
// connection is refused only when no such connection is left to close.
#include <chrono>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace specd::http {

using Clock = std::chrono::steady_clock;

// What the registry needs of a connection.
class Tracked {
  public:
    virtual ~Tracked() = default;
    virtual const std::string & client() const = 0;
    // Whether it is waiting for a request head (it may be closed to make room), and since when.
    virtual bool              awaiting_head() const = 0;
    virtual Clock::time_point waiting_since() const = 0;
    // Closes the connection; it calls ConnectionRegistry::remove on the way.
    virtual void close() = 0;
};

class ConnectionRegistry {
  public:
    ConnectionRegistry(size_t max_total, size_t max_per_client) : max_total_(max_total), max_per_client_(max_per_client) {}

    // Makes room for one more connection from `client`, closing waiting ones as needed.
    // False when there is no room (every connection there has a request in progress).
    bool make_room(const std::string & client);
    void add(Tracked * c);
    void remove(Tracked * c);
    // Closes every connection (shutdown).
    void close_all();

    size_t size() const { return all_.size(); }
    size_t count(const std::string & client) const;

  private:
    // The longest-waiting connection without a request head, among all or one client's.
    Tracked * oldest_waiting(const std::string * client) const;

    size_t                                  max_total_;
    size_t                                  max_per_client_;
    std::unordered_set<Tracked *>           all_;
    std::unordered_map<std::string, size_t> per_client_;
};

} // namespace specd::http
