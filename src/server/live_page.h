// kiln serve's live page (GET /): src/server/live_page/index.html, compiled in at build time
// (cmake/embed_file.cmake), so the server needs no files beside it.
#pragma once

#include <string_view>

namespace kiln::server {

std::string_view live_page();

}  // namespace kiln::server
