#include "util/data_dir.h"

#include <cstdlib>

namespace flint {

std::string default_data_dir() {
    if (const char* d = std::getenv("FLINT_DATA_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/flint";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.local/share/flint";
    return ".flint";
}

}  // namespace flint
