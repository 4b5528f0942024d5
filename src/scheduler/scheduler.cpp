#include "scheduler/scheduler.h"

namespace specd::scheduler {

std::shared_ptr<Job> Scheduler::submit(GenerateRequest req) {
    auto job     = std::make_shared<Job>();
    job->request = std::move(req);
    std::lock_guard lock(mu_);
    if (stopping_) throw Error(ErrorKind::busy, "server is shutting down");
    auto & runner = runners_[job->request.model.name];
    if (!runner) runner = std::make_unique<Runner>(cfg_.max_queue, cfg_.default_keep_alive, cache_);
    if (!runner->enqueue(job)) {
        throw Error(ErrorKind::busy, "server busy, please try again.  maximum pending requests exceeded");
    }
    return job;
}

std::vector<LoadedInfo> Scheduler::loaded() const {
    std::lock_guard lock(mu_);
    std::vector<LoadedInfo> out;
    for (const auto & [name, runner] : runners_) {
        if (auto info = runner->loaded()) out.push_back(*info);
    }
    return out;
}

void Scheduler::shutdown() {
    std::map<std::string, std::unique_ptr<Runner>> runners;
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
        runners.swap(runners_);
    }
    runners.clear(); // each runner cancels its queue and unloads in its destructor
}

} // namespace specd::scheduler
