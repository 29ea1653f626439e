// flint/util/data_dir.h — where flint keeps what outlives a process (the server's stored responses,
// flint chat's history) when no option says: $FLINT_DATA_DIR, else $XDG_DATA_HOME/flint, else
// ~/.local/share/flint, else ./.flint when there is no HOME.
#pragma once
#include <string>

namespace flint {

std::string default_data_dir();

}  // namespace flint
