#include "api/logprobs_json.h"

#include "core/utf8.h"

namespace specd::api {

namespace {

json entry(const std::string & token, float logprob) {
    json bytes = json::array();
    for (unsigned char c : token) bytes.push_back(int(c));
    return {{"token", sanitize_utf8(token)}, {"logprob", logprob}, {"bytes", std::move(bytes)}};
}

} // namespace

json logprobs_json(const std::vector<TokenLogprob> & logprobs, bool always_top) {
    json out = json::array();
    for (const TokenLogprob & lp : logprobs) {
        json j = entry(lp.token, lp.logprob);
        if (always_top || !lp.top.empty()) {
            json top = json::array();
            for (const TokenLogprobAlt & alt : lp.top) top.push_back(entry(alt.token, alt.logprob));
            j["top_logprobs"] = std::move(top);
        }
        out.push_back(std::move(j));
    }
    return out;
}

} // namespace specd::api
