#include "api/load_report.h"

#include <sstream>

namespace specd::api {

namespace {

// A label value as the exposition format wants it: backslash, quote and newline escaped.
std::string label_value(const std::string & s) {
    std::string out;
    for (const char c : s) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

} // namespace

std::string load_metrics(const std::vector<scheduler::LoadedInfo> & models) {
    std::ostringstream out;
    out << "# HELP specd_model_running Sequences generating, by loaded model.\n# TYPE specd_model_running gauge\n";
    int running = 0;
    for (const auto & m : models) {
        out << "specd_model_running{model=\"" << label_value(m.name) << "\"} " << m.running << "\n";
        running += m.running;
    }
    out << "# HELP specd_model_queued Requests waiting for a sequence, by loaded model.\n# TYPE specd_model_queued gauge\n";
    size_t queued = 0;
    for (const auto & m : models) {
        out << "specd_model_queued{model=\"" << label_value(m.name) << "\"} " << m.queued << "\n";
        queued += m.queued;
    }
    out << "# HELP specd_running_sequences Sequences generating, all loaded models.\n# TYPE specd_running_sequences gauge\n"
        << "specd_running_sequences " << running << "\n";
    out << "# HELP specd_queued_requests Requests waiting for a sequence, all loaded models.\n"
        << "# TYPE specd_queued_requests gauge\nspecd_queued_requests " << queued << "\n";
    return out.str();
}

} // namespace specd::api
