#pragma once
// The dashboard's files (index.html, app.js, app.css, and uPlot's script and style from npm),
// built into the binary so that the page needs no network and no install path at run time.
// The definitions are generated at build time from src/ui/ (src/CMakeLists.txt,
// cmake/embed_assets.cmake).
#include <string_view>

namespace specd::ui {

struct Asset {
    std::string_view content_type;
    std::string_view body;
};

// The asset of that file name ("app.js"); nullptr when there is none.
const Asset * find_asset(std::string_view name);

} // namespace specd::ui
