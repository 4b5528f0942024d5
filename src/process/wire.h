#pragma once
// JSON forms of the plain data that crosses between the server and a runner process: the
// request going in, the events, the loaded model's state and the memory counters coming back.
// The types' own headers know nothing of JSON; their wire form lives here, field by field, so
// that every field round-trips (the tests check each one).
//
// Bulk bytes go into the frame's blobs (process/frame.h) rather than into JSON text: image
// pixels, and embeddings. `*_to_json` appends to `blobs` and records the indexes it used;
// `*_from_json` reads them back from the same vector.
//
// Conventions of the JSON form, shared by every function here:
//   - an unset optional is null (the key is always present);
//   - an enum is its name; an unknown name is an error;
//   - a string that is not valid UTF-8 (a token piece can be part of a character, a path
//     can be any bytes) is {"base64": ...}, since JSON text cannot carry it;
//   - a float is a JSON number, which gives it back bit for bit (a float widens to a double
//     exactly, and nlohmann writes a double in the shortest text that reads back the same),
//     except for inf and nan, which JSON lacks: they are the strings "inf", "-inf", "nan".
//
// Reading checks every field's presence, type and range, and throws std::runtime_error
// naming the field; the peer is our own binary, so a mismatch is a fault, not a bad request.
#include "core/request.h"
#include "memory/ledger.h"
#include "memory/prompt_cache_stats.h"
#include "scheduler/job.h"
#include "scheduler/model_runner.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace specd::process {

// Image pixels go into blobs, one per distinct image: an ImagePtr the request holds in
// several places (PromptInput::images and a message's images) is written once and read back
// as one shared image.
nlohmann::json  request_to_json(const GenerateRequest & req, std::vector<std::string> & blobs);
GenerateRequest request_from_json(const nlohmann::json & j, const std::vector<std::string> & blobs);

// Embeddings, when there are any, go into one blob of little-endian floats.
nlohmann::json   event_to_json(const scheduler::Event & e, std::vector<std::string> & blobs);
scheduler::Event event_from_json(const nlohmann::json & j, const std::vector<std::string> & blobs);

nlohmann::json        loaded_to_json(const scheduler::LoadedInfo & info);
scheduler::LoadedInfo loaded_from_json(const nlohmann::json & j);

nlohmann::json         ledger_to_json(const memory::LedgerSnapshot & snap);
memory::LedgerSnapshot ledger_from_json(const nlohmann::json & j);

nlohmann::json           cache_stats_to_json(const memory::PromptCacheStats & stats);
memory::PromptCacheStats cache_stats_from_json(const nlohmann::json & j);

} // namespace specd::process
