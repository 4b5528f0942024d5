// Opening the store (store.h): its directories, the default root, and the sweep of temp
// files that no live writer holds.
#include "models/store.h"

#include "models/store_io.h"

#include <cstdlib>

// POSIX: flock tells whether another process still holds a partial download.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace specd::models {

namespace fs = std::filesystem;

namespace {

// A temp file untouched this long belongs to no live writer (a writer copying a large blob
// touches its file continuously), so it is safe to delete on open.
constexpr auto k_stale_temp_age    = std::chrono::minutes(10);
// A partial download is worth keeping much longer: the pull may be retried tomorrow.
constexpr auto k_stale_partial_age = std::chrono::hours(24 * 7);

} // namespace

Store::Store(fs::path root)
    : root_(std::move(root)), blobs_dir_(root_ / "blobs"), manifests_dir_(root_ / "manifests") {
    std::error_code ec;
    fs::create_directories(blobs_dir_, ec);
    if (!ec) {
        fs::create_directories(manifests_dir_, ec);
    }
    if (ec) {
        throw io_error("cannot create the model store", ec);
    }
    remove_stale_temp_files();
}

fs::path Store::default_root() {
    for (const char * var : {"SPECD_MODELS", "OLLAMA_MODELS"}) {
        const char * value = std::getenv(var);
        if (value != nullptr && *value != '\0') {
            return fs::path(value);
        }
    }
    const char * home = std::getenv("HOME");
    if (home == nullptr || *home == '\0') {
        throw error(ErrorKind::internal, "no models directory: set SPECD_MODELS or HOME");
    }
    return fs::path(home) / ".specd" / "models";
}

void Store::remove_stale_temp_files() const {
    const auto      now = fs::file_time_type::clock::now();
    std::error_code ec;
    auto            sweep = [&](const fs::directory_entry & entry) {
        std::error_code e;
        if (!is_temp_name(entry.path()) || !entry.is_regular_file(e)) {
            return;
        }
        const bool partial = entry.path().filename().string().starts_with(k_partial_prefix);
        const auto age     = now - entry.last_write_time(e);
        if (e || age <= (partial ? fs::file_time_type::duration(k_stale_partial_age)
                                 : fs::file_time_type::duration(k_stale_temp_age))) {
            return;
        }
        if (partial) {
            // A pull in another process may hold it (a stalled download is not touched).
            const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                return;
            }
            const bool locked = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
            if (!locked) {
                fs::remove(entry.path(), e);
            }
            ::close(fd);
            return;
        }
        fs::remove(entry.path(), e);
    };
    for (const auto & entry : fs::directory_iterator(blobs_dir_, ec)) {
        sweep(entry);
    }
    for (auto it = fs::recursive_directory_iterator(manifests_dir_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
        sweep(*it);
    }
}

} // namespace specd::models
