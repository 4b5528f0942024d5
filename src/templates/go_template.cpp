#include "templates/go_template.h"

#include "core/error.h"
#include "templates/go_template_exec.h"
#include "templates/go_template_parser.h"

namespace specd::templates {

struct GoTemplate::Impl {
    std::string      source;
    ast::List        root;
    GoTemplateLimits limits;
};

GoTemplate GoTemplate::parse(std::string_view text, const GoTemplateLimits & limits) {
    if (text.size() > limits.max_template_bytes) {
        throw bad_request("invalid template: it is " + std::to_string(text.size()) +
                          " bytes, more than max_template_bytes (" + std::to_string(limits.max_template_bytes) + ")");
    }
    auto impl    = std::make_shared<Impl>();
    impl->source = std::string(text);
    impl->root   = parse_template(impl->source, limits);
    impl->limits = limits;
    GoTemplate t;
    t.impl_ = std::move(impl);
    return t;
}

std::string GoTemplate::render(const nlohmann::ordered_json & data) const {
    std::string out;
    execute(impl_->root, impl_->source, data, impl_->limits, out);
    return out;
}

const std::string & GoTemplate::source() const { return impl_->source; }

std::vector<std::string> GoTemplate::vars() const { return template_vars(impl_->root); }

} // namespace specd::templates
