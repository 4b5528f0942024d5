#pragma once
// How busy each loaded model is, for /metrics: what a load balancer or a scraper reads to see
// a replica's load (docs/deploy.md). /api/ps carries the same two numbers per model.
#include "scheduler/model_runner.h"

#include <string>
#include <vector>

namespace specd::api {

// Prometheus text: specd_model_running and specd_model_queued by model, and their sums
// (specd_running_sequences, specd_queued_requests) over the loaded models.
std::string load_metrics(const std::vector<scheduler::LoadedInfo> & models);

} // namespace specd::api
