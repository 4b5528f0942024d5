// `specd show MODEL [--license|--modelfile|--parameters|--system|--template] [-v]`.
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/show_info.h"
#include "cli/terminal.h"
#include "core/settings.h"
#include "prepare/model_catalog.h"

#include <cstdio>
#include <sstream>

namespace specd::cli {

namespace {

using json = nlohmann::json;

std::string value_text(const json & v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null()) return "[...]"; // the server leaves out long token lists
    return v.dump();
}

// A section: its title, then "key  value" rows indented under it.
void section(std::string & out, const std::string & title, const std::vector<std::vector<std::string>> & rows) {
    if (rows.empty()) return;
    out += "  " + title + "\n";
    std::istringstream table(format_table(rows));
    for (std::string line; std::getline(table, line);) out += "    " + line + "\n";
    out += "\n";
}

// A block of text (a license, a system message) as a section; long ones are cut.
void text_section(std::string & out, const std::string & title, const std::string & text, size_t max_lines) {
    if (text.empty()) return;
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (rows.size() == max_lines) {
            rows.push_back({"..."});
            break;
        }
        if (!line.empty()) rows.push_back({line});
    }
    section(out, title, rows);
}

} // namespace

std::string show_info_text(const json & s, bool verbose) {
    const json & details = s.value("details", json::object());
    const json & info    = s.value("model_info", json::object());
    std::string  arch    = info.value("general.architecture", details.value("family", ""));
    std::vector<std::vector<std::string>> model = {{"architecture", arch},
                                                   {"parameters", details.value("parameter_size", "")}};
    for (const auto & [key, label] : {std::pair{".context_length", "context length"},
                                      std::pair{".embedding_length", "embedding length"}}) {
        if (info.contains(arch + key)) model.push_back({label, value_text(info[arch + key])});
    }
    model.push_back({"quantization", details.value("quantization_level", "")});
    std::string out;
    section(out, "Model", model);

    std::vector<std::vector<std::string>> capabilities;
    for (const auto & c : s.value("capabilities", json::array())) capabilities.push_back({value_text(c)});
    section(out, "Capabilities", capabilities);

    if (const auto it = s.find("projector_info"); it != s.end() && it->is_object()) {
        const std::string parch = it->value("general.architecture", "");
        std::vector<std::vector<std::string>> projector = {{"architecture", parch}};
        if (it->contains("general.parameter_count")) projector.push_back({"parameters", value_text((*it)["general.parameter_count"])});
        section(out, "Projector", projector);
    }

    std::vector<std::vector<std::string>> params;
    std::istringstream                    ptext(s.value("parameters", ""));
    for (std::string line; std::getline(ptext, line);) {
        const size_t space = line.find(' ');
        if (space == std::string::npos) continue;
        const size_t value = line.find_first_not_of(' ', space);
        params.push_back({line.substr(0, space), value == std::string::npos ? "" : line.substr(value)});
    }
    section(out, "Parameters", params);
    text_section(out, "System", s.value("system", ""), 2);
    text_section(out, "License", s.value("license", ""), 2);

    if (verbose) {
        std::vector<std::vector<std::string>> meta;
        for (const auto & [key, value] : info.items()) meta.push_back({key, value_text(value)});
        section(out, "Metadata", meta);
    }
    return out;
}

int cmd_show(const ShowOptions & o) {
    const int picked = o.license + o.modelfile + o.parameters + o.system + o.template_;
    if (picked > 1) {
        return fail("only one of '--license', '--modelfile', '--parameters', '--system', or '--template' can be specified");
    }
    auto print = [&](const json & s) {
        std::string text;
        if (o.license) text = s.value("license", "");
        else if (o.modelfile) text = s.value("modelfile", "");
        else if (o.parameters) text = s.value("parameters", "");
        else if (o.system) text = s.value("system", "");
        else if (o.template_) text = s.value("template", "");
        else text = show_info_text(s, o.verbose);
        if (!text.empty() && text.back() != '\n') text += '\n';
        std::fputs(text.c_str(), stdout);
        return 0;
    };
    try {
        ApiClient c = ApiClient::configured();
        if (!c.server_up()) {
            models::Store store(configured_models_dir());
            return print(prepare::catalog_show(store, o.model));
        }
        std::string body;
        const int   status = c.request("POST", "/api/show", {{"model", o.model}}, body);
        if (status != 200) return fail(error_message(body, status));
        return print(json::parse(body));
    } catch (const std::exception & e) {
        return fail(e.what());
    }
}

} // namespace specd::cli
