#include "memory/ledger.h"

#include <gtest/gtest.h>

#include <thread>
#include <utility>
#include <vector>

using specd::memory::Bucket;
using specd::memory::Ledger;
using specd::memory::LedgerSnapshot;
using specd::memory::OwnerHandle;
using specd::memory::OwnerKind;
using specd::memory::Reservation;

namespace {

size_t at(const LedgerSnapshot & snap, Bucket bucket) {
    return snap.buckets[static_cast<size_t>(bucket)];
}

} // namespace

TEST(Ledger, TotalsFollowReserveResizeRelease) {
    Ledger      ledger;
    OwnerHandle model = ledger.open_owner(OwnerKind::model, "qwen");

    Reservation weights = model.reserve(Bucket::weights, 1000);
    Reservation kv      = model.reserve(Bucket::kv_target, 200);
    EXPECT_EQ(ledger.bucket_bytes(Bucket::weights), 1000u);
    EXPECT_EQ(ledger.bucket_bytes(Bucket::kv_target), 200u);
    EXPECT_EQ(ledger.total_bytes(), 1200u);

    kv.resize(500);
    EXPECT_EQ(kv.bytes(), 500u);
    EXPECT_EQ(ledger.bucket_bytes(Bucket::kv_target), 500u);
    kv.resize(50);
    EXPECT_EQ(ledger.bucket_bytes(Bucket::kv_target), 50u);

    kv.release();
    EXPECT_FALSE(kv.held());
    EXPECT_EQ(kv.bytes(), 0u);
    EXPECT_EQ(ledger.bucket_bytes(Bucket::kv_target), 0u);
    kv.release(); // a second release is a no-op
    EXPECT_EQ(ledger.total_bytes(), 1000u);

    weights.release();
    EXPECT_EQ(ledger.total_bytes(), 0u);
}

TEST(Ledger, DestructionReleases) {
    Ledger      ledger;
    OwnerHandle cache = ledger.open_owner(OwnerKind::cache, "prompt cache");
    {
        Reservation a = cache.reserve(Bucket::prompt_cache, 4096);
        Reservation b = cache.reserve(Bucket::prompt_cache, 1024);
        EXPECT_EQ(ledger.bucket_bytes(Bucket::prompt_cache), 5120u);
        EXPECT_EQ(ledger.snapshot().reservations.size(), 2u);
    }
    EXPECT_EQ(ledger.bucket_bytes(Bucket::prompt_cache), 0u);
    EXPECT_TRUE(ledger.snapshot().reservations.empty());
}

TEST(Ledger, MoveTransfersOwnershipAndReleasesOnce) {
    Ledger      ledger;
    OwnerHandle request = ledger.open_owner(OwnerKind::request, "req-1");

    Reservation a = request.reserve(Bucket::images, 300);
    Reservation b = std::move(a);
    EXPECT_FALSE(a.held());
    EXPECT_EQ(a.bytes(), 0u);
    EXPECT_TRUE(b.held());
    EXPECT_EQ(b.bytes(), 300u);
    EXPECT_EQ(ledger.bucket_bytes(Bucket::images), 300u);

    a.release(); // moved-from: holds nothing, returns nothing
    EXPECT_EQ(ledger.bucket_bytes(Bucket::images), 300u);

    // Move assignment releases what the target held before taking over.
    Reservation c = request.reserve(Bucket::images, 20);
    EXPECT_EQ(ledger.bucket_bytes(Bucket::images), 320u);
    c = std::move(b);
    EXPECT_EQ(ledger.bucket_bytes(Bucket::images), 300u);
    EXPECT_EQ(c.bytes(), 300u);

    std::vector<Reservation> held;
    held.push_back(std::move(c)); // into a container and out again
    held.emplace_back();
    held.front().resize(310);
    EXPECT_EQ(ledger.bucket_bytes(Bucket::images), 310u);
    held.clear();
    EXPECT_EQ(ledger.bucket_bytes(Bucket::images), 0u);
    EXPECT_TRUE(ledger.snapshot().reservations.empty());
}

TEST(Ledger, OwnerCountersCountCreatedAndClosed) {
    Ledger ledger;
    {
        OwnerHandle r1 = ledger.open_owner(OwnerKind::request, "req-1");
        OwnerHandle r2 = ledger.open_owner(OwnerKind::request, "req-2");
        OwnerHandle m  = ledger.open_owner(OwnerKind::model, "qwen");
        EXPECT_NE(r1.owner().id, r2.owner().id);
        EXPECT_EQ(ledger.owner_counters(OwnerKind::request).created, 2u);
        EXPECT_EQ(ledger.owner_counters(OwnerKind::request).open(), 2u);

        r1.close();
        r1.close(); // closes once
        EXPECT_FALSE(r1.open());
        EXPECT_EQ(ledger.owner_counters(OwnerKind::request).closed, 1u);

        OwnerHandle moved = std::move(r2); // a move does not close
        EXPECT_EQ(ledger.owner_counters(OwnerKind::request).closed, 1u);
        EXPECT_EQ(ledger.owner_counters(OwnerKind::model).open(), 1u);
    }
    auto snap = ledger.snapshot();
    EXPECT_EQ(snap.owners[static_cast<size_t>(OwnerKind::request)].created, 2u);
    EXPECT_EQ(snap.owners[static_cast<size_t>(OwnerKind::request)].closed, 2u);
    EXPECT_EQ(snap.owners[static_cast<size_t>(OwnerKind::model)].created, 1u);
    EXPECT_EQ(snap.owners[static_cast<size_t>(OwnerKind::model)].closed, 1u);
    EXPECT_EQ(snap.owners[static_cast<size_t>(OwnerKind::cache)].created, 0u);
}

TEST(Ledger, ReservationLeftByClosedOwnerIsFlagged) {
    Ledger      ledger;
    Reservation leaked;
    {
        OwnerHandle request = ledger.open_owner(OwnerKind::request, "req-7");
        leaked              = request.reserve(Bucket::grammar, 64);
    }
    auto snap = ledger.snapshot();
    ASSERT_EQ(snap.reservations.size(), 1u);
    EXPECT_EQ(snap.reservations[0].owner.label, "req-7");
    EXPECT_EQ(snap.reservations[0].bucket, Bucket::grammar);
    EXPECT_EQ(snap.reservations[0].bytes, 64u);
    EXPECT_FALSE(snap.reservations[0].owner_open);
    EXPECT_FALSE(ledger.request_buckets_zero());
    leaked.release();
    EXPECT_TRUE(ledger.request_buckets_zero());
}

TEST(Ledger, SnapshotBreaksDownPerModel) {
    Ledger      ledger;
    OwnerHandle target  = ledger.open_owner(OwnerKind::model, "target-7b");
    OwnerHandle draft   = ledger.open_owner(OwnerKind::model, "draft-0.5b");
    OwnerHandle request = ledger.open_owner(OwnerKind::request, "req-1");

    Reservation tw = target.reserve(Bucket::weights, 7000);
    Reservation tk = target.reserve(Bucket::kv_target, 800);
    Reservation tc = target.reserve(Bucket::compute, 100);
    Reservation tc2 = target.reserve(Bucket::compute, 50);
    Reservation dw = draft.reserve(Bucket::weights, 500);
    Reservation dk = draft.reserve(Bucket::kv_draft, 60);
    Reservation rq = request.reserve(Bucket::request, 9);

    auto snap = ledger.snapshot();
    EXPECT_EQ(at(snap, Bucket::weights), 7500u);
    EXPECT_EQ(at(snap, Bucket::compute), 150u);
    EXPECT_EQ(at(snap, Bucket::request), 9u);
    EXPECT_EQ(snap.total, 7000u + 800 + 100 + 50 + 500 + 60 + 9);
    EXPECT_EQ(snap.reservations.size(), 7u);

    ASSERT_EQ(snap.models.size(), 2u); // the request is not a model
    const auto & t = snap.models[0];
    const auto & d = snap.models[1];
    EXPECT_EQ(t.owner.label, "target-7b");
    EXPECT_EQ(t.buckets[static_cast<size_t>(Bucket::weights)], 7000u);
    EXPECT_EQ(t.buckets[static_cast<size_t>(Bucket::kv_target)], 800u);
    EXPECT_EQ(t.buckets[static_cast<size_t>(Bucket::compute)], 150u);
    EXPECT_EQ(t.buckets[static_cast<size_t>(Bucket::kv_draft)], 0u);
    EXPECT_EQ(t.total, 7950u);
    EXPECT_EQ(d.owner.label, "draft-0.5b");
    EXPECT_EQ(d.buckets[static_cast<size_t>(Bucket::weights)], 500u);
    EXPECT_EQ(d.buckets[static_cast<size_t>(Bucket::kv_draft)], 60u);
    EXPECT_EQ(d.total, 560u);

    // Reservations come out grouped by owner kind (model first), then owner.
    EXPECT_EQ(snap.reservations.front().owner.label, "target-7b");
    EXPECT_EQ(snap.reservations.back().owner.label, "req-1");
    EXPECT_TRUE(snap.reservations.back().owner_open);
}

TEST(Ledger, RequestBucketsZero) {
    Ledger      ledger;
    OwnerHandle model = ledger.open_owner(OwnerKind::model, "qwen");
    OwnerHandle cache = ledger.open_owner(OwnerKind::cache, "prompt cache");
    Reservation weights = model.reserve(Bucket::weights, 100);
    Reservation cached  = cache.reserve(Bucket::prompt_cache, 100);
    EXPECT_TRUE(ledger.request_buckets_zero()); // models and the cache do not count

    {
        OwnerHandle request = ledger.open_owner(OwnerKind::request, "req-1");
        Reservation grammar = request.reserve(Bucket::grammar, 10);
        Reservation empty   = request.reserve(Bucket::request, 0);
        EXPECT_FALSE(ledger.request_buckets_zero());
        grammar.release();
        EXPECT_FALSE(ledger.request_buckets_zero()); // a live zero-byte reservation still counts
    }
    EXPECT_TRUE(ledger.request_buckets_zero());
}

TEST(Ledger, ConcurrentReserveResizeReleaseEndsAtZero) {
    Ledger                   ledger;
    constexpr int            n_threads    = 4;
    constexpr int            n_iterations = 10000;
    std::vector<std::thread> threads;
    for (int t = 0; t < n_threads; ++t) {
        threads.emplace_back([&ledger, t] {
            OwnerHandle request = ledger.open_owner(OwnerKind::request, "req-" + std::to_string(t));
            Reservation kept    = request.reserve(Bucket::kv_target, 1);
            for (int i = 0; i < n_iterations; ++i) {
                const Bucket bucket = static_cast<Bucket>((t + i) % specd::memory::bucket_count);
                Reservation  r      = request.reserve(bucket, static_cast<size_t>(i % 97) + 1);
                r.resize(static_cast<size_t>(i % 13) * 7);
                kept.resize(static_cast<size_t>(i));
                if (i % 3 == 0) {
                    r.release();
                } else if (i % 3 == 1) {
                    Reservation moved = std::move(r);
                }
            }
        });
    }
    for (auto & thread : threads) {
        thread.join();
    }
    auto snap = ledger.snapshot();
    EXPECT_EQ(snap.total, 0u);
    for (size_t b = 0; b < specd::memory::bucket_count; ++b) {
        EXPECT_EQ(snap.buckets[b], 0u) << specd::memory::bucket_name(static_cast<Bucket>(b));
    }
    EXPECT_TRUE(snap.reservations.empty());
    EXPECT_TRUE(ledger.request_buckets_zero());
    EXPECT_EQ(snap.owners[static_cast<size_t>(OwnerKind::request)].created, n_threads);
    EXPECT_EQ(snap.owners[static_cast<size_t>(OwnerKind::request)].closed, n_threads);
}

TEST(Ledger, Names) {
    EXPECT_STREQ(specd::memory::bucket_name(Bucket::prompt_cache), "prompt_cache");
    EXPECT_STREQ(specd::memory::bucket_name(Bucket::kv_draft), "kv_draft");
    EXPECT_STREQ(specd::memory::owner_kind_name(OwnerKind::request), "request");
}

TEST(Ledger, ProcessLedgerIsOne) {
    EXPECT_EQ(&specd::memory::process_ledger(), &specd::memory::process_ledger());
}

// Bytes on another device than the host count in their bucket's total and, by device, in
// the snapshot and in their model's line.
TEST(Ledger, DevicesSplitTheBuckets) {
    Ledger      ledger;
    OwnerHandle model  = ledger.open_owner(OwnerKind::model, "split");
    Reservation host   = model.reserve(Bucket::weights, 10);
    Reservation worker = model.reserve(Bucket::weights, 30, "RPC0[127.0.0.1:50052]");
    Reservation kv     = model.reserve(Bucket::kv_target, 5, "RPC0[127.0.0.1:50053]");
    const auto  w      = static_cast<size_t>(Bucket::weights);
    const auto  k      = static_cast<size_t>(Bucket::kv_target);

    LedgerSnapshot snap = ledger.snapshot();
    EXPECT_EQ(snap.buckets[w], 40u);
    EXPECT_EQ(snap.total, 45u);
    ASSERT_EQ(snap.devices.size(), 2u);
    EXPECT_EQ(snap.devices.at("RPC0[127.0.0.1:50052]")[w], 30u);
    EXPECT_EQ(snap.devices.at("RPC0[127.0.0.1:50053]")[k], 5u);
    ASSERT_EQ(snap.models.size(), 1u);
    EXPECT_EQ(snap.models[0].devices, snap.devices);
    size_t on_device = 0;
    for (const auto & r : snap.reservations) on_device += r.device.empty() ? 0 : r.bytes;
    EXPECT_EQ(on_device, 35u);

    worker.resize(20);
    kv.release();
    snap = ledger.snapshot();
    EXPECT_EQ(snap.buckets[w], 30u);
    ASSERT_EQ(snap.devices.size(), 1u);
    EXPECT_EQ(snap.devices.at("RPC0[127.0.0.1:50052]")[w], 20u);
}
