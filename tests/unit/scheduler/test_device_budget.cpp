// The scheduler's budget per offload device (SPECD_GPU_MEMORY): a model that would fit whole
// on a device if the idle models there left makes them go, as Ollama does; a busy model stays
// (the new one gets what is left, placed by the fit); without a device budget nothing changes.
// Fake runners hold ledger reservations on an RPC device's name, as loaded models do.
#include "memory/ledger.h"
#include "scheduler/scheduler.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace {

using namespace specd;

constexpr const char * k_device = "RPC0[127.0.0.1:1]";

class FakeRunner final : public scheduler::ModelRunner {
  public:
    FakeRunner(std::string name, const scheduler::RunnerConfig & cfg) : name_(std::move(name)), cfg_(cfg) {}

    // Queued as a real runner queues (the scheduler holds its lock meanwhile); load() serves it.
    bool enqueue(std::shared_ptr<scheduler::Job> job) override {
        job_ = std::move(job);
        return true;
    }
    // Loads as a model does: room first, then its bytes on the device.
    void load() {
        const uint64_t bytes = uint64_t(job_->request.context.num_ctx);
        cfg_.arbiter->make_room(*this, bytes);
        held_seen_ = cfg_.arbiter->device_held(*this);
        owner_     = memory::process_ledger().open_owner(memory::OwnerKind::model, name_);
        weights_   = owner_.reserve(memory::Bucket::weights, bytes, k_device);
        cfg_.arbiter->end_load(*this);
    }
    std::optional<scheduler::LoadedInfo> loaded() const override {
        if (!owner_.open()) return std::nullopt;
        scheduler::LoadedInfo info;
        info.name         = name_;
        info.memory_owner = owner_.owner().id;
        return info;
    }
    uint64_t footprint() const override { return 0; } // host bytes: none
    bool     idle() const override { return idle_; }
    int64_t  last_used_ns() const override { return 0; }
    bool     unload_if_idle() override {
        if (!idle_ || !owner_.open()) return false;
        weights_ = {};
        owner_.close();
        return true;
    }

    bool                            idle_ = true;
    std::map<std::string, uint64_t> held_seen_;

  private:
    std::string                     name_;
    scheduler::RunnerConfig         cfg_;
    std::shared_ptr<scheduler::Job> job_;
    memory::OwnerHandle      owner_;
    memory::Reservation      weights_;
};

struct Fixture {
    std::map<std::string, std::shared_ptr<FakeRunner>> runners;
    scheduler::Scheduler                                sched{scheduler::SchedulerConfig{.max_loaded_models = 0}, nullptr,
                                               [this](const std::string & name, const scheduler::RunnerConfig & cfg) {
                                                   auto r        = std::make_shared<FakeRunner>(name, cfg);
                                                   runners[name] = r;
                                                   return r;
                                               }};

    void load(const std::string & name, int bytes) {
        GenerateRequest req;
        req.model.name      = name;
        req.context.num_ctx = bytes;
        sched.submit(req);
        runners.at(name)->load();
    }
};

struct ScopedEnv {
    explicit ScopedEnv(const char * value) {
        if (value) setenv("SPECD_GPU_MEMORY", value, 1);
        else unsetenv("SPECD_GPU_MEMORY");
    }
    ~ScopedEnv() { unsetenv("SPECD_GPU_MEMORY"); }
};

} // namespace

TEST(DeviceBudget, IdleModelsLeaveADeviceTheNewModelFitsWhole) {
    ScopedEnv budget("1000");
    Fixture   f;
    f.load("a", 600);
    ASSERT_TRUE(f.runners["a"]->loaded());
    f.load("b", 600); // 600 + 600 is over the device's 1000: a (idle) goes
    EXPECT_FALSE(f.runners["a"]->loaded());
    EXPECT_TRUE(f.runners["b"]->loaded());
    EXPECT_TRUE(f.runners["b"]->held_seen_.empty()); // the fit saw the whole budget free
    f.load("c", 300);                                // fits beside b: b stays
    EXPECT_TRUE(f.runners["b"]->loaded());
    EXPECT_EQ(f.runners["c"]->held_seen_, (std::map<std::string, uint64_t>{{k_device, 600}}));
}

TEST(DeviceBudget, ABusyModelStaysAndTheFitGetsWhatIsLeft) {
    ScopedEnv budget("1000");
    Fixture   f;
    f.load("a", 600);
    f.runners["a"]->idle_ = false;
    f.load("b", 600);
    EXPECT_TRUE(f.runners["a"]->loaded());
    EXPECT_EQ(f.runners["b"]->held_seen_, (std::map<std::string, uint64_t>{{k_device, 600}}));
    f.runners["a"]->idle_ = true;
}

TEST(DeviceBudget, WithoutADeviceBudgetTheDeviceEvictsNothing) {
    ScopedEnv none(nullptr);
    Fixture   f;
    f.load("a", 600);
    f.load("b", 600);
    EXPECT_TRUE(f.runners["a"]->loaded());
    EXPECT_TRUE(f.runners["b"]->loaded());
}
