// flint/client/diff.h — a unified diff of two texts by lines (what `flint edit` shows before writing).
#pragma once
#include <string>

namespace flint::client {

// "--- a\n+++ b\n@@ -l,n +l,n @@\n…" with `context` lines around each change; "" when the texts are equal.
// A missing final newline is marked "\ No newline at end of file" as diff(1) does.
std::string unified_diff(const std::string& a_name, const std::string& b_name, const std::string& a, const std::string& b,
                         int context = 3);

}  // namespace flint::client
