#include "process/ledger_mirror.h"

#include <gtest/gtest.h>

#include <string>

using specd::memory::Bucket;
using specd::memory::Ledger;
using specd::memory::LedgerSnapshot;
using specd::memory::OwnerHandle;
using specd::memory::OwnerKind;
using specd::memory::Reservation;
using specd::process::LedgerMirror;

namespace {

size_t at(const LedgerSnapshot & snap, Bucket bucket) { return snap.buckets[static_cast<size_t>(bucket)]; }

} // namespace

// The runner's ledger (`runner`) and the server's (`server`) are two ledgers here, as they
// are two processes' in the server.
TEST(LedgerMirror, ShowsWhatTheRunnerHoldsUnderItsOwnersNames) {
    Ledger       runner, server;
    LedgerMirror mirror(server);
    OwnerHandle  model   = runner.open_owner(OwnerKind::model, "tiny:latest");
    Reservation  weights = model.reserve(Bucket::weights, 1000);
    Reservation  kv_a    = model.reserve(Bucket::kv_target, 200);
    Reservation  kv_b    = model.reserve(Bucket::kv_target, 100); // two of one bucket: summed
    OwnerHandle  request = runner.open_owner(OwnerKind::request, "request 1 (tiny:latest)");
    Reservation  held    = request.reserve(Bucket::request, 64);

    mirror.apply(runner.snapshot());
    LedgerSnapshot s = server.snapshot();
    EXPECT_EQ(at(s, Bucket::weights), 1000u);
    EXPECT_EQ(at(s, Bucket::kv_target), 300u);
    EXPECT_EQ(at(s, Bucket::request), 64u);
    ASSERT_EQ(s.models.size(), 1u);
    EXPECT_EQ(s.models[0].owner.label, "tiny:latest");
    EXPECT_EQ(s.models[0].total, 1300u);
    // The runner's owner id maps to the mirror's own.
    EXPECT_EQ(mirror.server_owner(model.owner().id), s.models[0].owner.id);
    EXPECT_EQ(mirror.server_owner(12345), 0u);

    // The request ends and the KV grows: the mirror follows.
    held.release();
    request.close();
    kv_a.resize(900);
    mirror.apply(runner.snapshot());
    s = server.snapshot();
    EXPECT_EQ(at(s, Bucket::request), 0u);
    EXPECT_EQ(at(s, Bucket::kv_target), 1000u);
    EXPECT_EQ(s.owners[static_cast<size_t>(OwnerKind::request)].open(), 0u);
    EXPECT_EQ(s.owners[static_cast<size_t>(OwnerKind::model)].open(), 1u);
    EXPECT_TRUE(server.request_buckets_zero());

    // The runner ends: nothing of it is left.
    mirror.clear();
    s = server.snapshot();
    EXPECT_EQ(s.total, 0u);
    EXPECT_EQ(s.owners[static_cast<size_t>(OwnerKind::model)].open(), 0u);
}

TEST(LedgerMirror, ABufferLeftBehindByAClosedOwnerShowsAsLeft) {
    Ledger       runner, server;
    LedgerMirror mirror(server);
    OwnerHandle  request = runner.open_owner(OwnerKind::request, "request 7");
    Reservation  leaked  = request.reserve(Bucket::images, 4096);
    request.close();
    mirror.apply(runner.snapshot());
    const LedgerSnapshot s = server.snapshot();
    ASSERT_EQ(s.reservations.size(), 1u);
    EXPECT_EQ(s.reservations[0].bytes, 4096u);
    EXPECT_EQ(s.reservations[0].owner.label, "request 7");
    EXPECT_FALSE(s.reservations[0].owner_open);
}

TEST(LedgerMirror, CountsRequestsThatNoSnapshotShowed) {
    Ledger       runner, server;
    LedgerMirror mirror(server);
    for (int i = 0; i < 3; ++i) {
        OwnerHandle request = runner.open_owner(OwnerKind::request, "request");
        Reservation held    = request.reserve(Bucket::request, 10);
    }
    mirror.apply(runner.snapshot());
    const LedgerSnapshot after = server.snapshot();
    const auto &         c     = after.owners[static_cast<size_t>(OwnerKind::request)];
    EXPECT_EQ(c.created, 3u);
    EXPECT_EQ(c.closed, 3u);
    mirror.apply(runner.snapshot()); // nothing new: nothing counted twice
    EXPECT_EQ(server.snapshot().owners[static_cast<size_t>(OwnerKind::request)].created, 3u);
}

// Bytes on an RPC worker keep their device through the mirror, beside the host's bytes of the
// same bucket.
TEST(LedgerMirror, KeepsEachReservationsDevice) {
    Ledger       runner, server;
    LedgerMirror mirror(server);
    OwnerHandle  model  = runner.open_owner(OwnerKind::model, "split:latest");
    Reservation  host   = model.reserve(Bucket::weights, 100);
    Reservation  remote = model.reserve(Bucket::weights, 900, "RPC0[127.0.0.1:50052]");
    Reservation  kv     = model.reserve(Bucket::kv_target, 40, "RPC0[127.0.0.1:50052]");

    mirror.apply(runner.snapshot());
    LedgerSnapshot s = server.snapshot();
    EXPECT_EQ(at(s, Bucket::weights), 1000u);
    ASSERT_EQ(s.devices.size(), 1u);
    EXPECT_EQ(s.devices.at("RPC0[127.0.0.1:50052]")[static_cast<size_t>(Bucket::weights)], 900u);
    EXPECT_EQ(s.devices.at("RPC0[127.0.0.1:50052]")[static_cast<size_t>(Bucket::kv_target)], 40u);
    ASSERT_EQ(s.models.size(), 1u);
    EXPECT_EQ(s.models[0].devices, s.devices);

    remote.release(); // the worker's part went (a reload without it)
    mirror.apply(runner.snapshot());
    s = server.snapshot();
    EXPECT_EQ(at(s, Bucket::weights), 100u);
    EXPECT_EQ(s.devices.at("RPC0[127.0.0.1:50052]")[static_cast<size_t>(Bucket::weights)], 0u);
}
